//! Building rendered values by moving parts in. `json!` serialises every embedded `Value` into a
//! fresh copy; at 50k routes those copies were most of the render's time.

use serde_json::Value;

/// A JSON object of the given members, moved in as they are.
pub(crate) fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(key, value)| (key.to_string(), value))
            .collect(),
    )
}

/// `s` as an RE2 literal: every character but ASCII letters, digits, `-` and `_` escaped.
pub fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !c.is_ascii_alphanumeric() && c != '-' && c != '_' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
