//! The reconcile Lambda's handler: DynamoDB stream batches, EventBridge schedule ticks and direct
//! invocations all wake the same run; only `{"action":"seed"}` asks for something else.

use super::event::ReconcileEvent;
use gateway_control::reconcile::{
    reconcile_report, seed, Outcome, Quarantined, ReconcileConfig, ReconcileError,
};
use gateway_adapters::metrics::MetricsSink;
use gateway_adapters::registry::Registry;
use gateway_adapters::store::ConfigStore;
use serde::Serialize;
use serde_json::Value;

/// The function's answer to a run: the outcome's fields, its sentence and what it set aside.
#[derive(Serialize)]
struct RunAnswer<'a> {
    #[serde(flatten)]
    outcome: &'a Outcome,
    message: String,
    quarantined: &'a [Quarantined],
}

/// The answer to a seed request.
#[derive(Serialize)]
struct SeedAnswer {
    outcome: &'static str,
    message: String,
}

/// Runs what `event` (a [`ReconcileEvent`], or its JSON) asks for and answers with its outcome
/// (keys sorted, as every JSON answer of the functions).
pub async fn handle<R, S, M>(
    event: impl Into<ReconcileEvent>,
    registry: &R,
    store: &S,
    metrics: &M,
    cfg: &ReconcileConfig,
) -> Result<Value, ReconcileError>
where
    R: Registry + Sync,
    S: ConfigStore + Sync,
    M: MetricsSink + Sync,
{
    let event = event.into();
    let woken_by = event.describe();
    tracing::info!(woken_by, "reconcile run starting");
    if let ReconcileEvent::Seed(_) = event {
        let outcome = seed(registry, store, cfg).await?;
        return Ok(crate::to_json(&SeedAnswer {
            outcome: "seed",
            message: outcome.to_string(),
        }));
    }
    let report = reconcile_report(registry, store, metrics, cfg).await?;
    Ok(crate::to_json(&RunAnswer {
        outcome: &report.outcome,
        message: report.outcome.to_string(),
        quarantined: &report.quarantined,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_control::reconcile::{Kept, Stage};
    use serde_json::json;

    /// The answer as it was assembled by hand before: the outcome's map, its sentence and the
    /// quarantined list, keys sorted.
    #[test]
    fn the_run_answer_is_the_outcome_its_sentence_and_the_quarantined() {
        let outcome = Outcome::Rejected {
            stage: Stage::Render,
            reason: "two entries shadow each other\nmore".into(),
            failed_key: "k".into(),
        };
        let quarantined = [Quarantined {
            id: "billing/x".into(),
            team: "billing".into(),
            stage: Stage::Registry,
            reason: "routes[0].path: missing".into(),
            kept: Kept::LeftOut,
        }];
        let mut expected = outcome.to_json();
        expected["message"] = Value::String(outcome.to_string());
        expected["quarantined"] = quarantined.iter().map(Quarantined::to_json).collect();
        let answer = crate::to_json(&RunAnswer {
            outcome: &outcome,
            message: outcome.to_string(),
            quarantined: &quarantined,
        });
        assert_eq!(
            serde_json::to_string(&answer).expect("json"),
            serde_json::to_string(&expected).expect("json")
        );
        assert_eq!(
            serde_json::to_string(&answer).expect("json"),
            concat!(
                r#"{"failed":"failed/k","message":"rejected: render: two entries shadow each other (details in failed/k)","#,
                r#""outcome":"rejected","quarantined":[{"id":"billing/x","kept":"left-out","reason":"routes[0].path: missing","#,
                r#""stage":"registry","team":"billing"}],"reason":"two entries shadow each other\nmore","stage":"render"}"#
            )
        );
        assert_eq!(
            crate::to_json(&SeedAnswer {
                outcome: "seed",
                message: "seeded".into()
            }),
            json!({"outcome": "seed", "message": "seeded"})
        );
    }
}
