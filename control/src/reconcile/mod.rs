//! One reconcile run (docs/design.md#reconcile-run):
//! read all → check → render → guard → validate → publish → report.
//!
//! A stream event, a schedule tick and a direct call all run exactly this; the event's content is
//! never applied, so missed, duplicate and backstop runs end in the same output. Each step is a
//! file of this module, run in order by [`Run::decide`]; [`report`] records what the run decided.

mod bounds;
mod check;
mod guard;
mod last_rejection;
mod layers;
mod narrow;
mod outcome;
mod preview;
mod publish;
mod quarantine;
mod read;
mod render;
mod render_skip;
mod report;
mod rollout;
mod run;
mod seed;
mod status;
mod validate;
mod verdicts;

pub use last_rejection::{read as last_rejection_read, LastRejection, LAST_REJECTION};
pub use outcome::{Outcome, Stage};
pub use preview::{preview, Preview};
pub use quarantine::{Kept, QuarantineLimits, Quarantined};
pub use render_skip::BuildIdentity;
pub use rollout::{judge, RolloutSettings, Verdict as RolloutVerdict};
pub use seed::{seed, SeedOutcome};

pub(crate) use run::now;
use run::{Run, Step};

use gateway_adapters::metrics::MetricsSink;
use gateway_adapters::registry::{Registry, RegistryError};
use gateway_adapters::resolve::BackendLookup;
use gateway_adapters::store::{ConfigStore, StoreError};
use gateway_render::check::Policy;
use gateway_render::{Bounds, RenderConfig};
use gateway_validator::ValidateOptions;

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
    /// How judged rollouts' steps are judged when the team sets no bound.
    pub rollout: RolloutSettings,
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("registry: {0}")]
    Registry(#[from] RegistryError),
    #[error("bucket: {0}")]
    Store(#[from] StoreError),
    #[error("published version {version_id}, but another run recorded its own publish first; the next run adopts or flags it")]
    LostStateRace { version_id: String },
    /// The seed found entries or a render it cannot publish (it takes all or nothing).
    #[error("cannot seed: {0}")]
    SeedRefused(String),
    #[error("render: {0}")]
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
            ReconcileError::SeedRefused(_)
            | ReconcileError::Render(_)
            | ReconcileError::ValidationTask(_)
            | ReconcileError::PreviewUnreadable(_) => "ValidatorFailed",
        }
    }
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
    let mut run = Run::new(registry, store, cfg);
    // On the heap: the run's future holds every step's state, too large for a small stack.
    let decided = Box::pin(run.decide(metrics)).await;
    report::finish(run, decided, metrics).await
}

/// Takes a step's value, or ends the run with the outcome it decided.
macro_rules! step {
    ($step:expr) => {
        match $step {
            Step::Next(value) => value,
            Step::Decided(outcome) => return Ok(outcome),
        }
    };
}

impl<R, S> Run<'_, R, S>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
{
    /// The steps of docs/design.md#reconcile-run, in their order.
    async fn decide<M: MetricsSink + Sync>(&mut self, metrics: &M) -> Result<Outcome, ReconcileError> {
        let snapshot = step!(self.read().await?);
        let (problems, standing) = self.check(snapshot).await;
        self.rollouts(metrics).await;
        step!(self.set_aside(problems).await?);
        step!(self.skip_render(standing.as_ref().ok()));
        let rendered = step!(self.render().await?);
        let (state, live, precondition) = step!(self.guard(standing?, &rendered).await?);
        step!(self.unless_unchanged(state.as_ref(), live.as_ref(), &rendered));
        let passed = step!(self.validate(rendered).await?);
        step!(self.unless_unchanged(state.as_ref(), live.as_ref(), &passed.0));
        self.publish(state.as_ref(), passed, precondition).await
    }
}
