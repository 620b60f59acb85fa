//! `ConfigStore` on a versioned S3 bucket (aws-sdk-s3).

use super::{BundleHead, BundleVersion, ConfigStore, Precondition, PutBundle, StoreError, Writer};
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use gateway_render::contract::BUNDLE_OBJECT;

const META_HASH: &str = "hash";
const META_WRITER: &str = "writer";
const META_WRITTEN_BY: &str = "written-by";

/// An S3 client from the shared SDK configuration. Path-style addressing when an endpoint is
/// configured (`AWS_ENDPOINT_URL`): a local endpoint has no per-bucket DNS names.
pub fn s3_client(conf: &aws_config::SdkConfig) -> Client {
    let mut builder = aws_sdk_s3::config::Builder::from(conf);
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
}

impl S3Store {
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            identity: None,
            max_bundle_bytes: gateway_render::bounds::DEFAULT_MAX_BUNDLE_BYTES,
        }
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
    // A failed conditional put is an unmodeled error: match on its code. S3 answers 409
    // ConditionalRequestConflict when two conditional writes race; the loser's precondition
    // did not hold either.
    if matches!(
        e.code(),
        Some("PreconditionFailed") | Some("ConditionalRequestConflict")
    ) {
        return StoreError::PreconditionFailed;
    }
    // A service error says what it is in its code and message; the raw response adds noise.
    match (&e, e.code(), e.message()) {
        (SdkError::ServiceError(_), Some(code), message) => StoreError::Aws(format!(
            "s3://{bucket}: {code}: {}",
            message.unwrap_or("no message")
        )),
        _ => StoreError::Aws(format!("s3://{bucket}: {}", DisplayErrorContext(&e))),
    }
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

impl ConfigStore for S3Store {
    async fn head_live(&self) -> Result<Option<BundleHead>, StoreError> {
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .send()
            .await
        {
            Ok(out) => Ok(Some(head_from(
                out.version_id(),
                out.e_tag(),
                out.metadata(),
                out.last_modified(),
            ))),
            Err(e) => {
                if let SdkError::ServiceError(se) = &e {
                    if se.err().is_not_found() {
                        return Ok(None);
                    }
                }
                Err(aws_error(&self.bucket, e))
            }
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
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .version_id(version_id)
            .send()
            .await
            .map_err(|e| match &e {
                SdkError::ServiceError(se)
                    if se.err().is_no_such_key()
                        || se.err().meta().code() == Some("NoSuchVersion") =>
                {
                    StoreError::NotFound(version_id.to_string())
                }
                _ => aws_error(&self.bucket, e),
            })?;
        let body =
            out.body.collect().await.map_err(|e| {
                StoreError::Aws(format!("reading bundle version {version_id}: {e}"))
            })?;
        super::encoding::decode(body.into_bytes().to_vec(), self.max_bundle_bytes).map_err(
            |source| StoreError::Encoding {
                version_id: version_id.to_string(),
                source,
            },
        )
    }

    async fn put_bundle(&self, put: PutBundle<'_>) -> Result<String, StoreError> {
        let mut req = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .content_type("application/json")
            .content_encoding(super::encoding::CONTENT_ENCODING)
            .set_metadata(self.metadata_for(put.hash, put.writer))
            .body(ByteStream::from(super::encoding::compress(put.body)));
        req = match &put.precondition {
            Precondition::Absent => req.if_none_match("*"),
            Precondition::Matches(etag) => req.if_match(etag),
            Precondition::None => req,
        };
        let out = req.send().await.map_err(|e| aws_error(&self.bucket, e))?;
        out.version_id().map(str::to_string).ok_or_else(|| {
            StoreError::Aws(format!(
                "bucket {} returned no version id: is versioning on?",
                self.bucket
            ))
        })
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

    async fn restore_version(&self, version_id: &str, hash: &str) -> Result<String, StoreError> {
        let source = format!("{}/{}?versionId={}", self.bucket, BUNDLE_OBJECT, version_id);
        let out = self
            .client
            .copy_object()
            .bucket(&self.bucket)
            .key(BUNDLE_OBJECT)
            .copy_source(source)
            .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace)
            .content_type("application/json")
            .set_metadata(self.metadata_for(hash, Writer::Restore))
            .send()
            .await
            .map_err(|e| match &e {
                SdkError::ServiceError(se) if se.err().meta().code() == Some("NoSuchVersion") => {
                    StoreError::NotFound(version_id.to_string())
                }
                _ => aws_error(&self.bucket, e),
            })?;
        out.version_id().map(str::to_string).ok_or_else(|| {
            StoreError::Aws(format!(
                "bucket {} returned no version id: is versioning on?",
                self.bucket
            ))
        })
    }
}
