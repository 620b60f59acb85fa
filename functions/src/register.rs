//! The register function: one handler for three kinds of event.
//!
//! * Direct invocation: `{"action":"register","entry":{…}}` or
//!   `{"action":"deregister","id":"team/service"}`. Answers
//!   `{"ok":true,"outcome":"created|updated|unchanged|deleted|not-found",…}` or
//!   `{"ok":false,"error":{"kind":"rejected|conflict|forbidden|retryable|aws|corrupt","message":…}}`;
//!   a rejection also lists every problem under `error.problems`.
//! * A CloudFormation custom resource event (`RequestType` Create/Update/Delete), answered with a
//!   PUT to its pre-signed `ResponseURL`. See [`ENTRY_PROPERTY`] for the property layout.
//! * The same event wrapped in SNS (`Records[].Sns.Message` is the event's JSON), the
//!   cross-account pattern: a team's stack publishes to its account's topic in the gateway account.
//!
//! Who the caller is comes from the entry point, never from the payload (see [`identity`]): an
//! SNS record's topic names the team account; a direct invoke is the gateway account itself, and
//! its `action` requests act as the operators. A CloudFormation change also needs the caller's
//! account to be granted the entry's team, and only the stack resource that owns an entry may
//! change or delete it. Every decision is logged as one JSON line (target `audit`).

mod custom_resource;
pub mod identity;
pub mod response_url;

pub use custom_resource::{coerce_cloudformation_strings, ENTRY_PROPERTY};
pub use response_url::ResponseClient;

use gateway_adapters::registry::{Actor, DynamoRegistry, RegistryError};
use serde_json::{json, Value};

/// Handles one event. `gateway_account` is the function's own account (GetCallerIdentity at
/// start). `Err` only when a CloudFormation answer could not be delivered (so the Lambda's own
/// retry delivers it); every registration outcome, failure included, is an answer.
pub async fn handle(
    registry: &DynamoRegistry,
    http: &ResponseClient,
    gateway_account: &str,
    event: Value,
) -> Result<Value, RegistryError> {
    if event.get("RequestType").is_some() {
        return custom_resource::handle(registry, http, gateway_account, event).await;
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
            let topic = record
                .pointer("/Sns/TopicArn")
                .and_then(Value::as_str)
                .unwrap_or("");
            let account = match identity::account_from_topic(topic) {
                Ok(account) => account,
                Err(why) => {
                    // An untrusted record: its ResponseURL is not answered either.
                    audit("", "", "", "refused", &why);
                    answers.push(refused(&format!("Records[{i}].Sns.{why}")));
                    continue;
                }
            };
            match serde_json::from_str::<Value>(message) {
                Ok(inner) => {
                    answers.push(custom_resource::handle(registry, http, &account, inner).await?)
                }
                Err(e) => answers.push(bad_request(&format!(
                    "Records[{i}].Sns.Message: not a CloudFormation event (JSON): {e}"
                ))),
            }
        }
        return Ok(json!({ "ok": answers.iter().all(|a| a["ok"] == true), "records": answers }));
    }
    Ok(direct(registry, gateway_account, &event).await)
}

/// A direct invocation with an `action` (the operators' path: only principals of the gateway
/// account can invoke the function directly). Acts as the operators; no grant is needed.
pub async fn direct(registry: &DynamoRegistry, gateway_account: &str, event: &Value) -> Value {
    let actor = Actor::operator(format!("direct invoke in account {gateway_account}"));
    let (id, answer) = match event.get("action").and_then(Value::as_str) {
        Some("register") => match event.get("entry") {
            Some(entry) => {
                let id = entry_id(entry);
                let answer = match registry.register_value_as(entry, &actor).await {
                    Ok(outcome) => json!({
                        "ok": true,
                        "outcome": outcome.as_str(),
                        "revision": outcome.revision(),
                    }),
                    Err(e) => failure(&e),
                };
                (id, answer)
            }
            None => (
                String::new(),
                bad_request("entry: missing; register needs the entry document"),
            ),
        },
        Some("deregister") => match event.get("id").and_then(Value::as_str) {
            Some(id) => {
                let answer = match registry.deregister_as(id, &actor).await {
                    Ok(outcome) => json!({ "ok": true, "outcome": outcome.as_str(), "id": id }),
                    Err(e) => failure(&e),
                };
                (id.to_string(), answer)
            }
            None => (
                String::new(),
                bad_request("id: missing; deregister needs \"team/service\""),
            ),
        },
        Some(other) => (
            String::new(),
            bad_request(&format!(
                "action: unknown action {other:?}; expected register or deregister"
            )),
        ),
        None => (
            String::new(),
            bad_request(
                "action: missing; expected {\"action\":\"register\",\"entry\":…}, {\"action\":\"deregister\",\"id\":…}, a CloudFormation custom resource event or an SNS-wrapped one",
            ),
        ),
    };
    let decision = answer["outcome"]
        .as_str()
        .or_else(|| answer["error"]["kind"].as_str())
        .unwrap_or("failed");
    let reason = answer["error"]["message"].as_str().unwrap_or("");
    audit(gateway_account, "", &id, decision, reason);
    answer
}

/// The audit line: one per registration decision, with who asked, from which stack, for which
/// entry, what was decided and why.
pub(crate) fn audit(account: &str, stack: &str, entry_id: &str, decision: &str, reason: &str) {
    tracing::info!(
        target: "audit",
        account,
        stack,
        entry_id,
        decision,
        reason,
        "registration decision"
    );
}

/// `team/service` of an entry document, as far as it says (for the audit line).
pub(crate) fn entry_id(entry: &Value) -> String {
    match (
        entry.get("team").and_then(Value::as_str),
        entry.get("service").and_then(Value::as_str),
    ) {
        (Some(team), Some(service)) => format!("{team}/{service}"),
        _ => String::new(),
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

fn refused(message: &str) -> Value {
    json!({ "ok": false, "error": { "kind": "forbidden", "message": message } })
}

fn bad_request(message: &str) -> Value {
    json!({ "ok": false, "error": { "kind": "bad-request", "message": message } })
}
