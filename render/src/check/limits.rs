//! `limits`: global limits counted by the rate-limit service and one optional local burst
//! bucket per route.

use super::fields::{
    at_most, list, object, positive_int, reject_unknown, required, required_parsed, string,
};
use super::header_changes::header_shape;
use super::report::{index, one_of, quote, Problems};
use super::MAX_LIMITS_PER_ROUTE;
use crate::entry::{Limit, Per, Unit};
use serde_json::{Map, Value};

/// Largest burst bucket: tokens an Envoy task holds and refills every second.
pub const MAX_BURST: u32 = 1_000_000;
/// Largest `requests` of a global limit.
pub const MAX_REQUESTS: u32 = 1_000_000_000;
/// Longest header name a limit may key on.
pub const MAX_HEADER_NAME_LEN: usize = 128;

const LIMIT_FIELDS: [&str; 5] = ["per", "header", "requests", "every", "burst"];
const GLOBAL_FIELDS: [&str; 4] = ["per", "header", "requests", "every"];
const PERS: [&str; 3] = ["client-ip", "route", "header"];
const UNITS: [&str; 4] = ["second", "minute", "hour", "day"];

/// A route's limits, or `None` after pushing every problem found.
pub(crate) fn limits(v: &Value, field: &str, problems: &mut Problems) -> Option<Vec<Limit>> {
    let items = list(v, field, "limits", problems)?;
    let before = problems.0.len();
    at_most(
        items,
        MAX_LIMITS_PER_ROUTE,
        field,
        "limits",
        " per route",
        problems,
    );
    let checked: Vec<Option<Limit>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| limit(item, &index(field, i), problems))
        .collect();
    check_collisions(&checked, field, problems);
    if problems.0.len() > before {
        return None;
    }
    checked.into_iter().collect()
}

fn limit(v: &Value, field: &str, problems: &mut Problems) -> Option<Limit> {
    let map = object(v, field, "a limit", problems)?;
    let has_burst = map.contains_key("burst");
    let has_global = GLOBAL_FIELDS.iter().any(|k| map.contains_key(*k));
    reject_unknown(map, field, &LIMIT_FIELDS, problems);
    match (has_burst, has_global) {
        (true, true) => {
            problems.push(
                field,
                "mixes \"burst\" with a global limit's fields (per, header, requests, every); write them as two limits",
            );
            None
        }
        (true, false) => {
            let burst = map.get("burst")?;
            positive_int(burst, &format!("{field}.burst"), MAX_BURST, problems)
                .map(|burst| Limit::Burst { burst })
        }
        (false, true) => global(map, field, problems),
        (false, false) => {
            problems.push(
                field,
                "expected {\"burst\": N} or {\"per\": ..., \"requests\": N, \"every\": ...}",
            );
            None
        }
    }
}

fn global(map: &Map<String, Value>, field: &str, problems: &mut Problems) -> Option<Limit> {
    let per = required_parsed(map, field, "per", problems, parse_per);

    let header_field = format!("{field}.header");
    let header = match (map.get("header"), per) {
        (None, Some(Per::Header)) => {
            problems.push(
                &header_field,
                "required when per is \"header\": name the header whose value is counted",
            );
            None
        }
        (Some(_), Some(p)) if p != Per::Header => {
            problems.push(
                &header_field,
                format!(
                    "only allowed when per is \"header\" (per is {})",
                    quote(p.as_str())
                ),
            );
            None
        }
        (Some(v), _) => string(v, &header_field, problems)
            .and_then(|h| {
                check_header_name(h)
                    .map_err(|reason| problems.push(&header_field, reason))
                    .ok()
            })
            .map(|()| v.as_str().unwrap_or_default().to_string()),
        (None, _) => None,
    };

    let requests = required(map, field, "requests", problems)
        .and_then(|v| positive_int(v, &format!("{field}.requests"), MAX_REQUESTS, problems));

    let every = required_parsed(map, field, "every", problems, parse_unit);

    let (per, requests, every) = (per?, requests?, every?);
    if per == Per::Header && header.is_none() {
        return None;
    }
    Some(Limit::Global {
        per,
        header,
        requests,
        every,
    })
}

