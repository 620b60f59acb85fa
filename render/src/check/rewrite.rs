//! `rewrite`: the path the backend sees instead of the one the client sent
//! (docs/design.md#route-policy). The string form and `{ "prefix" }` replace the matched prefix;
//! the route matches whole segments, so `/invoices` → `/v2/invoices` turns `/invoices/7` into
//! `/v2/invoices/7`. A replacement must itself be a path the checks accept (no `//`, no dot
//! segments), and it must end in `/` exactly when the route's path does, or the join doubles or
//! loses a slash, except `/`, which strips the prefix to the root as Gateway API does
//! (`/strip/three` → `/three`, `/strip` → `/`). `{ "path" }` replaces the whole path.

use super::fields::{reject_unknown, string};
use super::path::check_path;
use super::report::{child, describe, quote, Problems};
use crate::entry::{Rewrite, RewriteTo};
use serde_json::Value;

const REWRITE_FIELDS: [&str; 2] = ["path", "prefix"];

/// A replacement of the matched prefix `path` (when the route's path is valid).
pub fn check_rewrite(rewrite: &str, path: Option<&str>) -> Result<(), String> {
    check_path(rewrite)?;
    let Some(path) = path else { return Ok(()) };
    let (path_slash, rewrite_slash) = (path.ends_with('/'), rewrite.ends_with('/'));
    if path_slash == rewrite_slash || rewrite == "/" {
        return Ok(());
    }
    let example = format!("{path}{}7", if path_slash { "" } else { "/" });
    let becomes = format!("{rewrite}{}", &example[path.len()..]);
    Err(format!(
        "{} {} with \"/\" and path {} {}: {} would reach the backend as {}",
        quote(rewrite),
        if rewrite_slash {
            "ends"
        } else {
            "does not end"
        },
        quote(path),
        if path_slash { "does" } else { "does not" },
        quote(&example),
        quote(&becomes)
    ))
}

/// A route's `rewrite`: a string (the matched prefix), `{ "prefix" }` or `{ "path" }`.
pub(crate) fn rewrite(
    v: &Value,
    field: &str,
    path: Option<&str>,
    problems: &mut Problems,
) -> Option<Rewrite> {
    let checked = |at: &str, s: &str, rule: &dyn Fn(&str) -> Result<(), String>, problems: &mut Problems| {
        rule(s).map_err(|reason| problems.push(at, reason)).ok()
    };
    match v {
        Value::String(s) => {
            checked(field, s, &|r| check_rewrite(r, path), problems).map(|()| Rewrite::Prefix(s.clone()))
        }
        Value::Object(map) => {
            let before = problems.0.len();
            reject_unknown(map, field, &REWRITE_FIELDS, problems);
            let mut to = RewriteTo::default();
            if let Some(v) = map.get("path") {
                let at = child(field, "path");
                if let Some(s) = string(v, &at, problems) {
                    to.path = checked(&at, s, &check_path, problems).map(|()| s.to_string());
                }
            }
            if let Some(v) = map.get("prefix") {
                let at = child(field, "prefix");
                if let Some(s) = string(v, &at, problems) {
                    to.prefix = checked(&at, s, &|r| check_rewrite(r, path), problems).map(|()| s.to_string());
                }
            }
            match (map.contains_key("path"), map.contains_key("prefix")) {
                (true, true) => problems.push(
                    &child(field, "prefix"),
                    "either path (the whole path) or prefix (the matched prefix) is replaced, not both",
                ),
                (false, false) => problems.push(field, "needs path (the whole path) or prefix (the matched prefix)"),
                _ => {}
            }
            (problems.0.len() == before).then_some(Rewrite::To(to))
        }
        other => {
            problems.push(
                field,
                format!("expected a path or an object with path or prefix, got {}", describe(other)),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_aware() {
        assert_eq!(check_rewrite("/v2/invoices", Some("/invoices")), Ok(()));
        assert_eq!(check_rewrite("/v2/", Some("/")), Ok(()));
        assert_eq!(
            check_rewrite("/v2/", Some("/invoices")),
            Err("\"/v2/\" ends with \"/\" and path \"/invoices\" does not: \"/invoices/7\" would reach the backend as \"/v2//7\"".into())
        );
        // `/` strips the matched prefix to the root.
        assert_eq!(check_rewrite("/", Some("/invoices")), Ok(()));
        assert_eq!(
            check_rewrite("/v2", Some("/api/")),
            Err("\"/v2\" does not end with \"/\" and path \"/api/\" does: \"/api/7\" would reach the backend as \"/v27\"".into())
        );
    }

    #[test]
    fn the_object_form_takes_one_of_path_or_prefix() {
        let judge = |v: Value| {
            let mut problems = Problems::default();
            let r = rewrite(&v, "routes[0].rewrite", Some("/strip"), &mut problems);
            (r, problems.0.iter().map(|p| format!("{}: {}", p.field, p.reason)).collect::<Vec<_>>())
        };
        use serde_json::json;
        assert_eq!(judge(json!("/v2")).0, Some(Rewrite::prefix("/v2")));
        let (r, none) = judge(json!({ "path": "/full" }));
        assert!(none.is_empty(), "{none:?}");
        assert_eq!(r.map(|r| format!("{:?}", r.replace())), Some("Path(\"/full\")".into()));
        let (r, _) = judge(json!({ "prefix": "/" }));
        assert_eq!(r.map(|r| format!("{:?}", r.replace())), Some("Prefix(\"/\")".into()));
        assert_eq!(
            judge(json!({ "path": "/a", "prefix": "/b" })).1,
            ["routes[0].rewrite.prefix: either path (the whole path) or prefix (the matched prefix) is replaced, not both"]
        );
        assert_eq!(
            judge(json!({})).1,
            ["routes[0].rewrite: needs path (the whole path) or prefix (the matched prefix)"]
        );
        assert_eq!(judge(json!({ "path": "/a/../admin" })).1.len(), 1);
        assert!(judge(json!({ "paths": "/a" })).1[0].starts_with("routes[0].rewrite.paths: "));
        assert!(judge(json!(7)).1[0].starts_with("routes[0].rewrite: expected a path or an object"));
    }

    #[test]
    fn must_be_a_clean_path() {
        for bad in [
            "",
            "v2",
            "//evil.example",
            "/a/../admin",
            "/a//b",
            "/a?x",
            "/a\r\nx",
            "/%2e%2e",
        ] {
            assert!(check_rewrite(bad, Some("/invoices")).is_err(), "{bad:?}");
        }
    }
}
