//! The one JSON writer every rendered byte goes through: serde_json's pretty printer (two-space
//! indent) with object keys sorted, and a trailing newline.
//!
//! Keys come sorted from serde_json's `Map` itself, a BTreeMap unless some crate in the build
//! enables serde_json's `preserve_order` (features are unified per build, so a binary's other
//! dependencies could); then `Sorted` sorts each object's keys as it writes. Speed comes from
//! writing each document once into a buffer sized up front, and from `Document`: the bytes with
//! and without `version_info` (the file and its hash input) come from that one pass.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::sync::OnceLock;

const INDENT: &[u8] = b"  ";

/// `value` in canonical form.
pub fn to_json_bytes(value: &Value) -> String {
    let mut out = Vec::with_capacity(estimate(value));
    write(&mut out, &Sorted(value));
    out.push(b'\n');
    into_string(out)
}

/// `value` pretty-printed into `out`, without the trailing newline. Keys are written in the
/// order `value` gives them: pass a `Value` as `Sorted`.
pub(crate) fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing into a Vec cannot fail, and what is written here is JSON data (string keys, finite
    // numbers, derived `Serialize` of plain structs).
    value
        .serialize(&mut serde_json::Serializer::pretty(out))
        .expect("plain JSON data always serialises");
}

/// A `Value` that serialises with every object's keys in order, whatever map type serde_json
/// was built with.
pub struct Sorted<'a>(pub &'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if keys_come_sorted() {
            return self.0.serialize(serializer);
        }
        match self.0 {
            Value::Object(map) => {
                let entries = sorted(map);
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    out.serialize_entry(key, &Sorted(value))?;
                }
                out.end()
            }
            Value::Array(items) => serializer.collect_seq(items.iter().map(Sorted)),
            other => other.serialize(serializer),
        }
    }
}

/// A top-level JSON object, each member already serialised. `to_bytes` joins them into exactly
/// what `to_json_bytes` writes for the whole object. The hash's input: a `.json` file without its
/// `version_info` member.
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
        write(&mut bytes, &Sorted(value));
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

/// `"key": value` as it stands one level deep in a pretty-printed object (after its indent).
pub(crate) fn member(key: &str, value: &Value) -> Vec<u8> {
    let mut body = Vec::with_capacity(estimate(value));
    write(&mut body, &Sorted(value));
    let mut out = Vec::with_capacity(key.len() + 4 + body.len() + body.len() / 4);
    write(&mut out, key);
    out.extend_from_slice(b": ");
    // One level deeper: every line after the first gains an indent. A JSON string never holds a
    // raw newline (it is escaped), so each `\n` is a line break.
    for line in body.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(line);
        if line.ends_with(b"\n") {
            out.extend_from_slice(INDENT);
        }
    }
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

pub(crate) fn into_string(bytes: Vec<u8>) -> String {
    // serde_json writes UTF-8 only.
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
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
