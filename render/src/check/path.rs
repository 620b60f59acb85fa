//! `path`: a segment-aware prefix. Anything a proxy or a backend could normalise differently
//! (dot segments, doubled or encoded slashes, backslashes) is rejected, because a prefix that
//! means one thing to Envoy and another to the backend lets a request slip past its route.

use super::report::quote;

/// Longest path prefix, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// Characters RFC 3986 allows in a path besides letters, digits, `/` and `%XX`.
const PATH_PUNCTUATION: &str = "-._~!$&'()*+,;=:@";
/// The characters of a path, as a JSON Schema pattern: letters, digits, `/`, `%` and
/// [`PATH_PUNCTUATION`].
pub const PATH_CHARSET: &str = "^[A-Za-z0-9/%!$&'()*+,;=:@._~-]+$";

pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("must not be empty; a path starts with \"/\"".into());
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(format!(
            "is {} bytes long; at most {MAX_PATH_BYTES}",
            path.len()
        ));
    }
    if !path.starts_with('/') {
        return Err(format!("{} must start with \"/\"", quote(path)));
    }
    check_characters(path)?;
    check_percent_escapes(path)?;
    if path.contains("//") {
        return Err(format!(
            "{} contains \"//\" (an empty segment); write single slashes",
            quote(path)
        ));
    }
    for segment in path.split('/') {
        // `..;` is how some servlet containers spell `..`: judge the segment without parameters.
        let bare = segment.split(';').next().unwrap_or(segment);
        if bare == "." || bare == ".." {
            return Err(format!(
                "{} contains the dot segment {}; write the path without \"/./\" or \"/../\"",
                quote(path),
                quote(segment)
            ));
        }
    }
    Ok(())
}

fn check_characters(path: &str) -> Result<(), String> {
    for c in path.chars() {
        let why = match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '/' | '%' => continue,
            c if PATH_PUNCTUATION.contains(c) => continue,
            c if c.is_whitespace() => "whitespace is not allowed in a path".to_string(),
            c if c.is_control() => "control characters are not allowed in a path".to_string(),
            '?' => "\"?\" starts a query string; a route matches the path only".to_string(),
            '#' => "\"#\" starts a fragment, which clients never send".to_string(),
            '\\' => "backslashes are not allowed (some servers read them as \"/\")".to_string(),
            c if !c.is_ascii() => "non-ASCII characters are not allowed; percent-encode them (%XX)".to_string(),
            c => format!(
                "character {} is not allowed; use letters, digits, \"/\", %XX or one of {PATH_PUNCTUATION}",
                quote(&c.to_string())
            ),
        };
        return Err(format!("{}: {why}", quote(path)));
    }
    Ok(())
}

/// Every `%` starts a well-formed escape, and no escape hides a character the other checks
/// reject: `.`, `/` and `\` (path traversal), `%` (double encoding) or a control character.
fn check_percent_escapes(path: &str) -> Result<(), String> {
    let bytes = path.as_bytes();
    let mut i = 0;
    while let Some(offset) = bytes[i..].iter().position(|b| *b == b'%') {
        let at = i + offset;
        // Two hex digits exactly: `from_str_radix` alone would also take a sign (`%+1`).
        let hex = bytes
            .get(at + 1..at + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok());
        let Some(byte) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) else {
            return Err(format!(
                "{}: \"%\" must be followed by two hex digits",
                quote(path)
            ));
        };
        let hidden = match byte {
            b'.' => Some("\".\""),
            b'/' => Some("\"/\""),
            b'\\' => Some("\"\\\\\""),
            b'%' => Some("\"%\" (double encoding)"),
            0..=0x1f | 0x7f => Some("a control character"),
            _ => None,
        };
        if let Some(what) = hidden {
            return Err(format!(
                "{}: %{} encodes {what}; encoded dots, slashes, backslashes, percents and control characters are not allowed",
                quote(path),
                &path[at + 1..at + 3]
            ));
        }
        i = at + 3;
    }
    Ok(())
}

