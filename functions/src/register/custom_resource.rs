//! CloudFormation custom resource events (`ExposeOnGateway`), answered at their `ResponseURL`.

use super::failure;
use crate::registry::{DeregisterOutcome, DynamoRegistry, RegistryError};
use aws_lambda_events::cloudformation::CloudFormationCustomResourceRequest;
use gateway_render::check::check_entry_value;
use gateway_render::{Problem, Rejection};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The custom resource's one property: `ResourceProperties.Entry`, the entry document exactly as
/// `gatewayctl register` takes it. Two encodings are accepted:
///
/// * a JSON **string** (recommended; the construct sends `JSON.stringify(entry)`): it arrives
///   byte for byte, numbers stay numbers;
/// * a JSON **object**: CloudFormation turns every scalar in it into a string (`100` arrives as
///   `"100"`), so the numeric fields (`routes[].limits[].requests` and `.burst`) are turned
///   back into integers before the checks (see [`coerce_cloudformation_strings`]).
///
/// Other properties (`ServiceToken`) are ignored. The physical resource id is the entry's id,
/// `team/service`; changing `team` or `service` in an Update registers the new id and
/// CloudFormation then deletes the old one. A failed Create answers with the placeholder id
/// `failed-<RequestId>`, whose Delete succeeds without touching the registry.
pub const ENTRY_PROPERTY: &str = "Entry";

/// The whole response must stay under CloudFormation's 4 KiB; the reason is the only part
/// that can grow.
const MAX_REASON_BYTES: usize = 3000;
const PUT_ATTEMPTS: u32 = 3;
const PUT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Response<'a> {
    status: &'static str,
    reason: String,
    physical_resource_id: String,
    stack_id: &'a str,
    request_id: &'a str,
    logical_resource_id: &'a str,
    no_echo: bool,
    data: BTreeMap<&'static str, String>,
}

struct Answer {
    ok: bool,
    reason: String,
    physical_resource_id: String,
    data: BTreeMap<&'static str, String>,
    /// What the function itself returns (the direct-invocation answer for this registration).
    detail: Value,
}

pub(super) async fn handle(
    registry: &DynamoRegistry,
    http: &reqwest::Client,
    event: Value,
) -> Result<Value, RegistryError> {
    let request: CloudFormationCustomResourceRequest = match serde_json::from_value(event) {
        Ok(r) => r,
        Err(e) => {
            // Without a parseable event there is no ResponseURL to answer; CloudFormation times out.
            return Ok(json!({ "ok": false, "error": { "kind": "bad-request",
                "message": format!("not a CloudFormation custom resource event: {e}") } }));
        }
    };
    let (answer, url, stack_id, request_id, logical_id) = match &request {
        CloudFormationCustomResourceRequest::Create(r) => (
            put_entry(
                registry,
                &r.resource_properties,
                format!("failed-{}", r.request_id),
            )
            .await,
            &r.response_url,
            &r.stack_id,
            &r.request_id,
            &r.logical_resource_id,
        ),
        CloudFormationCustomResourceRequest::Update(r) => (
            // A failed Update keeps the resource's current id, or CloudFormation would treat
            // the failure as a replacement.
            put_entry(
                registry,
                &r.resource_properties,
                r.physical_resource_id.clone(),
            )
            .await,
            &r.response_url,
            &r.stack_id,
            &r.request_id,
            &r.logical_resource_id,
        ),
        CloudFormationCustomResourceRequest::Delete(r) => (
            delete_entry(registry, &r.physical_resource_id).await,
            &r.response_url,
            &r.stack_id,
            &r.request_id,
            &r.logical_resource_id,
        ),
        _ => {
            return Ok(json!({ "ok": false, "error": { "kind": "bad-request",
                "message": "RequestType: expected Create, Update or Delete" } }))
        }
    };
    let response = Response {
        status: if answer.ok { "SUCCESS" } else { "FAILED" },
        reason: truncate(&answer.reason, MAX_REASON_BYTES),
        physical_resource_id: answer.physical_resource_id.clone(),
        stack_id,
        request_id,
        logical_resource_id: logical_id,
        no_echo: false,
        data: answer.data,
    };
    let body = serde_json::to_vec(&response)
        .map_err(|e| RegistryError::Aws(format!("serialising the CloudFormation response: {e}")))?;
    send(http, url, body).await?;
    tracing::info!(status = response.status, physical_resource_id = %answer.physical_resource_id,
        reason = %response.reason, "answered CloudFormation");
    Ok(json!({
        "ok": answer.ok,
        "status": response.status,
        "physicalResourceId": answer.physical_resource_id,
        "reason": response.reason,
        "result": answer.detail,
    }))
}

