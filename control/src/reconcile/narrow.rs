//! Narrowing a validation refusal down to entries (docs/design.md#quarantine), team by team.
//!
//! The suspects are the entries that differ from the live bundle. The baseline (every suspect at
//! its live version, or absent) is validated once; if it fails too, the failure is global.
//! Then the search runs in two levels, so that one team's bad entries can only ever cost that
//! team:
//!
//! 1. **Which teams.** Each team's changed entries are one unit; halving over the units finds
//!    the teams whose changes fail. This run-wide part is bounded by
//!    `GATEWAY_QUARANTINE_MAX_VALIDATIONS` (the first full validation counted) and
//!    `GATEWAY_QUARANTINE_MAX_SECONDS`; reaching either means many teams fail at once, a
//!    systemic cause, and the run rejects.
//! 2. **Which entries of a failing team.** Halving over that team's changed entries, with a
//!    budget of its own (`GATEWAY_QUARANTINE_MAX_VALIDATIONS` again, per team). A team whose
//!    budget (or the run's seconds) runs out has every undecided change held back with the reason;
//!    nobody else's change waits for it.
//!
//! Every entry isolated on its own is remembered with its verdict (`verdicts.rs`), so the next
//! run sets it aside before rendering and the search does not start again from scratch.

use super::quarantine::{Candidate, Refusal};
use super::layers::validate;
use super::{render_skip, ReconcileConfig, ReconcileError, Stage};
use gateway_render::check::check_entry;
use gateway_render::{render, Entry, Rendered};
use std::collections::BTreeMap;
use std::time::Instant;
use tracing::info;

/// The render that passed and the entries it holds; or why the run rejects.
pub(super) type Narrowed = Result<(Rendered, Vec<Entry>), String>;

