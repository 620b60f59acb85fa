//! Reading typed values out of JSON by hand, so each wrong type or missing field becomes a
//! problem at its own path instead of one serde error that stops at the first.

use super::report::{child, describe, index, quote, unknown_field, Problems};
use serde_json::{Map, Value};

/// `v` as an object, or a problem saying what was expected there.
pub(crate) fn object<'v>(
    v: &'v Value,
    field: &str,
    what: &str,
    problems: &mut Problems,
) -> Option<&'v Map<String, Value>> {
    match v {
        Value::Object(map) => Some(map),
        other => {
            problems.push(
                field,
                format!("expected {what} (a JSON object), got {}", describe(other)),
            );
            None
        }
    }
}

/// One problem per key that is not in `known`.
pub(crate) fn reject_unknown(
    map: &Map<String, Value>,
    field: &str,
    known: &[&str],
    problems: &mut Problems,
) {
    for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
        problems.push(child(field, key), unknown_field(key, known));
    }
}

/// A required field's value, or a "missing" problem at its path.
pub(crate) fn required<'v>(
    map: &'v Map<String, Value>,
    field: &str,
    key: &str,
    problems: &mut Problems,
) -> Option<&'v Value> {
    let v = map.get(key);
    if v.is_none() {
        problems.push(child(field, key), "required field is missing");
    }
    v
}

/// An optional `true`/`false` field: `false` when absent, and `false` after the problem
/// `expected true or false, got …` at its path when it is anything else.
pub(crate) fn optional_flag(
    map: &Map<String, Value>,
    field: &str,
    key: &str,
    problems: &mut Problems,
) -> bool {
    match map.get(key) {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            problems.push(
                child(field, key),
                format!("expected true or false, got {}", describe(other)),
            );
            false
        }
    }
}

pub(crate) fn string<'v>(v: &'v Value, field: &str, problems: &mut Problems) -> Option<&'v str> {
    match v {
        Value::String(s) => Some(s),
        other => {
            problems.push(field, format!("expected a string, got {}", describe(other)));
            None
        }
    }
}

/// A required string field run through `parse`: a missing field, a non-string and what `parse`
/// refuses (its reason) are each a problem at the field's own path.
pub(crate) fn required_parsed<T>(
    map: &Map<String, Value>,
    field: &str,
    key: &str,
    problems: &mut Problems,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Option<T> {
    let at = child(field, key);
    let s = required(map, field, key, problems).and_then(|v| string(v, &at, problems))?;
    parse(s).map_err(|reason| problems.push(&at, reason)).ok()
}

/// A check as a parse (for [`required_parsed`]): the string as written when `rule` passes it.
pub(crate) fn as_written<R>(
    rule: impl FnOnce(&str) -> Result<R, String>,
) -> impl FnOnce(&str) -> Result<String, String> {
    move |s| rule(s).map(|_| s.to_string())
}

/// `v` as a list, or the problem `expected a list of {what}, got …`.
pub(crate) fn list<'v>(
    v: &'v Value,
    field: &str,
    what: &str,
    problems: &mut Problems,
) -> Option<&'v [Value]> {
    let Value::Array(items) = v else {
        problems.push(
            field,
            format!("expected a list of {what}, got {}", describe(v)),
        );
        return None;
    };
    Some(items)
}

/// `v` as a list of at least one item: else the problem [`list`] pushes, or `when_empty`.
pub(crate) fn non_empty_list<'v>(
    v: &'v Value,
    field: &str,
    what: &str,
    when_empty: &str,
    problems: &mut Problems,
) -> Option<&'v [Value]> {
    let items = list(v, field, what, problems)?;
    if items.is_empty() {
        problems.push(field, when_empty);
        return None;
    }
    Some(items)
}

/// The problem `has N {what}; at most {max}{scope}` when a list is longer than `max` (the list is
/// still checked item by item, so the author sees every other problem too).
pub(crate) fn at_most(
    items: &[Value],
    max: usize,
    field: &str,
    what: &str,
    scope: &str,
    problems: &mut Problems,
) {
    if items.len() > max {
        problems.push(
            field,
            format!("has {} {what}; at most {max}{scope}", items.len()),
        );
    }
}

/// How a set of strings is spoken of in its problems: a list of `what`, `when_empty` for an
/// empty one, `item` for one entry (`a method name (a string)`).
pub(crate) struct StringSet {
    pub what: &'static str,
    pub when_empty: &'static str,
    pub item: &'static str,
}