/// Create and Update: check and register the entry in the properties.
async fn put_entry(registry: &DynamoRegistry, properties: &Value, id_on_failure: String) -> Answer {
    let failed = |err: RegistryError| Answer {
        ok: false,
        reason: err.to_string(),
        physical_resource_id: id_on_failure.clone(),
        data: BTreeMap::new(),
        detail: failure(&err),
    };
    let input = match entry_property(properties) {
        Ok(v) => v,
        Err(e) => return failed(e),
    };
    let entry = match check_entry_value(&input, registry.policy()) {
        Ok(entry) => entry,
        Err(rejection) => return failed(RegistryError::Rejected(rejection)),
    };
    match registry.register(&entry).await {
        Ok(outcome) => {
            let id = entry.id();
            let fqdn = entry.fqdn(registry.base_domain());
            Answer {
                ok: true,
                reason: format!(
                    "{id} on {fqdn}: {} (revision {})",
                    outcome.as_str(),
                    outcome.revision()
                ),
                physical_resource_id: id.clone(),
                data: BTreeMap::from([
                    ("Id", id),
                    ("Fqdn", fqdn),
                    ("Revision", outcome.revision().to_string()),
                ]),
                detail: json!({ "ok": true, "outcome": outcome.as_str(), "revision": outcome.revision() }),
            }
        }
        Err(e) => failed(e),
    }
}

/// Delete: deregister the physical id; an id that was never registered is already gone.
async fn delete_entry(registry: &DynamoRegistry, physical_id: &str) -> Answer {
    let answer = |ok: bool, reason: String, detail: Value| Answer {
        ok,
        reason,
        physical_resource_id: physical_id.to_string(),
        data: BTreeMap::new(),
        detail,
    };
    if !looks_like_id(physical_id) {
        return answer(
            true,
            format!("{physical_id} is not a team/service id (a failed Create's placeholder): nothing to delete"),
            json!({ "ok": true, "outcome": "not-found" }),
        );
    }
    match registry.deregister(physical_id).await {
        Ok(outcome) => {
            let reason = match outcome {
                DeregisterOutcome::Deleted => format!("{physical_id}: deleted"),
                DeregisterOutcome::NotFound => format!("{physical_id}: was not registered"),
            };
            answer(
                true,
                reason,
                json!({ "ok": true, "outcome": outcome.as_str() }),
            )
        }
        Err(e) => answer(false, e.to_string(), failure(&e)),
    }
}

/// The entry document from `ResourceProperties` (see [`ENTRY_PROPERTY`]).
fn entry_property(properties: &Value) -> Result<Value, RegistryError> {
    let field = format!("ResourceProperties.{ENTRY_PROPERTY}");
    let reject = |reason: String| {
        RegistryError::Rejected(Rejection {
            problems: vec![Problem {
                field: field.clone(),
                reason,
            }],
        })
    };
    match properties.get(ENTRY_PROPERTY) {
        Some(Value::String(text)) => {
            serde_json::from_str(text).map_err(|e| reject(format!("not a JSON document: {e}")))
        }
        Some(Value::Object(_)) => {
            let mut entry = properties[ENTRY_PROPERTY].clone();
            coerce_cloudformation_strings(&mut entry);
            Ok(entry)
        }
        Some(_) => Err(reject(
            "expected the entry as a JSON string or an object".into(),
        )),
        None => Err(reject(
            "missing; the custom resource carries the entry here".into(),
        )),
    }
}

