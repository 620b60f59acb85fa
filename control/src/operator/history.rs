//! `status` and `history`: what is live, who wrote it, and whether it is the reconciler's.

use super::{load_version, route_count, signature_verdict, OperatorError};
use gateway_adapters::registry::{PublishedState, PublishedStateRead};
use gateway_adapters::store::{BundleHead, ConfigStore, Writer};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// `gatewayctl status`; as JSON, `live` and `recorded` are objects or `null`.
#[derive(Debug, Clone, Serialize)]
pub struct LiveStatus {
    #[serde(serialize_with = "live_head")]
    pub live: Option<BundleHead>,
    #[serde(serialize_with = "recorded_state")]
    pub recorded: Option<PublishedState>,
    /// The live bundle is the version the reconciler last recorded as published.
    #[serde(rename = "reconcilers_last_publish")]
    pub is_reconcilers_last: bool,
    /// The live bundle's hash differs from the reconciler's last publish: it holds.
    pub drift: bool,
    pub entries: usize,
    pub routes: usize,
    /// Set when the live bundle could not be read or verified.
    pub problem: Option<String>,
    /// Whether the live bundle's signature verifies with the signing key, and with which.
    pub signature: Option<String>,
    /// The last rejected run, when nothing has published since (every registration waits on
    /// it); shown through [`LiveStatus::hold`].
    #[serde(skip)]
    pub rejected: Option<crate::reconcile::LastRejection>,
}

impl LiveStatus {
    pub fn is_reconcilers(&self) -> bool {
        self.is_reconcilers_last
    }

    /// What holds every publish, and what lifts it; `None` when nothing does. Drift holds: the
    /// live bundle is not the reconciler's last publish (a level-2 kill switch, a restore of
    /// another version, anyone's write), so no team's change goes out until an operator acts.
    /// A rejected run holds too while nothing has published after it (the quarantine share
    /// valve, a render or Envoy refusing what no narrowing could set aside).
    pub fn hold(&self) -> Option<String> {
        if !self.drift {
            return self.rejected.as_ref().map(|r| r.hold());
        }
        let lift = "`gatewayctl restore` puts the reconciler's last publish back; `gatewayctl resume` accepts the live bundle";
        Some(match self.live.as_ref().map(|l| l.writer) {
            Some(Writer::KillSwitch) => format!(
                "the kill switch (level 2) is live: the reconciler publishes nothing until an operator lifts it ({lift})"
            ),
            Some(writer) => format!(
                "the live bundle (written by {}) is not the reconciler's last publish: the reconciler publishes nothing until an operator acts ({lift})",
                writer.as_str()
            ),
            None => return None,
        })
    }

    pub fn to_json(&self) -> Value {
        crate::to_json(self)
    }
}

/// The live head as `status` shows it (its ETag is the store's business).
fn live_head<S: Serializer>(live: &Option<BundleHead>, serializer: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Live<'a> {
        version_id: &'a str,
        hash: &'a Option<String>,
        #[serde(serialize_with = "writer_name")]
        writer: Writer,
        written_by: &'a Option<String>,
        last_modified: Option<i64>,
    }
    live.as_ref()
        .map(|l| Live {
            version_id: &l.version_id,
            hash: &l.hash,
            writer: l.writer,
            written_by: &l.written_by,
            last_modified: l.last_modified,
        })
        .serialize(serializer)
}

fn recorded_state<S: Serializer>(
    recorded: &Option<PublishedState>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Recorded<'a> {
        version_id: &'a str,
        hash: &'a str,
        published_at: u64,
    }
    recorded
        .as_ref()
        .map(|r| Recorded {
            version_id: &r.version_id,
            hash: &r.hash,
            published_at: r.published_at,
        })
        .serialize(serializer)
}

fn writer_name<S: Serializer>(writer: &Writer, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(writer.as_str())
}

pub async fn status<R: PublishedStateRead, S: ConfigStore>(
    registry: &R,
    store: &S,
) -> Result<LiveStatus, OperatorError> {
    let recorded = registry.published_state().await?;
    let live = store.head_live().await?;
    let (mut entries, mut routes, mut problem, mut signature) = (0, 0, None, None);
    if let Some(l) = &live {
        let key = signing_key(store).await;
        match load_version(store, &l.version_id, key.as_ref()).await {
            Ok(loaded) => {
                entries = loaded.bundle.entries.len();
                routes = route_count(&loaded.bundle);
                signature = Some(signature_verdict(&loaded.signer, loaded.format));
            }
            Err(e) => problem = Some(e.to_string()),
        }
    }
    let drift = match (&live, &recorded) {
        (Some(l), Some(r)) => l.hash.as_deref() != Some(r.hash.as_str()),
        (Some(_), None) => true,
        (None, _) => false,
    };
    let is_reconcilers_last =
        matches!((&live, &recorded), (Some(l), Some(r)) if l.version_id == r.version_id);
    let rejected = crate::reconcile::last_rejection_read(store)
        .await
        .filter(|rej| recorded.as_ref().is_none_or(|r| rej.at >= r.published_at));
    Ok(LiveStatus {
        live,
        recorded,
        is_reconcilers_last,
        drift,
        entries,
        routes,
        problem,
        signature,
        rejected,
    })
}

