//! `status` and `history`: what is live, who wrote it, and whether it is the reconciler's.

use super::{load_bundle, route_count, OperatorError};
use crate::registry::{PublishedState, Registry};
use crate::store::{BundleHead, ConfigStore, Writer};
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct LiveStatus {
    pub live: Option<BundleHead>,
    pub recorded: Option<PublishedState>,
    /// The live bundle's hash differs from the reconciler's last publish: it holds.
    pub drift: bool,
    pub entries: usize,
    pub routes: usize,
    /// Set when the live bundle could not be read or verified.
    pub problem: Option<String>,
}

impl LiveStatus {
    pub fn is_reconcilers(&self) -> bool {
        matches!((&self.live, &self.recorded), (Some(l), Some(r)) if l.version_id == r.version_id)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "live": self.live.as_ref().map(|l| json!({
                "version_id": l.version_id, "hash": l.hash, "writer": l.writer.as_str(),
                "written_by": l.written_by, "last_modified": l.last_modified,
            })),
            "recorded": self.recorded.as_ref().map(|r| json!({
                "version_id": r.version_id, "hash": r.hash, "published_at": r.published_at,
            })),
            "reconcilers_last_publish": self.is_reconcilers(),
            "drift": self.drift,
            "entries": self.entries,
            "routes": self.routes,
            "problem": self.problem,
        })
    }
}

pub async fn status<R: Registry, S: ConfigStore>(
    registry: &R,
    store: &S,
) -> Result<LiveStatus, OperatorError> {
    let recorded = registry.read_state().await?;
    let live = store.head_live().await?;
    let (mut entries, mut routes, mut problem) = (0, 0, None);
    if let Some(l) = &live {
        match load_bundle(store, &l.version_id).await {
            Ok(b) => {
                entries = b.entries.len();
                routes = route_count(&b);
            }
            Err(e) => problem = Some(e.to_string()),
        }
    }
    let drift = match (&live, &recorded) {
        (Some(l), Some(r)) => l.hash.as_deref() != Some(r.hash.as_str()),
        (Some(_), None) => true,
        (None, _) => false,
    };
    Ok(LiveStatus {
        live,
        recorded,
        drift,
        entries,
        routes,
        problem,
    })
}

#[derive(Debug, Clone)]
pub struct HistoryItem {
    pub version_id: String,
    pub last_modified: Option<i64>,
    pub hash: Option<String>,
    pub writer: Writer,
    /// The principal that wrote it, when recorded.
    pub written_by: Option<String>,
    pub routes: Option<usize>,
    pub is_live: bool,
    /// The version the reconciler last recorded as published.
    pub is_reconcilers_last: bool,
    pub deleted: bool,
}

impl HistoryItem {
    pub fn to_json(&self) -> Value {
        json!({
            "version_id": self.version_id, "last_modified": self.last_modified, "hash": self.hash,
            "writer": self.writer.as_str(), "written_by": self.written_by, "routes": self.routes, "live": self.is_live,
            "reconcilers_last": self.is_reconcilers_last, "deleted": self.deleted,
        })
    }
}

/// Recent versions of `bundle.json`, newest first.
pub async fn history<R: Registry, S: ConfigStore>(
    registry: &R,
    store: &S,
    limit: usize,
) -> Result<Vec<HistoryItem>, OperatorError> {
    let recorded = registry.read_state().await?;
    let mut items = Vec::new();
    for v in store.list_versions(limit).await? {
        let mut item = HistoryItem {
            version_id: v.version_id.clone(),
            last_modified: v.last_modified,
            hash: None,
            writer: Writer::Unknown,
            written_by: None,
            routes: None,
            is_live: v.is_latest,
            is_reconcilers_last: recorded
                .as_ref()
                .is_some_and(|r| r.version_id == v.version_id),
            deleted: v.deleted,
        };
        if !v.deleted {
            let head = store.head_version(&v.version_id).await?;
            item.hash = head.hash;
            item.writer = head.writer;
            item.written_by = head.written_by;
            item.routes = load_bundle(store, &v.version_id)
                .await
                .ok()
                .map(|b| route_count(&b));
        }
        items.push(item);
    }
    Ok(items)
}
