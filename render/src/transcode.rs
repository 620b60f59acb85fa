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

/// Writes the value being read at `depth`, exactly as serde_json's pretty printer writes a `Value`.
struct Emit<'o> {
    out: &'o mut Vec<u8>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Emit<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Emit<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.out
            .extend_from_slice(if v { b"true" as &[u8] } else { b"false" });
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
        out.push(b'[');
        let mut first = true;
        loop {
            // The separator goes out before we know whether an item follows; taken back if not.
            let mark = out.len();
            out.extend_from_slice(if first { b"\n" } else { b",\n" });
            indent(out, depth + 1);
            let item = Emit {
                out: &mut *out,
                depth: depth + 1,
            };
            if seq.next_element_seed(item)?.is_none() {
                out.truncate(mark);
                break;
            }
            first = false;
        }
        if !first {
            out.push(b'\n');
            indent(out, depth);
        }
        out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.out;
        let depth = self.depth;
        out.push(b'{');
        let mut last: Option<Cow<'de, str>> = None;
        while let Some(key) = map.next_key_seed(Key)? {
            if last.as_ref().is_some_and(|last| *last >= key) {
                return Err(A::Error::custom("keys out of order"));
            }
            out.extend_from_slice(if last.is_none() { b"\n" } else { b",\n" });
            indent(out, depth + 1);
            write_str(out, &key);
            out.extend_from_slice(b": ");
            map.next_value_seed(Emit {
                out: &mut *out,
                depth: depth + 1,
            })?;
            last = Some(key);
        }
        if last.is_some() {
            out.push(b'\n');
            indent(out, depth);
        }
        out.push(b'}');
        Ok(())
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    write_serde(out, s);
}

/// Strings and numbers as serde_json writes them (its escaping, itoa and ryu).
fn write_serde<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing a string or a number into a Vec cannot fail.
    serde_json::to_writer(out, value).expect("a JSON scalar always serialises");
}

fn indent(out: &mut Vec<u8>, depth: usize) {
    for _ in 0..depth {
        out.extend_from_slice(b"  ");
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
    }

    #[test]
    fn version_info_is_read_when_it_is_a_string() {
        let (_, v) = top_level(r#"{"a":1,"version_info":"sha256:x"}"#).expect("ordered");
        assert_eq!(v.as_deref(), Some("sha256:x"));
        let (_, v) = top_level(r#"{"version_info":7}"#).expect("ordered");
        assert_eq!(v, None);
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
