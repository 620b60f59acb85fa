//! One reconcile run: read all → check → render → compare → guard → validate → publish → record.
//!
//! A stream event, a schedule tick and a direct call all run exactly this; the event's content is
//! never applied, so missed, duplicate and backstop runs end in the same output.

mod handler;
mod outcome;

pub use handler::{describe_event, handle};

pub use outcome::{Outcome, Stage};

use crate::metrics::{Metric, MetricsSink};
use crate::registry::{PublishedState, Registry, RegistryError, StoredEntry};
use crate::resolve::BackendLookup;
use crate::store::{BundleHead, ConfigStore, Precondition, PutBundle, StoreError, Writer};
use gateway_render::check::{check_entry, Policy};
use gateway_render::contract::RATE_LIMIT_FILE;
use gateway_render::{render, Bounds, Bundle, Entry, RenderConfig, Rendered};
use gateway_validator::{validate_all, ConfigView, ValidateOptions};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::{info, warn};

/// What a reconcile run needs besides its adapters.
#[derive(Debug, Clone)]
pub struct ReconcileConfig {
    pub render: RenderConfig,
    pub policy: Policy,
    pub validate: ValidateOptions,
    /// How backend names are resolved and judged on every run (a name may have been repointed
    /// since it was registered).
    pub backends: BackendLookup,
    /// Entries per team, routes, bundle bytes: a registry beyond them is not published.
    pub bounds: Bounds,
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("registry: {0}")]
    Registry(#[from] RegistryError),
    #[error("bucket: {0}")]
    Store(#[from] StoreError),
    #[error("published version {version_id}, but another run recorded its own publish first; the next run adopts or flags it")]
    LostStateRace { version_id: String },
    #[error("validator: {0}")]
    Validator(String),
}

impl ReconcileError {
    /// A short, stable name for grouping failures (the Lambda error type).
    pub fn kind(&self) -> &'static str {
        match self {
            ReconcileError::Registry(_) => "RegistryUnavailable",
            ReconcileError::Store(_) => "BucketUnavailable",
            ReconcileError::LostStateRace { .. } => "LostStateRace",
            ReconcileError::Validator(_) => "ValidatorFailed",
        }
    }
}

/// Runs once and emits the run's metrics. Infrastructure failures (a throttled table, an S3
/// outage) are errors — nothing is half-published and the next run starts over; a rejected
/// registry is an `Outcome`, so a stream does not retry it forever.
pub async fn reconcile<R, S, M>(
    registry: &R,
    store: &S,
    metrics: &M,
    cfg: &ReconcileConfig,
) -> Result<Outcome, ReconcileError>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
    M: MetricsSink + Sync,
{
    let result = run(registry, store, metrics, cfg).await;
    let mut data = Vec::new();
    match &result {
        Ok(Outcome::Published { routes, .. }) => {
            data.push((Metric::Published, 1.0));
            data.push((Metric::RoutesRendered, *routes as f64));
        }
        Ok(Outcome::Rejected { .. }) => data.push((Metric::ValidationFailed, 1.0)),
        Ok(Outcome::HeldDrift { .. }) => data.push((Metric::ConfigDrift, 1.0)),
        Ok(Outcome::Unchanged { .. }) | Ok(Outcome::KeptLive { .. }) => {}
        Err(_) => data.push((Metric::ReconcileFailed, 1.0)),
    }
    match &result {
        Ok(outcome) => {
            info!(outcome = outcome.kind(), decision = %outcome, "reconcile run decided")
        }
        Err(e) => warn!(error = %e, "reconcile run failed; nothing was published by it"),
    }
    // A metrics outage must not turn a decided run into a failed one; it is logged loudly.
    if let Err(e) = metrics.emit(&data).await {
        warn!(error = %e, "could not emit reconcile metrics");
    }
    result
}

