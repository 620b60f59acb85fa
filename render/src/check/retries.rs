//! `retries`: how many times and on what a failed try is retried (docs/design.md#route-policy).
//!
//! A retry sends the request again. Only `connect-failure` and `refused-stream` are certain that
//! the backend never saw the first try, so a route that accepts a non-idempotent method may
//! retry on nothing else: a POST retried after a reset or a 5xx can charge a card twice.

use super::duration::{envoy_duration, parse_duration};
use super::fields::{
    at_most, non_empty_list, object, positive_int, reject_unknown, required, string, StringSet,
};
use super::report::{describe, index, one_of, quote, Problems};
use crate::entry::Retries;
use serde_json::Value;

/// Default of the operators' maximum `attempts` (`GATEWAY_MAX_RETRY_ATTEMPTS`).
pub const DEFAULT_MAX_RETRY_ATTEMPTS: u32 = 3;
/// Status codes one route may retry on.
pub const MAX_RETRIED_STATUS_CODES: usize = 16;
/// The statuses a route may retry on: client and server errors.
pub const RETRIED_STATUSES: std::ops::RangeInclusive<u16> = 400..=599;

/// Every retry condition, Envoy's `retry_on` names: the HTTP ones, then gRPC's statuses.
pub const RETRY_CONDITIONS: [&str; 10] = [
    "connect-failure",
    "refused-stream",
    "reset",
    "5xx",
    "gateway-error",
    "retriable-status-codes",
    "cancelled",
    "deadline-exceeded",
    "resource-exhausted",
    "unavailable",
];
/// The gRPC statuses among [`RETRY_CONDITIONS`]: they mean something only to a gRPC backend.
pub const GRPC_RETRY_CONDITIONS: [&str; 4] = [
    "cancelled",
    "deadline-exceeded",
    "resource-exhausted",
    "unavailable",
];
/// Conditions under which the backend never received the request: safe for any method.
pub const RETRY_CONDITIONS_BEFORE_THE_BACKEND: [&str; 2] = ["connect-failure", "refused-stream"];
/// Methods whose repetition is not harmless (RFC 9110 section 9.2.2), in the order a message
/// names them.
const NON_IDEMPOTENT_METHODS: [&str; 3] = ["POST", "PATCH", "CONNECT"];

const RETRIES_FIELDS: [&str; 4] = ["attempts", "on", "status_codes", "per_try_timeout"];

/// What the retries check needs to know about the rest of the route and the entry.
pub(crate) struct RetryContext<'a> {
    /// The route's methods (`None`: every method).
    pub methods: Option<&'a [String]>,
    /// The route's whole-request timeout in ms (its own or the default), `None` when its own
    /// `timeout` is invalid (that problem is reported there).
    pub timeout_ms: Option<u64>,
    /// Whether the entry's backend speaks gRPC; see [`grpc_retry_conditions_allowed`].
    pub grpc: bool,
    /// The operators' maximum `attempts`.
    pub max_attempts: u32,
}

/// Whether an entry may retry on gRPC statuses: only when it says `protocol: "grpc"` (the
/// statuses mean nothing to another backend).
pub(crate) fn grpc_retry_conditions_allowed(entry: &serde_json::Map<String, Value>) -> bool {
    entry.get("protocol").and_then(Value::as_str) == Some("grpc")
}

/// A route's `retries`, or `None` after pushing every problem found.
pub(crate) fn retries(
    v: &Value,
    field: &str,
    cx: &RetryContext<'_>,
    problems: &mut Problems,
) -> Option<Retries> {
    let map = object(v, field, "a retry policy", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &RETRIES_FIELDS, problems);

    let attempts_field = format!("{field}.attempts");
    let attempts = required(map, field, "attempts", problems)
        .and_then(|v| positive_int(v, &attempts_field, u32::MAX, problems))
        .and_then(|n| {
            if n > cx.max_attempts {
                problems.push(
                    &attempts_field,
                    format!(
                        "is {n}; at most {} (the operators' maximum retry attempts)",
                        cx.max_attempts
                    ),
                );
                None
            } else {
                Some(n)
            }
        });

    let on = required(map, field, "on", problems)
        .and_then(|v| conditions(v, &format!("{field}.on"), cx, problems));

    let wants_codes = on
        .as_ref()
        .is_some_and(|on| on.iter().any(|c| c == "retriable-status-codes"));
    let codes_field = format!("{field}.status_codes");
    let status_codes = match (map.get("status_codes"), wants_codes) {
        (None, true) => {
            problems.push(
                &codes_field,
                "required when on has \"retriable-status-codes\": list the statuses to retry",
            );
            None
        }
        (Some(_), false) if on.is_some() => {
            problems.push(
                &codes_field,
                "only allowed when on has \"retriable-status-codes\"",
            );
            None
        }
        (Some(v), _) => status_codes(v, &codes_field, problems),
        (None, false) => Some(Vec::new()),
    };

    let per_try_field = format!("{field}.per_try_timeout");
    let per_try_timeout = match map.get("per_try_timeout") {
        None => Some(None),
        Some(v) => string(v, &per_try_field, problems).and_then(|s| {
            check_per_try_timeout(s, cx.timeout_ms)
                .map(|()| Some(s.to_string()))
                .map_err(|reason| problems.push(&per_try_field, reason))
                .ok()
        }),
    };

    if problems.0.len() > before {
        return None;
    }
    Some(Retries {
        attempts: attempts?,
        on: on?,
        status_codes: status_codes?,
        per_try_timeout: per_try_timeout?,
    })
}

