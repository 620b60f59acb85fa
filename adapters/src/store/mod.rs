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

/// A publish: the sealed bundle (the store signs its manifest and archives it), who writes it
/// and how it may replace what is there.
#[derive(Debug, Clone)]
pub struct PutBundle<'a> {
    pub sealed: &'a gateway_render::bundle::Sealed,
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
    /// A publish needs a signature and this store has no signing key.
    #[error("cannot publish an unsigned bundle: no signing key is configured (GATEWAY_SIGNING_KEY)")]
    NoSigner,
    #[error("signing the bundle: {0}")]
    Sign(#[from] crate::signing::SignError),
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
    /// Writes `bundle.json`: signs the sealed bundle's manifest, archives it and stores it
    /// gzip-compressed; returns the new version id.
    fn put_bundle(
        &self,
        put: PutBundle<'_>,
    ) -> impl Future<Output = Result<String, StoreError>> + Send;
    /// [`ConfigStore::put_bundle`] with most of the wire form already made: `tail_gzip` is
    /// [`encoding::compress`] of `put.sealed.tail()`, done by a caller that had a core free for
    /// it (the reconciler compresses while Envoy validates); the signed head is compressed as a
    /// gzip member of its own before it. A store that keeps no wire form of its own (a test
    /// double, a preview) puts `put` as `put_bundle` does.
    fn put_compressed_bundle(
        &self,
        put: PutBundle<'_>,
        tail_gzip: &[u8],
    ) -> impl Future<Output = Result<String, StoreError>> + Send {
        let _ = tail_gzip;
        self.put_bundle(put)
    }
    /// The public key of the key this store signs with, to judge the versions it reads (a
    /// restore copies only a version that key verifies); `None` for a store that signs nothing.
    fn signing_key(
        &self,
    ) -> impl Future<Output = Result<Option<gateway_render::bundle::TrustedKey>, StoreError>> + Send
    {
        async { Ok(None) }
    }
    /// Keeps a file of a rejected render under `failed/`.
    fn keep_failed(
        &self,
        key: &str,
        body: &[u8],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// A file kept under `failed/` (`None` when there is none); a store that keeps nothing
    /// readable answers `None`.
    fn read_failed(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, StoreError>> + Send {
        let _ = key;
        async { Ok(None) }
    }
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
