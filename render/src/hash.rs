//! The bundle hash: sha256 over, per file in name order, `name 0x00 canonical-bytes 0x00`, where a
//! `.json` file's canonical bytes are the file re-serialised without its top-level `version_info`
//! (so `version_info` can carry the hash) and any other file's are its bytes as they are.

use crate::error::BundleError;
use crate::canonical::Members;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The hash of files as they sit in a bundle or a directory (parses the `.json` ones).
pub fn compute_hash(files: &BTreeMap<String, String>) -> Result<String, BundleError> {
    let mut hasher = FilesHasher::new();
    for (name, text) in files {
        if is_json(name) {
            hasher.members(name, &JsonFile::parse(name, text)?.members);
        } else {
            hasher.text(name, text);
        }
    }
    Ok(hasher.finish())
}

/// Feeds files to the hash one by one, so ~90 MB of JSON is hashed from its pieces without
/// being joined first. Files must be given in name order.
pub(crate) struct FilesHasher(Sha256);

impl FilesHasher {
    pub(crate) fn new() -> FilesHasher {
        FilesHasher(Sha256::new())
    }

    pub(crate) fn text(&mut self, name: &str, bytes: &str) {
        self.bytes(name, bytes.as_bytes());
    }

    pub(crate) fn bytes(&mut self, name: &str, bytes: &[u8]) {
        self.file(name, |h| h.update(bytes));
    }

    /// A `.json` file by its members (without `version_info`).
    pub(crate) fn members(&mut self, name: &str, members: &Members) {
        self.file(name, |h| members.for_each_piece(|piece| h.update(piece)));
    }

    fn file(&mut self, name: &str, bytes: impl FnOnce(&mut Sha256)) {
        self.begin(name);
        bytes(&mut self.0);
        self.end();
    }

    fn begin(&mut self, name: &str) {
        self.0.update(name.as_bytes());
        self.0.update([0u8]);
    }

    fn end(&mut self) {
        self.0.update([0u8]);
    }

    pub(crate) fn finish(self) -> String {
        format!("sha256:{}", crate::bundle::signature::hex(&self.0.finalize()))
    }
}

pub(crate) fn is_json(name: &str) -> bool {
    name.ends_with(".json")
}

/// A `.json` file parsed once: what the hash and `Bundle::verify` need from it.
pub(crate) struct JsonFile {
    /// Its top-level members without `version_info`: the hash input.
    pub(crate) members: Members,
    /// Whether its text is exactly its canonical bytes (with `version_info`).
    pub(crate) is_canonical: bool,
    pub(crate) version_info: Option<String>,
}

impl JsonFile {
    pub(crate) fn parse(name: &str, text: &str) -> Result<JsonFile, BundleError> {
        // Through a `Value`, which sorts keys, keeps the last of duplicates and reports errors.
        let value: Value = serde_json::from_str(text).map_err(|e| BundleError::Json {
            what: name.to_string(),
            reason: e.to_string(),
        })?;
        let mut members = Members::of(&value).ok_or_else(|| BundleError::NotAnObject {
            file: name.to_string(),
        })?;
        let version_info = value
            .get("version_info")
            .and_then(Value::as_str)
            .map(str::to_string);
        let is_canonical = members.equals(text);
        members.remove("version_info");
        Ok(JsonFile {
            members,
            is_canonical,
            version_info,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::to_json_bytes;
    use serde_json::json;

    #[test]
    fn canonical_and_reformatted_text_have_the_same_members() {
        let value = json!({ "resources": [{ "b": [1, {}], "a": "x" }], "version_info": "v" });
        let canonical = to_json_bytes(&value);
        let compact = serde_json::to_string(&value).expect("serialises");
        let unordered = r#"{"version_info":"v","resources":[{"a":"x","b":[1,{}]}]}"#;
        let parsed: Vec<JsonFile> = [canonical.as_str(), &compact, unordered]
            .iter()
            .map(|t| JsonFile::parse("r.json", t).expect("parses"))
            .collect();
        assert!(parsed[0].is_canonical);
        assert!(!parsed[1].is_canonical && !parsed[2].is_canonical);
        for file in &parsed {
            assert_eq!(file.version_info.as_deref(), Some("v"));
            assert_eq!(
                file.members.to_bytes(),
                to_json_bytes(&json!({ "resources": [{ "b": [1, {}], "a": "x" }] }))
            );
        }
    }

    #[test]
    fn errors_name_the_file() {
        assert!(matches!(
            JsonFile::parse("x.json", "{"),
            Err(BundleError::Json { what, .. }) if what == "x.json"
        ));
        assert!(matches!(
            JsonFile::parse("x.json", "[]"),
            Err(BundleError::NotAnObject { file }) if file == "x.json"
        ));
    }
}
