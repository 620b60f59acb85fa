//! `cors`: which browser origins may call a route, answered by Envoy's CORS filter
//! (docs/design.md#route-policy). Origins are exact (`https://app.example.com`), a suffix
//! pattern (`https://*.example.com`: any name under example.com) or `*` (any origin, never with
//! credentials: browsers refuse that pair, and it would hand every site the user's session).

use super::duration::{envoy_duration, parse_duration};
use super::fields::{
    at_most, distinct_strings, list, object, optional_flag, reject_unknown, required,
};
use super::header_changes::{check_header_token, MAX_HEADER_CHANGES};
use super::methods::check_method;
use super::report::{child, describe, quote, Problems};
use crate::entry::Cors;
use serde_json::Value;

/// Origins one route may allow.
pub const MAX_CORS_ORIGINS: usize = 16;
/// Longest `max_age`, in seconds: browsers cap a preflight's cache at a day or less.
pub const MAX_CORS_MAX_AGE_SECONDS: u64 = 86_400;

const CORS_FIELDS: [&str; 5] = ["origins", "methods", "headers", "max_age", "credentials"];

pub(crate) fn cors(v: &Value, field: &str, problems: &mut Problems) -> Option<Cors> {
    let map = object(v, field, "a CORS policy", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &CORS_FIELDS, problems);

    let credentials = optional_flag(map, field, "credentials", problems);
    let origins = required(map, field, "origins", problems);
    let origins = names(origins, field, "origins", MAX_CORS_ORIGINS, problems, |o| {
        check_origin(o, credentials)
    });
    let methods = map.get("methods");
    let methods = names(
        methods,
        field,
        "methods",
        METHODS_MAX,
        problems,
        check_method,
    );
    let headers = map.get("headers");
    let headers = names(
        headers,
        field,
        "headers",
        MAX_HEADER_CHANGES,
        problems,
        check_header_token,
    );
    let max_age_field = child(field, "max_age");
    let max_age = match map.get("max_age") {
        None => None,
        Some(Value::String(s)) => match check_max_age(s) {
            Ok(()) => Some(s.clone()),
            Err(reason) => {
                problems.push(&max_age_field, reason);
                None
            }
        },
        Some(other) => {
            problems.push(
                &max_age_field,
                format!("expected a string, got {}", describe(other)),
            );
            None
        }
    };
    (problems.0.len() == before).then_some(Cors {
        origins,
        methods,
        headers,
        max_age,
        credentials,
    })
}

const METHODS_MAX: usize = super::methods::METHODS.len();

/// `parent.what`: a non-empty list of at most `max` distinct strings, each passing `check`;
/// sorted. Absent (`v` is `None`), none.
fn names(
    v: Option<&Value>,
    parent: &str,
    what: &str,
    max: usize,
    problems: &mut Problems,
    check: impl Fn(&str) -> Result<(), String>,
) -> Vec<String> {
    let Some(v) = v else {
        return Vec::new();
    };
    let field = &child(parent, what);
    let Some(items) = list(v, field, what, problems) else {
        return Vec::new();
    };
    if items.is_empty() {
        let leave = if what == "origins" { "cors" } else { what };
        problems.push(
            field,
            format!("must not be empty; list at least one, or leave {leave} out"),
        );
        return Vec::new();
    }
    at_most(items, max, field, what, "", problems);
    distinct_strings(items, field, "a string", problems, check)
}

/// `max_age`: whole seconds, at most a day.
pub fn check_max_age(s: &str) -> Result<(), String> {
    let ms = parse_duration(s)?;
    if ms % 1_000 != 0 {
        return Err(format!(
            "is {}; browsers cache a preflight for whole seconds",
            envoy_duration(ms)
        ));
    }
    if ms / 1_000 > MAX_CORS_MAX_AGE_SECONDS {
        return Err(format!(
            "is {}; at most {MAX_CORS_MAX_AGE_SECONDS}s (browsers cache a preflight for a day at most)",
            envoy_duration(ms)
        ));
    }
    Ok(())
}

