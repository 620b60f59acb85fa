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
mod event;
pub mod identity;
pub mod response_url;

pub use custom_resource::{coerce_cloudformation_strings, ENTRY_PROPERTY};
pub use event::{BadRequest, DirectRequest, RegisterEvent, SnsNotification};
pub use response_url::{ResponseClient, ResponseUrlError};

use gateway_adapters::registry::{Actor, DynamoRegistry, RegistryError};
use serde_json::{json, Value};

/// Why an event got no answer: only a CloudFormation answer that could not be delivered (so the
/// Lambda's own retry delivers it).
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error(
        "temporarily unable to complete: answering CloudFormation at its ResponseURL failed \
         {attempts} times: {last}"
    )]
    Undelivered {
        attempts: u32,
        #[source]
        last: Undelivered,
    },
    #[error("serialising the CloudFormation response: {0}")]
    Serialise(#[source] serde_json::Error),
}

/// The last failed attempt to PUT a CloudFormation answer.
#[derive(Debug, thiserror::Error)]
pub enum Undelivered {
    /// The URL answered, but not with a success (a redirect included: none is followed).
    #[error("HTTP {0}")]
    Status(reqwest::StatusCode),
    #[error(transparent)]
    Request(#[from] reqwest::Error),
}

impl RegisterError {
    /// A short, stable name for grouping failures (the Lambda error type `Register.<kind>`).
    pub fn kind(&self) -> &'static str {
        match self {
            RegisterError::Undelivered { .. } => "retryable",
            RegisterError::Serialise(_) => "aws",
        }
    }
}

/// Handles one event (a [`RegisterEvent`], or its JSON). `gateway_account` is the function's own
/// account (GetCallerIdentity at start). `Err` only when a CloudFormation answer could not be
/// delivered (so the Lambda's own retry delivers it); every registration outcome, failure
/// included, is an answer.
pub async fn handle(
    registry: &DynamoRegistry,
    http: &ResponseClient,
    gateway_account: &str,
    event: impl Into<RegisterEvent>,
) -> Result<Value, RegisterError> {
    match event.into() {
        RegisterEvent::CustomResource(Ok(request)) => {
            custom_resource::handle(registry, http, gateway_account, *request).await
        }
        RegisterEvent::CustomResource(Err(BadRequest(why))) => Ok(bad_request(&why)),
        RegisterEvent::Sns(records) => {
            let mut answers = Vec::with_capacity(records.len());
            for (i, record) in records.into_iter().enumerate() {
                let record = match record {
                    Ok(record) => record,
                    Err(BadRequest(why)) => {
                        answers.push(bad_request(&why));
                        continue;
                    }
                };
                let account = match identity::account_from_topic(&record.topic_arn) {
                    Ok(account) => account,
                    Err(why) => {
                        // An untrusted record: its ResponseURL is not answered either.
                        audit("", "", "", "refused", &why);
                        answers.push(refused(&format!("Records[{i}].Sns.{why}")));
                        continue;
                    }
                };
                answers.push(match record.event {
                    Ok(request) => {
                        custom_resource::handle(registry, http, &account, *request).await?
                    }
                    Err(BadRequest(why)) => bad_request(&why),
                });
            }
            Ok(json!({ "ok": answers.iter().all(|a| a["ok"] == true), "records": answers }))
        }
        RegisterEvent::Direct(request) => Ok(direct(registry, gateway_account, request).await),
    }
}

/// A direct invocation with an `action` (the operators' path: only principals of the gateway
/// account can invoke the function directly). Acts as the operators; no grant is needed.
pub async fn direct(
    registry: &DynamoRegistry,
    gateway_account: &str,
    request: Result<DirectRequest, BadRequest>,
) -> Value {
    let actor = Actor::operator(format!("direct invoke in account {gateway_account}"));
    let (id, answer) = match request {
        Ok(DirectRequest::Register { entry }) => {
            let id = entry_id(&entry);
            let answer = match registry.register_value_as(&entry, &actor).await {
                Ok(outcome) => json!({
                    "ok": true,
                    "outcome": outcome.as_str(),
                    "revision": outcome.revision(),
                }),
                Err(e) => failure(&e),
            };
            (id, answer)
        }
        Ok(DirectRequest::Deregister { id }) => {
            let answer = match registry.deregister_as(&id, &actor).await {
                Ok(outcome) => json!({ "ok": true, "outcome": outcome.as_str(), "id": id }),
                Err(e) => failure(&e),
            };
            (id, answer)
        }
        Err(BadRequest(why)) => (String::new(), bad_request(&why)),
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

pub(crate) fn bad_request(message: &str) -> Value {
    json!({ "ok": false, "error": { "kind": "bad-request", "message": message } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn an_undelivered_answer_says_what_it_always_said_and_keeps_the_last_failure() {
        let err = RegisterError::Undelivered {
            attempts: 3,
            last: Undelivered::Status(reqwest::StatusCode::TEMPORARY_REDIRECT),
        };
        assert_eq!(
            err.to_string(),
            "temporarily unable to complete: answering CloudFormation at its ResponseURL failed 3 \
             times: HTTP 307 Temporary Redirect"
        );
        assert_eq!(err.kind(), "retryable");
        let source = err.source().expect("the last failure");
        assert_eq!(source.to_string(), "HTTP 307 Temporary Redirect");
    }
}