/// CloudFormation passes every scalar property as a string. Turns the entry's numeric fields
/// (`routes[].limits[].requests`, `.burst`) back into integers when they are strings of digits;
/// anything else is left for the checks to reject with its field path. (The entry has no
/// boolean fields; a string stays a string everywhere else, so a service named `true` survives.)
pub fn coerce_cloudformation_strings(entry: &mut Value) {
    const NUMERIC: &[&str] = &["requests", "burst"];
    let Some(routes) = entry.get_mut("routes").and_then(Value::as_array_mut) else {
        return;
    };
    for route in routes {
        let Some(limits) = route.get_mut("limits").and_then(Value::as_array_mut) else {
            continue;
        };
        for limit in limits.iter_mut().filter_map(Value::as_object_mut) {
            for field in NUMERIC {
                if let Some(Value::String(text)) = limit.get(*field) {
                    if let Ok(n) = text.trim().parse::<u64>() {
                        limit.insert((*field).to_string(), Value::from(n));
                    }
                }
            }
        }
    }
}

/// `team/service` shape (the checks decide the parts' rules; this only tells ids from placeholders).
fn looks_like_id(id: &str) -> bool {
    let part = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    matches!(id.split_once('/'), Some((team, service)) if part(team) && part(service))
}

/// PUT the response to the pre-signed URL. The URL was signed without a content type, so the
/// request must carry an empty one.
async fn send(http: &reqwest::Client, url: &str, body: Vec<u8>) -> Result<(), RegistryError> {
    let mut last = String::new();
    for attempt in 0..PUT_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200 * 4u64.pow(attempt - 1))).await;
        }
        let sent = http
            .put(url)
            .header(reqwest::header::CONTENT_TYPE, "")
            .timeout(PUT_TIMEOUT)
            .body(body.clone())
            .send()
            .await;
        match sent {
            Ok(resp) if resp.status().is_success() => return Ok(()),
            Ok(resp) => last = format!("HTTP {}", resp.status()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(RegistryError::Retryable(format!(
        "answering CloudFormation at its ResponseURL failed {PUT_ATTEMPTS} times: {last}"
    )))
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloudformation_strings_become_numbers_only_where_the_entry_has_numbers() {
        let mut entry = json!({
            "team": "true", "service": "100",
            "routes": [ { "path": "/a", "limits": [
                { "per": "route", "requests": "100", "every": "minute" },
                { "burst": "20" },
                { "per": "route", "requests": "many", "every": "minute" } ] } ]
        });
        coerce_cloudformation_strings(&mut entry);
        assert_eq!(entry["routes"][0]["limits"][0]["requests"], json!(100));
        assert_eq!(entry["routes"][0]["limits"][1]["burst"], json!(20));
        assert_eq!(entry["routes"][0]["limits"][2]["requests"], json!("many"));
        assert_eq!(entry["team"], json!("true"));
        assert_eq!(entry["service"], json!("100"));
    }

    #[test]
    fn placeholders_are_not_ids() {
        assert!(looks_like_id("billing/invoices-api"));
        assert!(!looks_like_id("failed-1234-abcd"));
        assert!(!looks_like_id("billing/"));
        assert!(!looks_like_id("a/b/c"));
    }

    #[test]
    fn long_reasons_are_cut_on_a_character_boundary() {
        let text = "é".repeat(2000);
        let cut = truncate(&text, 3001);
        assert!(cut.len() <= 3001 + "…".len());
        assert!(cut.ends_with('…'));
    }
}
