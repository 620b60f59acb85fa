//! A route's `headers` and `query` conditions (docs/design.md#route-policy): exact values or
//! presence only, no regex, so a match costs Envoy a string compare and cannot be made slow.
//! Each list is kept sorted by name, so the order it was written in never changes the route.

use super::entry_policy::{check_cohort_header_name, check_cohort_header_value};
use super::fields::{list, object, reject_unknown, required, string};
use super::report::{child, describe, index, quote, Problems};
use crate::entry::{HeaderMatch, QueryMatch};
use serde_json::{Map, Value};

/// Header conditions one route may carry.
pub const MAX_HEADER_MATCHES: usize = 8;
/// Query conditions one route may carry.
pub const MAX_QUERY_MATCHES: usize = 8;
/// Longest query parameter name.
pub const MAX_QUERY_NAME_LEN: usize = 64;
/// Longest query parameter value.
pub const MAX_QUERY_VALUE_LEN: usize = 256;
/// A query parameter's name, as a JSON Schema pattern: RFC 3986's unreserved characters.
pub const QUERY_NAME_CHARSET: &str = "^[A-Za-z0-9._~-]+$";
/// A query parameter's value, as a JSON Schema pattern: unreserved characters and the
/// sub-delimiters but `&`, plus `:@/?`. No `%`: Envoy compares the value as sent, so an encoded
/// form would be a second spelling the team did not mean.
pub const QUERY_VALUE_CHARSET: &str = "^[A-Za-z0-9._~!$'()*+,;=:@/?-]+$";

const MATCH_FIELDS: [&str; 3] = ["name", "value", "present"];

/// `headers`: `[{ "name", "value" } | { "name", "present": true|false }]`.
pub(crate) fn header_matches(
    v: &Value,
    field: &str,
    problems: &mut Problems,
) -> Option<Vec<HeaderMatch>> {
    let kind = Kind { name: "header", max: MAX_HEADER_MATCHES, absence: true, name_rule: check_cohort_header_name, value_rule: check_header_value };
    conditions(v, field, &kind, problems, |name, value, present| HeaderMatch { name, value, present })
}

/// `query`: `[{ "name", "value" } | { "name", "present": true }]`.
pub(crate) fn query_matches(
    v: &Value,
    field: &str,
    problems: &mut Problems,
) -> Option<Vec<QueryMatch>> {
    let kind = Kind { name: "query", max: MAX_QUERY_MATCHES, absence: false, name_rule: check_query_name, value_rule: check_query_value };
    conditions(v, field, &kind, problems, |name, value, present| QueryMatch { name, value, present })
}

/// What tells header conditions and query conditions apart.
struct Kind {
    name: &'static str,
    max: usize,
    /// Whether `present: false` can be matched.
    absence: bool,
    name_rule: fn(&str) -> Result<(), String>,
    value_rule: fn(&str) -> Result<(), String>,
}

/// The list walk both kinds share: at most `kind.max` objects, each name once, sorted by name.
fn conditions<T: Ord>(
    v: &Value,
    field: &str,
    kind: &Kind,
    problems: &mut Problems,
    build: impl Fn(String, Option<String>, Option<bool>) -> T,
) -> Option<Vec<T>> {
    let what = kind.name;
    let items = list(v, field, &format!("{what} conditions"), problems)?;
    let before = problems.0.len();
    if items.is_empty() {
        problems.push(field, format!("an empty list matches nothing more; leave {what} conditions out"));
    }
    if items.len() > kind.max {
        problems.push(field, format!("has {} {what} conditions; at most {} per route", items.len(), kind.max));
    }
    let mut out = Vec::with_capacity(items.len());
    let mut seen: Vec<(&str, String)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = index(field, i);
        let Some(map) = object(item, &at, &format!("a {what} condition"), problems) else {
            continue;
        };
        reject_unknown(map, &at, &MATCH_FIELDS, problems);
        if let Some(name) = map.get("name").and_then(Value::as_str) {
            if let Some((_, earlier)) = seen.iter().find(|(n, _)| *n == name) {
                problems.push(
                    &at,
                    format!("{} is matched twice (also {earlier}); give each {what} one condition", quote(name)),
                );
            }
            seen.push((name, at.clone()));
        }
        let name = named(map, &at, problems, kind.name_rule);
        if let (Some(name), Some((value, present))) =
            (name, value_or_presence(map, &at, kind.absence, problems, kind.value_rule))
        {
            out.push(build(name, value, present));
        }
    }
    out.sort();
    (problems.0.len() == before).then_some(out)
}

