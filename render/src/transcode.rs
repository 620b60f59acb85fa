//! JSON text → canonical bytes without building a `serde_json::Value`. `compute_hash` and
//! `Bundle::verify` re-serialise every `.json` file of a bundle; at 50k routes that is ~90 MB, and
//! a `Value` tree of it costs far more to allocate and free than the writing itself.
//!
//! The text is parsed by serde_json and written as it is read, in the layout of serde_json's
//! pretty printer (`canonical`'s writer; strings and numbers go through serde_json itself), so the
//! bytes are the ones the `Value` round trip gives. That holds only while every object's keys
//! arrive in strictly increasing order (a `Value` would sort them and keep the last of two equal
//! keys); on anything else the caller is told to take the `Value` path, which decides.
//!
//! serde_json's printer cannot be driven from a parse without a `Value` in between, and the hash
//! needs each top-level member on its own; hence the layout is written here, and the tests below
//! hold it to serde_json's output.

use crate::canonical::{member, Members};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// A top-level object's members and its `version_info` when that is a string; `None` when the
/// text is not a JSON object with ordered, unique keys (or not JSON at all).
pub(crate) fn top_level(text: &str) -> Option<(Members, Option<String>)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let top = de.deserialize_map(Top).ok()?;
    de.end().ok()?;
    Some(top)
}

const VERSION_INFO: &str = "version_info";

/// What [`stream_top_level`] found in one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Streamed {
    /// The top-level object's `version_info`, when it is a string.
    pub(crate) version_info: Option<String>,
    /// Every object's keys arrived in strictly increasing order; when not, the bytes written are
    /// not the canonical form (a `Value` would have sorted them, and kept the last of two).
    pub(crate) keys_in_order: bool,
    /// The document is a JSON object.
    pub(crate) is_object: bool,
}

/// Reads one JSON document from `reader` and writes its canonical bytes as they are read:
/// all of them to `whole`, and to `hashed` the same without the top-level `version_info`
/// member (what `Members::for_each_piece` gives once `version_info` is removed: the hash
/// input). Nothing but the current token is held, so a file of any size costs the same.
/// An error is serde_json's: not JSON, or the reader's own (`Category::Io`).
pub(crate) fn stream_top_level<R: std::io::Read>(
    reader: R,
    whole: &mut dyn FnMut(&[u8]),
    hashed: &mut dyn FnMut(&[u8]),
) -> Result<Streamed, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut out = Both {
        whole,
        hashed,
        keys_in_order: true,
    };
    let found = de.deserialize_any(StreamTop { out: &mut out })?;
    de.end()?;
    Ok(Streamed {
        version_info: found.version_info,
        keys_in_order: out.keys_in_order,
        is_object: found.is_object,
    })
}

/// The two outputs of a streaming read; a member's bytes go to both unless it is `version_info`.
struct Both<'a> {
    whole: &'a mut dyn FnMut(&[u8]),
    hashed: &'a mut dyn FnMut(&[u8]),
    keys_in_order: bool,
}

impl Out for Both<'_> {
    fn put(&mut self, bytes: &[u8]) {
        (self.whole)(bytes);
        (self.hashed)(bytes);
    }

    fn keys_out_of_order<E: serde::de::Error>(&mut self) -> Result<(), E> {
        self.keys_in_order = false;
        Ok(())
    }
}

struct StreamTop<'b, 'a> {
    out: &'b mut Both<'a>,
}

struct TopFound {
    version_info: Option<String>,
    is_object: bool,
}

impl TopFound {
    const NOT_AN_OBJECT: TopFound = TopFound {
        version_info: None,
        is_object: false,
    };
}

