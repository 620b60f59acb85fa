//! The registry bounds at every run (docs/design.md#registry-totals): the run records the totals
//! it counted, which the register path judges each registration's growth against, and it is the
//! exact backstop of that approximate check: when the registry is past a bound, the entries whose
//! growth took it there are quarantined, newest first, and the rest publishes.

use super::quarantine::Candidate;
use super::Stage;
use gateway_adapters::registry::Registry;
use gateway_render::bounds::Totals;
use gateway_render::check::Policy;
use gateway_render::{Bounds, Entry};
use std::collections::BTreeMap;
use tracing::warn;

/// Records the totals of every readable entry row when they differ from the recorded ones. A
/// failure is logged, never the run's: the totals only steer registrations, and the next run
/// writes them again.
pub(super) async fn record_totals<R: Registry>(registry: &R, totals: Totals) {
    let recorded = match registry.read_totals().await {
        Ok(recorded) => recorded,
        Err(e) => {
            warn!(error = %e, "could not read the registry totals; not recording them");
            return;
        }
    };
    if recorded.as_ref() == Some(&totals) {
        return;
    }
    if let Err(e) = registry.record_totals(&totals).await {
        warn!(error = %e, "could not record the registry totals");
    }
}

/// Brings the candidate within `bounds` by quarantining (stage `registry`) entries that grew
/// since the live bundle (`previous`): new, or with more routes or clusters. Newest first
/// (`updated_at`, then revision), each only while a bound it grew is still broken, so the
/// registrations that arrived last are the ones set aside. `Some(reason)` when that is not enough
/// (the live registry itself is past a bound lowered since): the run rejects.
pub(super) fn quarantine_growth(
    cand: &mut Candidate,
    previous: &BTreeMap<String, Entry>,
    bounds: &Bounds,
    policy: &Policy,
) -> Option<String> {
    let mut totals = Totals::of(cand.entries.values());
    let mut problems = bounds.totals_problems(&totals);
    for id in newest_first(cand, previous) {
        if problems.is_empty() {
            break;
        }
        let Some(entry) = cand.entries.get(&id).cloned() else {
            continue;
        };
        let grew = growth_past_bounds(bounds, &totals, previous.get(&id), &entry);
        if grew.is_empty() {
            continue;
        }
        totals.remove(&entry);
        cand.quarantine(&id, Stage::Registry, grew.join("\n"), previous, policy, &[]);
        if let Some(kept) = cand.entries.get(&id) {
            totals.add(kept);
        }
        problems = bounds.totals_problems(&totals);
    }
    (!problems.is_empty()).then(|| {
        format!(
            "{}\nsetting aside the entries that grew since the live bundle does not bring the \
             registry within its bounds",
            problems.join("\n")
        )
    })
}

/// Ids of entries that differ from the live bundle's and are not yet quarantined, the most
/// recently written first (ties: higher revision, then the later id).
fn newest_first(cand: &Candidate, previous: &BTreeMap<String, Entry>) -> Vec<String> {
    let mut changed: Vec<(u64, u64, String)> = cand
        .entries
        .iter()
        .filter(|(id, e)| previous.get(*id) != Some(*e) && !cand.is_quarantined(id))
        .map(|(id, _)| {
            let updated_at = cand.updated_at.get(id).copied().unwrap_or(0);
            let revision = cand.revisions.get(id).copied().unwrap_or(0);
            (updated_at, revision, id.clone())
        })
        .collect();
    changed.sort_unstable_by(|a, b| b.cmp(a));
    changed.into_iter().map(|(_, _, id)| id).collect()
}

/// The broken bounds `entry`'s growth over `previous` contributes to, in a candidate of `totals`
/// (which holds `entry`), worded as the register path refuses them.
fn growth_past_bounds(
    bounds: &Bounds,
    totals: &Totals,
    previous: Option<&Entry>,
    entry: &Entry,
) -> Vec<String> {
    let mut without = totals.clone();
    without.remove(entry);
    if let Some(p) = previous {
        without.add(p);
    }
    bounds
        .growth_problems(&without, previous, entry)
        .iter()
        .map(ToString::to_string)
        .collect()
}