/// One allowed origin: `*`, `scheme://host[:port]`, or `scheme://*.domain[:port]` with at least
/// two labels after the `*`.
pub fn check_origin(o: &str, credentials: bool) -> Result<(), String> {
    if o == "*" {
        if credentials {
            return Err("\"*\" allows every origin, which browsers refuse together with credentials: true; list the origins".into());
        }
        return Ok(());
    }
    let Some(rest) = o
        .strip_prefix("https://")
        .or_else(|| o.strip_prefix("http://"))
    else {
        return Err(format!(
            "{} must start with https:// or http:// (an origin is scheme://host[:port])",
            quote(o)
        ));
    };
    if rest.contains('/') {
        return Err(format!(
            "{} has a path; an origin is scheme://host[:port], with nothing after the host",
            quote(o)
        ));
    }
    let host = match rest.rsplit_once(':') {
        Some((host, port)) => {
            let valid = !port.is_empty()
                && port.len() <= 5
                && !port.starts_with('0')
                && port.bytes().all(|b| b.is_ascii_digit())
                && port.parse::<u32>().is_ok_and(|p| p <= 65_535);
            if !valid {
                return Err(format!(
                    "{}: the port must be a number from 1 to 65535",
                    quote(o)
                ));
            }
            host
        }
        None => rest,
    };
    let (pattern, name) = match host.strip_prefix("*.") {
        Some(name) => (true, name),
        None => (false, host),
    };
    if name.contains('*') {
        return Err(format!(
            "{}: \"*\" may only stand for the first label (https://*.example.com)",
            quote(o)
        ));
    }
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "{} must be lowercase: write {}",
            quote(o),
            quote(&o.to_ascii_lowercase())
        ));
    }
    for label in name.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return Err(format!(
                "{}: the host must be DNS labels of 1-63 a-z, 0-9 or \"-\" (label {})",
                quote(o),
                quote(label)
            ));
        }
    }
    if pattern && name.split('.').count() < 2 {
        return Err(format!(
            "{} matches every site under a top-level domain; name a domain, e.g. https://*.example.com",
            quote(o)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> Result<Cors, Vec<String>> {
        let mut p = Problems::default();
        cors(&v, "routes[0].cors", &mut p)
            .ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn a_policy_is_sorted() {
        let c = run(json!({"origins": ["https://b.example.com", "https://*.a.example.com", "http://localhost:3000"],
                           "methods": ["POST", "GET"], "headers": ["x-api-key"], "max_age": "10m"}))
        .expect("valid");
        assert_eq!(
            c.origins,
            [
                "http://localhost:3000",
                "https://*.a.example.com",
                "https://b.example.com"
            ]
        );
        assert_eq!(c.methods, ["GET", "POST"]);
        assert!(!c.credentials);
    }

    #[test]
    fn hostile_policies() {
        assert_eq!(
            run(json!({"origins": ["*", "null", "https://*.com", "https://a.example.com/", "https://A.example.com",
                                   "https://a.*.example.com", "https://a.example.com:0", "https://a.example.com:99999"],
                       "credentials": true, "methods": ["get"], "headers": ["X-Api-Key", ":path"], "max_age": "2m", "expose": []}))
            .expect_err("hostile"),
            vec![
                "routes[0].cors.expose: unknown field; expected origins, methods, headers, max_age or credentials",
                "routes[0].cors.origins[0]: \"*\" allows every origin, which browsers refuse together with credentials: true; list the origins",
                "routes[0].cors.origins[1]: \"null\" must start with https:// or http:// (an origin is scheme://host[:port])",
                "routes[0].cors.origins[2]: \"https://*.com\" matches every site under a top-level domain; name a domain, e.g. https://*.example.com",
                "routes[0].cors.origins[3]: \"https://a.example.com/\" has a path; an origin is scheme://host[:port], with nothing after the host",
                "routes[0].cors.origins[4]: \"https://A.example.com\" must be lowercase: write \"https://a.example.com\"",
                "routes[0].cors.origins[5]: \"https://a.*.example.com\": \"*\" may only stand for the first label (https://*.example.com)",
                "routes[0].cors.origins[6]: \"https://a.example.com:0\": the port must be a number from 1 to 65535",
                "routes[0].cors.origins[7]: \"https://a.example.com:99999\": the port must be a number from 1 to 65535",
                "routes[0].cors.methods[0]: \"get\" must be uppercase: write \"GET\"",
                "routes[0].cors.headers[0]: \"X-Api-Key\" must be lowercase: write \"x-api-key\"",
                "routes[0].cors.headers[1]: \":path\" is an HTTP/2 pseudo-header; Envoy sets those itself",
            ]
        );
        assert_eq!(
            run(json!({"origins": [], "max_age": "25h"})).expect_err("bad"),
            vec![
                "routes[0].cors.origins: must not be empty; list at least one, or leave cors out",
                "routes[0].cors.max_age: \"25h\" is not a duration; write a whole number with unit ms, s or m (\"5s\", \"250ms\")",
            ]
        );
        assert_eq!(
            run(json!({"origins": ["*"], "max_age": "1441m"})).expect_err("bad"),
            vec!["routes[0].cors.max_age: is 86460s; at most 86400s (browsers cache a preflight for a day at most)"]
        );
        assert_eq!(
            run(json!({"origins": ["*"], "max_age": "1500ms"})).expect_err("bad"),
            vec!["routes[0].cors.max_age: is 1.500s; browsers cache a preflight for whole seconds"]
        );
    }
}