impl StringSet {
    /// A non-empty list of distinct strings that pass `check`, sorted; `None` after pushing
    /// every problem found.
    pub(crate) fn read(
        &self,
        v: &Value,
        field: &str,
        problems: &mut Problems,
        check: impl Fn(&str) -> Result<(), String>,
    ) -> Option<Vec<String>> {
        let items = non_empty_list(v, field, self.what, self.when_empty, problems)?;
        let before = problems.0.len();
        let sorted = distinct_strings(items, field, self.item, problems, check);
        (problems.0.len() == before).then_some(sorted)
    }
}

/// The distinct strings of `items` that pass `check`, sorted so the rendered bytes do not depend
/// on the order an author listed them in. Each item that is not a string (`expected {item},
/// got …`), that `check` refuses (its reason) or that repeats an earlier one is a problem at its
/// index.
pub(crate) fn distinct_strings(
    items: &[Value],
    field: &str,
    item: &str,
    problems: &mut Problems,
    check: impl Fn(&str) -> Result<(), String>,
) -> Vec<String> {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for (i, value) in items.iter().enumerate() {
        let at = index(field, i);
        let Value::String(s) = value else {
            problems.push(at, format!("expected {item}, got {}", describe(value)));
            continue;
        };
        if let Err(reason) = check(s) {
            problems.push(at, reason);
        } else if let Some((_, first)) = seen.iter().find(|(x, _)| *x == s.as_str()) {
            problems.push(
                at,
                format!(
                    "{} is listed twice (also {})",
                    quote(s),
                    index(field, *first)
                ),
            );
        } else {
            seen.push((s, i));
        }
    }
    let mut sorted: Vec<String> = seen.into_iter().map(|(s, _)| s.to_string()).collect();
    sorted.sort();
    sorted
}

/// A JSON integer in `1..=max`. Floats (`10.5`, and `1e3`, which JSON reads as a float),
/// negatives, zero and strings are all problems.
pub(crate) fn positive_int(
    v: &Value,
    field: &str,
    max: u32,
    problems: &mut Problems,
) -> Option<u32> {
    let reason = match v {
        Value::Number(n) => match n.as_u64() {
            Some(0) => "must be at least 1".to_string(),
            Some(n) if n > u64::from(max) => format!("is {n}; at most {max}"),
            Some(n) => return u32::try_from(n).ok(),
            None => format!("expected a positive integer, got {n}"),
        },
        other => format!("expected a positive integer, got {}", describe(other)),
    };
    problems.push(field, reason);
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn int(v: Value) -> Result<u32, String> {
        let mut p = Problems::default();
        positive_int(&v, "f", 1000, &mut p).ok_or_else(|| p.0[0].reason.clone())
    }

    #[test]
    fn positive_integers() {
        assert_eq!(int(json!(1)), Ok(1));
        assert_eq!(int(json!(1000)), Ok(1000));
        assert_eq!(int(json!(0)), Err("must be at least 1".into()));
        assert_eq!(int(json!(1001)), Err("is 1001; at most 1000".into()));
        assert_eq!(
            int(json!(-5)),
            Err("expected a positive integer, got -5".into())
        );
        assert_eq!(
            int(json!(10.5)),
            Err("expected a positive integer, got 10.5".into())
        );
        assert_eq!(
            int(json!(1e3)),
            Err("expected a positive integer, got 1000.0".into())
        );
        assert_eq!(
            int(json!("100")),
            Err("expected a positive integer, got string".into())
        );
        assert_eq!(
            int(json!(null)),
            Err("expected a positive integer, got null".into())
        );
        assert_eq!(
            int(json!(u64::MAX)),
            Err(format!("is {}; at most 1000", u64::MAX))
        );
    }

    #[test]
    fn unknown_and_missing_fields_are_named() {
        let v = json!({"path": "/", "limitz": []});
        let mut p = Problems::default();
        let map = object(&v, "routes[0]", "a route", &mut p).expect("object");
        reject_unknown(map, "routes[0]", &["path", "methods", "limits"], &mut p);
        assert!(required(map, "routes[0]", "methods", &mut p).is_none());
        assert_eq!(p.0[0].field, "routes[0].limitz");
        assert!(p.0[0]
            .reason
            .starts_with("unknown field; expected path, methods or limits"));
        assert_eq!(p.0[1].field, "routes[0].methods");
        assert_eq!(p.0[1].reason, "required field is missing");
    }

    #[test]
    fn wrong_types_are_named() {
        let mut p = Problems::default();
        assert!(object(&json!([1]), "routes[0]", "a route", &mut p).is_none());
        assert!(string(&json!(7), "host", &mut p).is_none());
        assert_eq!(p.0[0].reason, "expected a route (a JSON object), got array");
        assert_eq!(p.0[1].reason, "expected a string, got 7");
    }
}
