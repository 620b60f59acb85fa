//! The published unit (docs/design.md#bundle-format-and-hash): format 2, one tar whose members
//! are a manifest, the signature when signed, and the files as their own bytes: `clusters.json`,
//! `entries.json` (the exact entries), `ratelimit.yaml`, `routes.json`. Every JSON byte goes
//! through `canonical`'s writer; the config hash is `hash`'s.

pub use crate::canonical::to_json_bytes;
use crate::contract::{CLUSTERS_FILE, ENTRIES_FILE, JWT_FILE, RATE_LIMIT_FILE, ROUTES_FILE};
use crate::entry::Entry;
pub use crate::error::BundleError;
pub use crate::hash::compute_hash;
use crate::hash::{is_json, FilesHasher, JsonFile};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::rc::Rc;

mod archive;
pub mod signature;
mod v1;
pub use archive::{read_bundle, Manifest, ManifestFile, ReadBundle, Sealed, StreamError};
pub use signature::{Signature, SignatureError, Signer, Trust, TrustedKey};

/// The files a format-2 bundle carries, in archive (name) order.
pub(crate) const REQUIRED_FILES: [&str; 4] =
    [CLUSTERS_FILE, ENTRIES_FILE, RATE_LIMIT_FILE, ROUTES_FILE];
/// Files a format-2 bundle carries only when it has something to say: `jwt.json` when an entry
/// declares `jwt`. A reader from before it refuses a bundle that carries it, naming it, so a
/// proxy that cannot apply it keeps its config instead of serving routes without their tokens.
pub(crate) const OPTIONAL_FILES: [&str; 1] = [JWT_FILE];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// The exact registry input, sorted by id, so any bundle can be re-rendered and audited.
    pub entries: Vec<Entry>,
    /// The three rendered files.
    pub files: BTreeMap<String, String>,
    /// The config hash: each Envoy file's `version_info`.
    pub hash: String,
}

/// A bundle as read from bytes, with what vouches for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub bundle: Bundle,
    /// 1 or 2.
    pub format: u32,
    /// The manifest's bytes (format 2), what a signature is over.
    pub manifest: Option<Vec<u8>>,
    pub signature: Option<Signature>,
}

impl Parsed {
    /// The signature judged against `trust`. A format-1 bundle has none.
    pub fn judge(&self, trust: &Trust) -> Result<Signer, SignatureError> {
        match &self.manifest {
            Some(manifest) => trust.judge(manifest, self.signature.as_ref()),
            None => trust.judge(&[], None),
        }
    }
}

impl Bundle {
    /// The bundle of a render. `entries` are stored sorted by id, as the renderer saw them.
    pub fn new(rendered: &crate::Rendered, entries: &[Entry]) -> Bundle {
        let mut entries = entries.to_vec();
        entries.sort_by_key(Entry::id);
        Bundle {
            hash: rendered.hash.clone(),
            files: rendered.files.clone(),
            entries,
        }
    }

    /// The manifest and the files' bytes, ready to be signed and archived.
    pub fn seal(&self) -> Sealed {
        let entries = serde_json::to_value(&self.entries).expect("entries serialise");
        let mut files: Vec<(String, Vec<u8>)> = self
            .files
            .iter()
            .map(|(name, text)| (name.clone(), text.as_bytes().to_vec()))
            .collect();
        files.push((ENTRIES_FILE.to_string(), to_json_bytes(&entries).into_bytes()));
        files.sort_by(|a, b| a.0.cmp(&b.0));
        Sealed::new(self.hash.clone(), files)
    }

    /// Reads a bundle of either format: format 2 (a tar), or format 1 (JSON, from before
    /// signing), told apart by the first byte.
    pub fn read(bytes: &[u8]) -> Result<Parsed, BundleError> {
        if bytes.first() == Some(&b'{') {
            return Ok(Parsed {
                bundle: v1::parse(bytes)?,
                format: v1::FORMAT,
                manifest: None,
                signature: None,
            });
        }
        let collected: Rc<RefCell<BTreeMap<String, Vec<u8>>>> = Rc::default();
        let mut manifest = None;
        let read = read_bundle(
            bytes,
            |bytes, _| {
                manifest = Some(bytes.to_vec());
                Ok(Signer::Unsigned)
            },
            |name| {
                Ok(Some(Collect {
                    into: collected.clone(),
                    name: name.to_string(),
                }))
            },
        )
        .map_err(|e| match e {
            StreamError::Bundle(e) => e,
            other => BundleError::NotAnArchive(other.to_string()),
        })?;
        let mut files = std::mem::take(&mut *collected.borrow_mut());
        let entries = files.remove(ENTRIES_FILE).unwrap_or_default();
        let entries: Vec<Entry> =
            serde_json::from_slice(&entries).map_err(|e| BundleError::Json {
                what: ENTRIES_FILE.to_string(),
                reason: e.to_string(),
            })?;
        let files = files
            .into_iter()
            .map(|(name, bytes)| match String::from_utf8(bytes) {
                Ok(text) => Ok((name, text)),
                Err(_) => Err(BundleError::NotUtf8 { file: name }),
            })
            .collect::<Result<_, _>>()?;
        Ok(Parsed {
            bundle: Bundle {
                entries,
                files,
                hash: read.hash,
            },
            format: crate::contract::BUNDLE_FORMAT,
            manifest,
            signature: read.signature,
        })
    }

