//! The one JSON serializer configuration every rendered byte goes through: object keys sorted,
//! pretty-printed with two spaces, a trailing newline — byte for byte what serde_json's
//! `to_string_pretty` writes for the same value with its keys sorted.
//!
//! Written by hand rather than through serde's `Serializer` because a 50k-route config is ~90 MB
//! of JSON: the writer appends into one buffer with no per-object allocation, and a document's
//! top-level members are written separately, so the bytes with and without `version_info` (the
//! file and its hash input) come from one pass over the tree. Strings and numbers still go
//! through serde_json, so escaping and number formatting are serde_json's own.

use serde_json::{Map, Value};
use std::sync::OnceLock;

const INDENT: &[u8] = b"  ";

/// `value` in canonical form.
pub fn to_json_bytes(value: &Value) -> String {
    let mut out = Vec::with_capacity(estimate(value));
    write_value(&mut out, value, 0);
    out.push(b'\n');
    into_string(out)
}

/// A top-level JSON object, each member already serialised. `to_bytes` joins them into exactly
/// what `to_json_bytes` writes for the whole object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Members {
    /// `(key, "key": value)` sorted by key; the value is written one level deep.
    members: Vec<(String, Vec<u8>)>,
}

impl Members {
    /// `None` when `value` is not an object.
    pub fn of(value: &Value) -> Option<Members> {
        let map = value.as_object()?;
        let members = sorted(map)
            .into_iter()
            .map(|(key, v)| (key.clone(), member(key, v)))
            .collect();
        Some(Members { members })
    }

    /// Adds `key: value`, replacing a member of that name.
    pub fn insert(&mut self, key: &str, value: &Value) {
        let bytes = member(key, value);
        match self.members.binary_search_by(|(k, _)| k.as_str().cmp(key)) {
            Ok(i) => self.members[i].1 = bytes,
            Err(i) => self.members.insert(i, (key.to_string(), bytes)),
        }
    }

    /// Removes the member `key`, if there is one.
    pub fn remove(&mut self, key: &str) {
        self.members.retain(|(k, _)| k != key);
    }

    /// Members already serialised by `member`, in strictly increasing key order.
    pub(crate) fn from_sorted(members: Vec<(String, Vec<u8>)>) -> Members {
        Members { members }
    }

    /// The object's canonical bytes, trailing newline included.
    pub fn to_bytes(&self) -> String {
        let mut out = Vec::with_capacity(self.byte_len());
        self.for_each_piece(|piece| out.extend_from_slice(piece));
        into_string(out)
    }

    /// The canonical bytes in order, piece by piece, so they can be hashed without joining them.
    pub fn for_each_piece(&self, mut f: impl FnMut(&[u8])) {
        if self.members.is_empty() {
            f(b"{}\n");
            return;
        }
        f(b"{");
        for (i, (_, bytes)) in self.members.iter().enumerate() {
            f(if i == 0 { b"\n" } else { b",\n" });
            f(INDENT);
            f(bytes);
        }
        f(b"\n}\n");
    }

    /// Whether `text` is exactly `to_bytes`, compared piece by piece.
    pub fn equals(&self, text: &str) -> bool {
        let text = text.as_bytes();
        if text.len() != self.byte_len() {
            return false;
        }
        let mut at = 0;
        let mut same = true;
        self.for_each_piece(|piece| {
            same = same && text[at..at + piece.len()] == *piece;
            at += piece.len();
        });
        same
    }

    /// Length of `to_bytes`.
    pub fn byte_len(&self) -> usize {
        match self.members.len() {
            0 => 3,
            n => self.members.iter().map(|(_, b)| b.len()).sum::<usize>() + 4 * n + 3,
        }
    }
}

/// An object's canonical bytes in a buffer that can take one more member at its end in place,
/// without copying what is already written (the renderer's documents are ~90 MB at 50k routes,
/// and their `version_info` sorts last).
pub(crate) struct Document {
    bytes: Vec<u8>,
    last_key: Option<String>,
}

