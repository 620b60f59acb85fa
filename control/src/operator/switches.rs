//! Kill switch (level 2), restore and resume: the operator's hand on the live bundle.

use super::{load_bundle, OperatorError};
use crate::reconcile::now;
use gateway_adapters::registry::{PublishedState, PublishedStateRead, StateRow};
use gateway_adapters::store::{ConfigStore, Precondition, PutBundle, Writer};
use gateway_render::{render_kill_switch, Bundle, RenderConfig};

/// Publishes the bundle whose routes answer 503 to everything. The reconciler then sees drift
/// and holds, so no team's deploy undoes it; `restore` brings the previous version back.
pub async fn kill_switch<S: ConfigStore>(
    store: &S,
    cfg: &RenderConfig,
) -> Result<(String, String), OperatorError> {
    let rendered = render_kill_switch(cfg);
    let bundle = Bundle::new(&rendered, &[]);
    let body = bundle.to_json();
    let version_id = store
        .put_bundle(PutBundle {
            body: body.as_bytes(),
            hash: &bundle.hash,
            writer: Writer::KillSwitch,
            precondition: Precondition::None,
        })
        .await?;
    Ok((version_id, bundle.hash))
}

/// Copies an earlier version back as the latest. Default: the reconciler's last publish, which
/// also clears drift (the live hash matches the recorded one again).
pub async fn restore<R: PublishedStateRead, S: ConfigStore>(
    registry: &R,
    store: &S,
    version_id: Option<&str>,
) -> Result<(String, String), OperatorError> {
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
    let bundle = load_bundle(store, &target).await?;
    let new_version = store.restore_version(&target, &bundle.hash).await?;
    Ok((new_version, bundle.hash))
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