fn parse_per(s: &str) -> Result<Per, String> {
    match s {
        "client-ip" => Ok(Per::ClientIp),
        "route" => Ok(Per::Route),
        "header" => Ok(Per::Header),
        _ => Err(format!(
            "unknown key kind {}; expected {}",
            quote(s),
            one_of(&PERS)
        )),
    }
}

fn parse_unit(s: &str) -> Result<Unit, String> {
    match s {
        "second" => Ok(Unit::Second),
        "minute" => Ok(Unit::Minute),
        "hour" => Ok(Unit::Hour),
        "day" => Ok(Unit::Day),
        _ => {
            let mut reason = format!("unknown unit {}; expected {}", quote(s), one_of(&UNITS));
            let near = s.to_ascii_lowercase();
            let near = near.strip_suffix('s').unwrap_or(&near);
            if UNITS.contains(&near) {
                reason.push_str(&format!(" (did you mean \"{near}\"?)"));
            }
            Err(reason)
        }
    }
}

/// A header a global limit may key on: a lowercase RFC 9110 token, and not one whose value is
/// meaningless or unsafe as a rate-limit key.
pub fn check_header_name(h: &str) -> Result<(), String> {
    header_shape(
        h,
        "must not be empty; name a request header such as \"x-api-key\"",
        ", not a request header; the route and host already tell requests apart",
        MAX_HEADER_NAME_LEN,
    )?;
    if let Some(why) = unusable_header(h) {
        return Err(format!("{} cannot be a rate-limit key: {why}", quote(h)));
    }
    Ok(())
}

/// Headers whose value does not identify a client the way a per-header limit assumes.
fn unusable_header(h: &str) -> Option<&'static str> {
    match h {
        // RFC 9110 section 7.6.1: consumed by each hop; Envoy strips them, so the limit would
        // never see a value and never apply.
        "connection"
        | "keep-alive"
        | "proxy-connection"
        | "transfer-encoding"
        | "te"
        | "trailer"
        | "upgrade"
        | "proxy-authenticate" => Some(
            "it is a hop-by-hop header, consumed before routing, so the limit would never apply",
        ),
        // Forwarding headers: a client writes any value it likes (the load balancer only appends
        // to x-forwarded-for, and passes the others on as they came), so each spoofed value is
        // a fresh bucket of the client's choosing. per client-ip uses the trusted-hop address.
        _ if client_written(h) => Some(
            "a client sets it freely and escapes its bucket by changing it; use per \"client-ip\"",
        ),
        // A new value on every request: each request is the first of its own bucket, so the
        // limit never applies, and the rate-limit service's keys grow with every request.
        _ if per_request(h) => Some(
            "its value is new on every request, so each request starts a bucket of its own and the limit never applies (while the rate-limit service's keys grow without bound)",
        ),
        // Credentials: a limit's key is stored in the rate-limit service's counters (Redis keys)
        // and may appear in its logs, so a bearer token or a session cookie would be copied
        // there in clear.
        "authorization" | "proxy-authorization" | "cookie" | "x-amz-security-token" => Some(
            "it carries a credential, and a limit's key is stored in the rate-limit service's counters and logs; key on a dedicated, non-secret header",
        ),
        _ if h.starts_with("x-envoy-") => Some("Envoy sets and strips x-envoy- headers itself"),
        _ => None,
    }
}

/// Forwarding headers a client writes itself: the standard and de-facto ones, and those CDNs
/// and proxies set in front of an origin (any of which a client may send straight to the load
/// balancer).
const CLIENT_WRITTEN_HEADERS: [&str; 11] = [
    "forwarded",
    "x-forwarded",
    "x-real-ip",
    "x-client-ip",
    "true-client-ip",
    "x-original-forwarded-for",
    "cf-connecting-ip",
    "x-cluster-client-ip",
    "fastly-client-ip",
    "x-original-host",
    "x-host",
];

fn client_written(h: &str) -> bool {
    h.starts_with("x-forwarded-") || CLIENT_WRITTEN_HEADERS.contains(&h)
}

