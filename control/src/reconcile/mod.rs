//! One reconcile run: read all → check → render → compare → guard → validate → publish → record.
//!
//! A stream event, a schedule tick and a direct call all run exactly this; the event's content is
//! never applied, so missed, duplicate and backstop runs end in the same output.

mod outcome;

mod bounds;
mod narrow;
mod preview;
mod quarantine;
mod render_skip;
mod status;
mod verdicts;

pub use outcome::{Outcome, Stage};
pub use preview::{preview, Preview};
pub use quarantine::{Kept, QuarantineLimits, Quarantined};
pub use render_skip::BuildIdentity;

use narrow::narrow;
use quarantine::{ids_in_render_error, Candidate};
use render_skip::{input_digest, reusable_hash};
use status::{record_statuses, StatusBasis};
use verdicts::VerdictFacts;
use std::collections::BTreeMap;

use gateway_adapters::metrics::{Metric, MetricsSink};
use gateway_adapters::registry::{
    PublishedState, Registry, RegistryError, RenderRecord, StoredEntry,
};
use gateway_adapters::resolve::BackendLookup;
use gateway_adapters::store::{
    encoding, BundleHead, ConfigStore, Precondition, PutBundle, StoreError, Writer,
};
use gateway_render::bounds::Totals;
use gateway_render::check::{check_entry, Policy};
use gateway_render::contract::RATE_LIMIT_FILE;
use gateway_render::{render, Bounds, Bundle, Entry, RenderConfig, Rendered};
use gateway_validator::{validate_all_beside, ConfigView, ValidateOptions};
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
    /// How far one run may quarantine before it rejects as a whole.
    pub quarantine: QuarantineLimits,
    /// Which build of the renderer runs: part of the key that lets an unchanged run skip its
    /// render ([`BuildIdentity::running`] in the functions and `gatewayctl`).
    pub build: BuildIdentity,
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
    #[error("validator: {0}")]
    Render(#[source] gateway_render::RenderError),
    #[error("validator: validation task failed: {0}")]
    ValidationTask(#[source] tokio::task::JoinError),
    #[error("validator: the previewed bundle does not parse: {0}")]
    PreviewUnreadable(#[source] gateway_render::BundleError),
}

impl ReconcileError {
    /// A short, stable name for grouping failures (the Lambda error type).
    pub fn kind(&self) -> &'static str {
        match self {
            ReconcileError::Registry(_) => "RegistryUnavailable",
            ReconcileError::Store(_) => "BucketUnavailable",
            ReconcileError::LostStateRace { .. } => "LostStateRace",
            ReconcileError::Validator(_)
            | ReconcileError::Render(_)
            | ReconcileError::ValidationTask(_)
            | ReconcileError::PreviewUnreadable(_) => "ValidatorFailed",
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
    reconcile_report(registry, store, metrics, cfg)
        .await
        .map(|r| r.outcome)
}

/// A run's outcome and the entries it set aside (published or not, they stay quarantined).
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub outcome: Outcome,
    pub quarantined: Vec<Quarantined>,
    /// Validations run (each one runs Envoy): 0 when nothing changed, 1 for a clean publish.
    pub validations: usize,
    /// How full the memory envelope the registry read is (`CapacityUsed`, percent), when the
    /// run got that far.
    pub capacity_used: Option<f64>,
    /// The run ended `unchanged` on the recorded render, without rendering
    /// (docs/design.md#skipping-an-unchanged-render).
    pub render_skipped: bool,
    /// The run's metrics that could not be emitted, and why (the decision stands; an operator
    /// running it by hand is told).
    pub metrics_errors: Vec<String>,
}

/// The render a run reached, and the one recorded before it: the record is replaced after a
/// decided run when they differ.
#[derive(Debug, Default)]
struct RenderFacts {
    recorded: Option<RenderRecord>,
    reached: Option<RenderRecord>,
    skipped: bool,
}

/// [`reconcile`], also naming the quarantined entries. Each is kept under
/// `failed/quarantine/{team}/{service}/reason.txt` and counted in `EntryQuarantined` (dimension
/// `Team`).
pub async fn reconcile_report<R, S, M>(
    registry: &R,
    store: &S,
    metrics: &M,
    cfg: &ReconcileConfig,
) -> Result<RunReport, ReconcileError>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
    M: MetricsSink + Sync,
{
    let mut quarantined = Vec::new();
    let mut validations = 0;
    let mut basis = StatusBasis::default();
    let mut capacity_used = None;
    let mut render_facts = RenderFacts::default();
    let mut verdict_facts = VerdictFacts::default();
    // On the heap: the run's future holds every step's state, too large for a small stack.
    let mut result = Box::pin(run(
        registry,
        store,
        metrics,
        cfg,
        &mut quarantined,
        &mut validations,
        &mut basis,
        &mut capacity_used,
        &mut render_facts,
        &mut verdict_facts,
    ))
    .await;
    if result.is_ok() {
        // Envoy's verdicts are facts about revisions, whatever the run decided; failing to
        // record them costs the next run validations, never a decision.
        if let Err(e) = verdicts::record(registry, &verdict_facts).await {
            warn!(error = %e, "could not record Envoy's verdicts; the next run judges them again");
        }
    }
    if let Ok(outcome) = &result {
        // Status rows and the render record are reports: failing to write them never changes
        // the run's decision (a render not recorded is rendered again by the next run).
        let (statuses, rendered) = tokio::join!(
            record_statuses(registry, outcome, &quarantined, &basis),
            record_render(registry, &render_facts),
        );
        if let Err(e) = statuses {
            warn!(error = %e, "could not record per-entry status rows");
        }
        if let Err(e) = rendered {
            warn!(error = %e, "could not record the render; the next run renders again");
        }
    }
    if result.is_ok() {
        for q in &quarantined {
            warn!(entry = %q.id, stage = %q.stage, kept = q.kept.as_str(), reason = %q.reason, "entry quarantined");
            let key = format!("quarantine/{}/reason.txt", q.id);
            if let Err(e) = store.keep_failed(&key, q.report().as_bytes()).await {
                result = Err(e.into());
                break;
            }
        }
    }
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
    if let Some(used) = capacity_used {
        // Every run that read the registry reports it, so the 80 % alarm always has data.
        data.push((Metric::CapacityUsed, used));
    }
    if result.is_ok() && !quarantined.is_empty() {
        // The total, without a dimension, is what the alarm watches; per team follows below.
        data.push((Metric::EntryQuarantined, quarantined.len() as f64));
    }
    match &result {
        Ok(outcome) => {
            info!(outcome = outcome.kind(), decision = %outcome, "reconcile run decided")
        }
        Err(e) => warn!(error = %gateway_adapters::error_chain(e), "reconcile run failed; nothing was published by it"),
    }
    // A metrics outage must not turn a decided run into a failed one; it is logged loudly.
    let mut metrics_errors = Vec::new();
    if let Err(e) = metrics.emit(&data).await {
        let why = gateway_adapters::error_chain(&e);
        warn!(error = %why, "could not emit reconcile metrics");
        metrics_errors.push(why);
    }
    if result.is_ok() && !quarantined.is_empty() {
        let mut per_team: BTreeMap<String, f64> = BTreeMap::new();
        for q in &quarantined {
            *per_team.entry(q.team.clone()).or_default() += 1.0;
        }
        let per_team: Vec<(String, f64)> = per_team.into_iter().collect();
        if let Err(e) = metrics.emit_per_team(Metric::EntryQuarantined, &per_team).await {
            let why = gateway_adapters::error_chain(&e);
            warn!(error = %why, "could not emit EntryQuarantined");
            metrics_errors.push(why);
        }
    }
    result.map(|outcome| RunReport {
        outcome,
        quarantined,
        validations,
        capacity_used,
        render_skipped: render_facts.skipped,
        metrics_errors,
    })
}

/// Replaces the render record with the render this run reached, when that is another one.
async fn record_render<R: Registry>(
    registry: &R,
    facts: &RenderFacts,
) -> Result<(), RegistryError> {
    match &facts.reached {
        Some(reached) if facts.recorded.as_ref() != Some(reached) => {
            registry.record_render(reached).await
        }
        _ => Ok(()),
    }
}

/// The steps of docs/design.md#reconcile-run, in their order.
#[allow(clippy::too_many_arguments)]
async fn run<R, S, M>(
    registry: &R,
    store: &S,
    _metrics: &M,
    cfg: &ReconcileConfig,
    quarantined: &mut Vec<Quarantined>,
    validations: &mut usize,
    basis: &mut StatusBasis,
    capacity_used: &mut Option<f64>,
    render_facts: &mut RenderFacts,
    verdict_facts: &mut VerdictFacts,
) -> Result<Outcome, ReconcileError>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
    M: MetricsSink + Sync,
{
    let snapshot = registry.read_all_entries().await?;
    if snapshot.entries.is_empty() && snapshot.unreadable.is_empty() {
        bounds::record_totals(registry, Totals::default()).await;
        return Ok(Outcome::KeptLive {
            reason: "the registry read returned no entries; an empty route table is an outage"
                .into(),
        });
    }
    // What the drift guard and the render skip stand on is read, and the totals recorded, while
    // the entries are checked. The standing's failure counts only where the guard needs it, so a
    // run refused before that refuses as it always did.
    let totals = Totals::of(snapshot.entries.iter().map(|s| &s.entry));
    let ((mut cand, problems), standing, (), remembered) = tokio::join!(
        check_each(snapshot, &cfg.policy, &cfg.backends),
        read_standing(registry, store),
        bounds::record_totals(registry, totals),
        registry.read_verdicts(),
    );
    basis.revisions = cand.revisions.clone();
    // The live bundle's entries, read only when something needs its previous version.
    let mut previous: Option<BTreeMap<String, Entry>> = None;
    // Revisions Envoy already refused on their own are set aside before anything renders.
    verdict_facts.read = remembered.unwrap_or_else(|e| {
        warn!(error = %e, "could not read Envoy's remembered verdicts; judging every revision");
        Vec::new()
    });
    let hits = verdicts::still_apply(&cand, &verdict_facts.read, &cfg.build, &cfg.render);
    if !hits.is_empty() {
        let prev = previous_versions(store).await?;
        for v in &hits {
            cand.refused.insert(v.id.clone(), verdicts::refusal(v));
            let reason = format!(
                "{} (remembered: a validation refused this revision on its own; register a new revision to be judged again)",
                v.reason
            );
            cand.quarantine(&v.id, Stage::Validation(v.stage.clone()), reason, &prev, &cfg.policy, &[]);
        }
        previous = Some(prev);
    }
    verdict_facts.next = Some(verdicts::to_keep(&cand, &verdict_facts.read, now()));
    if !problems.is_empty() {
        let prev = previous_versions(store).await?;
        let bad_prev = backend_problem_ids(&prev, &cfg.policy, &cfg.backends).await;
        let mut text = Vec::new();
        for (id, lines) in &problems {
            for l in lines {
                text.push(format!("{id}: {l}"));
            }
            cand.quarantine(id, Stage::Registry, lines.join("\n"), &prev, &cfg.policy, &bad_prev);
        }
        previous = Some(prev);
        if let Some(why) = cand.too_much(&cfg.quarantine) {
            *quarantined = Vec::new();
            return reject(store, Stage::Registry, format!("{}\n{why}", text.join("\n")), None).await;
        }
    }
    // Registration judges growth against the totals of the last run, so registrations since
    // then, and rows written around the register function, can pass it: the reconciler holds the
    // line, setting aside the growth past a bound (docs/design.md#registry-totals).
    let listed = cand.list();
    *capacity_used = Some(cfg.bounds.capacity_used(&listed));
    let beyond = cfg.bounds.registry_problems(&listed);
    drop(listed);
    if !beyond.is_empty() {
        let prev = match previous.take() {
            Some(p) => p,
            None => previous_versions(store).await?,
        };
        let stop = bounds::quarantine_growth(&mut cand, &prev, &cfg.bounds, &cfg.policy);
        let stop = stop.or_else(|| {
            let why = cand.too_much(&cfg.quarantine)?;
            Some(format!("{}\n{why}", beyond.join("\n")))
        });
        previous = Some(prev);
        if let Some(why) = stop {
            *quarantined = Vec::new();
            return reject(store, Stage::Registry, why, None).await;
        }
    }
    // Every entry was checked and every backend resolved again above; only the render is
    // skipped, and only when its result is already recorded, published and live.
    let input = input_digest(&cfg.build, &cfg.render, &cand);
    let checked = cand.quarantined.clone();
    if let Ok(standing) = &standing {
        render_facts.recorded = standing.render.clone();
        let (state, live) = (standing.state.as_ref(), standing.live.as_ref());
        let record = standing.render.as_ref();
        if let Some(hash) = reusable_hash(input.as_deref(), record, state, live) {
            info!(
                %hash,
                "entries, configuration and build as recorded for the live bundle; not rendered"
            );
            render_facts.skipped = true;
            *quarantined = checked;
            basis.unchanged_on = standing.state.clone();
            return Ok(Outcome::Unchanged { hash });
        }
    }
    let rendered = loop {
        let entries = cand.list();
        match render(&entries, &cfg.render) {
            Ok(r) => break r,
            Err(e) => {
                let prev = match previous.take() {
                    Some(p) => p,
                    None => previous_versions(store).await?,
                };
                let ids = ids_in_render_error(&e);
                // The guard holder wins: a quarantined entry's kept last-good version that now
                // clashes with another entry's host or paths (released since, and claimed by
                // its new holder) is dropped, and the holder's entry renders.
                if let Some(kept) = ids.iter().find(|id| cand.kept_previous(id)).cloned() {
                    let other = ids.iter().find(|id| **id != kept).cloned().unwrap_or_default();
                    cand.drop_kept(&kept, format!(
                        "its last published version is no longer served: {e}; {other} holds that host or path now"
                    ));
                    previous = Some(prev);
                    continue;
                }
                // Of the entries the error names, the one that changed since the live bundle.
                let culprit = ids
                    .iter()
                    .find(|id| !cand.is_quarantined(id) && prev.get(*id) != cand.entries.get(*id))
                    .or_else(|| ids.iter().rev().find(|id| !cand.is_quarantined(id)))
                    .cloned();
                let stop = match &culprit {
                    Some(id) => {
                        cand.quarantine(id, Stage::Render, e.to_string(), &prev, &cfg.policy, &[]);
                        cand.too_much(&cfg.quarantine)
                    }
                    None => Some("the error names no entry that can be set aside".to_string()),
                };
                previous = Some(prev);
                if let Some(why) = stop {
                    *quarantined = Vec::new();
                    return reject(store, Stage::Render, format!("{e}\n{why}"), None).await;
                }
            }
        }
    };
    *quarantined = cand.quarantined.clone();
    // The render this run reached, once it is published or found unchanged: keyed on exactly
    // what it was given (a quarantine since the check changed that).
    let reached = |cand: &Candidate, hash: &str| {
        let input = if cand.quarantined == checked {
            input.clone()
        } else {
            input_digest(&cfg.build, &cfg.render, cand)
        };
        input.map(|input_digest| RenderRecord {
            input_digest,
            hash: hash.to_string(),
        })
    };

    let Standing {
        mut state,
        live,
        pending,
        ..
    } = standing?;
    let guarded = guard_drift(registry, state.as_ref(), live.as_ref(), pending.as_deref(), &rendered);
    let precondition = match guarded.await? {
        DriftCheck::Clear(p) => p,
        DriftCheck::AdoptedPending(adopted, p) => {
            state = Some(adopted);
            p
        }
        DriftCheck::Adopted(adopted) => {
            render_facts.reached = reached(&cand, &rendered.hash);
            basis.unchanged_on = Some(adopted);
            return Ok(Outcome::Unchanged {
                hash: rendered.hash,
            });
        }
        DriftCheck::Held(outcome) => return Ok(outcome),
    };
    if is_unchanged(state.as_ref(), live.as_ref(), &rendered) {
        render_facts.reached = reached(&cand, &rendered.hash);
        basis.unchanged_on = state;
        return Ok(Outcome::Unchanged {
            hash: rendered.hash,
        });
    }

    let entries = cand.list();
    let prepare = Some(entries.clone());
    let validated = validate(rendered, entries.len(), prepare, &cfg.validate).await?;
    *validations += 1;
    let (rendered, entries, prepared) = match validated.verdict {
        Ok(()) => (validated.rendered, entries, validated.prepared),
        Err((stage, reason)) => {
            let rendered = validated.rendered;
            let prev = match previous.take() {
                Some(p) => p,
                None => previous_versions(store).await?,
            };
            let narrowed = Box::pin(narrow(&mut cand, &prev, cfg, &stage, &reason, validations)).await?;
            verdict_facts.next = Some(verdicts::to_keep(&cand, &verdict_facts.read, now()));
            match narrowed {
                Ok((r, e)) => {
                    *quarantined = cand.quarantined.clone();
                    (r, e, None)
                }
                Err(why) => {
                    *quarantined = Vec::new();
                    let reason = format!("{reason}\n{why}");
                    return reject(store, stage, reason, Some(&rendered)).await;
                }
            }
        }
    };
    if is_unchanged(state.as_ref(), live.as_ref(), &rendered) {
        render_facts.reached = reached(&cand, &rendered.hash);
        basis.unchanged_on = state;
        return Ok(Outcome::Unchanged {
            hash: rendered.hash,
        });
    }

    // Prepared while Envoy validated, unless narrowing picked another render since.
    let prepared = match prepared {
        Some(p) if p.hash == rendered.hash => p,
        _ => Prepared::of(&rendered, &entries),
    };
    if let Some(reason) = cfg.bounds.bundle_problem(prepared.body.len()) {
        // Every sidecar would refuse to download it: keep the render for diagnosis instead.
        *quarantined = Vec::new();
        return reject(store, Stage::Render, reason, Some(&rendered)).await;
    }
    let outcome = publish(
        registry,
        store,
        state.as_ref(),
        &prepared,
        precondition,
        rendered.route_count,
    )
    .await?;
    render_facts.reached = reached(&cand, &rendered.hash);
    Ok(outcome)
}

/// What the drift guard and the render skip stand on: the recorded publish, the live bundle's
/// head and the recorded render.
struct Standing {
    state: Option<PublishedState>,
    live: Option<BundleHead>,
    render: Option<RenderRecord>,
    /// The hash of the publish this reconciler was last about to put.
    pending: Option<String>,
}

/// The three reads at once. The render record is an optimisation: when it cannot be read, the
/// run renders.
async fn read_standing<R: Registry, S: ConfigStore>(
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

/// Every entry re-checked on its own: an entry written straight into the table is held to the
/// same rules as one that came through the register function, and every backend name is
/// resolved again and judged by where it leads now. Returns the passing entries and, per
/// failing id, its problems.
async fn check_each(
    snapshot: gateway_adapters::registry::RegistrySnapshot,
    policy: &Policy,
    backends: &BackendLookup,
) -> (Candidate, BTreeMap<String, Vec<String>>) {
    let mut cand = Candidate::default();
    let mut problems: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, why) in &snapshot.unreadable {
        let id = key.strip_prefix("ENTRY#").unwrap_or(key).to_string();
        cand.registered_routes.insert(id.clone(), 1);
        cand.revisions.insert(id.clone(), 0);
        problems
            .entry(id)
            .or_default()
            .push(format!("unreadable entry: {why}"));
    }
    let mut passing = Vec::with_capacity(snapshot.entries.len());
    for StoredEntry {
        entry,
        revision,
        updated_at,
        ..
    } in snapshot.entries
    {
        cand.revisions.insert(entry.id(), revision);
        cand.updated_at.insert(entry.id(), updated_at);
        cand.registered_routes
            .insert(entry.id(), entry.routes.len().max(1));
        match check_entry(&entry, policy) {
            Ok(()) => passing.push(entry),
            Err(rejection) => {
                let list = problems.entry(entry.id()).or_default();
                for p in rejection.problems {
                    list.push(p.to_string());
                }
            }
        }
    }
    for (id, p) in backends.problems(&passing, policy).await {
        problems.entry(id).or_default().push(p.to_string());
    }
    for e in passing {
        if !problems.contains_key(&e.id()) {
            cand.entries.insert(e.id(), e);
        }
    }
    (cand, problems)
}

/// Every entry, all passing the checks, sorted by id; or every problem (the seed takes all or
/// nothing).
async fn read_all<R: Registry>(
    registry: &R,
    policy: &Policy,
    backends: &BackendLookup,
) -> Result<Result<Vec<Entry>, String>, ReconcileError> {
    let snapshot = registry.read_all_entries().await?;
    let (cand, problems) = check_each(snapshot, policy, backends).await;
    if !problems.is_empty() {
        let lines: Vec<String> = problems
            .iter()
            .flat_map(|(id, ps)| ps.iter().map(move |p| format!("{id}: {p}")))
            .collect();
        return Ok(Err(lines.join("\n")));
    }
    Ok(Ok(cand.list()))
}

/// Ids among `entries` whose backend names lead somewhere the policy forbids now.
async fn backend_problem_ids(
    entries: &BTreeMap<String, Entry>,
    policy: &Policy,
    backends: &BackendLookup,
) -> Vec<String> {
    let list: Vec<Entry> = entries.values().cloned().collect();
    backends
        .problems(&list, policy)
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// The entries of the live bundle, by id; none when there is no bundle, it does not parse (an
/// operator's kill-switch bundle holds none) or its hash does not verify: nothing is taken from
/// a bundle that is not what its hash says. (Format 1's hash covers the files, not `entries`.)
async fn previous_versions<S: ConfigStore>(
    store: &S,
) -> Result<BTreeMap<String, Entry>, ReconcileError> {
    let Some(live) = store.head_live().await? else {
        return Ok(BTreeMap::new());
    };
    let body = store.get_version(&live.version_id).await?;
    match Bundle::parse(&body).and_then(|b| b.verify().map(|()| b)) {
        Ok(b) => Ok(b.entries.into_iter().map(|e| (e.id(), e)).collect()),
        Err(e) => {
            warn!(error = %e, "live bundle unreadable or does not verify; quarantined entries have no previous version");
            Ok(BTreeMap::new())
        }
    }
}

enum DriftCheck {
    /// Not drifted: publish with this precondition.
    Clear(Precondition),
    /// The live bundle is a publish of this reconciler whose end it never saw (its PUT's answer
    /// lost, the function timed out mid-publish, or the state write failed after it): recorded
    /// now as this, and the run goes on from it with this precondition.
    AdoptedPending(PublishedState, Precondition),
    /// The live bundle is this reconciler's own publish whose state record was lost; now
    /// recorded as this.
    Adopted(PublishedState),
    Held(Outcome),
}

/// Drift: the live bundle's hash differs from the one this reconciler last recorded. An operator's
/// kill switch or restore is exactly that, and a team's deploy must never undo it.
async fn guard_drift<R: Registry>(
    registry: &R,
    state: Option<&PublishedState>,
    live: Option<&BundleHead>,
    pending: Option<&str>,
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
        return Ok(DriftCheck::Adopted(next));
    }
    // A publish of ours that this run did not render (registrations landed since): the pending
    // record says the reconciler was about to put exactly this hash. Drift means someone else
    // wrote.
    if live.writer == Writer::Reconciler && live.hash.is_some() && live.hash.as_deref() == pending {
        let next = PublishedState {
            version_id: live.version_id.clone(),
            hash: pending.unwrap_or_default().to_string(),
            published_at: now(),
        };
        registry.record_published(state, &next).await?;
        info!(version_id = %live.version_id, "adopted the reconciler's own pending publish");
        return Ok(DriftCheck::AdoptedPending(
            next,
            Precondition::Matches(live.etag.clone()),
        ));
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

/// The render back, with the failing stage and reason when a layer refused it, and the bundle
/// prepared while Envoy validated (when asked for and layers 1 and 2 passed).
struct Validated {
    rendered: Rendered,
    verdict: Result<(), (Stage, String)>,
    prepared: Option<Prepared>,
}

/// `bundle.json` as a publish puts it: the canonical bytes, their gzip and the hash.
struct Prepared {
    hash: String,
    body: String,
    gzip: Vec<u8>,
}

impl Prepared {
    fn of(rendered: &Rendered, entries: &[Entry]) -> Prepared {
        let bundle = Bundle::new(rendered, entries);
        let body = bundle.to_json();
        let hash = bundle.hash;
        let gzip = encoding::compress(body.as_bytes());
        Prepared { hash, body, gzip }
    }
}

/// The three layers, off the async executor (layer 3 runs the Envoy process). Envoy starts
/// first; layers 1 and 2 and, given `publish_entries`, the bundle's serialisation and gzip run
/// on the other core meanwhile (`validate_all_beside`, which spells the order). The verdict is
/// the same as with the layers one after another.
async fn validate(
    rendered: Rendered,
    entry_count: usize,
    publish_entries: Option<Vec<Entry>>,
    opts: &ValidateOptions,
) -> Result<Validated, ReconcileError> {
    let opts = opts.clone();
    tokio::task::spawn_blocking(move || {
        let (verdict, prepared) = {
            let view = ConfigView {
                clusters: &rendered.clusters,
                route_config: &rendered.route_config,
                ratelimit_yaml: rendered
                    .files
                    .get(RATE_LIMIT_FILE)
                    .map(String::as_str)
                    .unwrap_or_default(),
            };
            let prepare = || {
                publish_entries
                    .as_deref()
                    .map(|entries| Prepared::of(&rendered, entries))
            };
            validate_all_beside(&view, entry_count, rendered.route_count, &opts, prepare)
        };
        let verdict = verdict.map(|_| ()).map_err(|failure| {
            (
                Stage::Validation(failure.layer.to_string()),
                failure.error.to_string(),
            )
        });
        Validated {
            rendered,
            verdict,
            prepared: prepared.flatten(),
        }
    })
    .await
    .map_err(ReconcileError::ValidationTask)
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
    bundle: &Prepared,
    precondition: Precondition,
    routes: usize,
) -> Result<Outcome, ReconcileError> {
    let put = PutBundle {
        body: bundle.body.as_bytes(),
        hash: &bundle.hash,
        writer: Writer::Reconciler,
        precondition,
    };
    // Recorded first, so whatever happens to the PUT's answer, the next run can tell its own
    // publish from someone else's write.
    registry.record_pending(&bundle.hash).await?;
    let version_id = match store.put_compressed_bundle(put, &bundle.gzip).await {
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
        render(&entries, &cfg.render).map_err(ReconcileError::Render)?;
    let validated = validate(rendered, entries.len(), None, &cfg.validate).await?;
    let rendered = validated.rendered;
    if let Err((stage, reason)) = validated.verdict {
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
