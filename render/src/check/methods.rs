//! `methods`: an optional, non-empty set of HTTP methods, kept sorted so the rendered bytes do
//! not depend on the order an author listed them in.

use super::fields::StringSet;
use super::report::{describe, one_of, quote, Problems};
use serde_json::Value;

/// The HTTP method set (RFC 9110 plus PATCH), spelled as on the wire.
pub const METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

/// The sorted methods, or `None` after pushing the problems.
pub(crate) fn methods(v: &Value, field: &str, problems: &mut Problems) -> Option<Vec<String>> {
    if !v.is_array() {
        problems.push(
            field,
            format!(
                "expected a list of HTTP methods, got {}; leave methods out to match every method",
                describe(v)
            ),
        );
        return None;
    }
    METHOD_SET.read(v, field, problems, check_method)
}

const METHOD_SET: StringSet = StringSet {
    what: "HTTP methods",
    when_empty: "must not be empty; leave methods out to match every method",
    item: "a method name (a string)",
};

pub fn check_method(m: &str) -> Result<(), String> {
    if METHODS.contains(&m) {
        return Ok(());
    }
    let upper = m.to_ascii_uppercase();
    if METHODS.contains(&upper.as_str()) {
        return Err(format!(
            "{} must be uppercase: write {}",
            quote(m),
            quote(&upper)
        ));
    }
    Err(format!(
        "unknown method {}; expected {}",
        quote(m),
        one_of(&METHODS)
    ))
}

/// The methods two routes on the same path would both answer (`None` = every method).
pub fn shared_methods(a: Option<&[String]>, b: Option<&[String]>) -> Vec<String> {
    let all: Vec<String> = METHODS.iter().map(|m| m.to_string()).collect();
    let a = a.unwrap_or(&all);
    let b = b.unwrap_or(&all);
    a.iter().filter(|m| b.contains(m)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> Result<Vec<String>, Vec<String>> {
        let mut p = Problems::default();
        methods(&v, "routes[0].methods", &mut p)
            .ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn sorted_and_canonical() {
        assert_eq!(
            run(json!(["POST", "GET", "DELETE"])),
            Ok(vec!["DELETE".into(), "GET".into(), "POST".into()])
        );
        assert_eq!(run(json!(METHODS)).map(|m| m.len()), Ok(9));
    }

    #[test]
    fn rejections_name_the_item() {
        assert_eq!(
            run(json!([])),
            Err(vec![
                "routes[0].methods: must not be empty; leave methods out to match every method"
                    .into()
            ])
        );
        assert_eq!(
            run(json!(["get"])),
            Err(vec![
                "routes[0].methods[0]: \"get\" must be uppercase: write \"GET\"".into()
            ])
        );
        let unknown = run(json!(["GET", "FETCH"])).expect_err("unknown");
        assert!(
            unknown[0]
                .starts_with("routes[0].methods[1]: unknown method \"FETCH\"; expected GET, HEAD"),
            "{unknown:?}"
        );
        let dup = run(json!(["GET", "POST", "GET"])).expect_err("dup");
        assert_eq!(
            dup,
            vec![
                "routes[0].methods[2]: \"GET\" is listed twice (also routes[0].methods[0])"
                    .to_string()
            ]
        );
        assert!(run(json!("GET")).expect_err("string")[0].contains("expected a list"));
        assert!(run(json!([1])).expect_err("number")[0].contains("got 1"));
        assert!(run(json!(["GET\n"])).is_err());
        assert!(run(json!(["G ET"])).is_err());
    }

    #[test]
    fn every_problem_is_reported() {
        assert_eq!(
            run(json!(["get", "FOO", null])).expect_err("three").len(),
            3
        );
    }

    #[test]
    fn shared_methods_treats_absent_as_all() {
        let get = vec!["GET".to_string()];
        let post = vec!["POST".to_string()];
        assert_eq!(
            shared_methods(Some(&get), Some(&post)),
            Vec::<String>::new()
        );
        assert_eq!(shared_methods(Some(&get), None), get);
        assert_eq!(shared_methods(None, None).len(), 9);
    }
}
