//! The reconciler's pending publish (`STATE` / `PENDING`): the hash of the bundle it is about to
//! put, recorded before the conditional PUT (docs/design.md#reconcile-run). When the PUT's answer
//! is lost, the Lambda times out mid-publish or the state write fails after it, the next run
//! finds that hash live, written by the reconciler, and adopts it as its own publish instead of
//! holding it as drift. Beside the state row, never in it: the state row's conditional write
//! stays as it is.

use super::keys::{self, get_s};
use super::{DynamoRegistry, RegistryError, RegistryReader};

/// The row's sort key, under the reconciler's `STATE` partition key.
pub const PENDING_SK: &str = "PENDING";

impl DynamoRegistry {
    /// Records that a publish of `hash` is about to be put.
    pub async fn put_pending(&self, hash: &str) -> Result<(), RegistryError> {
        let attributes = [
            (keys::ATTR_HASH, keys::s(hash)),
            ("at", keys::n(super::proxies::unix_now())),
        ];
        self.put_state_row(PENDING_SK, attributes, "recording the pending publish")
            .await
    }
}

impl RegistryReader {
    /// The hash of the last publish the reconciler was about to put, if recorded.
    pub async fn pending(&self) -> Result<Option<String>, RegistryError> {
        let row = self.get_item(keys::STATE_PK.to_string(), PENDING_SK).await?;
        Ok(row
            .as_ref()
            .and_then(|r| get_s(r, keys::ATTR_HASH))
            .map(str::to_string))
    }
}