/// `per_try_timeout`: a duration below the route's whole-request timeout (`timeout_ms`, when
/// known): a try allowed the whole request's time leaves no time to retry.
pub fn check_per_try_timeout(s: &str, timeout_ms: Option<u64>) -> Result<(), String> {
    let ms = parse_duration(s)?;
    match timeout_ms {
        Some(t) if ms >= t => Err(format!(
            "is {}; must be below the route's timeout ({}), or one try uses the whole request's time",
            envoy_duration(ms),
            envoy_duration(t)
        )),
        _ => Ok(()),
    }
}

fn conditions(
    v: &Value,
    field: &str,
    cx: &RetryContext<'_>,
    problems: &mut Problems,
) -> Option<Vec<String>> {
    CONDITION_SET.read(v, field, problems, |c| {
        check_retry_condition(c, cx.methods, cx.grpc)
    })
}

const CONDITION_SET: StringSet = StringSet {
    what: "retry conditions",
    when_empty: "must not be empty; name at least one retry condition, or leave retries out",
    item: "a retry condition (a string)",
};

/// One retry condition for a route answering `methods` (`None`: every method) on an entry whose
/// backend does (`grpc`) or does not speak gRPC.
pub fn check_retry_condition(
    c: &str,
    methods: Option<&[String]>,
    grpc: bool,
) -> Result<(), String> {
    if !RETRY_CONDITIONS.contains(&c) {
        return Err(format!(
            "unknown retry condition {}; expected {}",
            quote(c),
            one_of(&RETRY_CONDITIONS)
        ));
    }
    if GRPC_RETRY_CONDITIONS.contains(&c) && !grpc {
        return Err(format!(
            "{} is a gRPC status; it needs protocol: \"grpc\" on the entry",
            quote(c)
        ));
    }
    if RETRY_CONDITIONS_BEFORE_THE_BACKEND.contains(&c) {
        return Ok(());
    }
    // Every gRPC call is a POST, so the method rule would forbid gRPC's own retry statuses
    // outright. A gRPC backend names which statuses its methods may be retried on (as gRPC's
    // own retry policy does); the HTTP conditions (`5xx`, `reset`, …) still follow the rule.
    if GRPC_RETRY_CONDITIONS.contains(&c) {
        return Ok(());
    }
    let unsafe_method = match methods {
        None => Some("every method, POST included"),
        Some(ms) => NON_IDEMPOTENT_METHODS
            .iter()
            .find(|m| ms.iter().any(|x| x == *m))
            .copied(),
    };
    match (unsafe_method, methods) {
        (None, _) => Ok(()),
        (Some(m), Some(_)) => Err(format!(
            "{} retries a {m} route; a route accepting {m} may retry only on connect-failure or refused-stream (the backend never saw the request)",
            quote(c)
        )),
        (Some(m), None) => Err(format!(
            "{} retries a route accepting {m}; such a route may retry only on connect-failure or refused-stream (the backend never saw the request), or list idempotent methods",
            quote(c)
        )),
    }
}

