//! The seed: the first bundle, published by the deploy with a conditional put, so re-running it
//! (a redeploy) can never overwrite what the reconciler published.

use super::check::check_each;
use super::run::now;
use super::layers::validate;
use super::{ReconcileConfig, ReconcileError};
use gateway_adapters::registry::{PublishedState, Registry};
use gateway_adapters::store::{ConfigStore, Precondition, PutBundle, StoreError, Writer};
use gateway_render::bundle::{SignatureError, Trust};
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
        return reseal(registry, store, live).await;
    }
    let entries = read_all(registry, cfg).await?;
    let rendered = render(&entries, &cfg.render).map_err(ReconcileError::Render)?;
    let validated = validate(rendered, entries.len(), None, &cfg.validate).await?;
    let rendered = validated.rendered;
    if let Err((stage, reason)) = validated.verdict {
        return Err(ReconcileError::SeedRefused(format!("{stage}: {reason}")));
    }
    let bundle = Bundle::new(&rendered, &entries);
    let sealed = bundle.seal();
    let put = PutBundle {
        sealed: &sealed,
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

/// A seed (every deploy runs one) that finds a live bundle leaves it as it is, unless it is from
/// before signing: a format-1 or unsigned bundle that verifies is published again, the same
/// files and entries, as format 2 signed by this store's key, on the condition that it is still
/// live. This is the upgrade of a gateway whose bucket holds only unsigned versions: the deploy
/// reseals the live one before the sidecars that require signatures start. When the reconciler
/// had recorded it, the record moves to the resealed version (same hash).
async fn reseal<R, S>(
    registry: &R,
    store: &S,
    live: gateway_adapters::store::BundleHead,
) -> Result<SeedOutcome, ReconcileError>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
{
    let left = |live: &gateway_adapters::store::BundleHead| {
        Ok(SeedOutcome::AlreadySeeded {
            version_id: live.version_id.clone(),
        })
    };
    let key = store.signing_key().await?;
    let trust = Trust {
        keys: key.into_iter().collect(),
        allow_unsigned: false,
    };
    let parsed = match Bundle::read(&store.get_version(&live.version_id).await?) {
        Ok(p) if p.bundle.verify().is_ok() => p,
        _ => return left(&live),
    };
    match parsed.judge(&trust) {
        Ok(_) => return left(&live),
        // Signed, but not by this key: an operator's to judge, not a deploy's.
        Err(SignatureError::NoTrustedKey { .. }) if parsed.signature.is_some() => return left(&live),
        Err(_) => {}
    }
    let put = PutBundle {
        sealed: &parsed.bundle.seal(),
        writer: Writer::Seed,
        precondition: Precondition::Matches(live.etag.clone()),
    };
    let version_id = match store.put_bundle(put).await {
        Ok(v) => v,
        Err(StoreError::PreconditionFailed) => return left(&live),
        Err(e) => return Err(e.into()),
    };
    let hash = parsed.bundle.hash;
    let state = registry.read_state().await?;
    if state.as_ref().is_some_and(|s| s.hash == hash) {
        let next = PublishedState {
            version_id: version_id.clone(),
            hash: hash.clone(),
            published_at: now(),
        };
        registry.record_published(state.as_ref(), &next).await?;
    }
    Ok(SeedOutcome::Resealed {
        from: live.version_id,
        version_id,
        hash,
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
    /// The live bundle was from before signing and is now live again as format 2, signed.
    Resealed {
        from: String,
        version_id: String,
        hash: String,
    },
}

impl std::fmt::Display for SeedOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SeedOutcome::Seeded { version_id, hash } => {
                write!(f, "seeded version {version_id} ({hash})")
            }
            SeedOutcome::Resealed {
                from,
                version_id,
                hash,
            } => write!(
                f,
                "resealed: version {from} was unsigned; the same bundle ({hash}) is live again as version {version_id}, format 2, signed"
            ),
            SeedOutcome::AlreadySeeded { version_id } => {
                write!(
                    f,
                    "already seeded: bundle.json exists (version {version_id}); left as is"
                )
            }
        }
    }
}
