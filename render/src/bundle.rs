//! The published unit: `bundle.json` = format, hash, the three files, and the exact entries.
//!
//! Also the one JSON serializer configuration every rendered byte goes through, and the hash:
//! sha256 over, per file in name order, `name 0x00 canonical-bytes 0x00`, where a `.json`
//! file's canonical bytes are the file re-serialised without its top-level `version_info` (so
//! `version_info` can carry the hash) and any other file's are its bytes as they are.

use crate::contract::{BUNDLE_FORMAT, CLUSTERS_FILE, RATE_LIMIT_FILE, ROUTES_FILE};
use crate::entry::Entry;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    pub format: u32,
    pub hash: String,
    pub files: BTreeMap<String, String>,
    /// The exact registry input, sorted by id, so any bundle can be re-rendered and audited.
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("{what} is not valid JSON: {reason}")]
    Json { what: String, reason: String },
    #[error("bundle format {found} is not supported; this build reads format {BUNDLE_FORMAT}")]
    UnknownFormat { found: String },
    #[error("bundle has no {file}")]
    MissingFile { file: &'static str },
    #[error("{file} is not a JSON object")]
    NotAnObject { file: String },
    #[error("bundle hash {stated} does not match its files, which hash to {computed}")]
    HashMismatch { stated: String, computed: String },
    #[error("{file} is not in canonical form (sorted keys, two-space indent, trailing newline): its bytes were changed after rendering")]
    NotCanonical { file: String },
    #[error("{file}: version_info is {found:?}, expected the bundle hash {expected}")]
    VersionInfo {
        file: String,
        found: Option<String>,
        expected: String,
    },
}

impl Bundle {
    /// The bundle of a render. `entries` are stored sorted by id, as the renderer saw them.
    pub fn new(rendered: &crate::Rendered, entries: &[Entry]) -> Bundle {
        let mut entries = entries.to_vec();
        entries.sort_by_key(Entry::id);
        Bundle {
            format: BUNDLE_FORMAT,
            hash: rendered.hash.clone(),
            files: rendered.files.clone(),
            entries,
        }
    }

    /// `bundle.json`'s bytes: same serializer as the files, so the same bundle is the same bytes.
    pub fn to_json(&self) -> String {
        // Strings, integers and string-keyed maps only: conversion to a Value cannot fail.
        let value = serde_json::to_value(self).expect("a bundle is plain JSON data");
        to_json_bytes(&value)
    }

    /// Reads `bundle.json`. A format this build does not know is refused before anything else,
    /// so an old sidecar never half-understands a newer bundle.
    pub fn parse(bytes: &[u8]) -> Result<Bundle, BundleError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| json_error("bundle", e))?;
        match value.get("format") {
            Some(Value::Number(n)) if n.as_u64() == Some(u64::from(BUNDLE_FORMAT)) => {}
            Some(other) => {
                return Err(BundleError::UnknownFormat {
                    found: other.to_string(),
                })
            }
            None => {
                return Err(BundleError::UnknownFormat {
                    found: "missing".into(),
                })
            }
        }
        serde_json::from_value(value).map_err(|e| json_error("bundle", e))
    }

    /// Recomputes the hash from the files and checks that each Envoy file carries it as its
    /// `version_info` (the sidecar reads Envoy's applied version from there) and is exactly the
    /// bytes the renderer's serializer writes.
    pub fn verify(&self) -> Result<(), BundleError> {
        for file in [CLUSTERS_FILE, ROUTES_FILE, RATE_LIMIT_FILE] {
            if !self.files.contains_key(file) {
                return Err(BundleError::MissingFile { file });
            }
        }
        let computed = compute_hash(&self.files)?;
        if computed != self.hash {
            return Err(BundleError::HashMismatch {
                stated: self.hash.clone(),
                computed,
            });
        }
        for (name, text) in self.files.iter().filter(|(name, _)| is_json(name)) {
            let value: Value = serde_json::from_str(text).map_err(|e| json_error(name, e))?;
            // The hash ignores formatting; this makes any changed byte an error all the same.
            if to_json_bytes(&value) != *text {
                return Err(BundleError::NotCanonical { file: name.clone() });
            }
            let found = value.get("version_info").and_then(Value::as_str);
            if found != Some(self.hash.as_str()) {
                return Err(BundleError::VersionInfo {
                    file: name.clone(),
                    found: found.map(str::to_string),
                    expected: self.hash.clone(),
                });
            }
        }
        Ok(())
    }
}

