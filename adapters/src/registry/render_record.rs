//! The reconciler's record of its last render (`STATE` / `RENDERED`): a digest of everything
//! that render was given and the hash it produced, so a run whose input digest is the recorded
//! one knows the bytes it would render without rendering them
//! (docs/design.md#skipping-an-unchanged-render). Beside the state row, never in it: the state
//! row's conditional write stays as it is. The reconcile role may write under `STATE` only.

use super::keys::{self, get_s};
use super::{DynamoRegistry, RegistryError, RegistryReader};

/// The record's sort key, under the reconciler's `STATE` partition key.
pub const RENDER_RECORD_SK: &str = "RENDERED";
const ATTR_INPUT_DIGEST: &str = "input_digest";

/// What one render was given (as a digest) and what it gave (the bundle hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderRecord {
    pub input_digest: String,
    pub hash: String,
}

impl DynamoRegistry {
    /// Replaces the render record.
    pub async fn put_render_record(&self, record: &RenderRecord) -> Result<(), RegistryError> {
        let attributes = [
            (ATTR_INPUT_DIGEST, keys::s(record.input_digest.as_str())),
            (keys::ATTR_HASH, keys::s(record.hash.as_str())),
        ];
        self.put_state_row(RENDER_RECORD_SK, attributes, "recording the last render")
            .await
    }
}

impl RegistryReader {
    /// The last render recorded, if any (a row missing either attribute reads as none).
    pub async fn render_record(&self) -> Result<Option<RenderRecord>, RegistryError> {
        let row = self
            .get_item(keys::STATE_PK.to_string(), RENDER_RECORD_SK)
            .await?;
        Ok(row.and_then(|r| {
            Some(RenderRecord {
                input_digest: get_s(&r, ATTR_INPUT_DIGEST)?.to_string(),
                hash: get_s(&r, keys::ATTR_HASH)?.to_string(),
            })
        }))
    }
}
