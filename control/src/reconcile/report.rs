//! Step 7, report: what a decided run records besides its outcome (Envoy's verdicts, per-entry
//! status rows, the render record, the quarantined entries' reasons) and the run's metrics.
//! A report that cannot be written never changes the decision.

use super::run::{Run, RunFacts};
use super::status::record_statuses;
use super::{verdicts, Outcome, Quarantined, ReconcileError, RunReport};
use gateway_adapters::error_chain;
use gateway_adapters::metrics::{Metric, MetricsSink};
use gateway_adapters::registry::{Registry, RegistryError};
use gateway_adapters::store::ConfigStore;
use std::collections::BTreeMap;
use tracing::{info, warn};

pub(super) async fn finish<R, S, M>(
    run: Run<'_, R, S>,
    decided: Result<Outcome, ReconcileError>,
    metrics: &M,
) -> Result<RunReport, ReconcileError>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
    M: MetricsSink + Sync,
{
    let facts = run.facts;
    // A rejected run publishes nothing, so it sets nothing aside either.
    let quarantined = match &decided {
        Ok(Outcome::Rejected { .. }) | Err(_) => Vec::new(),
        Ok(_) => run.cand.quarantined,
    };
    let result = match decided {
        Ok(outcome) => record(run.registry, run.store, &outcome, &quarantined, &facts)
            .await
            .map(|()| outcome),
        Err(e) => Err(e),
    };
    match &result {
        Ok(outcome) => info!(outcome = outcome.kind(), decision = %outcome, "reconcile run decided"),
        Err(e) => warn!(error = %error_chain(e), "reconcile run failed; nothing was published by it"),
    }
    let metrics_errors = emit(metrics, &result, &quarantined, facts.capacity_used).await;
    result.map(|outcome| RunReport {
        outcome,
        quarantined,
        validations: facts.validations,
        capacity_used: facts.capacity_used,
        render_skipped: facts.render.skipped,
        metrics_errors,
    })
}

/// What a decided run leaves behind. Only a reason that cannot be kept fails the run: the
/// entry's owner reads it there.
async fn record<R: Registry, S: ConfigStore>(
    registry: &R,
    store: &S,
    outcome: &Outcome,
    quarantined: &[Quarantined],
    facts: &RunFacts,
) -> Result<(), ReconcileError> {
    // Envoy's verdicts are facts about revisions, whatever the run decided; failing to record
    // them costs the next run validations, never a decision.
    if let Err(e) = verdicts::record(registry, &facts.verdicts).await {
        warn!(error = %e, "could not record Envoy's verdicts; the next run judges them again");
    }
    // Status rows and the render record are reports (a render not recorded is rendered again
    // by the next run).
    let (statuses, rendered) = tokio::join!(
        record_statuses(registry, outcome, quarantined, &facts.basis),
        record_render(registry, facts),
    );
    if let Err(e) = statuses {
        warn!(error = %e, "could not record per-entry status rows");
    }
    if let Err(e) = rendered {
        warn!(error = %e, "could not record the render; the next run renders again");
    }
    if matches!(outcome, Outcome::Unchanged { .. }) {
        super::last_rejection::clear(store).await;
    }
    // A judged rollout's step moves only with a run that published or found its render live.
    if let (Some(rollouts), Outcome::Published { .. } | Outcome::Unchanged { .. }) = (&facts.rollouts, outcome) {
        if let Err(e) = registry.record_rollouts(rollouts).await {
            warn!(error = %e, "could not record rollout progress; the next run judges the step again");
        }
    }
    for q in quarantined {
        warn!(entry = %q.id, stage = %q.stage, kept = q.kept.as_str(), reason = %q.reason, "entry quarantined");
        let key = format!("quarantine/{}/reason.txt", q.id);
        store.keep_failed(&key, q.report().as_bytes()).await?;
    }
    Ok(())
}

/// Replaces the render record with the render this run reached, when that is another one.
async fn record_render<R: Registry>(registry: &R, facts: &RunFacts) -> Result<(), RegistryError> {
    match &facts.render.reached {
        Some(reached) if facts.render.recorded.as_ref() != Some(reached) => {
            registry.record_render(reached).await
        }
        _ => Ok(()),
    }
}

/// The run's data points: what it decided, how full the registry is and what it set aside.
fn data(
    result: &Result<Outcome, ReconcileError>,
    quarantined: &[Quarantined],
    capacity_used: Option<f64>,
) -> Vec<(Metric, f64)> {
    let mut data = Vec::new();
    match result {
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
        // The total, without a dimension, is what the alarm watches; per team is emitted apart.
        data.push((Metric::EntryQuarantined, quarantined.len() as f64));
    }
    data
}

/// Emits the run's metrics; returns why any could not be. A metrics outage must not turn a
/// decided run into a failed one; it is logged loudly.
async fn emit<M: MetricsSink>(
    metrics: &M,
    result: &Result<Outcome, ReconcileError>,
    quarantined: &[Quarantined],
    capacity_used: Option<f64>,
) -> Vec<String> {
    let mut errors = Vec::new();
    if let Err(e) = metrics.emit(&data(result, quarantined, capacity_used)).await {
        let why = error_chain(&e);
        warn!(error = %why, "could not emit reconcile metrics");
        errors.push(why);
    }
    if result.is_ok() && !quarantined.is_empty() {
        let mut per_team: BTreeMap<String, f64> = BTreeMap::new();
        for q in quarantined {
            *per_team.entry(q.team.clone()).or_default() += 1.0;
        }
        let per_team: Vec<(String, f64)> = per_team.into_iter().collect();
        if let Err(e) = metrics.emit_per_team(Metric::EntryQuarantined, &per_team).await {
            let why = error_chain(&e);
            warn!(error = %why, "could not emit EntryQuarantined");
            errors.push(why);
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::{Kept, Stage};

    fn quarantined(team: &str) -> Quarantined {
        Quarantined {
            id: format!("{team}/api"),
            team: team.into(),
            stage: Stage::Render,
            reason: "clash".into(),
            kept: Kept::LeftOut,
        }
    }

    #[test]
    fn a_publish_counts_itself_its_routes_and_what_it_set_aside() {
        let published = Ok(Outcome::Published {
            version_id: "v".into(),
            hash: "h".into(),
            routes: 12,
        });
        let points = data(&published, &[quarantined("billing")], Some(3.5));
        assert_eq!(
            points,
            vec![
                (Metric::Published, 1.0),
                (Metric::RoutesRendered, 12.0),
                (Metric::CapacityUsed, 3.5),
                (Metric::EntryQuarantined, 1.0),
            ]
        );
    }

    #[test]
    fn a_failed_run_counts_only_its_failure_and_the_capacity_it_read() {
        let failed = Err(ReconcileError::LostStateRace { version_id: "v".into() });
        let points = data(&failed, &[quarantined("billing")], Some(1.0));
        assert_eq!(points, vec![(Metric::ReconcileFailed, 1.0), (Metric::CapacityUsed, 1.0)]);
    }

    #[test]
    fn drift_and_rejection_raise_their_alarms_metrics() {
        let held = Ok(Outcome::HeldDrift { live_hash: None, recorded_hash: None });
        assert_eq!(data(&held, &[], None), vec![(Metric::ConfigDrift, 1.0)]);
        let unchanged = Ok(Outcome::Unchanged { hash: "h".into() });
        assert_eq!(data(&unchanged, &[], None), vec![]);
    }
}
