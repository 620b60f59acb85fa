//! `ConfigStore` on a versioned S3 bucket (aws-sdk-s3).

use super::{BundleHead, BundleVersion, ConfigStore, Precondition, PutBundle, StoreError, Writer};
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use gateway_render::contract::{
    BUNDLE_META_HASH as META_HASH, BUNDLE_META_WRITER as META_WRITER,
    BUNDLE_META_WRITTEN_BY as META_WRITTEN_BY, BUNDLE_OBJECT,
};

/// An S3 client from the shared SDK configuration. Path-style addressing when an endpoint is
/// configured (`AWS_ENDPOINT_URL`): a local endpoint has no per-bucket DNS names.
pub fn s3_client(conf: &aws_config::SdkConfig) -> Client {
    let mut builder =
        aws_sdk_s3::config::Builder::from(conf).timeout_config(crate::aws::s3_timeouts());
    if conf.endpoint_url().is_some() {
        builder = builder.force_path_style(true);
    }
    Client::from_conf(builder.build())
}

#[derive(Debug, Clone)]
pub struct S3Store {
    client: Client,
    bucket: String,
    /// Recorded as `written-by` on every version this store writes.
    identity: Option<String>,
    /// The most a version may decompress to (`GATEWAY_MAX_BUNDLE_BYTES`).
    max_bundle_bytes: usize,
    /// Signs every publish; without one a publish is refused.
    signer: Option<crate::signing::KmsSigner>,
}

impl S3Store {
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            identity: None,
            max_bundle_bytes: gateway_render::bounds::DEFAULT_MAX_BUNDLE_BYTES,
            signer: None,
        }
    }

    /// Signs every bundle this store publishes with `signer`.
    pub fn with_signer(mut self, signer: crate::signing::KmsSigner) -> Self {
        self.signer = Some(signer);
        self
    }

    pub fn signer(&self) -> Option<&crate::signing::KmsSigner> {
        self.signer.as_ref()
    }

    /// Replaces the most a version may decompress to.
    pub fn with_max_bundle_bytes(mut self, max: usize) -> Self {
        self.max_bundle_bytes = max;
        self
    }

    /// Records `identity` (a principal ARN, see `aws::caller_identity`) as `written-by` on every
    /// bundle version this store writes.
    pub fn with_identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Whether the bucket exists (a HEAD of an object in a missing bucket is a plain 404 too).
    pub async fn bucket_exists(&self) -> Result<bool, StoreError> {
        match self.client.head_bucket().bucket(&self.bucket).send().await {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(se)) if se.raw().status().as_u16() == 404 => Ok(false),
            Err(e) => Err(aws_error(&self.bucket, e)),
        }
    }

    /// Creates the bucket with versioning on, unless it exists (local use: `gatewayctl init`).
    pub async fn create_bucket_if_absent(&self) -> Result<bool, StoreError> {
        // us-east-1 answers 200 to creating a bucket one already owns, so ask first.
        let exists = self
            .client
            .head_bucket()
            .bucket(&self.bucket)
            .send()
            .await
            .is_ok();
        let created = if exists {
            false
        } else {
            match self
                .client
                .create_bucket()
                .bucket(&self.bucket)
                .send()
                .await
            {
                Ok(_) => true,
                Err(e) => match e.code() {
                    Some("BucketAlreadyOwnedByYou") | Some("BucketAlreadyExists") => false,
                    _ => return Err(aws_error(&self.bucket, e)),
                },
            }
        };
        self.client
            .put_bucket_versioning()
            .bucket(&self.bucket)
            .versioning_configuration(
                aws_sdk_s3::types::VersioningConfiguration::builder()
                    .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .map_err(|e| aws_error(&self.bucket, e))?;
        Ok(created)
    }
}

fn aws_error<E, R>(bucket: &str, e: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    s3_error(bucket, S3CallError(Box::new(e)))
}

/// A failed call as a [`StoreError`] that keeps it as its source. Only a service error has a
/// code (the SDK's other failures, timeouts and dropped connections among them, have none).
fn s3_error(bucket: &str, e: S3CallError) -> StoreError {
    // A failed conditional put is an unmodeled error: match on its code. S3 answers 409
    // ConditionalRequestConflict when two conditional writes race; the loser's precondition
    // did not hold either.
    if matches!(
        e.0.code(),
        Some("PreconditionFailed") | Some("ConditionalRequestConflict")
    ) {
        return StoreError::PreconditionFailed;
    }
    // A service error says what it is in its code and message; the raw response adds noise.
    let message = match e.0.code() {
        Some(code) => format!(
            "s3://{bucket}: {code}: {}",
            e.0.message().unwrap_or("no message")
        ),
        None => format!("s3://{bucket}: {}", crate::error_chain(e.0.as_ref())),
    };
    StoreError::Call { message, source: e }
}