/// Whether two path prefixes name the same segments: equal once a trailing `/` is dropped
/// (`/a/` ~ `/a`; `/` is only itself). Two services of one team may hold nested prefixes on its
/// host, never the same one.
/// Guard keys (`check::guard_key`) of exact paths (`=/healthz`) are the same only when equal,
/// and keys with conditions (`/search~1a2b3c4d`) only when their conditions are too.
pub fn same_prefix(a: &str, b: &str) -> bool {
    let (a, a_conditions) = a.split_once('~').unwrap_or((a, ""));
    let (b, b_conditions) = b.split_once('~').unwrap_or((b, ""));
    if a_conditions != b_conditions {
        return false;
    }
    if a.starts_with('=') || b.starts_with('=') {
        return a == b;
    }
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Whether two path prefixes overlap on path segments: equal, or one nested inside the other.
/// `/invoices` and `/invoices/export` overlap; `/invoices` and `/invoicesX` do not; `/` overlaps
/// everything; a trailing slash does not change which segments a prefix names (`/a/` ~ `/a`).
pub fn prefixes_overlap(a: &str, b: &str) -> bool {
    fn nested(outer: &str, inner: &str) -> bool {
        let outer = outer.trim_end_matches('/');
        match inner.strip_prefix(outer) {
            Some(rest) => rest.is_empty() || rest.starts_with('/'),
            None => false,
        }
    }
    nested(a, b) || nested(b, a)
}

#[cfg(test)]
mod tests {
    use super::super::test_cases::{assert_accepted, assert_refused};
    use super::*;

    #[test]
    fn accepts_ordinary_paths() {
        let long = format!("/{}", "a".repeat(MAX_PATH_BYTES - 1));
        assert_accepted(
            check_path,
            &[
                "/",
                "/invoices",
                "/invoices/",
                "/v1/items:batch",
                "/~user/x",
                "/a-b_c.d/e",
                "/@me",
                "/caf%C3%A9",
                "/a/.well-known",
                "/a/..b",
                "/...",
                &long,
            ],
        );
    }

    #[test]
    fn rejects_each_rule_with_its_reason() {
        let cases = [
            ("", "must not be empty"),
            ("invoices", "must start with"),
            ("/in voices", "whitespace"),
            ("/in\tvoices", "whitespace"),
            ("/in\u{0}voices", "control"),
            ("/in\u{7f}voices", "control"),
            ("/invoices?x=1", "query"),
            ("/invoices#top", "fragment"),
            ("/a\\b", "backslash"),
            ("/café", "non-ASCII"),
            ("/a\"b", "not allowed"),
            ("/a{b}", "not allowed"),
            ("/a<script>", "not allowed"),
            ("//a", "\"//\""),
            ("/a//b", "\"//\""),
            ("/a/./b", "dot segment"),
            ("/a/../b", "dot segment"),
            ("/a/.", "dot segment"),
            ("/a/..", "dot segment"),
            ("/..", "dot segment"),
            ("/a/..;/b", "dot segment"),
            ("/a/%2e%2e/b", "%2e encodes"),
            ("/a/%2E./b", "%2E encodes"),
            ("/a%2fb", "%2f encodes"),
            ("/a%2Fb", "%2F encodes"),
            ("/a%5cb", "%5c encodes"),
            ("/a%252e", "double encoding"),
            ("/a%00", "control"),
            ("/a%0a", "control"),
            ("/a%", "two hex digits"),
            ("/a%g1", "two hex digits"),
            ("/a%2", "two hex digits"),
            ("/a%+1", "two hex digits"),
        ];
        assert_refused(check_path, &cases);
        let too_long = format!("/{}", "a".repeat(MAX_PATH_BYTES));
        assert!(check_path(&too_long)
            .expect_err("long")
            .contains("at most 1024"));
    }

    #[test]
    fn percent_escape_at_a_char_boundary_does_not_panic() {
        assert!(check_path("/a%é").is_err());
        assert!(check_path("/a%1é").is_err());
    }

    #[test]
    fn the_same_prefix_ignores_only_a_trailing_slash() {
        assert!(same_prefix("/a", "/a/"));
        assert!(same_prefix("/", "/"));
        assert!(!same_prefix("/", "/a"));
        assert!(!same_prefix("/a", "/a/b"));
        assert!(!same_prefix("/a", "/ab"));
        assert!(same_prefix("=/a", "=/a"));
        assert!(!same_prefix("=/a", "=/a/"));
        assert!(!same_prefix("=/a", "/a"));
        assert!(same_prefix("/a~0a1b2c3d", "/a/~0a1b2c3d"));
        assert!(!same_prefix("/a~0a1b2c3d", "/a"));
        assert!(!same_prefix("/a~0a1b2c3d", "/a~4e5f6a7b"));
    }

    #[test]
    fn overlap_is_segment_aware() {
        assert!(prefixes_overlap("/invoices", "/invoices"));
        assert!(prefixes_overlap("/invoices", "/invoices/export"));
        assert!(prefixes_overlap("/invoices/export", "/invoices"));
        assert!(!prefixes_overlap("/invoices", "/invoicesX"));
        assert!(!prefixes_overlap("/invoicesX", "/invoices"));
        assert!(!prefixes_overlap("/a/b", "/a/c"));
    }

    #[test]
    fn root_overlaps_everything() {
        for p in ["/", "/a", "/a/b/", "/zz"] {
            assert!(prefixes_overlap("/", p), "{p}");
            assert!(prefixes_overlap(p, "/"), "{p}");
        }
    }

    #[test]
    fn trailing_slashes_name_the_same_segments() {
        assert!(prefixes_overlap("/a/", "/a"));
        assert!(prefixes_overlap("/a", "/a/"));
        assert!(prefixes_overlap("/a/", "/a/b"));
        assert!(prefixes_overlap("/a/b", "/a/"));
        assert!(!prefixes_overlap("/a/", "/ab"));
        assert!(!prefixes_overlap("/ab/", "/a"));
    }
}
