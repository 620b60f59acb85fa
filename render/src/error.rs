//! The errors of a render and of a bundle's bytes.

use crate::contract::BUNDLE_FORMAT;

/// Things the registry prevents; the renderer refuses them rather than render shadowing config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("entry {entry} appears twice in the registry read")]
    DuplicateEntry { entry: String },
    #[error("host {host} is claimed by two teams: {first} and {second}")]
    HostConflict {
        host: String,
        first: String,
        second: String,
    },
    #[error(
        "path {path} on {host} is claimed twice with overlapping methods: {first} and {second}"
    )]
    PathConflict {
        host: String,
        path: String,
        first: String,
        second: String,
    },
    #[error("entry {entry}: backend {backend:?}: {reason}")]
    Backend {
        entry: String,
        backend: String,
        reason: String,
    },
    #[error("entry {entry}: route {route}: limits[{index}]: {reason}")]
    Limit {
        entry: String,
        route: String,
        index: usize,
        reason: String,
    },
    #[error("entry {entry}: route {route}: two limits land on one rate-limit rule ({path})")]
    DuplicateRule {
        entry: String,
        route: String,
        path: String,
    },
    #[error("{file}: cannot serialise: {reason}")]
    Serialize { file: &'static str, reason: String },
}

/// A bundle that cannot be read or does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("{what} is not valid JSON: {reason}")]
    Json { what: String, reason: String },
    #[error("bundle format {found} is not supported; this build reads format {BUNDLE_FORMAT}")]
    UnknownFormat { found: String },
    #[error("bundle is format 1 (one JSON document, unsigned, written before bundles were signed): this reader takes format {BUNDLE_FORMAT} only; `gatewayctl restore VERSION` publishes that version again as format {BUNDLE_FORMAT}, signed")]
    Format1,
    #[error("bundle is not a format-{BUNDLE_FORMAT} archive: {0}")]
    NotAnArchive(String),
    #[error("bundle archive: expected {expected}, found {found}")]
    Member { expected: String, found: String },
    #[error("{file} is {found} bytes; the manifest says {stated}")]
    FileSize { file: String, stated: u64, found: u64 },
    #[error("{file}: its bytes hash to {computed}; the manifest says {stated}: changed after signing")]
    FileDigest {
        file: String,
        stated: String,
        computed: String,
    },
    #[error("manifest.json: {0}")]
    Manifest(String),
    #[error("{file} is not UTF-8")]
    NotUtf8 { file: String },
    #[error(transparent)]
    Signature(#[from] crate::bundle::signature::SignatureError),
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
