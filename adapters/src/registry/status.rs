//! Per-entry status rows (`STATUS#{team}/{service}` / `STATUS`): which revision of an entry the
//! reconciler published, in which bundle, and whether it is quarantined and why
//! (docs/design.md#entry-status). Written only by the reconciler, only when they change; the
//! table stream's filter (`ENTRY#` keys) never wakes a run for them.

use super::error::from_sdk;
use super::keys::{self, get_n, get_s, Item};
use super::pages::scan_prefix;
use super::{DynamoRegistry, RegistryError, RegistryReader};
use std::collections::BTreeMap;

pub const STATUS_PREFIX: &str = "STATUS#";
pub const STATUS_SK: &str = "STATUS";
/// Longest reason stored (Envoy's stderr can be long); the full text is under `failed/`.
pub const MAX_REASON_BYTES: usize = 8 * 1024;

/// Why and since which revision an entry is quarantined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineStatus {
    /// The registered revision that was set aside.
    pub revision: u64,
    pub stage: String,
    pub reason: String,
    /// `previous` (its live version is still served) or `left-out`.
    pub kept: String,
    pub since: u64,
}

/// One entry's status row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryStatus {
    pub id: String,
    /// The registered revision last published, and the bundle it was first published in.
    pub revision_published: Option<u64>,
    pub version_id: Option<String>,
    pub hash: Option<String>,
    pub published_at: Option<u64>,
    pub quarantine: Option<QuarantineStatus>,
}

/// Where an entry stands, from its registered revision and its status row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryState {
    Pending,
    Published,
    Quarantined,
}

impl EntryState {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Pending => "pending",
            EntryState::Published => "published",
            EntryState::Quarantined => "quarantined",
        }
    }
}

impl EntryStatus {
    /// `quarantined` when the registered revision is the one set aside, `published` when it is
    /// the one published, else `pending` (the next run has not decided yet).
    pub fn state(&self, registered: u64) -> EntryState {
        if self.quarantine.as_ref().map(|q| q.revision) == Some(registered) {
            EntryState::Quarantined
        } else if self.revision_published == Some(registered) {
            EntryState::Published
        } else {
            EntryState::Pending
        }
    }

    pub fn to_json(&self, registered: Option<u64>) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "state": registered.map(|r| self.state(r).as_str()),
            "revision_registered": registered,
            "revision_published": self.revision_published,
            "version_id": self.version_id,
            "hash": self.hash,
            "published_at": self.published_at,
            "quarantine": self.quarantine.as_ref().map(|q| serde_json::json!({
                "revision": q.revision, "stage": q.stage, "reason": q.reason,
                "kept": q.kept, "since": q.since,
            })),
        })
    }

    fn to_item(&self) -> Item {
        let mut item = keys::key(format!("{STATUS_PREFIX}{}", self.id), STATUS_SK);
        if let Some(r) = self.revision_published {
            item.insert("revision_published".into(), keys::n(r));
        }
        for (name, v) in [("version_id", &self.version_id), ("hash", &self.hash)] {
            if let Some(v) = v {
                item.insert(name.into(), keys::s(v.as_str()));
            }
        }
        if let Some(t) = self.published_at {
            item.insert("published_at".into(), keys::n(t));
        }
        if let Some(q) = &self.quarantine {
            let mut reason = q.reason.clone();
            if reason.len() > MAX_REASON_BYTES {
                let mut cut = MAX_REASON_BYTES;
                while !reason.is_char_boundary(cut) {
                    cut -= 1;
                }
                reason.truncate(cut);
                reason.push_str(" … (truncated; full text under failed/quarantine/)");
            }
            item.insert("q_revision".into(), keys::n(q.revision));
            item.insert("q_stage".into(), keys::s(q.stage.as_str()));
            item.insert("q_reason".into(), keys::s(reason));
            item.insert("q_kept".into(), keys::s(q.kept.as_str()));
            item.insert("q_since".into(), keys::n(q.since));
        }
        item
    }

    fn from_item(item: &Item) -> Option<EntryStatus> {
        let id = get_s(item, keys::PK)?
            .strip_prefix(STATUS_PREFIX)?
            .to_string();
        let quarantine = get_n(item, "q_revision").map(|revision| QuarantineStatus {
            revision,
            stage: get_s(item, "q_stage").unwrap_or_default().to_string(),
            reason: get_s(item, "q_reason").unwrap_or_default().to_string(),
            kept: get_s(item, "q_kept").unwrap_or_default().to_string(),
            since: get_n(item, "q_since").unwrap_or(0),
        });
        Some(EntryStatus {
            id,
            revision_published: get_n(item, "revision_published"),
            version_id: get_s(item, "version_id").map(str::to_string),
            hash: get_s(item, "hash").map(str::to_string),
            published_at: get_n(item, "published_at"),
            quarantine,
        })
    }
}

impl RegistryReader {
    /// Every status row, by id.
    pub async fn statuses(&self) -> Result<BTreeMap<String, EntryStatus>, RegistryError> {
        let items = scan_prefix(
            self.client(),
            self.table(),
            STATUS_PREFIX,
            &format!("scanning table {} for status rows", self.table()),
        )
        .await?;
        Ok(items
            .iter()
            .filter_map(EntryStatus::from_item)
            .map(|s| (s.id.clone(), s))
            .collect())
    }

    /// One entry's status row.
    pub async fn status(&self, id: &str) -> Result<Option<EntryStatus>, RegistryError> {
        let out = self
            .client()
            .get_item()
            .table_name(self.table())
            .consistent_read(true)
            .set_key(Some(keys::key(format!("{STATUS_PREFIX}{id}"), STATUS_SK)))
            .send()
            .await
            .map_err(|e| from_sdk(&format!("reading the status of {id}"), e))?;
        Ok(out.item().and_then(EntryStatus::from_item))
    }
}

impl DynamoRegistry {
    /// Every status row, by id.
    pub async fn statuses(&self) -> Result<BTreeMap<String, EntryStatus>, RegistryError> {
        self.reader().statuses().await
    }

    /// One entry's status row.
    pub async fn status(&self, id: &str) -> Result<Option<EntryStatus>, RegistryError> {
        self.reader().status(id).await
    }

    /// Writes each row (whole-row puts: the reconciler is their only writer).
    pub async fn put_statuses(&self, rows: &[EntryStatus]) -> Result<(), RegistryError> {
        for row in rows {
            self.client()
                .put_item()
                .table_name(self.table())
                .set_item(Some(row.to_item()))
                .send()
                .await
                .map_err(|e| from_sdk(&format!("writing the status of {}", row.id), e))?;
        }
        Ok(())
    }
}