fn json_error(what: &str, e: serde_json::Error) -> BundleError {
    BundleError::Json {
        what: what.to_string(),
        reason: e.to_string(),
    }
}

fn is_json(name: &str) -> bool {
    name.ends_with(".json")
}

/// The hash of files as they sit in a bundle or a directory (parses the `.json` ones).
pub fn compute_hash(files: &BTreeMap<String, String>) -> Result<String, BundleError> {
    let mut canonical = BTreeMap::new();
    for (name, text) in files {
        let bytes = if is_json(name) {
            let mut value: Value = serde_json::from_str(text).map_err(|e| json_error(name, e))?;
            value
                .as_object_mut()
                .ok_or_else(|| BundleError::NotAnObject { file: name.clone() })?
                .remove("version_info");
            to_json_bytes(&value)
        } else {
            text.clone()
        };
        canonical.insert(name.clone(), bytes);
    }
    Ok(hash_canonical(&canonical))
}

/// The hash over files already in canonical form (what the renderer has before stamping
/// `version_info`).
pub fn hash_canonical(canonical: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (name, bytes) in canonical {
        hasher.update(name.as_bytes());
        hasher.update([0u8]);
        hasher.update(bytes.as_bytes());
        hasher.update([0u8]);
    }
    let digest = hasher.finalize();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The one JSON serializer configuration: object keys sorted, pretty-printed with two spaces,
/// a trailing newline. Keys are sorted here rather than trusted to `serde_json::Map`, whose
/// order changes if any crate in the build enables serde_json's `preserve_order`.
pub fn to_json_bytes(value: &Value) -> String {
    // Serialising a Value into a String cannot fail.
    let mut out =
        serde_json::to_string_pretty(&Sorted(value)).expect("a JSON value always serialises");
    out.push('\n');
    out
}

struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                let mut m = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    m.serialize_entry(k, &Sorted(v))?;
                }
                m.end()
            }
            Value::Array(items) => {
                let mut s = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    s.serialize_element(&Sorted(item))?;
                }
                s.end()
            }
            other => other.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializer_sorts_keys_and_ends_with_a_newline() {
        let v = serde_json::json!({ "b": 1, "a": { "z": [true, null], "y": "x" } });
        assert_eq!(
            to_json_bytes(&v),
            "{\n  \"a\": {\n    \"y\": \"x\",\n    \"z\": [\n      true,\n      null\n    ]\n  },\n  \"b\": 1\n}\n"
        );
    }

    #[test]
    fn hash_is_prefixed_hex_and_depends_on_names_and_bytes() {
        let mut files = BTreeMap::new();
        files.insert("a.yaml".to_string(), "x".to_string());
        let h1 = compute_hash(&files).unwrap();
        assert!(h1.starts_with("sha256:") && h1.len() == 71, "{h1}");
        files.insert("a.yaml".to_string(), "y".to_string());
        assert_ne!(compute_hash(&files).unwrap(), h1);
        let mut renamed = BTreeMap::new();
        renamed.insert("b.yaml".to_string(), "x".to_string());
        assert_ne!(compute_hash(&renamed).unwrap(), h1);
    }

    #[test]
    fn version_info_does_not_change_the_hash_but_other_keys_do() {
        let mut files = BTreeMap::new();
        files.insert(
            "r.json".to_string(),
            to_json_bytes(&serde_json::json!({ "resources": [] })),
        );
        let h = compute_hash(&files).unwrap();
        files.insert(
            "r.json".to_string(),
            to_json_bytes(&serde_json::json!({ "resources": [], "version_info": "v" })),
        );
        assert_eq!(compute_hash(&files).unwrap(), h);
        files.insert(
            "r.json".to_string(),
            to_json_bytes(&serde_json::json!({ "resources": [1] })),
        );
        assert_ne!(compute_hash(&files).unwrap(), h);
    }

    #[test]
    fn unknown_format_is_refused() {
        let err = Bundle::parse(br#"{"format":2,"hash":"h","files":{},"entries":[]}"#).unwrap_err();
        assert!(matches!(err, BundleError::UnknownFormat { .. }), "{err}");
        assert!(matches!(
            Bundle::parse(br#"{"hash":"h"}"#),
            Err(BundleError::UnknownFormat { .. })
        ));
        assert!(matches!(
            Bundle::parse(b"not json"),
            Err(BundleError::Json { .. })
        ));
    }
}