fn status_codes(v: &Value, field: &str, problems: &mut Problems) -> Option<Vec<u16>> {
    let items = non_empty_list(
        v,
        field,
        "status codes",
        "must not be empty; list the statuses to retry",
        problems,
    )?;
    let before = problems.0.len();
    at_most(
        items,
        MAX_RETRIED_STATUS_CODES,
        field,
        "status codes",
        "",
        problems,
    );
    let mut seen: Vec<(u16, usize)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = index(field, i);
        let code = match item.as_u64() {
            Some(n) if u16::try_from(n).is_ok_and(|n| RETRIED_STATUSES.contains(&n)) => n as u16,
            Some(n) => {
                problems.push(
                    at,
                    format!(
                        "is {n}; a retried status is {} to {}",
                        RETRIED_STATUSES.start(),
                        RETRIED_STATUSES.end()
                    ),
                );
                continue;
            }
            None => {
                problems.push(
                    at,
                    format!(
                        "expected a status code (an integer), got {}",
                        describe(item)
                    ),
                );
                continue;
            }
        };
        if let Some((_, first)) = seen.iter().find(|(c, _)| *c == code) {
            problems.push(
                at,
                format!("{code} is listed twice (also {})", index(field, *first)),
            );
            continue;
        }
        seen.push((code, i));
    }
    if problems.0.len() > before {
        return None;
    }
    let mut sorted: Vec<u16> = seen.into_iter().map(|(c, _)| c).collect();
    sorted.sort_unstable();
    Some(sorted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value, methods: Option<&[&str]>, timeout_ms: u64) -> Result<Retries, Vec<String>> {
        let methods: Option<Vec<String>> =
            methods.map(|m| m.iter().map(|s| s.to_string()).collect());
        let cx = RetryContext {
            methods: methods.as_deref(),
            timeout_ms: Some(timeout_ms),
            grpc: false,
            max_attempts: DEFAULT_MAX_RETRY_ATTEMPTS,
        };
        let mut p = Problems::default();
        retries(&v, "routes[0].retries", &cx, &mut p)
            .filter(|_| p.is_empty())
            .ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn a_get_route_retries_on_anything() {
        let r = run(
            json!({"attempts": 2, "on": ["reset", "5xx", "connect-failure"], "per_try_timeout": "2s"}),
            Some(&["GET"]),
            5_000,
        )
        .expect("valid");
        assert_eq!(r.on, ["5xx", "connect-failure", "reset"]);
        assert_eq!(r.per_try_timeout.as_deref(), Some("2s"));
    }

    #[test]
    fn non_idempotent_routes_retry_only_before_the_backend() {
        assert_eq!(
            run(json!({"attempts": 1, "on": ["connect-failure", "refused-stream", "5xx"]}), Some(&["GET", "POST"]), 15_000).expect_err("POST"),
            vec!["routes[0].retries.on[2]: \"5xx\" retries a POST route; a route accepting POST may retry only on connect-failure or refused-stream (the backend never saw the request)"]
        );
        assert_eq!(
            run(json!({"attempts": 1, "on": ["reset"]}), None, 15_000).expect_err("every method"),
            vec!["routes[0].retries.on[0]: \"reset\" retries a route accepting every method, POST included; such a route may retry only on connect-failure or refused-stream (the backend never saw the request), or list idempotent methods"]
        );
        assert!(run(
            json!({"attempts": 1, "on": ["gateway-error"]}),
            Some(&["PATCH"]),
            15_000
        )
        .is_err());
        assert!(run(
            json!({"attempts": 1, "on": ["connect-failure"]}),
            None,
            15_000
        )
        .is_ok());
    }

    #[test]
    fn grpc_statuses_need_a_grpc_backend() {
        assert_eq!(
            run(json!({"attempts": 1, "on": ["unavailable"]}), Some(&["GET"]), 15_000).expect_err("grpc"),
            vec!["routes[0].retries.on[0]: \"unavailable\" is a gRPC status; it needs protocol: \"grpc\" on the entry"]
        );
        assert!(check_retry_condition("unavailable", Some(&["GET".to_string()]), true).is_ok());
    }

    #[test]
    fn bounds_and_shapes() {
        assert_eq!(
            run(json!({"attempts": 4, "on": ["5xx", "5xx", "sometimes"], "per_try_timeout": "5s", "extra": 1}), Some(&["GET"]), 5_000).expect_err("bad"),
            vec![
                "routes[0].retries.extra: unknown field; expected attempts, on, status_codes or per_try_timeout",
                "routes[0].retries.attempts: is 4; at most 3 (the operators' maximum retry attempts)",
                "routes[0].retries.on[1]: \"5xx\" is listed twice (also routes[0].retries.on[0])",
                "routes[0].retries.on[2]: unknown retry condition \"sometimes\"; expected connect-failure, refused-stream, reset, 5xx, gateway-error, retriable-status-codes, cancelled, deadline-exceeded, resource-exhausted or unavailable",
                "routes[0].retries.per_try_timeout: is 5s; must be below the route's timeout (5s), or one try uses the whole request's time",
            ]
        );
        assert_eq!(
            run(json!({"attempts": 0, "on": []}), Some(&["GET"]), 5_000).expect_err("bad"),
            vec![
                "routes[0].retries.attempts: must be at least 1",
                "routes[0].retries.on: must not be empty; name at least one retry condition, or leave retries out",
            ]
        );
        assert_eq!(
            run(json!({"attempts": 1, "on": ["retriable-status-codes"]}), Some(&["GET"]), 5_000).expect_err("codes"),
            vec!["routes[0].retries.status_codes: required when on has \"retriable-status-codes\": list the statuses to retry"]
        );
        assert_eq!(
            run(json!({"attempts": 1, "on": ["5xx"], "status_codes": [503]}), Some(&["GET"]), 5_000).expect_err("codes"),
            vec!["routes[0].retries.status_codes: only allowed when on has \"retriable-status-codes\""]
        );
        assert_eq!(
            run(json!({"attempts": 1, "on": ["retriable-status-codes"], "status_codes": [503, 200, "429", 503]}), Some(&["GET"]), 5_000).expect_err("codes"),
            vec![
                "routes[0].retries.status_codes[1]: is 200; a retried status is 400 to 599",
                "routes[0].retries.status_codes[2]: expected a status code (an integer), got string",
                "routes[0].retries.status_codes[3]: 503 is listed twice (also routes[0].retries.status_codes[0])",
            ]
        );
        let r = run(
            json!({"attempts": 3, "on": ["retriable-status-codes"], "status_codes": [503, 429]}),
            Some(&["GET"]),
            5_000,
        )
        .expect("ok");
        assert_eq!(r.status_codes, [429, 503]);
    }
}
