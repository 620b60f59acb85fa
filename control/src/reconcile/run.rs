//! The state of one run: its adapters and configuration, the candidate it narrows down, and the
//! facts the report records once it has decided.

use super::quarantine::Candidate;
use super::status::StatusBasis;
use super::verdicts::VerdictFacts;
use super::{Outcome, ReconcileConfig, ReconcileError};
use gateway_adapters::registry::{PublishedState, RenderRecord};
use gateway_adapters::store::ConfigStore;
use gateway_render::bundle::Trust;
use gateway_render::{Bundle, Entry};
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::warn;

/// What a step hands the next one, or the run's outcome when the step decided it.
pub(super) enum Step<T> {
    Next(T),
    Decided(Outcome),
}

/// One reconcile run.
pub(super) struct Run<'a, R, S> {
    pub registry: &'a R,
    pub store: &'a S,
    pub cfg: &'a ReconcileConfig,
    /// The entries that passed the checks, and what the run set aside so far.
    pub cand: Candidate,
    /// The live bundle's entries by id, read the first time a step needs them.
    previous: Option<BTreeMap<String, Entry>>,
    /// The render input's digest as checked (before any quarantine after the check), and what
    /// was quarantined then: a render record stands on exactly what the render was given.
    pub input: Option<String>,
    pub checked: Vec<super::Quarantined>,
    pub facts: RunFacts,
}

/// What the run learnt besides its outcome, for the report.
#[derive(Default)]
pub(super) struct RunFacts {
    pub validations: usize,
    pub basis: StatusBasis,
    pub capacity_used: Option<f64>,
    pub render: RenderFacts,
    pub verdicts: VerdictFacts,
    /// Judged rollouts' progress, when this run changed it (recorded after a decided run).
    pub rollouts: Option<gateway_adapters::registry::rollout::Rollouts>,
}

/// The render a run reached, and the one recorded before it: the record is replaced after a
/// decided run when they differ.
#[derive(Debug, Default)]
pub(super) struct RenderFacts {
    pub recorded: Option<RenderRecord>,
    pub reached: Option<RenderRecord>,
    pub skipped: bool,
}

impl<'a, R, S: ConfigStore> Run<'a, R, S> {
    pub fn new(registry: &'a R, store: &'a S, cfg: &'a ReconcileConfig) -> Self {
        Run {
            registry,
            store,
            cfg,
            cand: Candidate::default(),
            previous: None,
            input: None,
            checked: Vec::new(),
            facts: RunFacts::default(),
        }
    }

    /// The candidate, the live bundle's entries (read once per run, when a step first needs
    /// them) and the facts, for a step that changes the candidate in view of the live bundle.
    pub async fn with_previous(
        &mut self,
    ) -> Result<(&mut Candidate, &BTreeMap<String, Entry>, &mut RunFacts), ReconcileError> {
        if self.previous.is_none() {
            self.previous = Some(previous_versions(self.store).await?);
        }
        let previous = self.previous.get_or_insert_with(BTreeMap::new);
        Ok((&mut self.cand, previous, &mut self.facts))
    }

    /// Notes the render this run reached (published or found unchanged), keyed on exactly what
    /// it was given: a quarantine since the check changed that.
    pub fn reached(&mut self, hash: &str) {
        let input = if self.cand.quarantined == self.checked {
            self.input.clone()
        } else {
            super::render_skip::input_digest(&self.cfg.build, &self.cfg.render, &self.cand)
        };
        self.facts.render.reached = input.map(|input_digest| RenderRecord {
            input_digest,
            hash: hash.to_string(),
        });
    }

    /// The run ends unchanged on `state`, having reached the render `hash`.
    pub fn unchanged(&mut self, state: Option<PublishedState>, hash: String) -> Outcome {
        self.reached(&hash);
        self.facts.basis.unchanged_on = state;
        Outcome::Unchanged { hash }
    }
}

/// The entries of the live bundle, by id; none when there is no bundle, it does not parse (an
/// operator's kill-switch bundle holds none), its hash does not verify, or it is not signed by
/// this store's key: entries are rendered again into a bundle this key signs, so they are taken
/// only from one it signed (a bucket writer without the key cannot put entries in them).
async fn previous_versions<S: ConfigStore>(
    store: &S,
) -> Result<BTreeMap<String, Entry>, ReconcileError> {
    let Some(live) = store.head_live().await? else {
        return Ok(BTreeMap::new());
    };
    let body = store.get_version(&live.version_id).await?;
    let trust = Trust {
        keys: store.signing_key().await?.into_iter().collect(),
        allow_unsigned: false,
    };
    let read = Bundle::read(&body).and_then(|p| {
        p.bundle.verify()?;
        p.judge(&trust)?;
        Ok(p.bundle)
    });
    match read {
        Ok(b) => Ok(b.entries.into_iter().map(|e| (e.id(), e)).collect()),
        Err(e) => {
            warn!(error = %e, "live bundle unreadable, does not verify or is not signed by this key; quarantined entries have no previous version");
            Ok(BTreeMap::new())
        }
    }
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