impl Document {
    /// `None` when `value` is not an object.
    pub(crate) fn of(value: &Value) -> Option<Document> {
        let map = value.as_object()?;
        let mut bytes = Vec::with_capacity(estimate(value) + 256);
        write_value(&mut bytes, value, 0);
        bytes.push(b'\n');
        Some(Document {
            bytes,
            last_key: map.keys().max().cloned(),
        })
    }

    /// The canonical bytes so far.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The canonical bytes with `key: value` added; `whole` is the value the document was made
    /// of, re-serialised only when `key` does not sort last.
    pub(crate) fn with_member(self, key: &str, value: &Value, whole: &Value) -> String {
        let sorts_last = self.last_key.as_deref().is_none_or(|last| last < key);
        if !sorts_last {
            let mut members = Members::of(whole).expect("a document is an object");
            members.insert(key, value);
            return members.to_bytes();
        }
        let mut bytes = self.bytes;
        if self.last_key.is_none() {
            bytes.clear();
            bytes.extend_from_slice(b"{\n");
        } else {
            // Drop the closing `\n}\n`.
            bytes.truncate(bytes.len() - 3);
            bytes.extend_from_slice(b",\n");
        }
        bytes.extend_from_slice(INDENT);
        bytes.extend_from_slice(&member(key, value));
        bytes.extend_from_slice(b"\n}\n");
        into_string(bytes)
    }
}

/// `"key": value`, the value at indent level 1.
pub(crate) fn member(key: &str, value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 4 + estimate(value));
    write_str(&mut out, key);
    out.extend_from_slice(b": ");
    write_value(&mut out, value, 1);
    out
}

/// Whether serde_json's map iterates in key order: it is a BTreeMap unless some crate in the
/// build enables serde_json's `preserve_order`, which makes it keep insertion order instead.
fn keys_come_sorted() -> bool {
    static SORTED: OnceLock<bool> = OnceLock::new();
    *SORTED.get_or_init(|| {
        let mut probe = Map::new();
        probe.insert("b".into(), Value::Null);
        probe.insert("a".into(), Value::Null);
        probe.keys().is_sorted()
    })
}

/// Keys in order, sorting only when the map does not keep them sorted itself.
fn sorted(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    if !keys_come_sorted() && !entries.is_sorted_by(|a, b| a.0 <= b.0) {
        entries.sort_by(|a, b| a.0.cmp(b.0));
    }
    entries
}

pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value, depth: usize) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_serde(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.extend_from_slice(b"[]");
                return;
            }
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                out.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
                indent(out, depth + 1);
                write_value(out, item, depth + 1);
            }
            out.push(b'\n');
            indent(out, depth);
            out.push(b']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.extend_from_slice(b"{}");
                return;
            }
            out.push(b'{');
            let mut first = true;
            let mut write_entry = |out: &mut Vec<u8>, key: &str, v: &Value| {
                out.extend_from_slice(if first { b"\n" } else { b",\n" });
                first = false;
                indent(out, depth + 1);
                write_str(out, key);
                out.extend_from_slice(b": ");
                write_value(out, v, depth + 1);
            };
            if keys_come_sorted() || map.keys().is_sorted() {
                for (key, v) in map {
                    write_entry(out, key, v);
                }
            } else {
                for (key, v) in sorted(map) {
                    write_entry(out, key, v);
                }
            }
            out.push(b'\n');
            indent(out, depth);
            out.push(b'}');
        }
    }
}

pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    write_serde(out, s);
}

/// Strings and numbers as serde_json writes them (its escaping, itoa and ryu).
pub(crate) fn write_serde<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing a string or a number into a Vec cannot fail.
    serde_json::to_writer(out, value).expect("a JSON scalar always serialises");
}

pub(crate) fn indent(out: &mut Vec<u8>, depth: usize) {
    for _ in 0..depth {
        out.extend_from_slice(INDENT);
    }
}

pub(crate) fn into_string(bytes: Vec<u8>) -> String {
    // Only UTF-8 was written: `&str`s and ASCII punctuation.
    String::from_utf8(bytes).expect("the writer only writes UTF-8")
}