async fn run<R, S, M>(
    registry: &R,
    store: &S,
    _metrics: &M,
    cfg: &ReconcileConfig,
) -> Result<Outcome, ReconcileError>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
    M: MetricsSink + Sync,
{
    let entries = match read_all(registry, &cfg.policy, &cfg.backends).await? {
        Ok(entries) => entries,
        Err(reason) => return reject(store, Stage::Registry, reason, None).await,
    };
    if entries.is_empty() {
        return Ok(Outcome::KeptLive {
            reason: "the registry read returned no entries; an empty route table is an outage"
                .into(),
        });
    }
    // Registration refuses these one at a time; concurrent registrations or rows written
    // around the register function could still pass it, so the reconciler holds the line.
    let beyond = cfg.bounds.registry_problems(&entries);
    if !beyond.is_empty() {
        return reject(store, Stage::Registry, beyond.join("\n"), None).await;
    }
    let rendered = match render(&entries, &cfg.render) {
        Ok(r) => r,
        Err(e) => return reject(store, Stage::Render, e.to_string(), None).await,
    };

    let state = registry.read_state().await?;
    let live = store.head_live().await?;
    let precondition = match guard_drift(registry, state.as_ref(), live.as_ref(), &rendered).await?
    {
        DriftCheck::Clear(p) => p,
        DriftCheck::Adopted => {
            return Ok(Outcome::Unchanged {
                hash: rendered.hash,
            })
        }
        DriftCheck::Held(outcome) => return Ok(outcome),
    };
    if is_unchanged(state.as_ref(), live.as_ref(), &rendered) {
        return Ok(Outcome::Unchanged {
            hash: rendered.hash,
        });
    }

    let (rendered, verdict) = validate(rendered, entries.len(), &cfg.validate).await?;
    if let Err((stage, reason)) = verdict {
        return reject(store, stage, reason, Some(&rendered)).await;
    }

    let bundle = Bundle::new(&rendered, &entries);
    let body = bundle.to_json();
    if let Some(reason) = cfg.bounds.bundle_problem(body.len()) {
        // Every sidecar would refuse to download it: keep the render for diagnosis instead.
        return reject(store, Stage::Render, reason, Some(&rendered)).await;
    }
    publish(
        registry,
        store,
        state.as_ref(),
        &bundle,
        &body,
        precondition,
        rendered.route_count,
    )
    .await
}

/// Reads every entry and re-checks it: an entry written straight into the table is held to the
/// same rules as one that came through the register function, and every backend name is
/// resolved again and judged by where it leads now.
async fn read_all<R: Registry>(
    registry: &R,
    policy: &Policy,
    backends: &BackendLookup,
) -> Result<Result<Vec<Entry>, String>, ReconcileError> {
    let snapshot = registry.read_all_entries().await?;
    let mut problems: Vec<String> = snapshot
        .unreadable
        .iter()
        .map(|(key, why)| format!("{key}: unreadable entry: {why}"))
        .collect();
    let mut entries: Vec<Entry> = Vec::with_capacity(snapshot.entries.len());
    for StoredEntry { entry, .. } in snapshot.entries {
        match check_entry(&entry, policy) {
            Ok(()) => entries.push(entry),
            Err(rejection) => {
                for p in rejection.problems {
                    problems.push(format!("{}: {p}", entry.id()));
                }
            }
        }
    }
    for (id, p) in backends.problems(&entries, policy).await {
        problems.push(format!("{id}: {p}"));
    }
    if !problems.is_empty() {
        return Ok(Err(problems.join("\n")));
    }
    entries.sort_by_key(Entry::id);
    Ok(Ok(entries))
}

enum DriftCheck {
    /// Not drifted: publish with this precondition.
    Clear(Precondition),
    /// The live bundle is this reconciler's own publish whose state record was lost.
    Adopted,
    Held(Outcome),
}

