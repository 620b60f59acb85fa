//! The entry-level traffic fields (docs/design.md#traffic-policy): `backends`, `protocol`,
//! `canary` and `health_check`. They shape the service's clusters, so they sit on the entry, not on a route.
//!
//! The canary's backend goes through `check_backend`, the very rule the entry's `backend` meets
//! (address kinds, operator domains and CIDRs, reserved ports, loopback), so a canary can never
//! reach what a backend may not.

use super::backend::check_backend;
use super::duration::{envoy_duration, parse_duration};
use super::fields::{as_written, list, object, reject_unknown, required, required_parsed, string};
use super::header_changes::header_shape;
use super::path::check_path;
use super::report::{child, describe, index, quote, Problems};
use super::Policy;
use crate::entry::{Canary, CanaryHeader, HealthCheck, Protocol, WeightedBackend};
use serde_json::Value;

const CANARY_FIELDS: [&str; 3] = ["backend", "weight", "header"];
const WEIGHTED_BACKEND_FIELDS: [&str; 2] = ["url", "weight"];
/// The most `backends` an entry may split its traffic between (each is a cluster).
pub const MAX_BACKENDS: usize = 8;
const HEADER_FIELDS: [&str; 2] = ["name", "value"];
const HEALTH_CHECK_FIELDS: [&str; 2] = ["path", "interval"];

/// Default of the operators' minimum health-check interval (`GATEWAY_MIN_HEALTH_CHECK_INTERVAL`):
/// every Envoy task checks every backend, so a short interval multiplies into real load.
pub const DEFAULT_MIN_HEALTH_CHECK_INTERVAL_MS: u64 = 5_000;
/// Longest health-check interval: a backend that fails for longer than this between checks is
/// not being watched.
pub const MAX_HEALTH_CHECK_INTERVAL_MS: u64 = 300_000;
/// Longest cohort header value.
pub const MAX_CANARY_HEADER_VALUE_LEN: usize = 256;
/// Longest cohort header name (the same bound as a rate-limit key's header).
pub const MAX_CANARY_HEADER_NAME_LEN: usize = 128;
/// The largest `canary.weight`: all of the service's traffic (a cutover).
pub const MAX_CANARY_WEIGHT: u32 = 100;
/// The characters of a cohort header value, as a JSON Schema pattern: visible ASCII and spaces.
pub const COHORT_HEADER_VALUE_CHARSET: &str = "^[ -~]+$";

/// `protocol`: `http1`, `http2` or `grpc`.
pub(crate) fn protocol(v: &Value, field: &str, problems: &mut Problems) -> Option<Protocol> {
    let s = string(v, field, problems)?;
    match Protocol::ALL.iter().find(|p| p.as_str() == s) {
        Some(p) => Some(*p),
        None => {
            problems.push(
                field,
                format!(
                    "unknown protocol {}; expected http1, http2 or grpc",
                    quote(s)
                ),
            );
            None
        }
    }
}

/// `canary`: `backend` (judged exactly like the entry's), `weight`, optional `header`.
pub(crate) fn canary(
    v: &Value,
    field: &str,
    main_backends: &[&str],
    policy: &Policy,
    problems: &mut Problems,
) -> Option<Canary> {
    let map = object(v, field, "a canary", problems)?;
    reject_unknown(map, field, &CANARY_FIELDS, problems);
    // Judged exactly like the entry's own backend, and never the same one.
    let second_backend = |b: &str| {
        check_backend(b, policy)?;
        if main_backends.contains(&b) {
            return Err(format!(
                "{} is the entry's own backend; a canary is a second backend",
                quote(b)
            ));
        }
        Ok(())
    };
    let backend = required_parsed(map, field, "backend", problems, as_written(second_backend));
    let weight_field = child(field, "weight");
    let weight =
        required(map, field, "weight", problems).and_then(|v| percent(v, &weight_field, problems));
    let header = match map.get("header") {
        None => Some(None),
        Some(v) => cohort_header(v, &child(field, "header"), problems).map(Some),
    };
    Some(Canary {
        backend: backend?,
        weight: weight?,
        header: header?,
    })
}