fn named(
    map: &Map<String, Value>,
    at: &str,
    problems: &mut Problems,
    rule: fn(&str) -> Result<(), String>,
) -> Option<String> {
    let field = child(at, "name");
    let name = string(required(map, at, "name", problems)?, &field, problems)?;
    rule(name)
        .map(|()| name.to_string())
        .map_err(|reason| problems.push(&field, reason))
        .ok()
}

/// Exactly one of `value` and `present`; `present: false` only where absence can be matched.
fn value_or_presence(
    map: &Map<String, Value>,
    at: &str,
    absence: bool,
    problems: &mut Problems,
    rule: fn(&str) -> Result<(), String>,
) -> Option<(Option<String>, Option<bool>)> {
    match (map.get("value"), map.get("present")) {
        (Some(_), Some(_)) => {
            problems.push(child(at, "present"), "either value or present, not both");
            None
        }
        (None, None) => {
            problems.push(at, "needs value (an exact value) or present");
            None
        }
        (Some(v), None) => {
            let field = child(at, "value");
            let value = string(v, &field, problems)?;
            rule(value)
                .map(|()| (Some(value.to_string()), None))
                .map_err(|reason| problems.push(&field, reason))
                .ok()
        }
        (None, Some(v)) => {
            let field = child(at, "present");
            match v {
                Value::Bool(true) => Some((None, Some(true))),
                Value::Bool(false) if absence => Some((None, Some(false))),
                Value::Bool(false) => {
                    problems.push(
                        &field,
                        "a query condition matches a parameter that is sent; a route without the condition already takes requests without it",
                    );
                    None
                }
                other => {
                    problems.push(&field, format!("expected true or false, got {}", describe(other)));
                    None
                }
            }
        }
    }
}

fn check_header_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Err("must not be empty; use present: true to match any value".into());
    }
    check_cohort_header_value(v)
}

/// A query parameter's name: 1 to 64 unreserved characters.
pub fn check_query_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_QUERY_NAME_LEN {
        return Err(format!("{} must be 1 to {MAX_QUERY_NAME_LEN} characters", quote(name)));
    }
    match name.chars().find(|c| !is_unreserved(*c)) {
        Some(c) => Err(format!(
            "{} has {}; a parameter name is letters, digits and -._~",
            quote(name),
            quote(&c.to_string())
        )),
        None => Ok(()),
    }
}

/// A query parameter's value: 1 to 256 of the characters [`QUERY_VALUE_CHARSET`] allows.
pub fn check_query_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("must not be empty; use present: true to match any value".into());
    }
    if value.len() > MAX_QUERY_VALUE_LEN {
        return Err(format!("is {} bytes long; at most {MAX_QUERY_VALUE_LEN}", value.len()));
    }
    match value.chars().find(|c| !is_query_value_char(*c)) {
        Some(c) => Err(format!(
            "{} has {}; a value is letters, digits and -._~!$'()*+,;=:@/? (no & or #, and nothing percent-encoded: Envoy compares the value as sent)",
            quote(value),
            quote(&c.to_string())
        )),
        None => Ok(()),
    }
}

fn is_unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