/// A guess of the output size, so the buffer rarely grows (each growth copies it): arrays are
/// taken to be as long as their first item, so only a path through the tree is visited.
fn estimate(value: &Value) -> usize {
    match value {
        Value::Array(items) => match items.first() {
            Some(first) => items.len().saturating_mul(estimate(first) + 8),
            None => 2,
        },
        Value::Object(map) => map.iter().fold(2usize, |n, (k, v)| {
            n.saturating_add(k.len() + 8).saturating_add(estimate(v))
        }),
        Value::String(s) => s.len() + 2,
        _ => 8,
    }
    .min(1 << 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// serde_json's pretty printer over a value with sorted keys: the reference this writer must
    /// match byte for byte.
    fn reference(value: &Value) -> String {
        let mut out = serde_json::to_string_pretty(value).expect("serialises");
        out.push('\n');
        out
    }

    #[test]
    fn matches_serde_json_pretty_output() {
        let samples = [
            json!(null),
            json!(true),
            json!(-7),
            json!(1.5),
            json!(18446744073709551615u64),
            json!("tab\there \"quoted\" back\\slash \u{1} \u{7f} é ✓"),
            json!([]),
            json!({}),
            json!([[], {}, [[]], { "a": {} }, [1, [2, { "b": [] }]]]),
            json!({ "z": 1, "a": { "y": [true, null, { "k": "v" }], "b": {} }, "m": [] }),
            json!({ "": "", "\n": "\u{0}", "key with \"quotes\"": [0.1, -0.0, 1e300] }),
        ];
        for v in &samples {
            assert_eq!(to_json_bytes(v), reference(v), "{v}");
        }
    }

    #[test]
    fn document_takes_a_member_at_its_end_or_anywhere() {
        let v = json!({ "resources": [{ "b": 1 }], "type_url": "t" });
        let doc = Document::of(&v).expect("an object");
        assert_eq!(doc.bytes(), to_json_bytes(&v).as_bytes());
        let with = doc.with_member("version_info", &json!("h"), &v);
        let expected = json!({ "resources": [{ "b": 1 }], "type_url": "t", "version_info": "h" });
        assert_eq!(with, to_json_bytes(&expected));
        let doc = Document::of(&v).expect("an object");
        let front = json!({ "a": "h", "resources": [{ "b": 1 }], "type_url": "t" });
        assert_eq!(doc.with_member("a", &json!("h"), &v), to_json_bytes(&front));
        let empty = Document::of(&json!({})).expect("an object");
        assert_eq!(
            empty.with_member("k", &json!([]), &json!({})),
            to_json_bytes(&json!({ "k": [] }))
        );
    }

    #[test]
    fn members_join_to_the_whole_object_and_drop_or_add_one_member() {
        let v = json!({ "resources": [{ "b": 1, "a": [2] }], "type_url": "t" });
        let mut m = Members::of(&v).expect("an object");
        assert_eq!(m.to_bytes(), to_json_bytes(&v));
        assert_eq!(m.byte_len(), m.to_bytes().len());
        assert!(m.equals(&to_json_bytes(&v)));
        assert!(!m.equals(&to_json_bytes(&v).replace('2', "3")));
        m.insert("version_info", &json!("sha256:x"));
        let with = json!({ "resources": [{ "b": 1, "a": [2] }], "type_url": "t", "version_info": "sha256:x" });
        assert_eq!(m.to_bytes(), to_json_bytes(&with));
        m.insert("a", &json!({}));
        m.remove("version_info");
        let front = json!({ "a": {}, "resources": [{ "b": 1, "a": [2] }], "type_url": "t" });
        assert_eq!(m.to_bytes(), to_json_bytes(&front));
        m.remove("a");
        m.remove("resources");
        m.remove("type_url");
        assert_eq!(m.to_bytes(), "{}\n");
        assert_eq!(m.byte_len(), 3);
        assert!(Members::of(&json!([1])).is_none());
    }
}