/// `backends`: 2–[`MAX_BACKENDS`] of `{ "url", "weight" }`, each URL judged exactly like
/// `backend` and listed once, at least one weight above 0.
pub(crate) fn backends(
    v: &Value,
    field: &str,
    policy: &Policy,
    problems: &mut Problems,
) -> Option<Vec<WeightedBackend>> {
    let items = list(v, field, "weighted backends", problems)?;
    let before = problems.0.len();
    if items.len() < 2 || items.len() > MAX_BACKENDS {
        problems.push(
            field,
            format!("has {} backends; 2 to {MAX_BACKENDS} (one backend is `backend`)", items.len()),
        );
    }
    let mut out: Vec<WeightedBackend> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = index(field, i);
        let Some(map) = object(item, &at, "a weighted backend", problems) else { continue };
        reject_unknown(map, &at, &WEIGHTED_BACKEND_FIELDS, problems);
        let url = super::backend::required_backend(map, &at, "url", policy, problems);
        let weight = required(map, &at, "weight", problems)
            .and_then(|w| percent(w, &child(&at, "weight"), problems));
        if let Some(url) = &url {
            if let Some(j) = out.iter().position(|b| &b.url == url) {
                problems.push(child(&at, "url"), format!("{} is already {}", quote(url), child(&index(field, j), "url")));
            }
        }
        if let (Some(url), Some(weight)) = (url, weight) {
            out.push(WeightedBackend { url, weight });
        }
    }
    if problems.0.len() == before && out.iter().all(|b| b.weight == 0) {
        problems.push(field, "every weight is 0; at least one backend must take traffic");
    }
    (problems.0.len() == before).then_some(out)
}

/// A whole percentage, 0–[`MAX_CANARY_WEIGHT`].
fn percent(v: &Value, field: &str, problems: &mut Problems) -> Option<u32> {
    if let Value::Number(n) = v {
        if let Some(p) = n.as_u64().filter(|p| *p <= u64::from(MAX_CANARY_WEIGHT)) {
            return u32::try_from(p).ok();
        }
    }
    problems.push(
        field,
        format!(
            "expected a whole percentage from 0 to 100, got {}",
            describe(v)
        ),
    );
    None
}

fn cohort_header(v: &Value, field: &str, problems: &mut Problems) -> Option<CanaryHeader> {
    let map = object(v, field, "a header match", problems)?;
    reject_unknown(map, field, &HEADER_FIELDS, problems);
    let name = required_parsed(
        map,
        field,
        "name",
        problems,
        as_written(check_cohort_header_name),
    );
    let value = required_parsed(
        map,
        field,
        "value",
        problems,
        as_written(check_cohort_header_value),
    );
    Some(CanaryHeader {
        name: name?,
        value: value?,
    })
}

/// The cohort header's name: a lowercase RFC 9110 token that is not a pseudo-header and not a
/// header the gateway or Envoy sets, consumes or routes on.
pub fn check_cohort_header_name(h: &str) -> Result<(), String> {
    header_shape(
        h,
        "must not be empty; name a request header such as \"x-canary\"",
        ", not a request header",
        MAX_CANARY_HEADER_NAME_LEN,
    )?;
    let why = match h {
        "host" => Some("it is the request's authority, which selects the virtual host"),
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "te"
        | "trailer" | "upgrade" => Some("it is a hop-by-hop header, consumed before routing"),
        "x-request-id" => Some("Envoy sets it on every request"),
        "forwarded" => Some("the gateway's own proxies set it"),
        _ if h.starts_with("x-envoy-") => Some("Envoy sets and strips x-envoy- headers itself"),
        _ if h.starts_with("x-forwarded-") => Some("the gateway sets x-forwarded- headers itself"),
        _ => None,
    };
    match why {
        Some(why) => Err(format!("{} cannot select the canary: {why}", quote(h))),
        None => Ok(()),
    }
}

/// The cohort header's value: 1–256 visible ASCII characters or inner spaces. No CR, LF or
/// other control character, so the value can never split a header line.
pub fn check_cohort_header_value(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err(
            "must not be empty; requests carrying the header with this value go to the canary"
                .into(),
        );
    }
    if s.len() > MAX_CANARY_HEADER_VALUE_LEN {
        return Err(format!(
            "is {} bytes long; at most {MAX_CANARY_HEADER_VALUE_LEN}",
            s.len()
        ));
    }
    if let Some(c) = s.chars().find(|c| !matches!(c, ' '..='~')) {
        return Err(format!(
            "character {} is not allowed in a header value (visible ASCII and spaces only)",
            quote(&c.to_string())
        ));
    }
    if s.starts_with(' ') || s.ends_with(' ') {
        return Err(format!(
            "{} has a leading or trailing space, which proxies strip",
            quote(s)
        ));
    }
    Ok(())
}

/// `health_check`: `path` (the route path rules) and `interval` within the operators' bounds.
pub(crate) fn health_check(
    v: &Value,
    field: &str,
    policy: &Policy,
    problems: &mut Problems,
) -> Option<HealthCheck> {
    let map = object(v, field, "a health check", problems)?;
    reject_unknown(map, field, &HEALTH_CHECK_FIELDS, problems);
    let path = required_parsed(map, field, "path", problems, as_written(check_path));
    let in_bounds = |s: &str| check_health_check_interval(s, policy.min_health_check_interval_ms);
    let interval = required_parsed(map, field, "interval", problems, as_written(in_bounds));
    Some(HealthCheck {
        path: path?,
        interval: interval?,
    })
}

