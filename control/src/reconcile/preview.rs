//! `gatewayctl preview`: the reconcile run itself, over the live registry with one candidate in
//! place of its id (several, for a directory), writing nothing (docs/design.md#preview). Same checks, render, quarantine,
//! validation layers and pinned Envoy as a real run, so the verdict and hash are the ones the
//! next run would reach for that registry.

use super::{reconcile_report, ReconcileConfig, ReconcileError, RunReport};
use gateway_adapters::metrics::{Metric, MetricsError, MetricsSink};
use gateway_adapters::registry::{
    EntryStatus, PublishedState, Registry, RegistryError, RegistrySnapshot, RenderRecord,
    StoredEntry, Verdict,
};
use gateway_adapters::store::{BundleHead, BundleVersion, ConfigStore, PutBundle, StoreError};
use gateway_render::bounds::Totals;
use gateway_render::{Bundle, Entry};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// What a preview found.
#[derive(Debug)]
pub struct Preview {
    /// The run's decision and the entries it would quarantine (the candidate among them when it
    /// would be set aside, with the holder of a conflict named in the reason).
    pub report: RunReport,
    /// The bundle the run would publish (`None` when it would publish nothing).
    pub would_publish: Option<Bundle>,
    pub live: Option<Bundle>,
}

struct PreviewRegistry<'a, R> {
    inner: &'a R,
    candidates: &'a [Entry],
}

impl<R: Registry + Sync> Registry for PreviewRegistry<'_, R> {
    async fn read_all_entries(&self) -> Result<RegistrySnapshot, RegistryError> {
        let mut snap = self.inner.read_all_entries().await?;
        for candidate in self.candidates {
            let id = candidate.id();
            let key = format!("ENTRY#{id}");
            snap.unreadable.retain(|(k, _)| *k != key);
            match snap.entries.iter_mut().find(|s| s.entry.id() == id) {
                Some(s) if s.entry.registered() == *candidate => {}
                Some(s) => {
                    // As the registry would store it: a rollout beside the stored revision.
                    // (A refusal, such as a host move, is register's verdict, given before.)
                    s.entry = gateway_adapters::registry::rollout::staged(candidate, Some((&s.entry, s.revision)), false)
                        .unwrap_or_else(|_| candidate.clone());
                    s.revision += 1;
                }
                None => snap.entries.push(StoredEntry {
                    entry: candidate.clone(),
                    revision: 1,
                    updated_at: 0,
                    owner: None,
                }),
            }
        }
        snap.entries.sort_by_key(|s| s.entry.id());
        Ok(snap)
    }
    async fn read_totals(&self) -> Result<Option<Totals>, RegistryError> {
        self.inner.read_totals().await
    }
    async fn record_totals(&self, _totals: &Totals) -> Result<(), RegistryError> {
        Ok(())
    }
    async fn read_state(&self) -> Result<Option<PublishedState>, RegistryError> {
        self.inner.read_state().await
    }
    async fn record_published(
        &self,
        _expected: Option<&PublishedState>,
        _next: &PublishedState,
    ) -> Result<(), RegistryError> {
        Ok(())
    }
    async fn read_statuses(&self) -> Result<BTreeMap<String, EntryStatus>, RegistryError> {
        self.inner.read_statuses().await
    }
    async fn write_statuses(&self, _rows: &[EntryStatus]) -> Result<(), RegistryError> {
        Ok(())
    }
    async fn read_statuses_digest(&self) -> Result<Option<String>, RegistryError> {
        self.inner.read_statuses_digest().await
    }
    async fn record_statuses_digest(&self, _digest: Option<&str>) -> Result<(), RegistryError> {
        Ok(())
    }
    async fn read_render_record(&self) -> Result<Option<RenderRecord>, RegistryError> {
        self.inner.read_render_record().await
    }
    async fn record_render(&self, _record: &RenderRecord) -> Result<(), RegistryError> {
        Ok(())
    }
    async fn read_pending(&self) -> Result<Option<String>, RegistryError> {
        self.inner.read_pending().await
    }
    async fn record_pending(&self, _hash: &str) -> Result<(), RegistryError> {
        Ok(())
    }
    async fn read_verdicts(&self) -> Result<Vec<Verdict>, RegistryError> {
        self.inner.read_verdicts().await
    }
    async fn record_verdicts(&self, _verdicts: &[Verdict]) -> Result<(), RegistryError> {
        Ok(())
    }

    async fn read_rollouts(&self) -> Result<gateway_adapters::registry::rollout::Rollouts, RegistryError> {
        self.inner.read_rollouts().await
    }

    async fn record_rollouts(&self, _: &gateway_adapters::registry::rollout::Rollouts) -> Result<(), RegistryError> {
        Ok(())
    }
}

struct PreviewStore<'a, S> {
    inner: &'a S,
    published: Mutex<Option<Vec<u8>>>,
}

impl<S: ConfigStore + Sync> ConfigStore for PreviewStore<'_, S> {
    async fn head_live(&self) -> Result<Option<BundleHead>, StoreError> {
        self.inner.head_live().await
    }
    async fn head_version(&self, version_id: &str) -> Result<BundleHead, StoreError> {
        self.inner.head_version(version_id).await
    }
    async fn get_version(&self, version_id: &str) -> Result<Vec<u8>, StoreError> {
        self.inner.get_version(version_id).await
    }
    async fn put_bundle(&self, put: PutBundle<'_>) -> Result<String, StoreError> {
        if let Ok(mut slot) = self.published.lock() {
            *slot = Some(put.sealed.archive(None));
        }
        Ok("(preview: not written)".into())
    }
    async fn keep_failed(&self, _key: &str, _body: &[u8]) -> Result<(), StoreError> {
        Ok(())
    }
    async fn list_versions(&self, limit: usize) -> Result<Vec<BundleVersion>, StoreError> {
        self.inner.list_versions(limit).await
    }
    async fn restore_version(&self, _v: &str, _h: &str) -> Result<String, StoreError> {
        Err(StoreError::Refused("a preview writes nothing".into()))
    }
    async fn signing_key(
        &self,
    ) -> Result<Option<gateway_render::bundle::TrustedKey>, StoreError> {
        self.inner.signing_key().await
    }
}

struct NoMetrics;

impl MetricsSink for NoMetrics {
    async fn emit(&self, _data: &[(Metric, f64)]) -> Result<(), MetricsError> {
        Ok(())
    }
    async fn emit_per_team(
        &self,
        _metric: Metric,
        _per_team: &[(String, f64)],
    ) -> Result<(), MetricsError> {
        Ok(())
    }
}

/// Runs the reconcile steps with each candidate in place of its id; writes nothing anywhere.
pub async fn preview<R, S>(
    registry: &R,
    store: &S,
    cfg: &ReconcileConfig,
    candidates: &[Entry],
) -> Result<Preview, ReconcileError>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
{
    let reg = PreviewRegistry {
        inner: registry,
        candidates,
    };
    let st = PreviewStore {
        inner: store,
        published: Mutex::new(None),
    };
    let report = reconcile_report(&reg, &st, &NoMetrics, cfg).await?;
    let body = st.published.lock().ok().and_then(|mut s| s.take());
    let would_publish = match body {
        Some(b) => Some(Bundle::parse(&b).map_err(ReconcileError::PreviewUnreadable)?),
        None => None,
    };
    let live = match store.head_live().await? {
        Some(head) => Bundle::parse(&store.get_version(&head.version_id).await?).ok(),
        None => None,
    };
    Ok(Preview {
        report,
        would_publish,
        live,
    })
}
