//! Operator controls on the live config: status, history, diff, kill switch, restore, resume.
//! `gatewayctl` is a thin shell over these.

mod diff;
mod history;
mod switches;

pub use diff::{diff_bundles, diff_entries, BundleDiff, Change};
pub use history::{history, status, HistoryItem, LiveStatus};
pub use switches::{kill_switch, restore, resume, Restored};

use gateway_adapters::registry::RegistryError;
use gateway_adapters::store::{ConfigStore, StoreError};
use gateway_render::bundle::{SignatureError, Signer, Trust, TrustedKey};
use gateway_render::Bundle;

#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("registry: {0}")]
    Registry(#[from] RegistryError),
    #[error("bucket: {0}")]
    Store(#[from] StoreError),
    #[error("bundle version {version_id} is not a valid bundle: {reason}")]
    BadBundle {
        version_id: String,
        #[source]
        reason: gateway_render::BundleError,
    },
    #[error("{0}")]
    Refused(String),
}

/// Downloads one version and checks it is a whole, verified bundle.
pub async fn load_bundle<S: ConfigStore>(
    store: &S,
    version_id: &str,
) -> Result<Bundle, OperatorError> {
    Ok(load_version(store, version_id, None).await?.bundle)
}

/// A version read whole and verified, with its format and what its signature says when judged
/// against `key` (the store's signing key).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub bundle: Bundle,
    pub format: u32,
    pub signer: Result<Signer, SignatureError>,
}

/// [`load_bundle`], keeping the format and the signature's verdict against `key`.
pub async fn load_version<S: ConfigStore>(
    store: &S,
    version_id: &str,
    key: Option<&TrustedKey>,
) -> Result<Loaded, OperatorError> {
    let bytes = store.get_version(version_id).await?;
    let bad = |reason| OperatorError::BadBundle {
        version_id: version_id.to_string(),
        reason,
    };
    let parsed = Bundle::read(&bytes).map_err(bad)?;
    parsed.bundle.verify().map_err(bad)?;
    let trust = Trust {
        keys: key.into_iter().cloned().collect(),
        allow_unsigned: false,
    };
    Ok(Loaded {
        signer: parsed.judge(&trust),
        format: parsed.format,
        bundle: parsed.bundle,
    })
}

/// How history and status say whether a version verifies: `signed, verified with KEY (FP)`,
/// or why not.
pub fn signature_verdict(signer: &Result<Signer, SignatureError>, format: u32) -> String {
    match (signer, format) {
        (Ok(s), _) => s.to_string(),
        (Err(_), 1) => "unsigned (format 1)".to_string(),
        (Err(e), _) => format!("does not verify: {e}"),
    }
}

/// Team routes in a bundle (its entries' routes; a kill-switch bundle has none).
pub fn route_count(bundle: &Bundle) -> usize {
    bundle.entries.iter().map(|e| e.routes.len()).sum()
}
