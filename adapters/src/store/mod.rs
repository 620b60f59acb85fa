//! The config store: the versioned bucket that holds `bundle.json`, its history, and the
//! `failed/` renders kept for diagnosis.

pub mod encoding;
mod s3;

pub use s3::{
    s3_client, FetchedVersion, LiveHead, OpenedVersion, ReadError, S3CallError, S3Failure, S3Store,
};

use std::future::Future;

/// Who wrote a bundle version. Stored as object metadata so `status`, `history` and the drift
/// check can tell the reconciler's publishes from an operator's hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    Reconciler,
    Seed,
    KillSwitch,
    Restore,
    /// Metadata missing or unknown: written by something other than this project's tools.
    Unknown,
}

impl Writer {
    pub fn as_str(self) -> &'static str {
        match self {
            Writer::Reconciler => "reconciler",
            Writer::Seed => "seed",
            Writer::KillSwitch => "kill-switch",
            Writer::Restore => "restore",
            Writer::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Writer {
        match s {
            "reconciler" => Writer::Reconciler,
            "seed" => Writer::Seed,
            "kill-switch" => Writer::KillSwitch,
            "restore" => Writer::Restore,
            _ => Writer::Unknown,
        }
    }
}

/// What a HEAD of `bundle.json` (or of one of its versions) tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleHead {
    pub version_id: String,
    pub etag: String,
    /// The `hash` object metadata; `None` when someone wrote the object without it.
    pub hash: Option<String>,
    pub writer: Writer,
    /// The principal that wrote it (`written-by` metadata), when the writer recorded one.
    pub written_by: Option<String>,
    /// Unix seconds.
    pub last_modified: Option<i64>,
}

/// One entry of the bundle's version history, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleVersion {
    pub version_id: String,
    pub is_latest: bool,
    pub last_modified: Option<i64>,
    pub size: Option<i64>,
    /// A delete marker rather than a bundle.
    pub deleted: bool,
}

/// How a publish may replace what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// Only if no `bundle.json` exists (`If-None-Match: *`): seeding, first publish.
    Absent,
    /// Only if the live object is still this one (`If-Match: etag`): a reconcile run never
    /// overwrites a version it did not look at (an operator's kill switch, an overlapping run).
    Matches(String),
    /// Unconditionally: operator commands that mean to replace whatever is live.
    None,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutBundle<'a> {
    pub body: &'a [u8],
    pub hash: &'a str,
    pub writer: Writer,
    pub precondition: Precondition,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The precondition of a conditional write did not hold (HTTP 412).
    #[error("bundle.json changed since it was read (precondition failed)")]
    PreconditionFailed,
    #[error("bundle version {0} not found")]
    NotFound(String),
    /// A store with no S3 behind it (a read-only view, a preview, a test's fault) refuses the
    /// call.
    #[error("S3: {0}")]
    Refused(String),
    /// The live object's head could not be read.
    #[error("S3: s3://{bucket}: {source}")]
    Head {
        bucket: String,
        #[source]
        source: s3::ReadError,
    },
    /// A put answered without a version id: the bucket is not versioned.
    #[error("S3: bucket {bucket} returned no version id: is versioning on?")]
    NoVersionId { bucket: String },
    /// An S3 call failed: `message` says what S3 answered, `source` is the SDK's error whole.
    #[error("S3: {message}")]
    Call {
        message: String,
        #[source]
        source: s3::S3CallError,
    },
    /// A version's body broke off, or was shorter than its `Content-Length`.
    #[error("S3: reading bundle version {version_id}: {source}")]
    Read {
        version_id: String,
        #[source]
        source: s3::ReadError,
    },
    #[error("bundle version {version_id}")]
    Encoding {
        version_id: String,
        #[source]
        source: encoding::DecodeError,
    },
}

/// The seam between the reconciler and the bucket; S3 in production, a fault-injecting wrapper
/// in tests.
pub trait ConfigStore {
    /// HEAD of the live `bundle.json`, `None` when there is none.
    fn head_live(&self) -> impl Future<Output = Result<Option<BundleHead>, StoreError>> + Send;
    /// HEAD of one version.
    fn head_version(
        &self,
        version_id: &str,
    ) -> impl Future<Output = Result<BundleHead, StoreError>> + Send;
    /// The canonical bytes of one version (decompressed when it was stored compressed).
    fn get_version(
        &self,
        version_id: &str,
    ) -> impl Future<Output = Result<Vec<u8>, StoreError>> + Send;
    /// Writes `bundle.json` (the canonical bytes; stored gzip-compressed); returns the new
    /// version id.
    fn put_bundle(
        &self,
        put: PutBundle<'_>,
    ) -> impl Future<Output = Result<String, StoreError>> + Send;
    /// [`ConfigStore::put_bundle`] with the wire form already made: `gzip` is
    /// [`encoding::compress`] of `put.body`, done by a caller that had a core free for it (the
    /// reconciler compresses while Envoy validates). A store that keeps no wire form of its own
    /// (a test double, a preview) puts `put` as `put_bundle` does.
    fn put_compressed_bundle(
        &self,
        put: PutBundle<'_>,
        gzip: &[u8],
    ) -> impl Future<Output = Result<String, StoreError>> + Send {
        let _ = gzip;
        self.put_bundle(put)
    }
    /// Keeps a file of a rejected render under `failed/`.
    fn keep_failed(
        &self,
        key: &str,
        body: &[u8],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Recent versions of `bundle.json`, newest first.
    fn list_versions(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<BundleVersion>, StoreError>> + Send;
    /// Makes an earlier version the latest again (server-side copy); returns the new version id.
    fn restore_version(
        &self,
        version_id: &str,
        hash: &str,
    ) -> impl Future<Output = Result<String, StoreError>> + Send;
}
