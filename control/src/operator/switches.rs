//! Kill switch (level 2), restore and resume: the operator's hand on the live bundle.

use super::{load_bundle, load_version, OperatorError};
use crate::reconcile::now;
use gateway_adapters::registry::{PublishedState, PublishedStateRead, StateRow};
use gateway_adapters::store::{ConfigStore, Precondition, PutBundle, Writer};
use gateway_render::{render_kill_switch_for, Bundle, Entry, RenderConfig};

/// Publishes the bundle whose routes answer 503 to everything. The reconciler then sees drift
/// and holds, so no team's deploy undoes it; `restore` brings the previous version back.
///
/// The live bundle's entries, when it verifies with the store's signing key, keep their hosts
/// and route matches (answering the same 503) so the access log still names each request's
/// team and service. Any failure to read or verify it leaves the catch-all alone: the switch
/// never waits on, or fails because of, what is live.
pub async fn kill_switch<S: ConfigStore>(
    store: &S,
    cfg: &RenderConfig,
) -> Result<(String, String), OperatorError> {
    let entries = live_entries(store).await.unwrap_or_default();
    let rendered = render_kill_switch_for(cfg, &entries);
    let bundle = Bundle::new(&rendered, &[]);
    let version_id = store
        .put_bundle(PutBundle {
            sealed: &bundle.seal(),
            writer: Writer::KillSwitch,
            precondition: Precondition::None,
        })
        .await?;
    Ok((version_id, bundle.hash))
}

/// The entries of the live bundle, when it verifies with the store's signing key.
async fn live_entries<S: ConfigStore>(store: &S) -> Option<Vec<Entry>> {
    let head = store.head_live().await.ok()??;
    let key = store.signing_key().await.ok()?;
    let loaded = load_version(store, &head.version_id, key.as_ref()).await.ok()?;
    loaded.signer.is_ok().then_some(loaded.bundle.entries)
}

/// Copies an earlier version back as the latest. Default: the reconciler's last publish, which
/// also clears drift (the live hash matches the recorded one again).
pub async fn restore<R: PublishedStateRead, S: ConfigStore>(
    registry: &R,
    store: &S,
    version_id: Option<&str>,
) -> Result<Restored, OperatorError> {
    let target = match version_id {
        Some(v) => v.to_string(),
        None => match registry.published_state().await? {
            Some(state) => state.version_id,
            None => {
                return Err(OperatorError::Refused(
                    "the reconciler has recorded no publish yet; name a version (see `gatewayctl history`)".into(),
                ))
            }
        },
    };
    // Never make a version live that would not verify: the sidecars would refuse it anyway.
    let key = store.signing_key().await?;
    let loaded = load_version(store, &target, key.as_ref()).await?;
    let hash = loaded.bundle.hash.clone();
    if loaded.signer.is_ok() {
        // Signed by this key: the copy carries its signature, and verifies as it did.
        let version_id = store.restore_version(&target, &hash).await?;
        return Ok(Restored {
            version_id,
            hash,
            resigned: false,
        });
    }
    // Format 1, unsigned, or signed by a key this store does not sign with (one rotated out):
    // the same files and entries, verified above, published again as format 2 and signed.
    let version_id = store
        .put_bundle(PutBundle {
            sealed: &loaded.bundle.seal(),
            writer: Writer::Restore,
            precondition: Precondition::None,
        })
        .await?;
    Ok(Restored {
        version_id,
        hash,
        resigned: true,
    })
}

/// What a restore made live: the new version, its hash, and whether it was signed again (a
/// format-1 or otherwise unverifiable version) rather than copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub version_id: String,
    pub hash: String,
    pub resigned: bool,
}

/// Accepts the live bundle as the reconciler's own: drift clears, and the next run publishes
/// the registry's render again if it differs (which lifts a kill switch).
pub async fn resume<S: ConfigStore>(
    state: &StateRow,
    store: &S,
) -> Result<PublishedState, OperatorError> {
    let Some(live) = store.head_live().await? else {
        return Err(OperatorError::Refused(
            "there is no live bundle.json; run `gatewayctl seed`".into(),
        ));
    };
    let bundle = load_bundle(store, &live.version_id).await?;
    let recorded = state.published_state().await?;
    let next = PublishedState {
        version_id: live.version_id,
        hash: bundle.hash,
        published_at: now(),
    };
    state.record(recorded.as_ref(), &next).await?;
    Ok(next)
}
