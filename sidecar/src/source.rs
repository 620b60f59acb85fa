//! The versioned bucket, as the sidecar sees it: a cheap conditional HEAD each round, and a GET
//! of one exact version that is parsed and verified before anything is written.

use crate::error::SidecarError;
use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use gateway_render::contract::BUNDLE_OBJECT;
use gateway_render::Bundle;

/// Object metadata key holding the bundle hash (set by every writer of `bundle.json`).
const META_HASH: &str = "hash";

#[derive(Debug, Clone)]
pub struct BundleSource {
    client: aws_sdk_s3::Client,
    bucket: String,
    max_bytes: usize,
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
            client,
            bucket: bucket.into(),
            max_bytes: gateway_render::bounds::DEFAULT_MAX_BUNDLE_BYTES,
        }
    }

    /// The largest bundle this source downloads (GATEWAY_MAX_BUNDLE_BYTES).
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// HEAD `bundle.json`, with `If-None-Match: etag` when one is known: S3 then answers 304,
    /// which the SDK surfaces as an error carrying the raw status.
    pub async fn head(&self, if_none_match: Option<&str>) -> Result<Head, SidecarError> {
        let result = self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .set_if_none_match(if_none_match.map(str::to_string))
            .send()
            .await;
        match result {
            Ok(out) => Ok(Head::Live(LiveObject {
                version_id: out.version_id().unwrap_or("null").to_string(),
                etag: out.e_tag().unwrap_or_default().to_string(),
            })),
            Err(e) => {
                if e.raw_response().map(|r| r.status().as_u16()) == Some(304) {
                    return Ok(Head::Unchanged);
                }
                if let SdkError::ServiceError(se) = &e {
                    if se.err().is_not_found() {
                        return Ok(Head::Absent);
                    }
                }
                Err(self.error(format!("HEAD {BUNDLE_OBJECT}"), DisplayErrorContext(&e)))
            }
        }
    }

    /// GET that exact version, then refuse anything short, unparsable, unverified, or whose
    /// stated hash is not the object's `hash` metadata.
    pub async fn download(&self, live: &LiveObject) -> Result<Verified, SidecarError> {
        let action = || format!("GET {BUNDLE_OBJECT} version {}", live.version_id);
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .version_id(&live.version_id)
            .send()
            .await
            .map_err(|e| self.error(action(), DisplayErrorContext(&e)))?;
        let expected_len = out.content_length();
        let meta_hash = out.metadata().and_then(|m| m.get(META_HASH)).cloned();
        let etag = out.e_tag().unwrap_or(&live.etag).to_string();
        let last_modified = out
            .last_modified()
            .and_then(|t| u64::try_from(t.secs()).ok());
        let unverified = |reason: String| SidecarError::Unverified {
            version_id: live.version_id.clone(),
            reason,
        };
        let too_big = |bytes: usize| {
            unverified(format!(
                "bundle.json is {bytes} bytes or more; at most {} (GATEWAY_MAX_BUNDLE_BYTES)",
                self.max_bytes
            ))
        };
        if let Some(len) = expected_len.and_then(|l| usize::try_from(l).ok()) {
            if len > self.max_bytes {
                return Err(too_big(len));
            }
        }
        // Read at most one byte past the cap whatever the length header said.
        let mut body = out.body;
        let mut bytes = Vec::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| self.error(action(), e))?;
            bytes.extend_from_slice(&chunk);
            if bytes.len() > self.max_bytes {
                return Err(too_big(bytes.len()));
            }
        }
        if let Some(len) = expected_len {
            if usize::try_from(len).ok() != Some(bytes.len()) {
                return Err(unverified(format!(
                    "truncated: {} of {len} bytes",
                    bytes.len()
                )));
            }
        }
        // New versions are gzip, older ones (and restores of them) plain JSON; the bound holds
        // for what a version decompresses to, so a gzip bomb stops at GATEWAY_MAX_BUNDLE_BYTES.
        let bytes = gateway_adapters::store::encoding::decode(bytes, self.max_bytes)
            .map_err(|e| unverified(error_chain(&e)))?;
        let bundle = Bundle::parse(&bytes).map_err(|e| unverified(e.to_string()))?;
        bundle.verify().map_err(|e| unverified(e.to_string()))?;
        match meta_hash {
            Some(h) if h == bundle.hash => {}
            Some(h) => {
                return Err(unverified(format!(
                    "object metadata hash {h} differs from the bundle's hash {}",
                    bundle.hash
                )))
            }
            None => return Err(unverified("object has no hash metadata".into())),
        }
        Ok(Verified {
            version_id: live.version_id.clone(),
            etag,
            bundle,
            last_modified,
        })
    }

    fn error(&self, action: String, reason: impl std::fmt::Display) -> SidecarError {
        SidecarError::S3 {
            bucket: self.bucket.clone(),
            action,
            reason: reason.to_string(),
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
