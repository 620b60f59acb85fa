//! `cors`: which browser origins may call a route, answered by Envoy's CORS filter
//! (docs/design.md#route-policy). Origins are exact (`https://app.example.com`), a suffix
//! pattern (`https://*.example.com`: any name under example.com) or `*` (any origin, never with
//! credentials: browsers refuse that pair, and it would hand every site the user's session).
//!
//! A pattern names one party's domain: never a public suffix (`https://*.co.uk`,
//! `https://*.github.io`: every site anyone registers there), judged by the Public Suffix List
//! (the `psl` crate, ICANN and private sections), and never the gateway's own base domain or a
//! name under it (every tenant's host). A pattern's domain that is not a public suffix is a
//! registrable domain or a name under one, so the same rule holds with `credentials: true`.

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
/// Longest domain and port of a pattern origin (what follows `*.` in
/// `https://*.example.com:8443`), in characters. A pattern renders as the RE2 regex
/// `^SCHEME://[a-z0-9-]+(\.[a-z0-9-]+)*\.DOMAIN(:PORT)?$` (`origin_matcher` in
/// `route_policy.rs`), whose program is 17 instructions more than `DOMAIN:PORT` has characters,
/// `http` or `https` alike; Envoy refuses a regex whose program is larger than 100 instructions
/// (its default `re2.max_program_size.error_level`). Measured with Envoy 1.40 in
/// `validator/tests/suite/route_policy_layers.rs`.
pub const MAX_CORS_PATTERN_DOMAIN_LEN: usize = 83;

const CORS_FIELDS: [&str; 6] = [
    "origins",
    "methods",
    "headers",
    "expose_headers",
    "max_age",
    "credentials",
];