impl<'de> Visitor<'de> for StreamTop<'_, '_> {
    type Value = TopFound;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopFound, A::Error> {
        let out = self.out;
        let mut last: Option<String> = None;
        let mut version_info = None;
        // Separate "first member" flags: `hashed` may have one member fewer.
        let (mut whole_first, mut hashed_first) = (true, true);
        while let Some(key) = map.next_key_seed(Key)? {
            if last.as_deref().is_some_and(|last| last >= key.as_ref()) {
                out.keys_out_of_order::<A::Error>()?;
            }
            (out.whole)(if whole_first { b"{\n  " } else { b",\n  " });
            whole_first = false;
            if key == VERSION_INFO {
                // Small, and its decoded string is wanted too.
                let value: Value = map.next_value()?;
                version_info = value.as_str().map(str::to_string);
                (out.whole)(&member(&key, &value));
            } else {
                (out.hashed)(if hashed_first { b"{\n  " } else { b",\n  " });
                hashed_first = false;
                write_str(out, &key);
                out.put(b": ");
                map.next_value_seed(Emit {
                    out: &mut *out,
                    depth: 1,
                })?;
            }
            last = Some(key.into_owned());
        }
        (out.whole)(if whole_first { b"{}\n" } else { b"\n}\n" });
        (out.hashed)(if hashed_first { b"{}\n" } else { b"\n}\n" });
        Ok(TopFound {
            version_info,
            is_object: true,
        })
    }

    // Anything else is read to its end, so that text which is not JSON is reported as such.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TopFound, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(TopFound::NOT_AN_OBJECT)
    }

    fn visit_unit<E>(self) -> Result<TopFound, E> {
        Ok(TopFound::NOT_AN_OBJECT)
    }

    fn visit_bool<E>(self, _: bool) -> Result<TopFound, E> {
        Ok(TopFound::NOT_AN_OBJECT)
    }

    fn visit_u64<E>(self, _: u64) -> Result<TopFound, E> {
        Ok(TopFound::NOT_AN_OBJECT)
    }

    fn visit_i64<E>(self, _: i64) -> Result<TopFound, E> {
        Ok(TopFound::NOT_AN_OBJECT)
    }

    fn visit_f64<E>(self, _: f64) -> Result<TopFound, E> {
        Ok(TopFound::NOT_AN_OBJECT)
    }

    fn visit_str<E>(self, _: &str) -> Result<TopFound, E> {
        Ok(TopFound::NOT_AN_OBJECT)
    }
}

struct Top;

impl<'de> Visitor<'de> for Top {
    type Value = (Members, Option<String>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members: Vec<(String, Vec<u8>)> = Vec::new();
        let mut version_info = None;
        while let Some(key) = map.next_key_seed(Key)? {
            if members
                .last()
                .is_some_and(|(last, _)| last.as_str() >= key.as_ref())
            {
                return Err(A::Error::custom("keys out of order"));
            }
            let bytes = if key == VERSION_INFO {
                // Small, and its decoded string is wanted too.
                let value: Value = map.next_value()?;
                version_info = value.as_str().map(str::to_string);
                member(&key, &value)
            } else {
                let mut bytes = Vec::new();
                write_str(&mut bytes, &key);
                bytes.extend_from_slice(b": ");
                map.next_value_seed(Emit {
                    out: &mut bytes,
                    depth: 1,
                })?;
                bytes
            };
            members.push((key.into_owned(), bytes));
        }
        Ok((Members::from_sorted(members), version_info))
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string()))
    }
}

/// Where [`Emit`] writes: a buffer, or the digests of a streaming check.
pub(crate) trait Out {
    fn put(&mut self, bytes: &[u8]);

    /// An object's keys arrived out of order or repeated. A buffer stops the parse (its callers
    /// take the `Value` path, which decides); a streaming check notes it and reads on, so that a
    /// syntax error further on is still the error reported.
    fn keys_out_of_order<E: serde::de::Error>(&mut self) -> Result<(), E>;
}

impl Out for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn keys_out_of_order<E: serde::de::Error>(&mut self) -> Result<(), E> {
        Err(E::custom("keys out of order"))
    }
}

/// Writes the value being read at `depth`, exactly as serde_json's pretty printer writes a `Value`.
struct Emit<'o, O: Out> {
    out: &'o mut O,
    depth: usize,
}

