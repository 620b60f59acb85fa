//! The reconcile Lambda's handler: DynamoDB stream batches, EventBridge schedule ticks and direct
//! invocations all wake the same run; only `{"action":"seed"}` asks for something else.

use super::{reconcile_report, seed, ReconcileConfig, ReconcileError};
use gateway_adapters::metrics::MetricsSink;
use gateway_adapters::registry::Registry;
use gateway_adapters::store::ConfigStore;
use serde_json::{json, Value};

/// What woke the run; logged, never applied.
pub fn describe_event(event: &Value) -> &'static str {
    if event.get("action").and_then(Value::as_str) == Some("seed") {
        "seed request"
    } else if event.get("Records").is_some() {
        "table stream"
    } else if event.get("detail-type").and_then(Value::as_str) == Some("Scheduled Event") {
        "schedule"
    } else {
        "direct invocation"
    }
}

pub async fn handle<R, S, M>(
    event: &Value,
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
    let woken_by = describe_event(event);
    tracing::info!(woken_by, "reconcile run starting");
    if woken_by == "seed request" {
        let outcome = seed(registry, store, cfg).await?;
        return Ok(json!({"outcome": "seed", "message": outcome.to_string()}));
    }
    let report = reconcile_report(registry, store, metrics, cfg).await?;
    let mut body = report.outcome.to_json();
    body["message"] = Value::String(report.outcome.to_string());
    body["quarantined"] = report.quarantined.iter().map(|q| q.to_json()).collect();
    Ok(body)
}