/// A validation rejected the candidate (`reason` at `stage`): set aside the entries responsible
/// and return the render of everything else. `runs` counts every validation of the run (the
/// first, failing one is already counted).
pub(super) async fn narrow(
    cand: &mut Candidate,
    prev: &BTreeMap<String, Entry>,
    cfg: &ReconcileConfig,
    stage: &Stage,
    reason: &str,
    runs: &mut usize,
) -> Result<Narrowed, ReconcileError> {
    let suspects: Vec<String> = cand
        .entries
        .iter()
        .filter(|(id, e)| prev.get(*id) != Some(*e))
        .map(|(id, _)| id.clone())
        .collect();
    if suspects.is_empty() {
        return Ok(Err(
            "every entry is as the live bundle holds it: the failure is not one entry's".into(),
        ));
    }
    let mut accepted: BTreeMap<String, Entry> = cand
        .entries
        .iter()
        .filter(|(id, _)| !suspects.contains(id))
        .map(|(id, e)| (id.clone(), e.clone()))
        .collect();
    for id in &suspects {
        if let Some(p) = prev.get(id).filter(|p| check_entry(p, &cfg.policy).is_ok()) {
            accepted.insert(id.clone(), p.clone());
        }
    }
    let mut search = Search {
        cfg,
        news: cand.entries.clone(),
        accepted,
        runs,
        started: Instant::now(),
    };
    let mut run_budget = Budget::run_wide(cfg);
    if let Some(why) = search.exhausted(&run_budget) {
        return Ok(Err(why));
    }
    let baseline = match search.try_with(&[], &mut run_budget).await? {
        Ok(r) => r,
        Err(why) => {
            return Ok(Err(format!(
                "the live versions of the changed entries fail too, so the failure is global: {why}"
            )))
        }
    };
    let mut last_good = baseline;

    // 1. Which teams' changes fail. The full candidate is known to fail.
    let mut by_team: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for id in &suspects {
        by_team
            .entry(super::quarantine::team_of(id))
            .or_default()
            .push(id.clone());
    }
    let units: Vec<Vec<String>> = by_team.into_values().collect();
    let failing = match search
        .isolate(units, Some(reason.to_string()), &mut run_budget, &mut last_good)
        .await?
    {
        Ok(failing) => failing,
        Err(stop) => {
            return Ok(Err(format!(
                "{}; the changes of many teams fail at once, which no one team's quarantine explains",
                stop.why
            )))
        }
    };

    // 2. Which entries of each failing team, each team with a budget of its own.
    for (team_ids, why_team) in failing {
        let team = super::quarantine::team_of(&team_ids[0]);
        let mut team_budget = Budget::per_team(cfg);
        let units: Vec<Vec<String>> = team_ids.iter().map(|id| vec![id.clone()]).collect();
        let (culprits, held) = match search
            .isolate(units, Some(why_team), &mut team_budget, &mut last_good)
            .await?
        {
            Ok(culprits) => (culprits, None),
            Err(stop) => {
                let why = if stop.last_refusal.is_empty() {
                    format!("held back with team {team}'s other failing changes: {}", stop.why)
                } else {
                    format!(
                        "held back with team {team}'s other failing changes: {}; Envoy refused them together with: {}",
                        stop.why, stop.last_refusal
                    )
                };
                (stop.found, Some((stop.undecided, why)))
            }
        };
        for (ids, why) in culprits {
            let id = &ids[0];
            let key = search
                .news
                .get(id)
                .and_then(|e| render_skip::verdict_key(&cfg.build, &cfg.render, e));
            if let (Some(key), Stage::Validation(layer)) = (key, stage) {
                let refusal = Refusal { key, layer: layer.clone(), reason: why.clone() };
                cand.refused.insert(id.clone(), refusal);
            }
            cand.quarantine(id, stage.clone(), why, prev, &cfg.policy, &[]);
        }
        // A team whose search ran out: its undecided changes are held back together, its own
        // quarantine. They are not remembered: the next run searches them again.
        if let Some((undecided, why)) = held {
            for id in undecided.into_iter().flatten() {
                cand.quarantine(&id, stage.clone(), why.clone(), prev, &cfg.policy, &[]);
            }
        }
        if let Some(why) = cand.too_much(&cfg.quarantine) {
            return Ok(Err(why));
        }
    }
    info!(
        validations = *search.runs,
        quarantined = cand.quarantined.len(),
        "narrowed a rejection to entries"
    );
    let entries: Vec<Entry> = search.accepted.values().cloned().collect();
    cand.entries = search.accepted;
    Ok(Ok((last_good, entries)))
}

/// Validations one part of the search may still spend.
struct Budget {
    used: usize,
    max: usize,
    /// What the stop is called in its reason.
    scope: &'static str,
}

impl Budget {
    /// The run-wide part: the first full validation is already spent.
    fn run_wide(cfg: &ReconcileConfig) -> Budget {
        Budget {
            used: 1,
            max: cfg.quarantine.max_validations,
            scope: "quarantine search",
        }
    }

    fn per_team(cfg: &ReconcileConfig) -> Budget {
        Budget {
            used: 0,
            max: cfg.quarantine.max_validations,
            scope: "this team's quarantine search",
        }
    }
}

/// Where a search stopped: why, the failing units found so far and those not decided.
struct Stop {
    why: String,
    found: Vec<(Vec<String>, String)>,
    undecided: Vec<Vec<String>>,
    /// Envoy's last refusal of a set holding the undecided units.
    last_refusal: String,
}

struct Search<'a> {
    cfg: &'a ReconcileConfig,
    /// The registered versions of the suspects, as the full (failing) candidate had them.
    news: BTreeMap<String, Entry>,
    /// A set known to pass: the baseline, then every unit found to pass added.
    accepted: BTreeMap<String, Entry>,
    runs: &'a mut usize,
    started: Instant,
}