pub(crate) fn is_query_value_char(c: char) -> bool {
    is_unreserved(c) || "!$'()*+,;=:@/?".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems_of<T>(f: impl Fn(&Value, &str, &mut Problems) -> Option<T>, v: Value) -> (Option<T>, Vec<String>) {
        let mut p = Problems::default();
        let out = f(&v, "routes[0].headers", &mut p);
        (out, p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn header_conditions_are_sorted_values_or_presence() {
        let (m, none) = problems_of(
            header_matches,
            json!([{ "name": "x-version", "value": "2" }, { "name": "x-beta", "present": true }, { "name": "x-debug", "present": false }]),
        );
        assert!(none.is_empty(), "{none:?}");
        let names: Vec<_> = m.expect("checked").into_iter().map(|h| (h.name, h.value, h.present)).collect();
        assert_eq!(
            names,
            [
                ("x-beta".to_string(), None, Some(true)),
                ("x-debug".to_string(), None, Some(false)),
                ("x-version".to_string(), Some("2".to_string()), None)
            ]
        );
    }

    #[test]
    fn bad_header_conditions_name_the_field() {
        let cases = [
            (json!([{ "name": "X-Up", "value": "1" }]), "routes[0].headers[0].name: "),
            (json!([{ "name": "host", "value": "a" }]), "routes[0].headers[0].name: "),
            (json!([{ "name": "x-forwarded-for", "present": true }]), "routes[0].headers[0].name: "),
            (json!([{ "name": "x-a", "value": "" }]), "routes[0].headers[0].value: must not be empty"),
            (json!([{ "name": "x-a", "value": "a\nb" }]), "routes[0].headers[0].value: "),
            (json!([{ "name": "x-a" }]), "routes[0].headers[0]: needs value"),
            (json!([{ "name": "x-a", "value": "1", "present": true }]), "routes[0].headers[0].present: either"),
            (json!([{ "name": "x-a", "present": "yes" }]), "routes[0].headers[0].present: expected true or false"),
            (json!([{ "name": "x-a", "regex": ".*" }]), "routes[0].headers[0].regex: "),
            (json!([{ "name": "x-a", "value": "1" }, { "name": "x-a", "value": "2" }]), "routes[0].headers[1]: \"x-a\" is matched twice (also routes[0].headers[0])"),
            (json!([]), "routes[0].headers: an empty list"),
            (json!({ "x-a": "1" }), "routes[0].headers: expected a list"),
        ];
        for (v, want) in cases {
            let (out, problems) = problems_of(header_matches, v.clone());
            assert!(out.is_none(), "{v}");
            assert!(problems.iter().any(|p| p.starts_with(want)), "{v}: {problems:?}");
        }
        let many: Vec<Value> = (0..=MAX_HEADER_MATCHES).map(|i| json!({ "name": format!("x-{i}"), "present": true })).collect();
        let (_, problems) = problems_of(header_matches, Value::Array(many));
        assert_eq!(problems, ["routes[0].headers: has 9 header conditions; at most 8 per route"]);
    }

    #[test]
    fn query_conditions_take_values_as_sent_and_presence() {
        let (m, none) = problems_of(query_matches, json!([{ "name": "v", "value": "a/b:c" }, { "name": "debug", "present": true }]));
        assert!(none.is_empty(), "{none:?}");
        assert_eq!(m.expect("checked")[0].name, "debug");
        for (v, want) in [
            (json!([{ "name": "debug", "present": false }]), ".present: a query condition matches a parameter that is sent"),
            (json!([{ "name": "a b", "value": "1" }]), ".name: "),
            (json!([{ "name": "a", "value": "x%20y" }]), ".value: "),
            (json!([{ "name": "a", "value": "x&b=2" }]), ".value: "),
            (json!([{ "name": "a", "value": "x#y" }]), ".value: "),
        ] {
            let (out, problems) = problems_of(query_matches, v.clone());
            assert!(out.is_none(), "{v}");
            assert!(problems.iter().any(|p| p.contains(want)), "{v}: {problems:?}");
        }
    }
}