/// Drift: the live bundle's hash differs from the one this reconciler last recorded. An operator's
/// kill switch or restore is exactly that, and a team's deploy must never undo it.
async fn guard_drift<R: Registry>(
    registry: &R,
    state: Option<&PublishedState>,
    live: Option<&BundleHead>,
    rendered: &Rendered,
) -> Result<DriftCheck, ReconcileError> {
    let Some(live) = live else {
        // No bundle at all (never seeded, or deleted): only create, never overwrite a racer.
        return Ok(DriftCheck::Clear(Precondition::Absent));
    };
    let recorded = state.map(|s| s.hash.as_str());
    if live.hash.as_deref() == recorded && recorded.is_some() {
        return Ok(DriftCheck::Clear(Precondition::Matches(live.etag.clone())));
    }
    // A publish of ours whose state write failed (DynamoDB fell over between the two): the live
    // object says the reconciler wrote it and it is exactly what we would publish now.
    if live.writer == Writer::Reconciler && live.hash.as_deref() == Some(rendered.hash.as_str()) {
        let next = PublishedState {
            version_id: live.version_id.clone(),
            hash: rendered.hash.clone(),
            published_at: now(),
        };
        registry.record_published(state, &next).await?;
        info!(version_id = %live.version_id, "adopted the reconciler's own unrecorded publish");
        return Ok(DriftCheck::Adopted);
    }
    Ok(DriftCheck::Held(Outcome::HeldDrift {
        live_hash: live.hash.clone(),
        recorded_hash: state.map(|s| s.hash.clone()),
    }))
}

fn is_unchanged(
    state: Option<&PublishedState>,
    live: Option<&BundleHead>,
    rendered: &Rendered,
) -> bool {
    matches!((state, live), (Some(s), Some(l)) if s.hash == rendered.hash && l.hash.as_deref() == Some(&rendered.hash))
}

/// The render back, with the failing stage and reason when a layer refused it.
type Validated = (Rendered, Result<(), (Stage, String)>);

/// The three layers. Layer 3 runs the Envoy process, so it runs off the async executor.
async fn validate(
    rendered: Rendered,
    entry_count: usize,
    opts: &ValidateOptions,
) -> Result<Validated, ReconcileError> {
    let opts = opts.clone();
    tokio::task::spawn_blocking(move || {
        let verdict = {
            let view = ConfigView {
                clusters: &rendered.clusters,
                route_config: &rendered.route_config,
                ratelimit_yaml: rendered
                    .files
                    .get(RATE_LIMIT_FILE)
                    .map(String::as_str)
                    .unwrap_or_default(),
            };
            validate_all(&view, entry_count, rendered.route_count, &opts)
        };
        let verdict = verdict.map(|_| ()).map_err(|failure| {
            (
                Stage::Validation(failure.layer.to_string()),
                failure.error.to_string(),
            )
        });
        (rendered, verdict)
    })
    .await
    .map_err(|e| ReconcileError::Validator(format!("validation task failed: {e}")))
}

/// Keeps the rejected render and the reason under `failed/`, and publishes nothing.
async fn reject<S: ConfigStore>(
    store: &S,
    stage: Stage,
    reason: String,
    rendered: Option<&Rendered>,
) -> Result<Outcome, ReconcileError> {
    let failed_key = match rendered {
        Some(r) => r.hash.trim_start_matches("sha256:").to_string(),
        None => format!("{}-{}", stage_slug(&stage), now()),
    };
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
    Ok(Outcome::Rejected {
        stage,
        reason,
        failed_key,
    })
}

fn stage_slug(stage: &Stage) -> &'static str {
    match stage {
        Stage::Registry => "registry",
        Stage::Render => "render",
        Stage::Validation(_) => "validation",
    }
}

async fn publish<R: Registry, S: ConfigStore>(
    registry: &R,
    store: &S,
    state: Option<&PublishedState>,
    bundle: &Bundle,
    body: &str,
    precondition: Precondition,
    routes: usize,
) -> Result<Outcome, ReconcileError> {
    let version_id = store
        .put_bundle(PutBundle {
            body: body.as_bytes(),
            hash: &bundle.hash,
            writer: Writer::Reconciler,
            precondition,
        })
        .await?;
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

/// Seeds the first bundle with a conditional put: re-running the seed (a redeploy) can never
/// overwrite what the reconciler published.
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
    let entries = match read_all(registry, &cfg.policy, &cfg.backends).await? {
        Ok(entries) => entries,
        Err(reason) => return Err(ReconcileError::Validator(format!("cannot seed: {reason}"))),
    };
    let rendered =
        render(&entries, &cfg.render).map_err(|e| ReconcileError::Validator(e.to_string()))?;
    let (rendered, verdict) = validate(rendered, entries.len(), &cfg.validate).await?;
    if let Err((stage, reason)) = verdict {
        return Err(ReconcileError::Validator(format!(
            "cannot seed: {stage}: {reason}"
        )));
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

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