    /// [`Bundle::read`], the bundle alone.
    pub fn parse(bytes: &[u8]) -> Result<Bundle, BundleError> {
        Bundle::read(bytes).map(|p| p.bundle)
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

/// A document's `format` must be `expected`; checked before anything else of it is read, so an
/// old reader never half-understands a newer bundle.
fn check_format(value: &serde_json::Value, expected: u32) -> Result<(), BundleError> {
    match value.get("format") {
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(u64::from(expected)) => Ok(()),
        Some(other) => Err(BundleError::UnknownFormat {
            found: other.to_string(),
        }),
        None => Err(BundleError::UnknownFormat {
            found: "missing".into(),
        }),
    }
}

/// A writer into one file of a bundle read in memory.
struct Collect {
    into: Rc<RefCell<BTreeMap<String, Vec<u8>>>>,
    name: String,
}

impl io::Write for Collect {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.into
            .borrow_mut()
            .entry(self.name.clone())
            .or_default()
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
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

    fn bundle(files: BTreeMap<String, String>, entries: Vec<Entry>) -> Bundle {
        Bundle {
            hash: "sha256:x".into(),
            files,
            entries,
        }
    }

    #[test]
    fn a_sealed_bundle_reads_back_as_itself_with_its_manifest_and_signature() {
        let entry: Entry = serde_json::from_value(serde_json::json!({
            "team": "billing", "service": "invoices-api", "host": "invoices",
            "backend": "https://invoices.internal.example:8443",
            "routes": [{ "path": "/invoices", "methods": ["GET"] }]
        }))
        .unwrap();
        let mut files = BTreeMap::new();
        files.insert(
            "clusters.json".to_string(),
            "{\n  \"k\": \"\\u0001 é\",\n  \"version_info\": \"sha256:x\"\n}\n".to_string(),
        );
        files.insert("ratelimit.yaml".to_string(), "domain: gateway\n".to_string());
        files.insert(
            "routes.json".to_string(),
            format!("{{\n  \"k\": \"{}\",\n  \"version_info\": \"sha256:x\"\n}}\n", "x".repeat(1025)),
        );
        let original = bundle(files, vec![entry]);
        let sealed = original.seal();
        let signature = Signature::new("arn:k", b"not a real signature");
        for signed in [None, Some(&signature)] {
            let bytes = sealed.archive(signed);
            assert_eq!(bytes.len() % 512, 0, "whole tar blocks");
            assert_eq!(bytes, sealed.archive(signed), "the same bundle is the same bytes");
            let read = Bundle::read(&bytes).expect("reads");
            assert_eq!(read.bundle, original);
            assert_eq!(read.format, 2);
            assert_eq!(read.manifest.as_deref(), Some(sealed.manifest.as_slice()));
            assert_eq!(read.signature.as_ref(), signed);
            let mut split = sealed.head(signed);
            split.extend(sealed.tail());
            assert_eq!(split, bytes);
        }
        let manifest = Manifest::parse(&sealed.manifest).expect("manifest");
        let names: Vec<&str> = manifest.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, REQUIRED_FILES);
        assert_eq!(manifest.hash, "sha256:x");
    }

    #[test]
    fn unknown_format_is_refused() {
        let err = Bundle::parse(br#"{"format":3,"hash":"h","files":{},"entries":[]}"#).unwrap_err();
        assert!(matches!(err, BundleError::UnknownFormat { .. }), "{err}");
        assert!(matches!(
            Bundle::parse(br#"{"hash":"h"}"#),
            Err(BundleError::UnknownFormat { .. })
        ));
        assert!(matches!(
            Bundle::parse(b"{not json"),
            Err(BundleError::Json { .. })
        ));
        assert!(matches!(
            Bundle::parse(b"not a tar either"),
            Err(BundleError::NotAnArchive(_))
        ));
    }
}