fn epoch(dt: Option<&aws_sdk_s3::primitives::DateTime>) -> Option<i64> {
    dt.map(|d| d.secs())
}

fn head_from(
    version_id: Option<&str>,
    etag: Option<&str>,
    metadata: Option<&std::collections::HashMap<String, String>>,
    last_modified: Option<&aws_sdk_s3::primitives::DateTime>,
) -> BundleHead {
    let meta = |k: &str| metadata.and_then(|m| m.get(k)).cloned();
    BundleHead {
        version_id: version_id.unwrap_or("null").to_string(),
        etag: etag.unwrap_or_default().to_string(),
        hash: meta(META_HASH),
        writer: meta(META_WRITER)
            .as_deref()
            .map(Writer::parse)
            .unwrap_or(Writer::Unknown),
        written_by: meta(META_WRITTEN_BY),
        last_modified: epoch(last_modified),
    }
}

impl S3Store {
    /// The object metadata of a version this store writes.
    fn metadata_for(
        &self,
        hash: &str,
        writer: Writer,
    ) -> Option<std::collections::HashMap<String, String>> {
        let mut meta = std::collections::HashMap::from([
            (META_HASH.to_string(), hash.to_string()),
            (META_WRITER.to_string(), writer.as_str().to_string()),
        ]);
        if let Some(identity) = &self.identity {
            meta.insert(META_WRITTEN_BY.to_string(), identity.clone());
        }
        Some(meta)
    }
}

/// Any failed S3 call, kept whole: its message, its causes and its service code.
pub trait S3Failure: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static {}
impl<T: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static> S3Failure for T {}

/// A failed S3 call: the SDK's error, boxed whole (`.0.code()` is its service code).
#[derive(Debug)]
pub struct S3CallError(pub Box<dyn S3Failure>);

impl std::fmt::Display for S3CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for S3CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// What a HEAD of the live `bundle.json` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveHead {
    /// `If-None-Match` held: the same object as the etag given.
    Unchanged,
    /// Nothing published yet.
    Absent,
    Live(BundleHead),
}

/// One version as read: what its metadata says, and its canonical bytes (decompressed when it
/// was stored compressed), not yet parsed or verified.
#[derive(Debug, Clone)]
pub struct FetchedVersion {
    pub head: BundleHead,
    pub bytes: Vec<u8>,
}

/// One version being read: its metadata, and its canonical bytes as a blocking reader (see
/// [`S3Store::open_version`]), not yet parsed or verified.
pub struct OpenedVersion {
    pub head: BundleHead,
    pub body: VersionBody,
}

/// A version's canonical bytes as a blocking reader. Decoding starts at the first read (telling
/// gzip from plain JSON takes the body's first bytes), on the reading thread.
pub struct VersionBody(BodyState);

enum BodyState {
    Opened {
        body: BlockingBody,
        max: usize,
    },
    Decoding(super::encoding::Decoder),
    /// Telling the encoding failed; that error was returned.
    Failed,
}

impl std::io::Read for VersionBody {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if matches!(self.0, BodyState::Opened { .. }) {
            if let BodyState::Opened { body, max } =
                std::mem::replace(&mut self.0, BodyState::Failed)
            {
                self.0 = BodyState::Decoding(super::encoding::decoder(body, max)?);
            }
        }
        match &mut self.0 {
            BodyState::Decoding(decoder) => decoder.read(buf),
            BodyState::Opened { .. } | BodyState::Failed => {
                Err(std::io::Error::other("bundle.json: read after an error"))
            }
        }
    }
}

/// A version's body, chunk by chunk: at most `cap` bytes (one byte past the cap whatever the
/// length header said), and exactly `Content-Length` of them.
struct BoundedBody {
    body: ByteStream,
    read: usize,
    cap: usize,
    expected_len: Option<i64>,
}

impl BoundedBody {
    /// Appends the next chunk to `out`; `false` at the end of the body.
    async fn next_chunk_into(&mut self, out: &mut Vec<u8>) -> Result<bool, ReadError> {
        match self.body.next().await {
            Some(chunk) => {
                let chunk = chunk.map_err(ReadError::Body)?;
                self.read += chunk.len();
                if self.read > self.cap {
                    return Err(ReadError::TooLarge {
                        bytes: self.read,
                        max: self.cap,
                    });
                }
                out.extend_from_slice(&chunk);
                Ok(true)
            }
            None => match self.expected_len {
                Some(len) if usize::try_from(len).ok() != Some(self.read) => {
                    Err(ReadError::Truncated {
                        got: self.read,
                        expected: len,
                    })
                }
                _ => Ok(false),
            },
        }
    }
}

