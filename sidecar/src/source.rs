//! The versioned bucket, as the sidecar sees it: a cheap conditional HEAD each round, and a GET
//! of one exact version that is parsed and verified before anything is written.

use crate::error::SidecarError;
use aws_sdk_s3::error::DisplayErrorContext;
use gateway_adapters::store::{LiveHead, ReadError, S3Store};
use gateway_render::contract::BUNDLE_OBJECT;
use gateway_render::Bundle;

/// The store's read side (`gateway_adapters::store`), bounded by the sidecar's byte cap both on
/// the wire and decompressed.
#[derive(Debug, Clone)]
pub struct BundleSource {
    store: S3Store,
}

/// What the live `bundle.json` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// `If-None-Match` held: same object as last time.
    Unchanged,
    /// Nothing published yet.
    Absent,
    Live(LiveObject),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveObject {
    pub version_id: String,
    pub etag: String,
}

/// A bundle that parsed, verified, and matches the hash its object metadata states.
#[derive(Debug, Clone)]
pub struct Verified {
    pub version_id: String,
    pub etag: String,
    pub bundle: Bundle,
    /// The object's LastModified (unix seconds): when this version was published.
    pub last_modified: Option<u64>,
}

impl BundleSource {
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        BundleSource {
            store: S3Store::new(client, bucket),
        }
    }

    /// The largest bundle this source downloads (GATEWAY_MAX_BUNDLE_BYTES).
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.store = self.store.with_max_bundle_bytes(max_bytes);
        self
    }

    pub fn bucket(&self) -> &str {
        self.store.bucket()
    }

    /// HEAD `bundle.json`, with `If-None-Match: etag` when one is known (a 304 is `Unchanged`).
    pub async fn head(&self, if_none_match: Option<&str>) -> Result<Head, SidecarError> {
        match self.store.head_live_unless(if_none_match).await {
            Ok(LiveHead::Unchanged) => Ok(Head::Unchanged),
            Ok(LiveHead::Absent) => Ok(Head::Absent),
            Ok(LiveHead::Live(head)) => Ok(Head::Live(LiveObject {
                version_id: head.version_id,
                etag: head.etag,
            })),
            Err(e) => Err(self.read_error(format!("HEAD {BUNDLE_OBJECT}"), "", e)),
        }
    }

    /// GET that exact version, then refuse anything short, unparsable, unverified, or whose
    /// stated hash is not the object's `hash` metadata.
    pub async fn download(&self, live: &LiveObject) -> Result<Verified, SidecarError> {
        let action = format!("GET {BUNDLE_OBJECT} version {}", live.version_id);
        let max = self.store.max_bundle_bytes();
        let fetched = self
            .store
            .fetch_version(&live.version_id, Some(max))
            .await
            .map_err(|e| self.read_error(action, &live.version_id, e))?;
        let unverified = |reason: String| SidecarError::Unverified {
            version_id: live.version_id.clone(),
            reason,
        };
        let bundle = Bundle::parse(&fetched.bytes).map_err(|e| unverified(e.to_string()))?;
        bundle.verify().map_err(|e| unverified(e.to_string()))?;
        match fetched.head.hash {
            Some(h) if h == bundle.hash => {}
            Some(h) => {
                return Err(unverified(format!(
                    "object metadata hash {h} differs from the bundle's hash {}",
                    bundle.hash
                )))
            }
            None => return Err(unverified("object has no hash metadata".into())),
        }
        let etag = match fetched.head.etag {
            e if e.is_empty() => live.etag.clone(),
            e => e,
        };
        Ok(Verified {
            version_id: live.version_id.clone(),
            etag,
            bundle,
            last_modified: fetched
                .head
                .last_modified
                .and_then(|t| u64::try_from(t).ok()),
        })
    }

    /// A failed call or a broken body is the bucket's (`S3`); bytes that arrived but cannot be
    /// a bundle (too many, too few, not gzip) are that version's (`Unverified`).
    fn read_error(&self, action: String, version_id: &str, e: ReadError) -> SidecarError {
        let reason = match e {
            ReadError::Call(e) => DisplayErrorContext(e.0.as_ref()).to_string(),
            ReadError::Body(e) => e.to_string(),
            e => {
                return SidecarError::Unverified {
                    version_id: version_id.to_string(),
                    reason: error_chain(&e),
                }
            }
        };
        SidecarError::S3 {
            bucket: self.bucket().to_string(),
            action,
            reason,
        }
    }
}

/// An error and its causes, one after another.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
