//! Envoy's verdicts on entry revisions (`STATE` / `VERDICTS`): which revision of which entry a
//! validation refused, on which build, and why (docs/design.md#quarantine). A later run sets a
//! remembered revision aside before it renders, so a known-bad revision costs no validation
//! again. Beside the state row, never in it; the reconcile role may write under `STATE` only.

use super::keys::{self, get_s};
use super::{DynamoRegistry, RegistryError, RegistryReader};
use serde::{Deserialize, Serialize};

/// The row's sort key, under the reconciler's `STATE` partition key.
pub const VERDICTS_SK: &str = "VERDICTS";
const ATTR_VERDICTS: &str = "verdicts";
/// Longest reason kept per verdict; the full text stays under `failed/quarantine/`.
pub const MAX_VERDICT_REASON_BYTES: usize = 2 * 1024;
/// Verdicts kept at most (one row stays far below DynamoDB's 400 KB item limit).
pub const MAX_VERDICTS: usize = 128;

/// One refused revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// `team/service`.
    pub id: String,
    pub revision: u64,
    /// What the verdict was given: the build, the render configuration and the entry as
    /// rendered (a digest). Another build or another content is judged again.
    pub key: String,
    /// The stage that refused it (`validation (layer 3 …)`).
    pub stage: String,
    pub reason: String,
    /// When it was first refused (unix seconds).
    pub since: u64,
}

impl Verdict {
    /// `reason` cut to [`MAX_VERDICT_REASON_BYTES`] on a character boundary.
    pub fn trimmed(mut self) -> Verdict {
        if self.reason.len() > MAX_VERDICT_REASON_BYTES {
            let mut cut = MAX_VERDICT_REASON_BYTES;
            while !self.reason.is_char_boundary(cut) {
                cut -= 1;
            }
            self.reason.truncate(cut);
            self.reason
                .push_str(" … (truncated; full text under failed/quarantine/)");
        }
        self
    }
}

impl DynamoRegistry {
    /// Replaces the remembered verdicts (at most [`MAX_VERDICTS`], newest kept).
    pub async fn put_verdicts(&self, verdicts: &[Verdict]) -> Result<(), RegistryError> {
        let mut kept: Vec<Verdict> = verdicts.iter().cloned().map(Verdict::trimmed).collect();
        kept.sort_by(|a, b| b.since.cmp(&a.since).then_with(|| a.id.cmp(&b.id)));
        kept.truncate(MAX_VERDICTS);
        kept.sort_by(|a, b| a.id.cmp(&b.id));
        let json = serde_json::to_string(&kept).map_err(|e| {
            RegistryError::Corrupt(format!("verdicts do not serialise: {e}"))
        })?;
        self.put_state_row(
            VERDICTS_SK,
            [(ATTR_VERDICTS, keys::s(json))],
            "recording Envoy's verdicts",
        )
        .await
    }
}

impl RegistryReader {
    /// The remembered verdicts; a row that does not parse reads as none (every revision is
    /// then judged again, which is always safe).
    pub async fn verdicts(&self) -> Result<Vec<Verdict>, RegistryError> {
        let row = self
            .get_item(keys::STATE_PK.to_string(), VERDICTS_SK)
            .await?;
        Ok(row
            .as_ref()
            .and_then(|r| get_s(r, ATTR_VERDICTS))
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reason_is_cut_on_a_character_boundary() {
        let v = Verdict {
            id: "a/b".into(),
            revision: 1,
            key: "k".into(),
            stage: "validation".into(),
            reason: "é".repeat(MAX_VERDICT_REASON_BYTES),
            since: 0,
        }
        .trimmed();
        assert!(v.reason.len() < MAX_VERDICT_REASON_BYTES + 80);
        assert!(v.reason.ends_with("under failed/quarantine/)"));
    }
}
