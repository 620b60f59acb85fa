//! The bundle signing key in KMS (docs/design.md#bundle-signature): an `ECC_NIST_P256`,
//! `SIGN_VERIFY` key named by `GATEWAY_SIGNING_KEY` (a key id, ARN or alias). Every publish
//! signs its manifest's digest with it; `gatewayctl init` creates it when absent, and
//! `gatewayctl public-key` and the sidecar's `--trust-kms-key` read its public key.

use aws_sdk_kms::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{KeySpec, KeyUsageType, MessageType, SigningAlgorithmSpec};
use aws_sdk_kms::Client;
use gateway_render::bundle::{Signature, TrustedKey};
use std::time::Duration;

/// The largest message KMS signs as RAW.
const MAX_RAW_MESSAGE: usize = 4096;

/// The setting naming the key, and its default.
pub const SIGNING_KEY_SETTING: &str = "GATEWAY_SIGNING_KEY";
pub const DEFAULT_SIGNING_KEY: &str = "alias/gateway-bundles";

/// `GATEWAY_SIGNING_KEY`, or the default alias.
pub fn signing_key() -> String {
    std::env::var(SIGNING_KEY_SETTING)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_SIGNING_KEY.to_string())
}

/// A KMS client whose calls are bounded: a stalled KMS fails the publish, named, within seconds.
pub fn kms_client(conf: &aws_config::SdkConfig) -> Client {
    Client::from_conf(
        aws_sdk_kms::config::Builder::from(conf)
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(2))
                    .operation_attempt_timeout(Duration::from_secs(5))
                    .operation_timeout(Duration::from_secs(15))
                    .build(),
            )
            .build(),
    )
}

#[derive(Debug, thiserror::Error)]
#[error("KMS key {key}: {action}: {message}")]
pub struct SignError {
    pub key: String,
    pub action: &'static str,
    pub message: String,
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

/// Signs with, and reads the public key of, one KMS key.
#[derive(Debug, Clone)]
pub struct KmsSigner {
    client: Client,
    key: String,
    /// The public key once read: a warm reconciler judges every run's live bundle with it.
    public: std::sync::Arc<tokio::sync::OnceCell<TrustedKey>>,
}

impl KmsSigner {
    pub fn new(client: Client, key: impl Into<String>) -> KmsSigner {
        KmsSigner {
            client,
            key: key.into(),
            public: Default::default(),
        }
    }

    /// The key named by `GATEWAY_SIGNING_KEY`.
    pub fn from_settings(conf: &aws_config::SdkConfig) -> KmsSigner {
        KmsSigner::new(kms_client(conf), signing_key())
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    fn error<E, R>(&self, action: &'static str, e: SdkError<E, R>) -> SignError
    where
        E: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static,
        R: std::fmt::Debug + Send + Sync + 'static,
    {
        let message = match e.as_service_error() {
            Some(se) => format!(
                "{}: {}",
                se.code().unwrap_or("error"),
                se.message().unwrap_or("no message")
            ),
            None => crate::error_chain(&e),
        };
        SignError {
            key: self.key.clone(),
            action,
            message,
            source: Some(Box::new(e)),
        }
    }

    fn refused(&self, action: &'static str, message: impl Into<String>) -> SignError {
        SignError {
            key: self.key.clone(),
            action,
            message: message.into(),
            source: None,
        }
    }

    /// Signs a manifest (`ECDSA_SHA_256`, `MessageType: RAW`: KMS takes its SHA-256, so the
    /// signature is over the manifest's digest; a manifest is far below KMS's 4 KiB for a raw
    /// message). The signature names the key by the ARN KMS answers with.
    pub async fn sign(&self, manifest: &[u8]) -> Result<Signature, SignError> {
        if manifest.len() > MAX_RAW_MESSAGE {
            return Err(self.refused(
                "Sign",
                format!("the manifest is {} bytes; KMS signs at most {MAX_RAW_MESSAGE}", manifest.len()),
            ));
        }
        let out = self
            .client
            .sign()
            .key_id(&self.key)
            .message(Blob::new(manifest.to_vec()))
            .message_type(MessageType::Raw)
            .signing_algorithm(SigningAlgorithmSpec::EcdsaSha256)
            .send()
            .await
            .map_err(|e| self.error("Sign", e))?;
        let Some(der) = out.signature() else {
            return Err(self.refused("Sign", "the answer has no signature"));
        };
        Ok(Signature::new(
            out.key_id().unwrap_or(&self.key),
            der.as_ref(),
        ))
    }

    /// The key's public key (GetPublicKey: DER SubjectPublicKeyInfo), named by its ARN; read
    /// from KMS once per signer.
    pub async fn public_key(&self) -> Result<TrustedKey, SignError> {
        self.public
            .get_or_try_init(|| self.fetch_public_key())
            .await
            .cloned()
    }

    async fn fetch_public_key(&self) -> Result<TrustedKey, SignError> {
        let out = self
            .client
            .get_public_key()
            .key_id(&self.key)
            .send()
            .await
            .map_err(|e| self.error("GetPublicKey", e))?;
        // The key's spec is judged by its bytes: anything but a P-256 SubjectPublicKeyInfo is
        // refused by `TrustedKey::from_der`, naming the key (moto's answer omits `KeySpec`).
        let Some(der) = out.public_key() else {
            return Err(self.refused("GetPublicKey", "the answer has no public key"));
        };
        let name = out.key_id().unwrap_or(&self.key).to_string();
        TrustedKey::from_der(name, der.as_ref())
            .map_err(|e| self.refused("GetPublicKey", e.to_string()))
    }

    /// Creates the key (and, when named by an alias, the alias) unless it exists; `true` when
    /// it was created (`gatewayctl init`).
    pub async fn create_if_absent(&self) -> Result<bool, SignError> {
        match self.client.describe_key().key_id(&self.key).send().await {
            Ok(_) => return Ok(false),
            Err(e) if e.code() == Some("NotFoundException") => {}
            Err(e) => return Err(self.error("DescribeKey", e)),
        }
        let Some(alias) = self.key.strip_prefix("alias/").map(|_| self.key.clone()) else {
            return Err(self.refused(
                "DescribeKey",
                "not found; only a key named by an alias (alias/NAME) can be created",
            ));
        };
        let created = self
            .client
            .create_key()
            .key_spec(KeySpec::EccNistP256)
            .key_usage(KeyUsageType::SignVerify)
            .description("gateway bundle signing (ECDSA_SHA_256 over each bundle's manifest)")
            .send()
            .await
            .map_err(|e| self.error("CreateKey", e))?;
        let Some(id) = created.key_metadata().map(|m| m.key_id().to_string()) else {
            return Err(self.refused("CreateKey", "the answer has no key id"));
        };
        match self
            .client
            .create_alias()
            .alias_name(alias)
            .target_key_id(&id)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            // Another `init` created it meanwhile: its key is the one; ours goes.
            Err(e) if e.code() == Some("AlreadyExistsException") => {
                let _ = self
                    .client
                    .schedule_key_deletion()
                    .key_id(&id)
                    .pending_window_in_days(7)
                    .send()
                    .await;
                Ok(false)
            }
            Err(e) => Err(self.error("CreateAlias", e)),
        }
    }
}
