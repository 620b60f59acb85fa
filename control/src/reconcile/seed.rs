//! The seed: the first bundle, published by the deploy with a conditional put, so re-running it
//! (a redeploy) can never overwrite what the reconciler published.

use super::check::check_each;
use super::run::now;
use super::layers::validate;
use super::{ReconcileConfig, ReconcileError};
use gateway_adapters::registry::{PublishedState, Registry};
use gateway_adapters::store::{ConfigStore, Precondition, PutBundle, StoreError, Writer};
use gateway_render::{render, Bundle, Entry};

/// Publishes the first bundle, from every entry or none: it quarantines nothing.
pub async fn seed<R, S>(
    registry: &R,
    store: &S,
    cfg: &ReconcileConfig,
) -> Result<SeedOutcome, ReconcileError>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
{
    if let Some(live) = store.head_live().await? {
        return Ok(SeedOutcome::AlreadySeeded {
            version_id: live.version_id,
        });
    }
    let entries = read_all(registry, cfg).await?;
    let rendered = render(&entries, &cfg.render).map_err(ReconcileError::Render)?;
    let validated = validate(rendered, entries.len(), None, &cfg.validate).await?;
    let rendered = validated.rendered;
    if let Err((stage, reason)) = validated.verdict {
        return Err(ReconcileError::SeedRefused(format!("{stage}: {reason}")));
    }
    let bundle = Bundle::new(&rendered, &entries);
    let body = bundle.to_json();
    let put = PutBundle {
        body: body.as_bytes(),
        hash: &bundle.hash,
        writer: Writer::Seed,
        precondition: Precondition::Absent,
    };
    let version_id = match store.put_bundle(put).await {
        Ok(v) => v,
        Err(StoreError::PreconditionFailed) => {
            let live = store.head_live().await?;
            return Ok(SeedOutcome::AlreadySeeded {
                version_id: live.map(|l| l.version_id).unwrap_or_default(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let state = registry.read_state().await?;
    let next = PublishedState {
        version_id: version_id.clone(),
        hash: bundle.hash.clone(),
        published_at: now(),
    };
    registry.record_published(state.as_ref(), &next).await?;
    Ok(SeedOutcome::Seeded {
        version_id,
        hash: bundle.hash,
    })
}

/// Every entry, all passing the checks, sorted by id; or every problem.
async fn read_all<R: Registry>(
    registry: &R,
    cfg: &ReconcileConfig,
) -> Result<Vec<Entry>, ReconcileError> {
    let snapshot = registry.read_all_entries().await?;
    let (cand, problems) = check_each(snapshot, &cfg.policy, &cfg.backends).await;
    if !problems.is_empty() {
        let lines: Vec<String> = problems
            .iter()
            .flat_map(|(id, ps)| ps.iter().map(move |p| format!("{id}: {p}")))
            .collect();
        return Err(ReconcileError::SeedRefused(lines.join("\n")));
    }
    Ok(cand.list())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeedOutcome {
    Seeded { version_id: String, hash: String },
    AlreadySeeded { version_id: String },
}

impl std::fmt::Display for SeedOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SeedOutcome::Seeded { version_id, hash } => {
                write!(f, "seeded version {version_id} ({hash})")
            }
            SeedOutcome::AlreadySeeded { version_id } => {
                write!(
                    f,
                    "already seeded: bundle.json exists (version {version_id}); left as is"
                )
            }
        }
    }
}
