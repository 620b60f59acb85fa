//! Step 6, publish: the bundle put under the guard's precondition, the pending record first;
//! or, for a run that rejects, the render and the reason kept under `failed/`.

use super::run::{now, Run};
use super::layers::{Passed, Prepared};
use super::{Outcome, ReconcileError, Stage};
use gateway_adapters::registry::{PublishedState, Registry, RegistryError};
use gateway_adapters::store::{ConfigStore, Precondition, PutBundle, StoreError, Writer};
use gateway_render::Rendered;
use tracing::info;

impl<R: Registry + Sync, S: ConfigStore + Sync> Run<'_, R, S> {
    pub(super) async fn publish(
        &mut self,
        state: Option<&PublishedState>,
        (rendered, entries, prepared): Passed,
        precondition: Precondition,
    ) -> Result<Outcome, ReconcileError> {
        // Prepared while Envoy validated, unless narrowing picked another render since.
        let prepared = match prepared {
            Some(p) if p.hash == rendered.hash => p,
            _ => Prepared::of(&rendered, &entries),
        };
        if let Some(reason) = self.cfg.bounds.bundle_problem(prepared.sealed.archive_len()) {
            // Every sidecar would refuse to download it: keep the render for diagnosis instead.
            return reject(self.store, Stage::Render, reason, Some(&rendered)).await;
        }
        // The teams' routes, as `history` and `status` count them (Envoy's own count adds the
        // preflight and per-method routes the render derives).
        let routes = entries.iter().map(|e| e.routes.len()).sum();
        let outcome = put(self.registry, self.store, state, &prepared, precondition, routes).await?;
        self.reached(&rendered.hash);
        Ok(outcome)
    }
}

async fn put<R: Registry, S: ConfigStore>(
    registry: &R,
    store: &S,
    state: Option<&PublishedState>,
    bundle: &Prepared,
    precondition: Precondition,
    routes: usize,
) -> Result<Outcome, ReconcileError> {
    let put = PutBundle {
        sealed: &bundle.sealed,
        writer: Writer::Reconciler,
        precondition,
    };
    // Recorded first, so whatever happens to the PUT's answer, the next run can tell its own
    // publish from someone else's write.
    registry.record_pending(&bundle.hash).await?;
    let version_id = match store.put_compressed_bundle(put, &bundle.tail_gzip).await {
        Ok(v) => v,
        // The SDK's retry of a PUT whose answer was lost meets its own write: the precondition
        // no longer holds because this very bundle is live.
        Err(StoreError::PreconditionFailed) => match store.head_live().await? {
            Some(live)
                if live.writer == Writer::Reconciler
                    && live.hash.as_deref() == Some(bundle.hash.as_str()) =>
            {
                info!(version_id = %live.version_id, "the PUT's answer was lost; its bundle is live");
                live.version_id
            }
            _ => return Err(StoreError::PreconditionFailed.into()),
        },
        Err(e) => return Err(e.into()),
    };
    let next = PublishedState {
        version_id: version_id.clone(),
        hash: bundle.hash.clone(),
        published_at: now(),
    };
    match registry.record_published(state, &next).await {
        Ok(()) => Ok(Outcome::Published {
            version_id,
            hash: bundle.hash.clone(),
            routes,
        }),
        Err(RegistryError::StateConflict) => Err(ReconcileError::LostStateRace { version_id }),
        Err(e) => Err(e.into()),
    }
}

/// Keeps the rejected render and the reason under `failed/`, and publishes nothing.
pub(super) async fn reject<S: ConfigStore>(
    store: &S,
    stage: Stage,
    reason: String,
    rendered: Option<&Rendered>,
) -> Result<Outcome, ReconcileError> {
    let failed_key = failed_key(&stage, rendered, now());
    if let Some(r) = rendered {
        for (name, body) in &r.files {
            store
                .keep_failed(&format!("{failed_key}/{name}"), body.as_bytes())
                .await?;
        }
    }
    let text = format!("stage: {stage}\n\n{reason}\n");
    store
        .keep_failed(&format!("{failed_key}/reason.txt"), text.as_bytes())
        .await?;
    let last = super::LastRejection::text(now(), &stage, &failed_key, &reason);
    store
        .keep_failed(super::LAST_REJECTION, last.as_bytes())
        .await?;
    Ok(Outcome::Rejected {
        stage,
        reason,
        failed_key,
    })
}

/// Where under `failed/` a rejection is kept: the render's hash, or the stage and the time when
/// nothing rendered.
fn failed_key(stage: &Stage, rendered: Option<&Rendered>, now: u64) -> String {
    if let Some(r) = rendered {
        return r.hash.trim_start_matches("sha256:").to_string();
    }
    let slug = match stage {
        Stage::Registry => "registry",
        Stage::Render => "render",
        Stage::Validation(_) => "validation",
    };
    format!("{slug}-{now}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_without_a_render_is_kept_under_its_stage_and_time() {
        assert_eq!(failed_key(&Stage::Registry, None, 7), "registry-7");
        assert_eq!(failed_key(&Stage::Render, None, 8), "render-8");
        assert_eq!(failed_key(&Stage::Validation("envoy".into()), None, 9), "validation-9");
    }

    #[test]
    fn a_rejected_render_is_kept_under_its_hash() {
        let rendered = gateway_render::render(&[], &gateway_render::RenderConfig::new("api.example.com"))
            .expect("an empty render");
        let key = failed_key(&Stage::Render, Some(&rendered), 7);
        assert_eq!(format!("sha256:{key}"), rendered.hash);
        assert!(!key.contains(':'), "{key}");
    }
}
