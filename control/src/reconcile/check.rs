//! Step 2, check: every entry re-checked on its own, and what cannot be published set aside —
//! revisions Envoy already refused, entries that fail the checks, growth past the bounds.

use super::bounds::{quarantine_growth, record_totals};
use super::publish::reject;
use super::quarantine::Candidate;
use super::read::{read_standing, Standing};
use super::render_skip::input_digest;
use super::run::{now, Run, Step};
use super::{verdicts, ReconcileError, Stage};
use gateway_adapters::registry::{Registry, RegistrySnapshot, StoredEntry};
use gateway_adapters::resolve::BackendLookup;
use gateway_adapters::store::ConfigStore;
use gateway_render::bounds::Totals;
use gateway_render::check::{check_entry, Policy};
use gateway_render::Entry;
use std::collections::BTreeMap;
use tracing::warn;

/// Per failing id, its problems.
pub(super) type Problems = BTreeMap<String, Vec<String>>;

impl<R: Registry + Sync, S: ConfigStore + Sync> Run<'_, R, S> {
    /// Checks the entries while what the drift guard and the render skip stand on is read, the
    /// totals recorded and Envoy's remembered verdicts read. The standing's failure counts only
    /// where the guard needs it, so a run refused before that refuses as it always did.
    pub(super) async fn check(
        &mut self,
        snapshot: RegistrySnapshot,
    ) -> (Problems, Result<Standing, ReconcileError>) {
        let cfg = self.cfg;
        let totals = Totals::of(snapshot.entries.iter().map(|s| &s.entry));
        let ((cand, problems), standing, (), remembered) = tokio::join!(
            check_each(snapshot, &cfg.policy, &cfg.backends),
            read_standing(self.registry, self.store),
            record_totals(self.registry, totals),
            self.registry.read_verdicts(),
        );
        self.cand = cand;
        self.facts.basis.revisions = self.cand.revisions.clone();
        self.facts.verdicts.read = remembered.unwrap_or_else(|e| {
            warn!(error = %e, "could not read Envoy's remembered verdicts; judging every revision");
            Vec::new()
        });
        (problems, standing)
    }

    /// Sets aside what cannot be published whatever the render says; rejects the run when that
    /// goes too far (docs/design.md#quarantine).
    pub(super) async fn set_aside(
        &mut self,
        problems: Problems,
    ) -> Result<Step<()>, ReconcileError> {
        let cfg = self.cfg;
        // Revisions Envoy already refused on their own are set aside before anything renders.
        let hits = verdicts::still_apply(&self.cand, &self.facts.verdicts.read, &cfg.build, &cfg.render);
        if !hits.is_empty() {
            let (cand, prev, _) = self.with_previous().await?;
            for v in &hits {
                cand.refused.insert(v.id.clone(), verdicts::refusal(v));
                let reason = format!(
                    "{} (remembered: a validation refused this revision on its own; register a new revision to be judged again)",
                    v.reason
                );
                cand.quarantine(&v.id, Stage::Validation(v.stage.clone()), reason, prev, &cfg.policy, &[]);
            }
        }
        self.facts.verdicts.next = Some(verdicts::to_keep(&self.cand, &self.facts.verdicts.read, now()));
        if !problems.is_empty() {
            let (cand, prev, _) = self.with_previous().await?;
            let bad_prev = backend_problem_ids(prev, &cfg.policy, &cfg.backends).await;
            let mut text = Vec::new();
            for (id, lines) in &problems {
                for l in lines {
                    text.push(format!("{id}: {l}"));
                }
                cand.quarantine(id, Stage::Registry, lines.join("\n"), prev, &cfg.policy, &bad_prev);
            }
            if let Some(why) = cand.too_much(&cfg.quarantine) {
                let reason = format!("{}\n{why}", text.join("\n"));
                return Ok(Step::Decided(reject(self.store, Stage::Registry, reason, None).await?));
            }
        }
        // Registration judges growth against the totals of the last run, so registrations since
        // then, and rows written around the register function, can pass it: the reconciler holds
        // the line, setting aside the growth past a bound (docs/design.md#registry-totals).
        let listed = self.cand.list();
        self.facts.capacity_used = Some(cfg.bounds.capacity_used(&listed));
        let beyond = cfg.bounds.registry_problems(&listed);
        drop(listed);
        if !beyond.is_empty() {
            let (cand, prev, _) = self.with_previous().await?;
            let stop = quarantine_growth(cand, prev, &cfg.bounds, &cfg.policy).or_else(|| {
                let why = cand.too_much(&cfg.quarantine)?;
                Some(format!("{}\n{why}", beyond.join("\n")))
            });
            if let Some(why) = stop {
                return Ok(Step::Decided(reject(self.store, Stage::Registry, why, None).await?));
            }
        }
        self.input = input_digest(&cfg.build, &cfg.render, &self.cand);
        self.checked = self.cand.quarantined.clone();
        Ok(Step::Next(()))
    }
}

/// Every entry re-checked on its own: an entry written straight into the table is held to the
/// same rules as one that came through the register function, and every backend name is
/// resolved again and judged by where it leads now. Returns the passing entries and, per
/// failing id, its problems.
pub(super) async fn check_each(
    snapshot: RegistrySnapshot,
    policy: &Policy,
    backends: &BackendLookup,
) -> (Candidate, Problems) {
    let mut cand = Candidate::default();
    let mut problems = Problems::new();
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
