//! Step 1, read: the whole registry, and what the drift guard and the render skip stand on.

use super::bounds::record_totals;
use super::run::{Run, Step};
use super::{Outcome, ReconcileError};
use gateway_adapters::registry::{PublishedState, Registry, RegistrySnapshot, RenderRecord};
use gateway_adapters::store::{BundleHead, ConfigStore};
use gateway_render::bounds::Totals;
use tracing::warn;

/// What the drift guard and the render skip stand on: the recorded publish, the live bundle's
/// head and the recorded render.
pub(super) struct Standing {
    pub state: Option<PublishedState>,
    pub live: Option<BundleHead>,
    pub render: Option<RenderRecord>,
    /// The hash of the publish this reconciler was last about to put.
    pub pending: Option<String>,
}

impl<R: Registry + Sync, S: ConfigStore + Sync> Run<'_, R, S> {
    /// Every entry row. An empty read keeps the live config: an empty route table is an outage.
    pub(super) async fn read(&mut self) -> Result<Step<RegistrySnapshot>, ReconcileError> {
        let snapshot = self.registry.read_all_entries().await?;
        if snapshot.entries.is_empty() && snapshot.unreadable.is_empty() {
            record_totals(self.registry, Totals::default()).await;
            return Ok(Step::Decided(Outcome::KeptLive {
                reason: "the registry read returned no entries; an empty route table is an outage"
                    .into(),
            }));
        }
        Ok(Step::Next(snapshot))
    }
}

/// The four reads at once. The render record is an optimisation: when it cannot be read, the
/// run renders.
pub(super) async fn read_standing<R: Registry, S: ConfigStore>(
    registry: &R,
    store: &S,
) -> Result<Standing, ReconcileError> {
    let (state, live, render, pending) = tokio::join!(
        registry.read_state(),
        store.head_live(),
        registry.read_render_record(),
        registry.read_pending(),
    );
    let render = render.unwrap_or_else(|e| {
        warn!(error = %e, "could not read the render record; rendering");
        None
    });
    Ok(Standing {
        state: state?,
        live: live?,
        render,
        pending: pending?,
    })
}
