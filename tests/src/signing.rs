//! A bundle signing key on moto's KMS for a test: a fresh `ECC_NIST_P256` key behind a unique
//! alias, and its public key written as PEM for a sidecar's `--trust-key`.

use crate::{unique_name, MotoServer};
use gateway_adapters::signing::{kms_client, KmsSigner};
use std::path::PathBuf;
use std::sync::Mutex;

/// A new signing key on `moto` (created through `KmsSigner::create_if_absent`, as
/// `gatewayctl init` creates one).
pub async fn new_signer(moto: &MotoServer) -> KmsSigner {
    let conf = moto.sdk_config().await;
    let alias = format!("alias/{}", unique_name("bundles"));
    let signer = KmsSigner::new(kms_client(&conf), alias.clone());
    signer
        .create_if_absent()
        .await
        .unwrap_or_else(|e| panic!("creating signing key {alias}: {e}"));
    signer
}

/// The PEM files written for the tests of this process; kept until it exits.
static KEPT: Mutex<Vec<tempfile::TempPath>> = Mutex::new(Vec::new());

/// `signer`'s public key as a PEM file (a sidecar's `--trust-key`).
pub async fn trust_file(signer: &KmsSigner) -> PathBuf {
    let key = signer
        .public_key()
        .await
        .unwrap_or_else(|e| panic!("public key of {}: {e}", signer.key()));
    let file = tempfile::Builder::new()
        .suffix(".pem")
        .tempfile()
        .unwrap_or_else(|e| panic!("temp file: {e}"));
    std::fs::write(file.path(), key.to_pem()).unwrap_or_else(|e| panic!("writing the key: {e}"));
    let path = file.into_temp_path();
    let out = path.to_path_buf();
    KEPT.lock().unwrap_or_else(|p| p.into_inner()).push(path);
    out
}

/// Each bucket's trusted key file, for the sidecar arguments built from a bucket's name.
static TRUST_KEYS: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());

/// Sidecars started for `bucket` trust the key in `file`.
pub fn trust_for(bucket: &str, file: PathBuf) {
    TRUST_KEYS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((bucket.to_string(), file));
}

/// `--trust-key FILE` for each key registered for `bucket` ([`trust_for`]).
pub fn trust_args(bucket: &str) -> Vec<String> {
    let keys = TRUST_KEYS.lock().unwrap_or_else(|p| p.into_inner());
    keys.iter()
        .filter(|(b, _)| b == bucket)
        .flat_map(|(_, path)| ["--trust-key".to_string(), path.display().to_string()])
        .collect()
}
