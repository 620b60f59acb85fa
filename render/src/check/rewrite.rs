//! `rewrite`: the path prefix the backend sees instead of the matched one
//! (docs/design.md#route-policy). Envoy replaces the matched prefix, and the route matches whole
//! segments, so `/invoices` → `/v2/invoices` turns `/invoices/7` into `/v2/invoices/7`. The
//! rewrite must itself be a path the checks accept (no `//`, no dot segments), and it must end
//! in `/` exactly when the route's path does, or the join doubles or loses a slash.

use super::path::check_path;
use super::report::quote;

pub fn check_rewrite(rewrite: &str, path: Option<&str>) -> Result<(), String> {
    check_path(rewrite)?;
    let Some(path) = path else { return Ok(()) };
    let (path_slash, rewrite_slash) = (path.ends_with('/'), rewrite.ends_with('/'));
    if path_slash == rewrite_slash {
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
        assert_eq!(
            check_rewrite("/", Some("/invoices")),
            Err("\"/\" ends with \"/\" and path \"/invoices\" does not: \"/invoices/7\" would reach the backend as \"//7\"".into())
        );
        assert_eq!(
            check_rewrite("/v2", Some("/api/")),
            Err("\"/v2\" does not end with \"/\" and path \"/api/\" does: \"/api/7\" would reach the backend as \"/v27\"".into())
        );
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