impl<'de, O: Out> DeserializeSeed<'de> for Emit<'_, O> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, O: Out> Visitor<'de> for Emit<'_, O> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.put(b"null");
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.out.put(if v { b"true" as &[u8] } else { b"false" });
        Ok(())
    }

    // Numbers as a `Value` holds them (u64, i64 or f64) and writes them back.
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        write_serde(self.out, &v);
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        write_serde(self.out, &v);
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        write_serde(self.out, &v);
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        write_str(self.out, v);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.out;
        let depth = self.depth;
        out.put(b"[");
        let mut first = true;
        // The item writes its separator only once it is known to exist.
        while seq
            .next_element_seed(Item {
                out: &mut *out,
                depth: depth + 1,
                first,
            })?
            .is_some()
        {
            first = false;
        }
        if !first {
            out.put(b"\n");
            indent(out, depth);
        }
        out.put(b"]");
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.out;
        let depth = self.depth;
        out.put(b"{");
        let mut last: Option<Cow<'de, str>> = None;
        while let Some(key) = map.next_key_seed(Key)? {
            if last.as_ref().is_some_and(|last| *last >= key) {
                out.keys_out_of_order()?;
            }
            out.put(if last.is_none() { b"\n" } else { b",\n" });
            indent(out, depth + 1);
            write_str(out, &key);
            out.put(b": ");
            map.next_value_seed(Emit {
                out: &mut *out,
                depth: depth + 1,
            })?;
            last = Some(key);
        }
        if last.is_some() {
            out.put(b"\n");
            indent(out, depth);
        }
        out.put(b"}");
        Ok(())
    }
}

/// An array item at `depth`: its separator and indent, then the item.
struct Item<'o, O: Out> {
    out: &'o mut O,
    depth: usize,
    first: bool,
}

impl<'de, O: Out> DeserializeSeed<'de> for Item<'_, O> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.out.put(if self.first { b"\n" } else { b",\n" });
        indent(self.out, self.depth);
        d.deserialize_any(Emit {
            out: self.out,
            depth: self.depth,
        })
    }
}

fn write_str<O: Out>(out: &mut O, s: &str) {
    write_serde(out, s);
}

/// Strings and numbers as serde_json writes them (its escaping, itoa and ryu).
fn write_serde<O: Out, T: Serialize + ?Sized>(out: &mut O, value: &T) {
    // Writing a string or a number into an `Out` cannot fail.
    serde_json::to_writer(OutWriter(out), value).expect("a JSON scalar always serialises");
}

/// An [`Out`] as an `io::Write`, for serde_json's writer.
struct OutWriter<'o, O: Out>(&'o mut O);

