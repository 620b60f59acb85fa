//! Reading raw bytes into a JSON value, strictly: UTF-8 only, one value, and no object that
//! names a key twice. `serde_json::Value` keeps the last of two equal keys silently, so an
//! entry could show a reviewer one value and register another; here it is a rejection.

use super::report::{child, index, quote, Problems};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::fmt;

/// Longest field path quoted for a syntax error; deep nesting would otherwise fill the screen.
const MAX_PLACE_CHARS: usize = 120;

/// What went wrong while reading, beyond what serde_json's error says.
#[derive(Default)]
struct Trail {
    /// Field path of a key that appeared twice.
    duplicate: Option<String>,
    /// Innermost field path whose value failed to parse.
    failed_at: Option<String>,
}

/// Parses `input` as one JSON document, or says where and why it is not one.
pub(crate) fn parse(input: &[u8], problems: &mut Problems) -> Option<Value> {
    let text = match std::str::from_utf8(input) {
        Ok(text) => text,
        Err(e) => {
            let at = e.valid_up_to();
            let (line, column) = position(&input[..at]);
            problems.push(
                "entry",
                format!(
                    "not UTF-8 text: byte 0x{:02x} at line {line} column {column}; an entry is a JSON document",
                    input[at]
                ),
            );
            return None;
        }
    };
    if text.starts_with('\u{feff}') {
        problems.push(
            "entry",
            "starts with a byte-order mark; save the file as UTF-8 without BOM",
        );
        return None;
    }
    if text.trim().is_empty() {
        problems.push("entry", "empty document; expected a JSON object");
        return None;
    }
    let trail = RefCell::new(Trail::default());
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = Strict {
        path: String::new(),
        trail: &trail,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match parsed {
        Ok(value) => Some(value),
        Err(e) => {
            let trail = trail.into_inner();
            let (line, column) = (e.line(), e.column());
            if let Some(field) = trail.duplicate {
                problems.push(
                    field,
                    format!("duplicate key at line {line} column {column}; each field may appear only once"),
                );
            } else {
                let inside = match trail.failed_at {
                    Some(path) if path.chars().count() > MAX_PLACE_CHARS => {
                        format!(
                            " (in {}…)",
                            path.chars().take(MAX_PLACE_CHARS).collect::<String>()
                        )
                    }
                    Some(path) if !path.is_empty() => format!(" (in {path})"),
                    _ => String::new(),
                };
                problems.push(
                    "entry",
                    format!(
                        "invalid JSON at line {line} column {column}{inside}: {}",
                        bare_message(&e)
                    ),
                );
            }
            None
        }
    }
}

/// serde_json's message without its trailing " at line L column C", which we word ourselves.
fn bare_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).unwrap_or(&full).to_string()
}

/// 1-based line and column of the byte just after `before`.
fn position(before: &[u8]) -> (usize, usize) {
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

/// Builds a `Value` like serde_json does, remembering the field path so errors can name it.
struct Strict<'t> {
    path: String,
    trail: &'t RefCell<Trail>,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        let trail = self.trail;
        let path = self.path.clone();
        let result = deserializer.deserialize_any(self);
        if result.is_err() {
            let mut t = trail.borrow_mut();
            if t.failed_at.is_none() {
                t.failed_at = Some(path);
            }
        }
        result
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON text cannot spell NaN or infinity, so from_f64 only fails on input serde_json
        // would not have produced; null keeps that impossible case harmless.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict {
            path: index(&self.path, items.len()),
            trail: self.trail,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = child(&self.path, &key);
            if fields.contains_key(&key) {
                self.trail.borrow_mut().duplicate = Some(path);
                return Err(de::Error::custom(format!("duplicate key {}", quote(&key))));
            }
            let value = map.next_value_seed(Strict {
                path,
                trail: self.trail,
            })?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems_of(input: &[u8]) -> Vec<super::super::Problem> {
        let mut p = Problems::default();
        assert!(parse(input, &mut p).is_none(), "expected a parse failure");
        p.0
    }

    #[test]
    fn duplicate_keys_name_the_field() {
        let p = problems_of(br#"{"team":"a","routes":[{"path":"/a","path":"/b"}]}"#);
        assert_eq!(p[0].field, "routes[0].path");
        assert!(p[0].reason.contains("duplicate key"), "{}", p[0].reason);
        assert!(p[0].reason.contains("line 1"), "{}", p[0].reason);
    }

    #[test]
    fn top_level_duplicate_names_the_key() {
        let p = problems_of(b"{\"host\":\"a\",\n \"host\":\"b\"}");
        assert_eq!(p[0].field, "host");
        assert!(p[0].reason.contains("line 2"), "{}", p[0].reason);
    }

    #[test]
    fn syntax_errors_give_line_column_and_place() {
        let p = problems_of(b"{\"routes\": [ {\"path\": \"/a\",}\n]}");
        assert_eq!(p[0].field, "entry");
        assert!(
            p[0].reason.starts_with("invalid JSON at line 1 column"),
            "{}",
            p[0].reason
        );
        assert!(p[0].reason.contains("routes[0]"), "{}", p[0].reason);
    }

    #[test]
    fn number_out_of_range_names_the_field() {
        let p = problems_of(br#"{"routes":[{"limits":[{"burst":1e400}]}]}"#);
        assert!(
            p[0].reason.contains("routes[0].limits[0].burst"),
            "{}",
            p[0].reason
        );
    }

    #[test]
    fn non_utf8_is_located() {
        let p = problems_of(b"{\n  \"team\": \"a\xff\"}");
        assert_eq!(p[0].field, "entry");
        assert!(
            p[0].reason.contains("0xff at line 2 column 13"),
            "{}",
            p[0].reason
        );
    }

    #[test]
    fn empty_bom_and_trailing_input_are_rejected() {
        assert!(problems_of(b"  \n")
            .first()
            .is_some_and(|p| p.reason.contains("empty")));
        assert!(problems_of(b"\xef\xbb\xbf{}")
            .first()
            .is_some_and(|p| p.reason.contains("byte-order")));
        assert!(problems_of(b"{} {}")
            .first()
            .is_some_and(|p| p.reason.contains("trailing")));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        let p = problems_of(deep.as_bytes());
        assert_eq!(p[0].field, "entry");
        assert!(p[0].reason.len() < 250, "{}", p[0].reason);
    }

    #[test]
    fn valid_documents_parse() {
        let mut p = Problems::default();
        let v = parse(br#"{"a":[1,-2,3.5,true,null,"x"],"b":{}}"#, &mut p);
        assert_eq!(
            v,
            Some(serde_json::json!({"a":[1,-2,3.5,true,null,"x"],"b":{}}))
        );
        assert!(p.is_empty());
    }
}