/// [`BoundedBody`] as a blocking `io::Read`, each chunk awaited on the runtime.
struct BlockingBody {
    body: BoundedBody,
    runtime: tokio::runtime::Handle,
    chunk: Vec<u8>,
    at: usize,
}

impl std::io::Read for BlockingBody {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.chunk.len() {
            self.chunk.clear();
            self.at = 0;
            match self
                .runtime
                .block_on(self.body.next_chunk_into(&mut self.chunk))
            {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => return Err(std::io::Error::other(e)),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Why reading the bucket failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The call failed; the SDK's error, whole (e.g. `NoSuchVersion` in its code).
    #[error(transparent)]
    Call(S3CallError),
    /// The body broke off while it was read: which way (reset, short, checksum, stalled), then
    /// the whole cause chain.
    #[error("{}: {}", crate::body_failure(.0), crate::error_chain(.0))]
    Body(#[source] aws_sdk_s3::primitives::ByteStreamError),
    /// The stored bytes pass the bound the reader set.
    #[error("bundle.json is {bytes} bytes or more; at most {max} (GATEWAY_MAX_BUNDLE_BYTES)")]
    TooLarge { bytes: usize, max: usize },
    /// Fewer bytes than the object's `Content-Length`.
    #[error("truncated: {got} of {expected} bytes")]
    Truncated { got: usize, expected: i64 },
    #[error(transparent)]
    Encoding(super::encoding::DecodeError),
}

impl ReadError {
    /// The error an [`OpenedVersion`]'s body failed with: the download's or decoding's.
    pub fn from_io(e: std::io::Error) -> ReadError {
        let e = match super::encoding::decode_error(e) {
            Ok(decode) => return ReadError::Encoding(decode),
            Err(e) => e,
        };
        if e.get_ref().is_some_and(|inner| inner.is::<ReadError>()) {
            if let Some(Ok(read)) = e.into_inner().map(|inner| inner.downcast::<ReadError>()) {
                return *read;
            }
            unreachable!("checked to be a ReadError");
        }
        // Neither: only the body's chunks and decoding fail, so this is a broken stream.
        ReadError::Encoding(super::encoding::DecodeError::Corrupt(e))
    }
}

/// The read side of the bucket, shared by the store's own reads and the sidecar's delivery
/// (docs/design.md#delivery).
impl S3Store {
    /// HEAD of the live `bundle.json`; with `if_none_match` (an etag), S3 answers 304 when it
    /// is still that object, which the SDK surfaces as an error carrying the raw status.
    pub async fn head_live_unless(
        &self,
        if_none_match: Option<&str>,
    ) -> Result<LiveHead, ReadError> {
        let result = self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .set_if_none_match(if_none_match.map(str::to_string))
            .send()
            .await;
        match result {
            Ok(out) => Ok(LiveHead::Live(head_from(
                out.version_id(),
                out.e_tag(),
                out.metadata(),
                out.last_modified(),
            ))),
            Err(e) => {
                if e.raw_response().map(|r| r.status().as_u16()) == Some(304) {
                    return Ok(LiveHead::Unchanged);
                }
                if let SdkError::ServiceError(se) = &e {
                    if se.err().is_not_found() {
                        return Ok(LiveHead::Absent);
                    }
                }
                Err(ReadError::Call(S3CallError(Box::new(e))))
            }
        }
    }

    /// GET of one exact version. With `stored_at_most`, no more than that many stored bytes are
    /// read (a larger `Content-Length` is refused before the body is read); either way what the
    /// version decompresses to is bounded by the store's `max_bundle_bytes`.
    pub async fn fetch_version(
        &self,
        version_id: &str,
        stored_at_most: Option<usize>,
    ) -> Result<FetchedVersion, ReadError> {
        let (head, mut body) = self.get_version_body(version_id, stored_at_most).await?;
        let mut bytes = Vec::new();
        while body.next_chunk_into(&mut bytes).await? {}
        // New versions are gzip, older ones (and restores of them) plain JSON; the bound holds
        // for what a version decompresses to, so a gzip bomb stops at max_bundle_bytes.
        let bytes =
            super::encoding::decode(bytes, self.max_bundle_bytes).map_err(ReadError::Encoding)?;
        Ok(FetchedVersion { head, bytes })
    }

    /// [`Self::fetch_version`] as a stream: the version's canonical bytes as they arrive, with
    /// the same bounds and refusals, never the whole body in memory. The reader blocks on the
    /// download: read it on a blocking thread (`tokio::task::spawn_blocking`) of this runtime.
    /// Its errors carry a [`ReadError`] ([`ReadError::from_io`]).
    pub async fn open_version(
        &self,
        version_id: &str,
        stored_at_most: Option<usize>,
    ) -> Result<OpenedVersion, ReadError> {
        let (head, body) = self.get_version_body(version_id, stored_at_most).await?;
        let body = BlockingBody {
            body,
            runtime: tokio::runtime::Handle::current(),
            chunk: Vec::new(),
            at: 0,
        };
        Ok(OpenedVersion {
            head,
            body: VersionBody(BodyState::Opened {
                body,
                max: self.max_bundle_bytes,
            }),
        })
    }

    /// The GET of one version: its metadata and its body, the stored bytes bounded.
    async fn get_version_body(
        &self,
        version_id: &str,
        stored_at_most: Option<usize>,
    ) -> Result<(BundleHead, BoundedBody), ReadError> {
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .version_id(version_id)
            .send()
            .await
            .map_err(|e| ReadError::Call(S3CallError(Box::new(e))))?;
        let head = head_from(
            out.version_id().or(Some(version_id)),
            out.e_tag(),
            out.metadata(),
            out.last_modified(),
        );
        let expected_len = out.content_length();
        let cap = stored_at_most.unwrap_or(usize::MAX);
        if let Some(len) = expected_len.and_then(|l| usize::try_from(l).ok()) {
            if len > cap {
                return Err(ReadError::TooLarge {
                    bytes: len,
                    max: cap,
                });
            }
        }
        let body = BoundedBody {
            body: out.body,
            read: 0,
            cap,
            expected_len,
        };
        Ok((head, body))
    }

    /// The most a version may decompress to.
    pub fn max_bundle_bytes(&self) -> usize {
        self.max_bundle_bytes
    }
}

impl ConfigStore for S3Store {
    async fn head_live(&self) -> Result<Option<BundleHead>, StoreError> {
        match self.head_live_unless(None).await {
            Ok(LiveHead::Live(head)) => Ok(Some(head)),
            // Without an etag to match, S3 never answers "not modified".
            Ok(LiveHead::Absent | LiveHead::Unchanged) => Ok(None),
            Err(ReadError::Call(e)) => Err(s3_error(&self.bucket, e)),
            Err(source) => Err(StoreError::Head {
                bucket: self.bucket.clone(),
                source,
            }),
        }
    }

    async fn head_version(&self, version_id: &str) -> Result<BundleHead, StoreError> {
        let out = self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .version_id(version_id)
            .send()
            .await
            .map_err(|e| match &e {
                SdkError::ServiceError(se) if se.err().is_not_found() => {
                    StoreError::NotFound(version_id.to_string())
                }
                _ => aws_error(&self.bucket, e),
            })?;
        Ok(head_from(
            out.version_id(),
            out.e_tag(),
            out.metadata(),
            out.last_modified(),
        ))
    }

    async fn get_version(&self, version_id: &str) -> Result<Vec<u8>, StoreError> {
        self.fetch_version(version_id, None)
            .await
            .map(|fetched| fetched.bytes)
            .map_err(|e| match e {
                ReadError::Call(e)
                    if matches!(e.0.code(), Some("NoSuchKey") | Some("NoSuchVersion")) =>
                {
                    StoreError::NotFound(version_id.to_string())
                }
                ReadError::Call(e) => s3_error(&self.bucket, e),
                ReadError::Encoding(source) => StoreError::Encoding {
                    version_id: version_id.to_string(),
                    source,
                },
                source => StoreError::Read {
                    version_id: version_id.to_string(),
                    source,
                },
            })
    }

    async fn put_bundle(&self, put: PutBundle<'_>) -> Result<String, StoreError> {
        let tail = super::encoding::compress(&put.sealed.tail());
        self.put_compressed_bundle(put, &tail).await
    }

    async fn put_compressed_bundle(
        &self,
        put: PutBundle<'_>,
        tail_gzip: &[u8],
    ) -> Result<String, StoreError> {
        let signer = self.signer.as_ref().ok_or(StoreError::NoSigner)?;
        let signature = signer.sign(&put.sealed.manifest).await?;
        // Two gzip members, read back as one stream: the signed head, then the files.
        let mut gzip = super::encoding::compress(&put.sealed.head(Some(&signature)));
        gzip.extend_from_slice(tail_gzip);
        let mut req = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .content_type(super::encoding::CONTENT_TYPE)
            .content_encoding(super::encoding::CONTENT_ENCODING)
            .set_metadata(self.metadata_for(&put.sealed.hash, put.writer))
            .body(ByteStream::from(gzip));
        req = match &put.precondition {
            Precondition::Absent => req.if_none_match("*"),
            Precondition::Matches(etag) => req.if_match(etag),
            Precondition::None => req,
        };
        let out = req.send().await.map_err(|e| aws_error(&self.bucket, e))?;
        out.version_id()
            .map(str::to_string)
            .ok_or_else(|| StoreError::NoVersionId {
                bucket: self.bucket.clone(),
            })
    }

    async fn read_failed(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        use aws_sdk_s3::error::SdkError;
        // A marker file of a few hundred bytes: anything larger is not one.
        const MAX_FAILED_READ: usize = 64 * 1024;
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(format!("failed/{key}"))
            .send()
            .await
        {
            Ok(out) => out,
            Err(SdkError::ServiceError(se)) if se.err().is_no_such_key() => return Ok(None),
            Err(e) => return Err(aws_error(&self.bucket, e)),
        };
        if out.content_length().is_some_and(|l| l as u64 > MAX_FAILED_READ as u64) {
            return Ok(None);
        }
        let bytes = out.body.collect().await.map_err(|e| {
            StoreError::Refused(format!("reading failed/{key} from bucket {}: {e}", self.bucket))
        })?;
        Ok(Some(bytes.into_bytes().to_vec()))
    }

    async fn keep_failed(&self, key: &str, body: &[u8]) -> Result<(), StoreError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(format!("failed/{key}"))
            .body(ByteStream::from(body.to_vec()))
            .send()
            .await
            .map_err(|e| aws_error(&self.bucket, e))?;
        Ok(())
    }

    async fn list_versions(&self, limit: usize) -> Result<Vec<BundleVersion>, StoreError> {
        let mut versions = Vec::new();
        let mut key_marker: Option<String> = None;
        let mut version_marker: Option<String> = None;
        loop {
            let out = self
                .client
                .list_object_versions()
                .bucket(&self.bucket)
                .prefix(BUNDLE_OBJECT)
                .set_key_marker(key_marker.clone())
                .set_version_id_marker(version_marker.clone())
                .send()
                .await
                .map_err(|e| aws_error(&self.bucket, e))?;
            for v in out.versions() {
                if v.key() == Some(BUNDLE_OBJECT) {
                    versions.push(BundleVersion {
                        version_id: v.version_id().unwrap_or("null").to_string(),
                        is_latest: v.is_latest().unwrap_or(false),
                        last_modified: epoch(v.last_modified()),
                        size: v.size(),
                        deleted: false,
                    });
                }
            }
            for m in out.delete_markers() {
                if m.key() == Some(BUNDLE_OBJECT) {
                    versions.push(BundleVersion {
                        version_id: m.version_id().unwrap_or("null").to_string(),
                        is_latest: m.is_latest().unwrap_or(false),
                        last_modified: epoch(m.last_modified()),
                        size: None,
                        deleted: true,
                    });
                }
            }
            if out.is_truncated() == Some(true) && versions.len() < limit {
                key_marker = out.next_key_marker().map(str::to_string);
                version_marker = out.next_version_id_marker().map(str::to_string);
            } else {
                break;
            }
        }
        // Newest first; ties (same second) keep the listing's order, which S3 gives newest first.
        versions.sort_by_key(|v| std::cmp::Reverse(v.last_modified));
        versions.truncate(limit);
        Ok(versions)
    }

    async fn signing_key(
        &self,
    ) -> Result<Option<gateway_render::bundle::TrustedKey>, StoreError> {
        match &self.signer {
            Some(signer) => Ok(Some(signer.public_key().await?)),
            None => Ok(None),
        }
    }

    async fn restore_version(&self, version_id: &str, hash: &str) -> Result<String, StoreError> {
        let source = format!("{}/{}?versionId={}", self.bucket, BUNDLE_OBJECT, version_id);
        let out = self
            .client
            .copy_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .copy_source(source)
            .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace)
            .set_metadata(self.metadata_for(hash, Writer::Restore))
            .send()
            .await
            .map_err(|e| match &e {
                SdkError::ServiceError(se) if se.err().meta().code() == Some("NoSuchVersion") => {
                    StoreError::NotFound(version_id.to_string())
                }
                _ => aws_error(&self.bucket, e),
            })?;
        out.version_id()
            .map(str::to_string)
            .ok_or_else(|| StoreError::NoVersionId {
                bucket: self.bucket.clone(),
            })
    }
}
