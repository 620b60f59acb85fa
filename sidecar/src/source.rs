//! The versioned bucket, as the sidecar sees it: a cheap conditional HEAD each round, and a GET
//! of one exact version that is read as a stream, verified, and staged beside its targets before
//! anything is put in place (docs/design.md#delivery).

use crate::error::SidecarError;
use crate::staged::Staged;
use crate::timing::{self, Spent};
use gateway_adapters::store::{BundleHead, LiveHead, ReadError, S3Store};
use gateway_render::bundle::{read_bundle, Signer, StreamError, Trust};
use gateway_render::check::Policy;
use gateway_render::contract::{BUNDLE_OBJECT, CLUSTERS_FILE, ROUTES_FILE};
use gateway_render::delivery;
use std::io::BufReader;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How much of the decompressed bundle is read at a time.
const READ_BUFFER: usize = 64 * 1024;

/// The store's read side (`gateway_adapters::store`), bounded by the sidecar's byte cap both on
/// the wire and decompressed.
#[derive(Debug, Clone)]
pub struct BundleSource {
    store: S3Store,
    /// The keys a bundle must be signed by (docs/design.md#bundle-signature).
    trust: Arc<Trust>,
    /// The gateway's rules the delivered files must keep (docs/design.md#delivery-policy).
    policy: Arc<Policy>,
}

/// A bundle that was read, verified, and matches the hash its object metadata states; its files
/// staged beside their targets, not yet in place.
#[derive(Debug)]
pub struct Verified {
    pub version_id: String,
    pub etag: String,
    pub hash: String,
    pub staged: Staged,
    /// What vouched for it.
    pub signer: Signer,
    /// The object's LastModified (unix seconds): when this version was published.
    pub last_modified: Option<u64>,
}

impl BundleSource {
    /// A source that delivers only what `trust` verifies and `policy` allows.
    pub fn new(
        client: aws_sdk_s3::Client,
        bucket: impl Into<String>,
        trust: Trust,
        policy: Policy,
    ) -> Self {
        BundleSource {
            store: S3Store::new(client, bucket),
            trust: Arc::new(trust),
            policy: Arc::new(policy),
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
    pub async fn head(&self, if_none_match: Option<&str>) -> Result<LiveHead, SidecarError> {
        self.store
            .head_live_unless(if_none_match)
            .await
            .map_err(|e| self.read_error(format!("HEAD {BUNDLE_OBJECT}"), "", e))
    }

    /// GET that exact version and read it into `staged` as it arrives; refuse anything short,
    /// unparsable, unverified, or whose stated hash is not the object's `hash` metadata (then
    /// the staged files are dropped, removed with them).
    pub async fn download(
        &self,
        live: &BundleHead,
        staged: Staged,
    ) -> Result<Verified, SidecarError> {
        let version_id = &live.version_id;
        let action = format!("GET {BUNDLE_OBJECT} version {version_id}");
        let max = self.store.max_bundle_bytes();
        let started = Instant::now();
        let opened = self
            .store
            .open_version(version_id, Some(max))
            .await
            .map_err(|e| self.read_error(action.clone(), version_id, e))?;
        let unverified = |reason: String| SidecarError::Unverified {
            version_id: version_id.clone(),
            reason,
        };
        let started = timing::step_since("get", started);
        let body_reads = Spent::default();
        let body = body_reads.reader(opened.body);
        // The body blocks on the download, and reading is CPU work: off the async threads.
        let (trust, policy) = (self.trust.clone(), self.policy.clone());
        let (read, staged, allowed) = tokio::task::spawn_blocking(move || {
            let mut staged = staged;
            let body = BufReader::with_capacity(READ_BUFFER, body);
            let read = read_bundle(
                body,
                |manifest, signature| Ok(trust.judge(manifest, signature)?),
                |name| staged.create(name),
            );
            let allowed = match &read {
                Ok(_) => allowed_by_policy(&staged, &policy),
                Err(_) => Ok(()),
            };
            (read, staged, allowed)
        })
        .await
        .map_err(|e| unverified(format!("reading it stopped: {e}")))?;
        log_read_steps(started.elapsed(), body_reads.total(), staged.write_time());
        let streamed = read.map_err(|e| match e {
            StreamError::Bundle(e) => unverified(e.to_string()),
            StreamError::Read(e) => self.read_error(action, version_id, ReadError::from_io(e)),
            StreamError::Write { file, source } => Staged::error(&file, source),
        })?;
        allowed.map_err(unverified)?;
        match opened.head.hash {
            Some(h) if h == streamed.hash => {}
            Some(h) => {
                return Err(unverified(format!(
                    "object metadata hash {h} differs from the bundle's hash {}",
                    streamed.hash
                )))
            }
            None => return Err(unverified("object has no hash metadata".into())),
        }
        let etag = match opened.head.etag {
            e if e.is_empty() => live.etag.clone(),
            e => e,
        };
        Ok(Verified {
            version_id: version_id.clone(),
            etag,
            hash: streamed.hash,
            signer: streamed.signer,
            staged,
            last_modified: opened
                .head
                .last_modified
                .and_then(|t| u64::try_from(t).ok()),
        })
    }

    /// A failed call or a broken body is the bucket's (`S3`); bytes that arrived but cannot be
    /// a bundle (too many, too few, not gzip) are that version's (`Unverified`).
    fn read_error(&self, action: String, version_id: &str, e: ReadError) -> SidecarError {
        let reason = match e {
            ReadError::Call(e) => gateway_adapters::error_chain(e.0.as_ref()),
            e @ ReadError::Body(_) => e.to_string(),
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

/// The delivery policy on the staged Envoy files, read back from disk one resource at a time
/// (rate-limit mode stages no Envoy file: nothing to judge).
fn allowed_by_policy(staged: &Staged, policy: &Policy) -> Result<(), String> {
    let refused = |e: delivery::PolicyError| format!("refused by the delivery policy: {e}");
    let Some(clusters) = staged.reopen(CLUSTERS_FILE) else {
        return Ok(());
    };
    let clusters = clusters.map_err(|e| e.to_string())?;
    let names = delivery::read_clusters(BufReader::with_capacity(READ_BUFFER, clusters), policy)
        .map_err(refused)?;
    if let Some(routes) = staged.reopen(ROUTES_FILE) {
        let routes = routes.map_err(|e| e.to_string())?;
        delivery::read_routes(BufReader::with_capacity(READ_BUFFER, routes), &names)
            .map_err(refused)?;
    }
    if let Some(jwt) = staged.reopen(gateway_render::contract::JWT_FILE) {
        let jwt = jwt.map_err(|e| e.to_string())?;
        delivery::read_jwt(BufReader::with_capacity(READ_BUFFER, jwt), &names).map_err(refused)?;
    }
    Ok(())
}

/// The read of a bundle in three: waiting on the body (the download and gunzip), writing the
/// staged files, and the rest (parsing, hashing, the canonical check).
fn log_read_steps(whole: Duration, body: Duration, writes: Duration) {
    timing::step_took("body", body);
    timing::step_took("staging writes", writes);
    timing::step_took("verify", whole.saturating_sub(body + writes));
}

use gateway_adapters::error_chain;