/// `base_domain`: the gateway's (empty: none, as in a check without one).
pub(crate) fn cors(
    v: &Value,
    field: &str,
    base_domain: &str,
    problems: &mut Problems,
) -> Option<Cors> {
    let map = object(v, field, "a CORS policy", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &CORS_FIELDS, problems);

    let credentials = optional_flag(map, field, "credentials", problems);
    let origins = required(map, field, "origins", problems);
    let origins = names(origins, field, "origins", MAX_CORS_ORIGINS, problems, |o| {
        check_origin(o, credentials, base_domain)
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
    let expose_headers = names(
        map.get("expose_headers"),
        field,
        "expose_headers",
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
        expose_headers,
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
/// two labels after the `*`, a domain that is not a public suffix and not at or under
/// `base_domain` (the gateway's; empty: none), with at most [`MAX_CORS_PATTERN_DOMAIN_LEN`]
/// characters of domain and port.
pub fn check_origin(o: &str, credentials: bool, base_domain: &str) -> Result<(), String> {
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
    if !pattern {
        return Ok(());
    }
    if name.split('.').count() < 2 {
        return Err(format!(
            "{} matches every site under a top-level domain; name a domain, e.g. https://*.example.com",
            quote(o)
        ));
    }
    let base = base_domain.trim_end_matches('.').to_ascii_lowercase();
    if !base.is_empty() && (name == base || name.ends_with(&format!(".{base}"))) {
        return Err(format!(
            "{} matches the gateway's own hosts under {}, other tenants' among them; list the exact origins that call this route",
            quote(o),
            quote(&base)
        ));
    }
    if is_public_suffix(name) {
        return Err(format!(
            "{} matches every site under {}, a public suffix (anyone may have a name there); name your own domain, e.g. https://*.example.{name}",
            quote(o),
            quote(name)
        ));
    }
    let after = rest.len() - 2;
    if after > MAX_CORS_PATTERN_DOMAIN_LEN {
        return Err(format!(
            "{} has {after} characters after \"*.\"; a pattern's domain and port are at most {MAX_CORS_PATTERN_DOMAIN_LEN} (a longer one renders a regex Envoy refuses: RE2 program size above 100)",
            quote(o)
        ));
    }
    Ok(())
}

/// Whether `name` (lowercase DNS labels) is a public suffix: a name with no registrable domain
/// of its own, by the Public Suffix List's rules (wildcards and exceptions, private section
/// included; a name under no rule has its last label as the suffix).
fn is_public_suffix(name: &str) -> bool {
    psl::domain(name.as_bytes()).is_none()
}

#[cfg(test)]
mod tests {
    use super::super::test_cases::{assert_accepted, assert_refused};
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> Result<Cors, Vec<String>> {
        let mut p = Problems::default();
        cors(&v, "routes[0].cors", "api.example.com", &mut p)
            .ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn a_policy_is_sorted() {
        let c = run(json!({"origins": ["https://b.example.com", "https://*.a.example.com", "http://localhost:3000"],
                           "methods": ["POST", "GET"], "headers": ["x-api-key"], "max_age": "10m",
                           "expose_headers": ["x-request-id", "etag"]}))
        .expect("valid");
        assert_eq!(c.expose_headers, ["etag", "x-request-id"]);
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

    /// `check_origin` with the test policies' base domain.
    fn origin(credentials: bool) -> impl Fn(&str) -> Result<(), String> {
        move |o| check_origin(o, credentials, "api.example.com")
    }

    #[test]
    fn patterns_over_a_public_suffix_are_refused() {
        let suffix = "a public suffix (anyone may have a name there)";
        for credentials in [false, true] {
            assert_refused(
                origin(credentials),
                &[
                    ("https://*.co.uk", suffix),
                    ("https://*.co.uk:8443", suffix),
                    ("http://*.com.au", suffix),
                    ("https://*.github.io", suffix),
                    ("https://*.s3.amazonaws.com", suffix),
                    ("https://*.herokuapp.com", suffix),
                    ("https://*.appspot.com", suffix),
                    ("https://*.pages.dev", suffix),
                    ("https://*.vercel.app", suffix),
                    ("https://*.cloudfront.net", suffix),
                    // Under a wildcard rule (`*.ck`): every `x.ck` is a suffix.
                    ("https://*.anything.ck", suffix),
                    // One label: the top-level domain itself.
                    ("https://*.com", "a top-level domain"),
                    ("https://*.uk", "a top-level domain"),
                ],
            );
            assert_accepted(
                origin(credentials),
                &[
                    "https://*.example.co.uk",
                    "https://*.example.co.uk:8443",
                    "https://*.team.github.io",
                    "https://*.example.com",
                    "http://*.corp.internal",
                    // The `!www.ck` exception: a registrable domain under the wildcard.
                    "https://*.www.ck",
                    // An exact origin names one site: suffixes are not judged there.
                    "https://github.io",
                ],
            );
        }
        assert_eq!(
            check_origin("https://*.co.uk", true, "api.example.com"),
            Err("\"https://*.co.uk\" matches every site under \"co.uk\", a public suffix (anyone may have a name there); name your own domain, e.g. https://*.example.co.uk".into())
        );
    }

    #[test]
    fn patterns_over_the_base_domain_are_refused() {
        let own = "the gateway's own hosts under \"api.example.com\"";
        assert_refused(
            origin(false),
            &[
                ("https://*.api.example.com", own),
                ("http://*.api.example.com:8080", own),
                ("https://*.invoices.api.example.com", own),
                ("https://*.a.b.c.api.example.com", own),
            ],
        );
        assert_refused(origin(true), &[("https://*.api.example.com", own)]);
        assert_eq!(
            check_origin("https://*.api.example.com", false, "api.example.com"),
            Err("\"https://*.api.example.com\" matches the gateway's own hosts under \"api.example.com\", other tenants' among them; list the exact origins that call this route".into())
        );
        // A name that only ends in the same letters, or a domain around the base domain (the
        // organisation's own), is not the gateway's.
        assert_accepted(
            origin(true),
            &[
                "https://*.notapi.example.com",
                "https://*.api.example.com.evil.example",
                "https://*.example.com",
                // Exact origins are left as they are: the check cannot know whose host one is.
                "https://invoices.api.example.com",
            ],
        );
        // Without a base domain, nothing is the gateway's; the base domain is read as the
        // backend rule reads it.
        assert_eq!(check_origin("https://*.api.example.com", false, ""), Ok(()));
        assert!(check_origin("https://*.x.api.example.com", false, "API.example.com.").is_err());
    }

    #[test]
    fn a_pattern_is_bounded_by_envoy_regex_size() {
        let allowed = [
            format!("https://*.{}.{}.com", "a".repeat(63), "b".repeat(15)),
            format!("https://*.{}.{}.com:65535", "a".repeat(63), "b".repeat(9)),
            format!("http://*.{}.{}.com", "a".repeat(63), "b".repeat(15)),
        ];
        for o in &allowed {
            let after = o.split_once("://*.").expect("pattern").1;
            assert_eq!(after.len(), MAX_CORS_PATTERN_DOMAIN_LEN, "{o}");
            assert_eq!(check_origin(o, true, "api.example.com"), Ok(()), "{o}");
        }
        let cases = [
            (format!("https://*.{}.{}.com", "a".repeat(63), "b".repeat(16)), 84),
            (format!("https://*.{}.{}.com:8443", "a".repeat(63), "b".repeat(11)), 84),
            (format!("http://*.{}.{}.com", "a".repeat(63), "b".repeat(16)), 84),
            (format!("https://*.{}.{}.com", "a".repeat(60), "b".repeat(30)), 95),
            (format!("https://*.{}.{}.{}.com", "a".repeat(63), "b".repeat(63), "c".repeat(63)), 195),
        ];
        for (o, after) in &cases {
            let err = check_origin(o, false, "api.example.com").expect_err(o);
            assert!(
                err.ends_with(&format!(" has {after} characters after \"*.\"; a pattern's domain and port are at most 83 (a longer one renders a regex Envoy refuses: RE2 program size above 100)")),
                "{err}"
            );
        }
        // An exact origin renders an exact match, no regex: only its labels are bounded.
        let exact = format!("https://{}.{}.com", "a".repeat(63), "b".repeat(63));
        assert_eq!(check_origin(&exact, true, "api.example.com"), Ok(()));
    }

    #[test]
    fn hostile_policies() {
        assert_eq!(
            run(json!({"origins": ["*", "null", "https://*.com", "https://a.example.com/", "https://A.example.com",
                                   "https://a.*.example.com", "https://a.example.com:0", "https://a.example.com:99999",
                                   "https://*.github.io", "https://*.billing.api.example.com"],
                       "credentials": true, "methods": ["get"], "headers": ["X-Api-Key", ":path"], "max_age": "2m", "expose": [],
                       "expose_headers": ["ETag", "etag"]}))
            .expect_err("hostile"),
            vec![
                "routes[0].cors.expose: unknown field; expected origins, methods, headers, expose_headers, max_age or credentials",
                "routes[0].cors.origins[0]: \"*\" allows every origin, which browsers refuse together with credentials: true; list the origins",
                "routes[0].cors.origins[1]: \"null\" must start with https:// or http:// (an origin is scheme://host[:port])",
                "routes[0].cors.origins[2]: \"https://*.com\" matches every site under a top-level domain; name a domain, e.g. https://*.example.com",
                "routes[0].cors.origins[3]: \"https://a.example.com/\" has a path; an origin is scheme://host[:port], with nothing after the host",
                "routes[0].cors.origins[4]: \"https://A.example.com\" must be lowercase: write \"https://a.example.com\"",
                "routes[0].cors.origins[5]: \"https://a.*.example.com\": \"*\" may only stand for the first label (https://*.example.com)",
                "routes[0].cors.origins[6]: \"https://a.example.com:0\": the port must be a number from 1 to 65535",
                "routes[0].cors.origins[7]: \"https://a.example.com:99999\": the port must be a number from 1 to 65535",
                "routes[0].cors.origins[8]: \"https://*.github.io\" matches every site under \"github.io\", a public suffix (anyone may have a name there); name your own domain, e.g. https://*.example.github.io",
                "routes[0].cors.origins[9]: \"https://*.billing.api.example.com\" matches the gateway's own hosts under \"api.example.com\", other tenants' among them; list the exact origins that call this route",
                "routes[0].cors.methods[0]: \"get\" must be uppercase: write \"GET\"",
                "routes[0].cors.headers[0]: \"X-Api-Key\" must be lowercase: write \"x-api-key\"",
                "routes[0].cors.headers[1]: \":path\" is an HTTP/2 pseudo-header; Envoy sets those itself",
                "routes[0].cors.expose_headers[0]: \"ETag\" must be lowercase: write \"etag\"",
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
