//! The register function: one handler for three kinds of event.
//!
//! * Direct invocation: `{"action":"register","entry":{…}}` or
//!   `{"action":"deregister","id":"team/service"}`. Answers
//!   `{"ok":true,"outcome":"created|updated|unchanged|deleted|not-found",…}` or
//!   `{"ok":false,"error":{"kind":"rejected|conflict|retryable|aws|corrupt","message":…}}`;
//!   a rejection also lists every problem under `error.problems`.
//! * A CloudFormation custom resource event (`RequestType` Create/Update/Delete), answered with a
//!   PUT to its pre-signed `ResponseURL`. See [`ENTRY_PROPERTY`] for the property layout.
//! * The same event wrapped in SNS (`Records[].Sns.Message` is the event's JSON), the
//!   cross-account pattern: a team's stack publishes to the gateway account's topic.

mod custom_resource;

pub use custom_resource::{coerce_cloudformation_strings, ENTRY_PROPERTY};

use crate::registry::{DynamoRegistry, RegistryError};
use serde_json::{json, Value};

/// Handles one event. `Err` only when a CloudFormation answer could not be delivered (so the
/// Lambda's own retry delivers it); every registration outcome, failure included, is an answer.
pub async fn handle(
    registry: &DynamoRegistry,
    http: &reqwest::Client,
    event: Value,
) -> Result<Value, RegistryError> {
    if event.get("RequestType").is_some() {
        return custom_resource::handle(registry, http, event).await;
    }
    if let Some(records) = event.get("Records").and_then(Value::as_array) {
        let mut answers = Vec::with_capacity(records.len());
        for (i, record) in records.iter().enumerate() {
            let Some(message) = record.pointer("/Sns/Message").and_then(Value::as_str) else {
                answers.push(bad_request(&format!(
                    "Records[{i}].Sns.Message: missing; expected an SNS record"
                )));
                continue;
            };
            match serde_json::from_str::<Value>(message) {
                Ok(inner) => answers.push(custom_resource::handle(registry, http, inner).await?),
                Err(e) => answers.push(bad_request(&format!(
                    "Records[{i}].Sns.Message: not a CloudFormation event (JSON): {e}"
                ))),
            }
        }
        return Ok(json!({ "ok": answers.iter().all(|a| a["ok"] == true), "records": answers }));
    }
    Ok(direct(registry, &event).await)
}

/// A direct invocation (the CLI's and tests' path).
pub async fn direct(registry: &DynamoRegistry, event: &Value) -> Value {
    match event.get("action").and_then(Value::as_str) {
        Some("register") => match event.get("entry") {
            Some(entry) => match registry.register_value(entry).await {
                Ok(outcome) => json!({
                    "ok": true,
                    "outcome": outcome.as_str(),
                    "revision": outcome.revision(),
                }),
                Err(e) => failure(&e),
            },
            None => bad_request("entry: missing; register needs the entry document"),
        },
        Some("deregister") => match event.get("id").and_then(Value::as_str) {
            Some(id) => match registry.deregister(id).await {
                Ok(outcome) => json!({ "ok": true, "outcome": outcome.as_str(), "id": id }),
                Err(e) => failure(&e),
            },
            None => bad_request("id: missing; deregister needs \"team/service\""),
        },
        Some(other) => bad_request(&format!("action: unknown action {other:?}; expected register or deregister")),
        None => bad_request(
            "action: missing; expected {\"action\":\"register\",\"entry\":…}, {\"action\":\"deregister\",\"id\":…}, a CloudFormation custom resource event or an SNS-wrapped one",
        ),
    }
}

/// `{"ok":false,"error":{…}}` for a registry error.
pub fn failure(err: &RegistryError) -> Value {
    let mut error = json!({ "kind": err.kind(), "message": err.to_string() });
    if let RegistryError::Rejected(rejection) = err {
        error["problems"] = rejection
            .problems
            .iter()
            .map(|p| json!({ "field": p.field, "reason": p.reason }))
            .collect();
    }
    if let RegistryError::Conflict { what, holder } = err {
        error["conflict"] = json!({ "what": what, "holder": holder });
    }
    json!({ "ok": false, "error": error })
}

fn bad_request(message: &str) -> Value {
    json!({ "ok": false, "error": { "kind": "bad-request", "message": message } })
}