/// A health-check interval: a duration from the operators' minimum to five minutes.
pub fn check_health_check_interval(s: &str, min_ms: u64) -> Result<u64, String> {
    // The value is quoted the way every entry value is (`quote`), not with parse_duration's own
    // wording, so the TypeScript copy can give the same bytes for any input.
    let ms = parse_duration(s).map_err(|_| {
        format!(
            "{} is not a duration; write a whole number above 0 with unit ms, s or m (\"10s\", \"500ms\")",
            quote(s)
        )
    })?;
    if ms < min_ms {
        return Err(format!(
            "is {}; at least {} (the operators' minimum health-check interval)",
            envoy_duration(ms),
            envoy_duration(min_ms)
        ));
    }
    if ms > MAX_HEALTH_CHECK_INTERVAL_MS {
        return Err(format!(
            "is {}; at most {}",
            envoy_duration(ms),
            envoy_duration(MAX_HEALTH_CHECK_INTERVAL_MS)
        ));
    }
    Ok(ms)
}

/// The value of `GATEWAY_MIN_HEALTH_CHECK_INTERVAL` (a duration such as `5s`; the caller reads
/// the environment). Below 1 s or above the longest interval is a bad setting, named.
pub fn min_health_check_interval_from_value(value: &str) -> Result<u64, String> {
    let ms =
        parse_duration(value).map_err(|e| format!("GATEWAY_MIN_HEALTH_CHECK_INTERVAL: {e}"))?;
    if !(1_000..=MAX_HEALTH_CHECK_INTERVAL_MS).contains(&ms) {
        return Err(format!(
            "GATEWAY_MIN_HEALTH_CHECK_INTERVAL: is {}; expected 1s to {}",
            envoy_duration(ms),
            envoy_duration(MAX_HEALTH_CHECK_INTERVAL_MS)
        ));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::super::test_cases::assert_refused;
    use super::*;
    use serde_json::json;

    fn policy() -> Policy {
        Policy::new("api.example.com", false)
    }

    fn problems_of(f: impl FnOnce(&mut Problems)) -> Vec<String> {
        let mut p = Problems::default();
        f(&mut p);
        p.0.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn protocols() {
        let mut p = Problems::default();
        assert_eq!(
            protocol(&json!("grpc"), "protocol", &mut p),
            Some(Protocol::Grpc)
        );
        assert_eq!(
            problems_of(|p| {
                protocol(&json!("HTTP2"), "protocol", p);
                protocol(&json!("h2c"), "protocol", p);
                protocol(&json!(2), "protocol", p);
            }),
            [
                "protocol: unknown protocol \"HTTP2\"; expected http1, http2 or grpc",
                "protocol: unknown protocol \"h2c\"; expected http1, http2 or grpc",
                "protocol: expected a string, got 2",
            ]
        );
    }

    #[test]
    fn canary_backend_meets_the_backend_rules() {
        let run = |v: Value, policy: &Policy| {
            problems_of(|p| {
                canary(
                    &v,
                    "canary",
                    &["http://main.internal.example"],
                    policy,
                    p,
                );
            })
        };
        let strict = policy();
        for (backend, expect) in [
            ("http://127.0.0.1:8080", "loopback"),
            ("http://169.254.169.254", "link-local"),
            ("http://[::1]", "loopback"),
            ("http://0x7f.1", "address"),
            ("http://b.internal.example:15000", "reserved"),
            ("http://main.internal.example", "entry's own backend"),
            ("ftp://x", "http"),
        ] {
            let errs = run(json!({"backend": backend, "weight": 5}), &strict);
            assert_eq!(errs.len(), 1, "{backend}: {errs:?}");
            assert!(
                errs[0].starts_with("canary.backend: ") && errs[0].contains(expect),
                "{backend}: {errs:?}"
            );
        }
        // Loopback allowed (local runs): the canary follows the same switch.
        let local = Policy::new("api.example.com", true);
        assert!(run(
            json!({"backend": "http://127.0.0.1:8080", "weight": 5}),
            &local
        )
        .is_empty());
        assert_eq!(
            run(
                json!({"backend": "http://169.254.169.254", "weight": 5}),
                &local
            )
            .len(),
            1
        );
        // Operator domain allow-list applies too.
        let only = Policy::new("api.example.com", false)
            .with_backend_rules("internal.example", "")
            .expect("rules");
        let errs = run(
            json!({"backend": "http://canary.elsewhere.example", "weight": 5}),
            &only,
        );
        assert_eq!(errs.len(), 1, "{errs:?}");
    }

    #[test]
    fn weights_and_shape() {
        let run = |v: Value| {
            problems_of(|p| {
                canary(&v, "canary", &[], &policy(), p);
            })
        };
        for w in [0, 1, 50, 100] {
            assert!(run(json!({"backend": "http://c.internal.example", "weight": w})).is_empty());
        }
        assert_eq!(
            run(json!({"backend": "http://c.internal.example", "weight": 101, "weigth": 1})),
            [
                "canary.weigth: unknown field; expected backend, weight or header (did you mean \"weight\"?)",
                "canary.weight: expected a whole percentage from 0 to 100, got 101",
            ]
        );
        for bad in [json!(-1), json!(10.5), json!("10"), json!(null)] {
            let errs = run(json!({"backend": "http://c.internal.example", "weight": bad}));
            assert_eq!(errs.len(), 1, "{errs:?}");
            assert!(errs[0].starts_with("canary.weight: expected a whole percentage"));
        }
        assert_eq!(
            run(json!({})),
            [
                "canary.backend: required field is missing",
                "canary.weight: required field is missing"
            ]
        );
        assert_eq!(
            run(json!("http://c")),
            ["canary: expected a canary (a JSON object), got string"]
        );
    }

    #[test]
    fn cohort_header_is_a_safe_header() {
        assert_eq!(check_cohort_header_name("x-canary"), Ok(()));
        let cases = [
            ("", "must not be empty"),
            (":authority", "pseudo-header"),
            ("host", "authority"),
            ("x-envoy-upstream-alt-stat-name", "x-envoy-"),
            ("x-forwarded-for", "x-forwarded-"),
            ("x-forwarded-proto", "x-forwarded-"),
            ("x-request-id", "Envoy sets it"),
            ("connection", "hop-by-hop"),
            ("X-Canary", "lowercase"),
            ("x canary", "token"),
            ("x-canary\r\nx-evil", "token"),
        ];
        assert_refused(check_cohort_header_name, &cases);
        assert!(check_cohort_header_name(&"x".repeat(129)).is_err());
        assert_eq!(check_cohort_header_value("always"), Ok(()));
        assert_eq!(check_cohort_header_value("a b"), Ok(()));
        for bad in ["", "a\r\nx-evil: 1", "a\nb", "\u{0}", "é", " a", "a "] {
            assert!(check_cohort_header_value(bad).is_err(), "{bad:?}");
        }
        assert!(check_cohort_header_value(&"v".repeat(257)).is_err());
        let errs = problems_of(|p| {
            cohort_header(
                &json!({"name": "Host", "value": "a\r\nb"}),
                "canary.header",
                p,
            );
        });
        assert_eq!(
            errs,
            [
                "canary.header.name: \"Host\" must be lowercase: write \"host\"",
                "canary.header.value: character \"\\r\" is not allowed in a header value (visible ASCII and spaces only)",
            ]
        );
    }

    #[test]
    fn the_operators_minimum_is_a_bounded_duration() {
        assert_eq!(min_health_check_interval_from_value("2s"), Ok(2_000));
        for bad in ["", "0s", "500ms", "10m", "5", "5 s"] {
            let err = min_health_check_interval_from_value(bad).expect_err(bad);
            assert!(
                err.starts_with("GATEWAY_MIN_HEALTH_CHECK_INTERVAL: "),
                "{err}"
            );
        }
    }

    #[test]
    fn health_check_bounds() {
        let run = |v: Value, min: u64| {
            let mut policy = policy();
            policy.min_health_check_interval_ms = min;
            problems_of(|p| {
                health_check(&v, "health_check", &policy, p);
            })
        };
        assert!(run(json!({"path": "/healthz", "interval": "10s"}), 5_000).is_empty());
        assert!(run(json!({"path": "/healthz", "interval": "5m"}), 5_000).is_empty());
        assert_eq!(
            run(json!({"path": "healthz", "interval": "1s"}), 5_000),
            [
                "health_check.path: \"healthz\" must start with \"/\"",
                "health_check.interval: is 1s; at least 5s (the operators' minimum health-check interval)",
            ]
        );
        assert!(run(json!({"path": "/h", "interval": "1s"}), 1_000).is_empty());
        assert_eq!(
            run(json!({"path": "/h", "interval": "6m"}), 5_000),
            ["health_check.interval: is 360s; at most 300s"]
        );
        assert_eq!(
            run(json!({"path": "/h", "interval": 10}), 5_000),
            ["health_check.interval: expected a string, got 10"]
        );
        let errs = run(json!({"path": "/h", "interval": "10"}), 5_000);
        assert!(
            errs[0].starts_with("health_check.interval: \"10\" is not a duration"),
            "{errs:?}"
        );
        assert_eq!(
            run(
                json!({"path": "/h/../admin", "interval": "10s", "port": 9901}),
                5_000
            )
            .len(),
            2
        );
    }
}
