//! Operator controls on the live config: status, history, diff, kill switch, restore, resume.
//! `gatewayctl` is a thin shell over these.

mod diff;
mod history;
mod switches;

pub use diff::{diff_bundles, BundleDiff, Change};
pub use history::{history, status, HistoryItem, LiveStatus};
pub use switches::{kill_switch, restore, resume};

use gateway_adapters::registry::RegistryError;
use gateway_adapters::store::{ConfigStore, StoreError};
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
    let bytes = store.get_version(version_id).await?;
    let bad = |reason| OperatorError::BadBundle {
        version_id: version_id.to_string(),
        reason,
    };
    let bundle = Bundle::parse(&bytes).map_err(bad)?;
    bundle.verify().map_err(bad)?;
    Ok(bundle)
}

/// Team routes in a bundle (its entries' routes; a kill-switch bundle has none).
pub fn route_count(bundle: &Bundle) -> usize {
    bundle.entries.iter().map(|e| e.routes.len()).sum()
}