/// Request and trace ids: Envoy's and the load balancer's request ids, W3C Trace Context, Zipkin
/// B3, AWS X-Ray, Google Cloud Trace, Jaeger, Datadog and OpenTracing's span context.
const PER_REQUEST_HEADERS: [&str; 14] = [
    "x-request-id",
    "x-client-trace-id",
    "x-amzn-trace-id",
    "traceparent",
    "tracestate",
    "b3",
    "x-b3-traceid",
    "x-b3-spanid",
    "x-b3-parentspanid",
    "x-cloud-trace-context",
    "uber-trace-id",
    "x-datadog-trace-id",
    "x-datadog-parent-id",
    "x-ot-span-context",
];

fn per_request(h: &str) -> bool {
    PER_REQUEST_HEADERS.contains(&h)
}

/// At most one burst per route, and no two global limits the rate-limit service would key the
/// same way (same per, header and unit collide in its rule tree and it rejects the reload).
fn check_collisions(limits: &[Option<Limit>], field: &str, problems: &mut Problems) {
    for (j, b) in limits.iter().enumerate() {
        let Some(b) = b else { continue };
        let earlier = limits[..j].iter().position(|a| match (a, b) {
            (Some(Limit::Burst { .. }), Limit::Burst { .. }) => true,
            (
                Some(Limit::Global {
                    per: p1,
                    header: h1,
                    every: e1,
                    ..
                }),
                Limit::Global {
                    per: p2,
                    header: h2,
                    every: e2,
                    ..
                },
            ) => p1 == p2 && h1 == h2 && e1 == e2,
            _ => false,
        });
        let Some(i) = earlier else { continue };
        let reason = match b {
            Limit::Burst { .. } => format!("a route has at most one burst limit (also {})", index(field, i)),
            Limit::Global { per, header, every, .. } => format!(
                "same per {}{} and unit {} as {}; the rate-limit service would see two rules for one key, merge them into one limit",
                quote(per.as_str()),
                header.as_deref().map(|h| format!(" (header {})", quote(h))).unwrap_or_default(),
                quote(every.as_str()),
                index(field, i)
            ),
        };
        problems.push(index(field, j), reason);
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_cases::{assert_accepted, assert_refused};
    use super::*;
    use serde_json::json;

    const F: &str = "routes[0].limits";

    fn run(v: Value) -> Result<Vec<Limit>, Vec<String>> {
        let mut p = Problems::default();
        limits(&v, F, &mut p).ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    fn err(v: Value) -> Vec<String> {
        run(v.clone()).expect_err(&v.to_string())
    }

    #[test]
    fn accepts_the_design_examples() {
        let got = run(json!([
            {"per": "route", "requests": 500, "every": "minute"},
            {"burst": 20},
            {"per": "header", "header": "x-api-key", "requests": 10, "every": "hour"},
            {"per": "client-ip", "requests": 1, "every": "second"},
            {"per": "client-ip", "requests": 1_000_000_000, "every": "day"},
        ]))
        .expect("valid");
        assert_eq!(got[1], Limit::Burst { burst: 20 });
        assert_eq!(
            got[2],
            Limit::Global {
                per: Per::Header,
                header: Some("x-api-key".into()),
                requests: 10,
                every: Unit::Hour
            }
        );
        assert_eq!(run(json!([])), Ok(vec![]));
    }

    #[test]
    fn units_and_kinds() {
        assert_eq!(
            err(json!([{"per": "route", "requests": 1, "every": "fortnight"}])),
            vec!["routes[0].limits[0].every: unknown unit \"fortnight\"; expected second, minute, hour or day"]
        );
        assert!(
            err(json!([{"per": "route", "requests": 1, "every": "minutes"}]))[0]
                .contains("did you mean \"minute\"")
        );
        assert!(err(json!([{"per": "ip", "requests": 1, "every": "day"}]))[0]
            .starts_with("routes[0].limits[0].per: unknown key kind \"ip\"; expected client-ip, route or header"));
    }

    #[test]
    fn numbers() {
        let at = |v: Value| err(json!([{"per": "route", "requests": v, "every": "day"}]));
        assert_eq!(
            at(json!("100")),
            vec!["routes[0].limits[0].requests: expected a positive integer, got string"]
        );
        assert!(at(json!(0))[0].contains("at least 1"));
        assert!(at(json!(-1))[0].contains("got -1"));
        assert!(at(json!(10.5))[0].contains("got 10.5"));
        assert!(at(json!(1_000_000_001))[0].contains("at most 1000000000"));
        assert!(at(json!(null))[0].contains("got null"));
        assert!(err(json!([{"burst": 0}]))[0]
            .starts_with("routes[0].limits[0].burst: must be at least 1"));
        assert!(err(json!([{"burst": 1_000_001}]))[0].contains("at most 1000000"));
        assert!(err(json!([{"burst": true}]))[0].contains("got boolean true"));
    }

    #[test]
    fn shapes() {
        assert!(err(json!([{"burst": 5, "per": "route"}]))[0]
            .starts_with("routes[0].limits[0]: mixes \"burst\""));
        assert!(err(json!([{}]))[0].starts_with("routes[0].limits[0]: expected {\"burst\": N}"));
        assert!(err(json!(["burst"]))[0].contains("expected a limit (a JSON object), got string"));
        assert!(err(json!({"burst": 5}))[0].contains("expected a list of limits"));
        let typo = err(json!([{"brust": 5}]));
        assert!(
            typo[0].starts_with("routes[0].limits[0].brust: unknown field"),
            "{typo:?}"
        );
        assert!(typo[0].contains("did you mean \"burst\""), "{typo:?}");
        let missing = err(json!([{"per": "route"}]));
        assert_eq!(
            missing,
            vec![
                "routes[0].limits[0].requests: required field is missing",
                "routes[0].limits[0].every: required field is missing"
            ]
        );
        let extra = err(json!([{"per": "route", "requests": 1, "every": "day", "key": "x"}]));
        assert!(extra[0].starts_with("routes[0].limits[0].key: unknown field"));
        let too_many: Vec<Value> =
            (0..=MAX_LIMITS_PER_ROUTE).map(|i| json!({"per": "header", "header": format!("x-h{i}"), "requests": 1, "every": "day"})).collect();
        assert!(err(Value::Array(too_many))[0].contains("at most 8 per route"));
    }

    #[test]
    fn header_is_required_exactly_for_per_header() {
        assert_eq!(
            err(json!([{"per": "header", "requests": 1, "every": "day"}])),
            vec!["routes[0].limits[0].header: required when per is \"header\": name the header whose value is counted"]
        );
        assert!(
            err(json!([{"per": "route", "header": "x-a", "requests": 1, "every": "day"}]))[0]
                .contains("only allowed when per is \"header\"")
        );
    }

    #[test]
    fn header_names() {
        assert_accepted(
            check_header_name,
            &[
                "x-api-key",
                "host",
                "x-tenant_id",
                "user-agent",
                "x.a!b#c$d%e&f'g*h+i^j`k|l~m",
            ],
        );
        let cases = [
            ("", "empty"),
            ("X-Api-Key", "lowercase: write \"x-api-key\""),
            (":authority", "pseudo-header"),
            ("x api", "not allowed"),
            ("x-api\nkey", "not allowed"),
            ("x\"y", "not allowed"),
            ("x{y}", "not allowed"),
            ("x:y", "not allowed"),
            ("x-é", "not allowed"),
            ("connection", "hop-by-hop"),
            ("transfer-encoding", "hop-by-hop"),
            ("x-forwarded-for", "client-ip"),
            ("cookie", "credential"),
            (
                "authorization",
                "\"authorization\" cannot be a rate-limit key: it carries a credential",
            ),
            ("proxy-authorization", "credential"),
            ("x-amz-security-token", "credential"),
            ("x-envoy-original-path", "Envoy"),
        ];
        assert_refused(check_header_name, &cases);
        assert!(check_header_name(&"x".repeat(129))
            .expect_err("long")
            .contains("at most 128"));
        assert_eq!(check_header_name(&"x".repeat(128)), Ok(()));
    }

    #[test]
    fn client_written_forwarding_headers_are_no_key() {
        let why = "cannot be a rate-limit key: a client sets it freely and escapes its bucket by changing it; use per \"client-ip\"";
        let names = [
            "x-forwarded-for",
            "x-forwarded-host",
            "x-forwarded-proto",
            "x-forwarded-port",
            "x-forwarded-server",
            "x-forwarded-client-cert",
            "x-forwarded",
            "forwarded",
            "x-real-ip",
            "x-client-ip",
            "true-client-ip",
            "x-original-forwarded-for",
            "cf-connecting-ip",
            "x-cluster-client-ip",
            "fastly-client-ip",
            "x-original-host",
            "x-host",
        ];
        let cases: Vec<(&str, String)> =
            names.iter().map(|h| (*h, format!("\"{h}\" {why}"))).collect();
        let cases: Vec<(&str, &str)> = cases.iter().map(|(h, w)| (*h, w.as_str())).collect();
        assert_refused(check_header_name, &cases);
        // Other spellings are other headers (nothing forwards them) or refused by their shape.
        assert_accepted(check_header_name, &["x-forwardedfor", "x-hostname", "x_forwarded_for"]);
        assert!(check_header_name("X-Forwarded-Host").expect_err("upper").contains("lowercase"));
    }

    #[test]
    fn per_request_ids_are_no_key() {
        let why = "cannot be a rate-limit key: its value is new on every request, so each request starts a bucket of its own and the limit never applies (while the rate-limit service's keys grow without bound)";
        let names = [
            "x-request-id",
            "x-client-trace-id",
            "x-amzn-trace-id",
            "traceparent",
            "tracestate",
            "b3",
            "x-b3-traceid",
            "x-b3-spanid",
            "x-b3-parentspanid",
            "x-cloud-trace-context",
            "uber-trace-id",
            "x-datadog-trace-id",
            "x-datadog-parent-id",
            "x-ot-span-context",
        ];
        let cases: Vec<(&str, String)> =
            names.iter().map(|h| (*h, format!("\"{h}\" {why}"))).collect();
        let cases: Vec<(&str, &str)> = cases.iter().map(|(h, w)| (*h, w.as_str())).collect();
        assert_refused(check_header_name, &cases);
        assert_accepted(check_header_name, &["x-request-idx", "x-tenant-id", "x-b3-sampled"]);
        assert_eq!(
            err(json!([{"per": "header", "header": "traceparent", "requests": 1, "every": "minute"}])),
            vec![format!("routes[0].limits[0].header: \"traceparent\" {why}")]
        );
    }

    #[test]
    fn collisions() {
        let two_bursts = err(json!([{"burst": 1}, {"burst": 2}]));
        assert_eq!(two_bursts, vec!["routes[0].limits[1]: a route has at most one burst limit (also routes[0].limits[0])"]);
        let same = err(json!([
            {"per": "client-ip", "requests": 1, "every": "minute"},
            {"per": "client-ip", "requests": 5, "every": "minute"}
        ]));
        assert!(same[0].starts_with("routes[0].limits[1]: same per \"client-ip\" and unit \"minute\" as routes[0].limits[0]"));
        // Different unit, or a different header, is a different rule.
        assert!(run(json!([
            {"per": "client-ip", "requests": 1, "every": "second"},
            {"per": "client-ip", "requests": 50, "every": "minute"},
            {"per": "header", "header": "x-a", "requests": 1, "every": "minute"},
            {"per": "header", "header": "x-b", "requests": 1, "every": "minute"}
        ]))
        .is_ok());
        assert!(err(json!([
            {"per": "header", "header": "x-a", "requests": 1, "every": "minute"},
            {"per": "header", "header": "x-a", "requests": 2, "every": "minute"}
        ]))[0]
            .contains("header \"x-a\""));
    }

    #[test]
    fn every_problem_in_a_limit_is_reported() {
        let all = err(
            json!([{"per": "ip", "header": "X", "requests": -1, "every": "fortnight", "extra": 1}]),
        );
        assert_eq!(all.len(), 5, "{all:?}");
    }
}
