//! How problems are worded: field paths, quoted values and JSON type names.
//!
//! Every value that came from the entry is escaped before it reaches a message, because a
//! rejection prints one `field: reason` per line and an entry must not be able to forge lines.

use super::Problem;
use serde_json::Value;

/// Longest slice of an offending value quoted back in a message.
const QUOTE_MAX_CHARS: usize = 64;

/// Problems found so far, in the order the walk met them.
#[derive(Debug, Default)]
pub(crate) struct Problems(pub(crate) Vec<Problem>);

impl Problems {
    pub(crate) fn push(&mut self, field: impl Into<String>, reason: impl Into<String>) {
        self.0.push(Problem {
            field: field.into(),
            reason: reason.into(),
        });
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A value from the entry as it appears in a message: double-quoted, control and non-ASCII
/// characters escaped, long values cut.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for (n, c) in s.chars().enumerate() {
        if n == QUOTE_MAX_CHARS {
            out.push_str("\"…");
            return out;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            _ => out.extend(c.escape_default()),
        }
    }
    out.push('"');
    out
}

/// `parent.key`, or `parent["key"]` when the key is not a plain word (it came from the input).
pub(crate) fn child(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.len() <= QUOTE_MAX_CHARS
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    match (parent.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{parent}.{key}"),
        (_, false) => format!("{parent}[{}]", quote(key)),
    }
}

/// `parent[i]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// The JSON type of a value, for "expected X, got Y". Numbers and short strings show the value
/// itself, which is usually what the author needs to see.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => n.to_string(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// `a, b or c`.
pub(crate) fn one_of(options: &[&str]) -> String {
    match options {
        [] => String::new(),
        [only] => (*only).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The reason for an unknown field, with a suggestion when the key is a likely typo.
pub(crate) fn unknown_field(key: &str, known: &[&str]) -> String {
    let mut reason = format!("unknown field; expected {}", one_of(known));
    let near = known
        .iter()
        .map(|k| (edit_distance(&key.to_ascii_lowercase(), k), *k))
        // Two edits turn any short word into another ("key" into "per"): suggest only what
        // is plausibly a typo.
        .filter(|(d, k)| *d <= if k.len() <= 4 { 1 } else { 2 })
        .min();
    if let Some((_, k)) = near {
        reason.push_str(&format!(" (did you mean \"{k}\"?)"));
    }
    reason
}

/// Levenshtein distance; keys are short (the input is bounded before this runs) so the
/// quadratic table is fine, and long keys are not worth a suggestion anyway.
fn edit_distance(a: &str, b: &str) -> usize {
    if a.len() > 2 * QUOTE_MAX_CHARS {
        return usize::MAX;
    }
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_line_breaks_quotes_and_non_ascii() {
        assert_eq!(quote("a\nb"), r#""a\nb""#);
        assert_eq!(quote("say \"hi\""), r#""say \"hi\"""#);
        assert_eq!(quote("é"), r#""\u{e9}""#);
        assert!(!quote("x\r\ny\u{2028}").contains(['\n', '\r', '\u{2028}']));
    }

    #[test]
    fn quote_cuts_long_values() {
        let q = quote(&"a".repeat(1000));
        assert!(q.len() < 80, "{q}");
        assert!(q.ends_with('…'));
    }

    #[test]
    fn child_paths_quote_odd_keys() {
        assert_eq!(child("", "team"), "team");
        assert_eq!(child("routes[0]", "limitz"), "routes[0].limitz");
        assert_eq!(child("routes[0]", "a\nb"), r#"routes[0]["a\nb"]"#);
        assert_eq!(child("", ""), r#"[""]"#);
    }

    #[test]
    fn unknown_field_suggests_near_names_only() {
        let r = unknown_field("limitz", &["path", "methods", "limits"]);
        assert_eq!(
            r,
            "unknown field; expected path, methods or limits (did you mean \"limits\"?)"
        );
        assert!(!unknown_field("zzzzzz", &["path"]).contains("did you mean"));
        assert!(!unknown_field("key", &["per"]).contains("did you mean"));
        assert!(unknown_field("teem", &["team"]).contains("did you mean \"team\""));
        assert!(unknown_field("brust", &["burst"]).contains("did you mean \"burst\""));
    }

    #[test]
    fn describe_names_types_and_numbers() {
        assert_eq!(describe(&serde_json::json!("x")), "string");
        assert_eq!(describe(&serde_json::json!(10.5)), "10.5");
        assert_eq!(describe(&serde_json::json!(null)), "null");
    }
}