#[derive(Debug, Clone, Serialize)]
pub struct HistoryItem {
    pub version_id: String,
    pub last_modified: Option<i64>,
    pub hash: Option<String>,
    #[serde(serialize_with = "writer_name")]
    pub writer: Writer,
    /// The principal that wrote it, when recorded.
    pub written_by: Option<String>,
    pub routes: Option<usize>,
    /// Whether the version's signature verifies with the signing key, and with which key:
    /// `signed, verified with ARN (FINGERPRINT)`, `unsigned (format 1)` or why not.
    pub signature: Option<String>,
    #[serde(rename = "live")]
    pub is_live: bool,
    /// The version the reconciler last recorded as published.
    #[serde(rename = "reconcilers_last")]
    pub is_reconcilers_last: bool,
    pub deleted: bool,
}

impl HistoryItem {
    pub fn to_json(&self) -> Value {
        crate::to_json(self)
    }
}

/// Recent versions of `bundle.json`, newest first.
pub async fn history<R: PublishedStateRead, S: ConfigStore>(
    registry: &R,
    store: &S,
    limit: usize,
) -> Result<Vec<HistoryItem>, OperatorError> {
    let recorded = registry.published_state().await?;
    let key = signing_key(store).await;
    let mut items = Vec::new();
    for v in store.list_versions(limit).await? {
        let mut item = HistoryItem {
            version_id: v.version_id.clone(),
            last_modified: v.last_modified,
            hash: None,
            writer: Writer::Unknown,
            written_by: None,
            routes: None,
            signature: None,
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
            match load_version(store, &v.version_id, key.as_ref()).await {
                Ok(loaded) => {
                    item.routes = Some(route_count(&loaded.bundle));
                    item.signature = Some(signature_verdict(&loaded.signer, loaded.format));
                }
                Err(e) => item.signature = Some(format!("unreadable: {e}")),
            }
        }
        items.push(item);
    }
    Ok(items)
}

/// The store's signing key, to judge versions by; none when it cannot be read (the versions
/// then say they do not verify, and why).
async fn signing_key<S: ConfigStore>(store: &S) -> Option<gateway_render::bundle::TrustedKey> {
    match store.signing_key().await {
        Ok(key) => key,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the signing key's public key");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_and_history_write_the_json_gatewayctl_prints() {
        let mut status = LiveStatus {
            live: Some(BundleHead {
                version_id: "v2".into(),
                etag: "\"e\"".into(),
                hash: Some("sha256:b".into()),
                writer: Writer::KillSwitch,
                written_by: None,
                last_modified: Some(1_700_000_000),
            }),
            recorded: Some(PublishedState {
                version_id: "v1".into(),
                hash: "sha256:a".into(),
                published_at: 1_600_000_000,
            }),
            is_reconcilers_last: false,
            drift: true,
            entries: 2,
            routes: 5,
            problem: None,
            signature: Some("signed, verified with k (sha256:0123)".into()),
            rejected: None,
        };
        assert_eq!(
            serde_json::to_string(&status.to_json()).expect("json"),
            concat!(
                r#"{"drift":true,"entries":2,"live":{"hash":"sha256:b","last_modified":1700000000,"#,
                r#""version_id":"v2","writer":"kill-switch","written_by":null},"problem":null,"#,
                r#""reconcilers_last_publish":false,"recorded":{"hash":"sha256:a","#,
                r#""published_at":1600000000,"version_id":"v1"},"routes":5,"#,
                r#""signature":"signed, verified with k (sha256:0123)"}"#
            )
        );
        status.live = None;
        status.recorded = None;
        status.problem = Some("unreadable".into());
        let doc = status.to_json();
        assert_eq!(
            (&doc["live"], &doc["recorded"]),
            (&Value::Null, &Value::Null)
        );
        assert_eq!(doc["problem"], "unreadable");
        // Without drift, a rejected run that nothing published after holds.
        assert_eq!(status.hold(), None);
        status.drift = false;
        status.rejected = Some(crate::reconcile::LastRejection {
            at: 1_700_000_100,
            stage: "validation (quarantine)".into(),
            failed: "failed/abc".into(),
            reason: "quarantine would hold back 3 of 4 teams".into(),
        });
        let held = status.hold().expect("held");
        assert!(held.contains("rejected at validation (quarantine)") && held.contains("failed/abc"), "{held}");

        let item = HistoryItem {
            version_id: "v1".into(),
            last_modified: None,
            hash: Some("sha256:a".into()),
            writer: Writer::Reconciler,
            written_by: Some("arn:aws:sts::1:assumed-role/r".into()),
            routes: Some(3),
            signature: Some("unsigned (format 1)".into()),
            is_live: true,
            is_reconcilers_last: true,
            deleted: false,
        };
        assert_eq!(
            item.to_json(),
            json!({ "version_id": "v1", "last_modified": null, "hash": "sha256:a",
                "writer": "reconciler", "written_by": "arn:aws:sts::1:assumed-role/r",
                "routes": 3, "signature": "unsigned (format 1)", "live": true,
                "reconcilers_last": true, "deleted": false })
        );
    }
}