impl Search<'_> {
    fn exhausted(&self, budget: &Budget) -> Option<String> {
        let limits = &self.cfg.quarantine;
        if budget.used >= budget.max {
            Some(format!(
                "{} stopped after {} validations (GATEWAY_QUARANTINE_MAX_VALIDATIONS)",
                budget.scope, budget.used
            ))
        } else if self.started.elapsed().as_secs() >= limits.max_seconds {
            Some(format!(
                "quarantine search stopped after {}s (GATEWAY_QUARANTINE_MAX_SECONDS)",
                self.started.elapsed().as_secs()
            ))
        } else {
            None
        }
    }

    /// Renders and validates the accepted set with `add` at their registered versions.
    async fn try_with(
        &mut self,
        add: &[String],
        budget: &mut Budget,
    ) -> Result<Result<Rendered, String>, ReconcileError> {
        budget.used += 1;
        *self.runs += 1;
        let mut set = self.accepted.clone();
        for id in add {
            if let Some(e) = self.news.get(id) {
                set.insert(id.clone(), e.clone());
            }
        }
        let entries: Vec<Entry> = set.into_values().collect();
        try_set(&entries, self.cfg).await
    }

    fn accept(&mut self, ids: &[String]) {
        for id in ids {
            if let Some(e) = self.news.get(id) {
                self.accepted.insert(id.clone(), e.clone());
            }
        }
    }

    /// Splits `units` into those that pass beside the accepted set (added to it) and those that
    /// fail (returned, each with Envoy's refusal of the set that isolated it). `known_failing`:
    /// the accepted set with every unit is already known to fail, with this reason. Invariant of
    /// the halving: accepted passes, accepted + `lo` fails.
    async fn isolate(
        &mut self,
        units: Vec<Vec<String>>,
        mut known_failing: Option<String>,
        budget: &mut Budget,
        last_good: &mut Rendered,
    ) -> Result<Result<Vec<(Vec<String>, String)>, Stop>, ReconcileError> {
        let mut remaining = units;
        let mut found = Vec::new();
        let flat = |units: &[Vec<String>]| -> Vec<String> { units.iter().flatten().cloned().collect() };
        while !remaining.is_empty() {
            let mut why_lo = match known_failing.take() {
                Some(w) => w,
                None => {
                    if let Some(why) = self.exhausted(budget) {
                        return Ok(Err(Stop { why, found, undecided: remaining, last_refusal: String::new() }));
                    }
                    match self.try_with(&flat(&remaining), budget).await? {
                        Ok(r) => {
                            *last_good = r;
                            self.accept(&flat(&remaining));
                            break;
                        }
                        Err(w) => w,
                    }
                }
            };
            let mut lo = remaining.clone();
            while lo.len() > 1 {
                let h2 = lo.split_off(lo.len() / 2);
                let h1 = std::mem::replace(&mut lo, h2);
                if let Some(why) = self.exhausted(budget) {
                    return Ok(Err(Stop { why, found, undecided: remaining, last_refusal: why_lo }));
                }
                match self.try_with(&flat(&h1), budget).await? {
                    Err(w) => {
                        why_lo = w;
                        lo = h1;
                    }
                    Ok(r) => {
                        *last_good = r;
                        self.accept(&flat(&h1));
                        remaining.retain(|u| !h1.contains(u));
                    }
                }
            }
            let culprit = lo.remove(0);
            remaining.retain(|u| *u != culprit);
            found.push((culprit, why_lo));
        }
        Ok(Ok(found))
    }
}

/// Renders and validates one set; a render error counts as a failure.
async fn try_set(
    entries: &[Entry],
    cfg: &ReconcileConfig,
) -> Result<Result<Rendered, String>, ReconcileError> {
    let rendered = match render(entries, &cfg.render) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let validated = validate(rendered, entries.len(), None, &cfg.validate).await?;
    let rendered = validated.rendered;
    Ok(validated
        .verdict
        .map(|()| rendered)
        .map_err(|(stage, reason)| format!("{stage}: {reason}")))
}
