//! The published unit: `bundle.json` = format, hash, the three files, and the exact entries.
//! Every byte of it goes through `canonical`'s writer; the hash is `hash`'s.

pub use crate::canonical::to_json_bytes;
use crate::canonical::{into_string, sorted_value, write};
use crate::contract::{BUNDLE_FORMAT, CLUSTERS_FILE, RATE_LIMIT_FILE, ROUTES_FILE};
use crate::entry::Entry;
pub use crate::error::BundleError;
pub use crate::hash::compute_hash;
use crate::hash::{is_json, FilesHasher, JsonFile};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

mod stream;
pub use stream::{read_bundle, StreamError, StreamedBundle};

/// Fields are declared in key order, so the derived `Serialize` writes them sorted, as the
/// canonical form wants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    /// The exact registry input, sorted by id, so any bundle can be re-rendered and audited.
    /// Written through a `Value`, which sorts each entry's keys.
    #[serde(serialize_with = "sorted_value")]
    pub entries: Vec<Entry>,
    pub files: BTreeMap<String, String>,
    pub format: u32,
    pub hash: String,
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

    /// `bundle.json`'s bytes: the files' writer on the whole bundle, so the same bundle is the
    /// same bytes. The ~90 MB of files at 50k routes are escaped straight from their strings into
    /// a buffer sized for them.
    pub fn to_json(&self) -> String {
        let files: usize = self
            .files
            .iter()
            .map(|(name, text)| name.len() + text.len() + text.len() / 4 + 16)
            .sum();
        let mut out = Vec::with_capacity(files + 64 * 1024);
        write(&mut out, self);
        out.push(b'\n');
        into_string(out)
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
        // Each `.json` file is parsed once, for the hash and for the checks below.
        let mut hasher = FilesHasher::new();
        let mut parsed = Vec::new();
        for (name, text) in &self.files {
            if is_json(name) {
                let file = JsonFile::parse(name, text)?;
                hasher.members(name, &file.members);
                parsed.push((name, file.is_canonical, file.version_info));
            } else {
                hasher.text(name, text);
            }
        }
        let computed = hasher.finish();
        if computed != self.hash {
            return Err(BundleError::HashMismatch {
                stated: self.hash.clone(),
                computed,
            });
        }
        for (name, is_canonical, found) in parsed {
            // The hash ignores formatting; this makes any changed byte an error all the same.
            if !is_canonical {
                return Err(BundleError::NotCanonical { file: name.clone() });
            }
            if found.as_deref() != Some(self.hash.as_str()) {
                return Err(BundleError::VersionInfo {
                    file: name.clone(),
                    found,
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
    fn to_json_is_the_canonical_form_of_the_whole_bundle() {
        let entry: Entry = serde_json::from_value(serde_json::json!({
            "team": "billing", "service": "invoices-api", "host": "invoices",
            "backend": "https://invoices.internal.example:8443",
            "routes": [{ "path": "/invoices", "methods": ["GET"],
                         "limits": [{ "burst": 5 }, { "per": "header", "header": "x-k", "requests": 1, "every": "hour" }] }]
        }))
        .unwrap();
        let mut files = BTreeMap::new();
        files.insert(
            "a.json".to_string(),
            "{\n  \"k\": \"\\u0001 \\\" é\"\n}\n".to_string(),
        );
        files.insert("b.yaml".to_string(), "domain: gateway\n".to_string());
        for (files, entries) in [
            (files, vec![entry.clone(), entry]),
            (BTreeMap::new(), vec![]),
        ] {
            let bundle = Bundle {
                format: BUNDLE_FORMAT,
                hash: "sha256:x".into(),
                files,
                entries,
            };
            let value = serde_json::to_value(&bundle).unwrap();
            assert_eq!(bundle.to_json(), to_json_bytes(&value));
        }
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