impl<O: Out> std::io::Write for OutWriter<'_, O> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.put(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn indent<O: Out>(out: &mut O, depth: usize) {
    for _ in 0..depth {
        out.put(b"  ");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::to_json_bytes;
    use proptest::prelude::*;

    fn via_value(text: &str) -> String {
        to_json_bytes(&serde_json::from_str::<Value>(text).expect("valid JSON"))
    }

    #[test]
    fn ordered_text_gives_the_value_round_trip_bytes() {
        for text in [
            r#"{}"#,
            r#"{"a":[],"b":{},"c":[[],{}],"d":{"x":[1,-2,3.5,1e3,-0.0,18446744073709551615]}}"#,
            r#"{ "a" : "tab\t \u00e9 \"q\" \\ \u0001" , "b":null,"c":true,"d":false }"#,
            r#"{"resources":[{"a":{"b":[{"c":"d"}]}}],"type_url":"t","version_info":"v"}"#,
            "{\"a\\u0062\": 1, \"b\": [ 1 , 2 ] }\n",
        ] {
            let (members, _) = top_level(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(members.to_bytes(), via_value(text), "{text}");
        }
    }

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The writer is serde_json's pretty printer, and reading canonical or compact text
        /// gives the same members as going through a `Value` does.
        #[test]
        fn writer_and_transcoder_agree_with_serde_json(
            members in prop::collection::btree_map(any::<String>(), json(), 0..5),
        ) {
            let value = Value::Object(members.into_iter().collect());
            let canonical = to_json_bytes(&value);
            let mut pretty = serde_json::to_string_pretty(&value).expect("serialises");
            pretty.push('\n');
            prop_assert_eq!(&canonical, &pretty);
            let compact = serde_json::to_string(&value).expect("serialises");
            for text in [canonical.as_str(), compact.as_str()] {
                // Compared with what the `Value` path makes of the same text (serde_json's float
                // parsing may land one ulp off the value that was written).
                let parsed: Value = serde_json::from_str(text).expect("valid JSON");
                let (members, _) = top_level(text).expect("ordered keys");
                prop_assert_eq!(&members, &Members::of(&parsed).expect("an object"));
                prop_assert!(members.equals(&to_json_bytes(&parsed)));
            }
        }

        /// Read as a stream, a document gives its canonical bytes, and the same without
        /// `version_info` (the hash input), as the buffered path does.
        #[test]
        fn streaming_gives_the_canonical_bytes_and_the_hash_input(
            members in prop::collection::btree_map(any::<String>(), json(), 0..5),
            version in prop::option::of(any::<String>()),
        ) {
            let mut value = Value::Object(members.into_iter().collect());
            if let Some(v) = &version {
                value["version_info"] = Value::String(v.clone());
            }
            let canonical = to_json_bytes(&value);
            let compact = serde_json::to_string(&value).expect("serialises");
            for text in [canonical.as_str(), compact.as_str()] {
                let (mut whole, mut hashed) = (Vec::new(), Vec::new());
                let streamed = stream_top_level(
                    text.as_bytes(),
                    &mut |b: &[u8]| whole.extend_from_slice(b),
                    &mut |b: &[u8]| hashed.extend_from_slice(b),
                )
                .expect("JSON");
                prop_assert!(streamed.is_object && streamed.keys_in_order);
                prop_assert_eq!(streamed.version_info.as_ref(), version.as_ref());
                let parsed: Value = serde_json::from_str(text).expect("valid JSON");
                let mut members = Members::of(&parsed).expect("an object");
                prop_assert_eq!(String::from_utf8(whole).expect("utf-8"), members.to_bytes());
                members.remove("version_info");
                prop_assert_eq!(String::from_utf8(hashed).expect("utf-8"), members.to_bytes());
            }
        }
    }

    #[test]
    fn version_info_is_read_when_it_is_a_string() {
        let (_, v) = top_level(r#"{"a":1,"version_info":"sha256:x"}"#).expect("ordered");
        assert_eq!(v.as_deref(), Some("sha256:x"));
        let (_, v) = top_level(r#"{"version_info":7}"#).expect("ordered");
        assert_eq!(v, None);
    }

    #[test]
    fn streaming_notes_what_is_not_an_ordered_object() {
        let read =
            |text: &str| stream_top_level(text.as_bytes(), &mut |_: &[u8]| {}, &mut |_: &[u8]| {});
        for text in [
            r#"{"b":1,"a":2}"#,
            r#"{"a":{"y":1,"x":2}}"#,
            r#"{"a":[{"k":1,"k":1}]}"#,
        ] {
            assert!(!read(text).expect("JSON").keys_in_order, "{text}");
        }
        for text in [r#"[1,{"a":2}]"#, r#""s""#, "7", "null"] {
            assert!(!read(text).expect("JSON").is_object, "{text}");
        }
        for text in [r#"{"b":1,"a":"#, r#"{"a":1} x"#, r#"[1"#, ""] {
            assert!(read(text).is_err(), "{text}");
        }
    }

    #[test]
    fn anything_the_value_path_would_change_or_refuse_is_left_to_it() {
        for text in [
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":{"y":1,"x":2}}"#,
            r#"{"a":[{"k":1,"k":1}]}"#,
            r#"[1]"#,
            r#""s""#,
            r#"{"a":1} x"#,
            r#"{"a":"#,
            "",
        ] {
            assert!(top_level(text).is_none(), "{text}");
        }
    }
}
