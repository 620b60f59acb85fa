//! CloudFormation custom resource events (`ExposeOnGateway`), answered at their `ResponseURL`.

use super::identity::check_stack_account;
use super::response_url::{check_response_url, ResponseClient};
use super::{audit, bad_request, failure, RegisterError, Undelivered};
use aws_lambda_events::cloudformation::CloudFormationCustomResourceRequest;
use gateway_adapters::registry::{Actor, DeregisterOutcome, DynamoRegistry, RegistryError};
use gateway_adapters::retry::Backoff;
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

/// `ResourceProperties.WaitFor`: `registered` answers once the entry is stored; `published`
/// (the default) once the reconciler has published its registered revision, FAILED when it
/// quarantined it, FAILED when neither happened within the wait; `serving` once, in addition,
/// every currently reporting proxy serves it; `promoted` once, after `published`, its rollout
/// ended promoted, FAILED when it was rolled back or aborted (docs/design.md#deploys-that-wait).
pub const WAIT_FOR_PROPERTY: &str = "WaitFor";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaitFor {
    Registered,
    Published,
    Serving,
    Promoted,
}

fn wait_for(properties: &Value) -> Result<WaitFor, RegistryError> {
    match properties.get(WAIT_FOR_PROPERTY) {
        None | Some(Value::Null) => Ok(WaitFor::Published),
        Some(Value::String(s)) if s == "published" => Ok(WaitFor::Published),
        Some(Value::String(s)) if s == "registered" => Ok(WaitFor::Registered),
        Some(Value::String(s)) if s == "serving" => Ok(WaitFor::Serving),
        Some(Value::String(s)) if s == "promoted" => Ok(WaitFor::Promoted),
        Some(other) => Err(wait_for_problem(format!(
            "{other} is not supported; expected \"registered\", \"published\", \"serving\" or \"promoted\""
        ))),
    }
}

fn wait_for_problem(reason: String) -> RegistryError {
    RegistryError::Rejected(Rejection {
        problems: vec![Problem {
            field: format!("ResourceProperties.{WAIT_FOR_PROPERTY}"),
            reason,
        }],
    })
}

/// The whole response must stay under CloudFormation's 4 KiB; the reason is the only part
/// that can grow.
const MAX_REASON_BYTES: usize = 3000;
const PUT_ATTEMPTS: u32 = 3;
/// Three tries at the ResponseURL, 200 ms and then 800 ms apart.
const PUT_RETRY: Backoff = Backoff {
    attempts: PUT_ATTEMPTS,
    first: Duration::from_millis(200),
    factor: 4,
    cap: Duration::MAX,
    jitter: false,
};
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
    /// For the audit line: the entry concerned and what was decided.
    entry_id: String,
    decision: String,
}

impl Answer {
    fn failed(err: RegistryError, physical_resource_id: String, entry_id: String) -> Answer {
        Answer {
            ok: false,
            reason: err.to_string(),
            physical_resource_id,
            data: BTreeMap::new(),
            detail: failure(&err),
            entry_id,
            decision: err.kind().to_string(),
        }
    }
}

/// What every request type carries.
struct Common<'a> {
    url: &'a str,
    stack_id: &'a str,
    request_id: &'a str,
    logical_id: &'a str,
}

/// `caller_account` is the account the entry point vouches for (see `super::identity`).
pub(super) async fn handle(
    registry: &DynamoRegistry,
    http: &ResponseClient,
    caller_account: &str,
    request: CloudFormationCustomResourceRequest,
) -> Result<Value, RegisterError> {
    let common = match &request {
        CloudFormationCustomResourceRequest::Create(r) => Common {
            url: &r.response_url,
            stack_id: &r.stack_id,
            request_id: &r.request_id,
            logical_id: &r.logical_resource_id,
        },
        CloudFormationCustomResourceRequest::Update(r) => Common {
            url: &r.response_url,
            stack_id: &r.stack_id,
            request_id: &r.request_id,
            logical_id: &r.logical_resource_id,
        },
        CloudFormationCustomResourceRequest::Delete(r) => Common {
            url: &r.response_url,
            stack_id: &r.stack_id,
            request_id: &r.request_id,
            logical_id: &r.logical_resource_id,
        },
        _ => {
            return Ok(bad_request("RequestType: expected Create, Update or Delete"))
        }
    };
    // Checked before anything else: a URL the function will not answer means no change either.
    let url = match check_response_url(common.url, registry.policy().allow_loopback_backends) {
        Ok(url) => url,
        Err(why) => {
            let why = why.to_string();
            audit(caller_account, common.stack_id, "", "refused", &why);
            return Ok(bad_request(&why));
        }
    };
    let stack_ok = check_stack_account(common.stack_id, caller_account);
    let actor = Actor::stack(caller_account, common.stack_id, common.logical_id);
    let answer = match (&request, stack_ok) {
        (CloudFormationCustomResourceRequest::Delete(r), Err(why)) => Answer {
            ok: true,
            reason: format!("{}: left alone: {why}", r.physical_resource_id),
            physical_resource_id: r.physical_resource_id.clone(),
            data: BTreeMap::new(),
            detail: json!({ "ok": true, "outcome": "left-alone" }),
            entry_id: r.physical_resource_id.clone(),
            decision: "left-alone".into(),
        },
        (CloudFormationCustomResourceRequest::Create(r), Err(why)) => Answer::failed(
            RegistryError::Forbidden(why),
            format!("failed-{}", r.request_id),
            super::entry_id(&entry_property(&r.resource_properties).unwrap_or_default()),
        ),
        (CloudFormationCustomResourceRequest::Update(r), Err(why)) => Answer::failed(
            RegistryError::Forbidden(why),
            r.physical_resource_id.clone(),
            super::entry_id(&entry_property(&r.resource_properties).unwrap_or_default()),
        ),
        (CloudFormationCustomResourceRequest::Create(r), Ok(())) => {
            put_entry(
                registry,
                &r.resource_properties,
                format!("failed-{}", r.request_id),
                &actor,
            )
            .await
        }
        // A failed Update keeps the resource's current id, or CloudFormation would treat the
        // failure as a replacement.
        (CloudFormationCustomResourceRequest::Update(r), Ok(())) => {
            put_entry(
                registry,
                &r.resource_properties,
                r.physical_resource_id.clone(),
                &actor,
            )
            .await
        }
        (CloudFormationCustomResourceRequest::Delete(r), Ok(())) => {
            delete_entry(registry, &r.physical_resource_id, &actor).await
        }
        _ => {
            return Ok(bad_request("RequestType: expected Create, Update or Delete"))
        }
    };
    let response = Response {
        status: if answer.ok { "SUCCESS" } else { "FAILED" },
        reason: truncate(&answer.reason, MAX_REASON_BYTES),
        physical_resource_id: answer.physical_resource_id.clone(),
        stack_id: common.stack_id,
        request_id: common.request_id,
        logical_resource_id: common.logical_id,
        no_echo: false,
        data: answer.data,
    };
    audit(
        caller_account,
        common.stack_id,
        &answer.entry_id,
        &answer.decision,
        &response.reason,
    );
    let body = serde_json::to_vec(&response).map_err(RegisterError::Serialise)?;
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

/// Create and Update: check and register the entry in the properties, for the stack resource.
async fn put_entry(
    registry: &DynamoRegistry,
    properties: &Value,
    id_on_failure: String,
    actor: &Actor,
) -> Answer {
    let input = match entry_property(properties) {
        Ok(v) => v,
        Err(e) => return Answer::failed(e, id_on_failure, String::new()),
    };
    let entry_id = super::entry_id(&input);
    let wait = match wait_for(properties) {
        Ok(WaitFor::Serving) if registry.bundles().is_none() => {
            let e = wait_for_problem(
                "\"serving\" needs the bundle bucket (GATEWAY_BUCKET) on the register function, \
                 which this one is not given"
                    .into(),
            );
            return Answer::failed(e, id_on_failure, entry_id);
        }
        Ok(w) => w,
        Err(e) => return Answer::failed(e, id_on_failure, entry_id),
    };
    let entry = match check_entry_value(&input, registry.policy()) {
        Ok(entry) => entry,
        Err(rejection) => {
            return Answer::failed(RegistryError::Rejected(rejection), id_on_failure, entry_id)
        }
    };
    match registry.register_as(&entry, actor).await {
        Ok(outcome) => {
            let id = entry.id();
            let fqdn = entry.fqdn(registry.base_domain());
            let mut waited = String::new();
            let started = std::time::Instant::now();
            let waiting = match wait {
                WaitFor::Registered => None,
                WaitFor::Published => {
                    Some(wait_until_published(registry, &id, outcome.revision(), started).await)
                }
                WaitFor::Serving => {
                    Some(wait_until_serving(registry, &id, outcome.revision(), started).await)
                }
                WaitFor::Promoted => {
                    Some(wait_until_promoted(registry, &id, outcome.revision(), started).await)
                }
            };
            if let Some(waiting) = waiting {
                let not_live = match wait {
                    WaitFor::Serving => "not-serving",
                    WaitFor::Promoted => "not-promoted",
                    _ => "not-published",
                };
                match waiting {
                    Ok(note) => waited = note,
                    // Registered but not live: FAILED with the entry's id, so a rolled-back Create
                    // deregisters it and an Update goes back to the previous version.
                    Err(why) => {
                        return Answer {
                            ok: false,
                            reason: why.clone(),
                            physical_resource_id: id.clone(),
                            data: BTreeMap::new(),
                            detail: json!({ "ok": false, "outcome": not_live, "revision": outcome.revision(), "reason": why }),
                            entry_id: id,
                            decision: not_live.into(),
                        }
                    }
                }
            }
            Answer {
                ok: true,
                reason: format!(
                    "{id} on {fqdn}: {} (revision {}){waited}",
                    outcome.as_str(),
                    outcome.revision()
                ),
                physical_resource_id: id.clone(),
                data: BTreeMap::from([
                    ("Id", id.clone()),
                    ("Fqdn", fqdn),
                    ("Revision", outcome.revision().to_string()),
                ]),
                detail: json!({ "ok": true, "outcome": outcome.as_str(), "revision": outcome.revision() }),
                entry_id: id,
                decision: outcome.as_str().to_string(),
            }
        }
        Err(e) => Answer::failed(e, id_on_failure, entry_id),
    }
}

/// Reads the entry's status row until its registered `revision` is published (`Ok`, with a note
/// for the reason) or quarantined, or the wait runs out (`Err`, the stage and reason).
async fn wait_until_published(
    registry: &DynamoRegistry,
    id: &str,
    revision: u64,
    started: std::time::Instant,
) -> Result<String, String> {
    use gateway_adapters::registry::EntryState;
    let (wait, poll) = registry.publish_wait();
    loop {
        match registry.status(id).await {
            Ok(Some(st)) => match st.state(revision) {
                EntryState::Published => {
                    return Ok(format!(
                        "; published in bundle {} ({})",
                        st.version_id.unwrap_or_default(),
                        st.hash.unwrap_or_default()
                    ))
                }
                EntryState::Quarantined => {
                    let q = st.quarantine.unwrap_or_else(|| unreachable_quarantine(revision));
                    return Err(format!(
                        "{id} revision {revision} is registered but QUARANTINED by the reconciler at stage {}: {}",
                        q.stage, q.reason
                    ));
                }
                EntryState::Pending => {}
            },
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "could not read the status row; still waiting"),
        }
        if started.elapsed() + poll > wait {
            return Err(format!(
                "{id} revision {revision} is registered but was not published within {}s (state pending: \
                 no reconcile run has decided it yet); see `gatewayctl status {id}`",
                wait.as_secs()
            ));
        }
        tokio::time::sleep(poll).await;
    }
}

/// [`wait_until_published`], then within the same wait reads the entry's rollout until the
/// registered `revision` serves every request (`Ok`: promoted by its last step or an operator,
/// or nothing was rolled out), it was rolled back or aborted (`Err`, with why), a newer revision
/// replaced it, or the wait runs out (docs/design.md#deploys-that-wait).
async fn wait_until_promoted(
    registry: &DynamoRegistry,
    id: &str,
    revision: u64,
    started: std::time::Instant,
) -> Result<String, String> {
    wait_until_published(registry, id, revision, started).await?;
    let (wait, poll) = registry.publish_wait();
    let mut last = String::from("not read yet");
    loop {
        match registry.rollout_view(id).await {
            Ok(Some(view)) if view.revision != revision => {
                return Err(format!("{id} revision {revision} was replaced by revision {} before its rollout ended", view.revision))
            }
            Ok(Some(view)) => {
                let why = view.progress.as_ref().and_then(|p| p.reason.clone()).unwrap_or_default();
                match view.state() {
                    "promoted" => return Ok(format!("; promoted: it serves every request ({why})")),
                    "none" => return Ok("; nothing to roll out: it serves every request".into()),
                    "rolled-back" => return Err(format!("{id} revision {revision} was ROLLED BACK by the gateway: {why}")),
                    "aborted" => return Err(format!("{id} revision {revision}'s rollout was aborted by an operator")),
                    _ => last = format!("at {} % ({why})", view.serving_percent()),
                }
            }
            Ok(None) => return Err(format!("{id} is no longer registered")),
            Err(e) => tracing::warn!(error = %e, "could not read the rollout; still waiting"),
        }
        if started.elapsed() + poll > wait {
            return Err(format!(
                "{id} revision {revision} was published but not promoted within {}s (rolling out {last}); see `gatewayctl rollout status {id}`",
                wait.as_secs()
            ));
        }
        tokio::time::sleep(poll).await;
    }
}

/// After [`wait_until_published`], within the same wait: reads the proxy reports until every
/// currently reporting proxy (at least one) serves the published revision (`Ok`), the entry is
/// quarantined after all (`Err`), or the wait runs out (`Err`, saying on how many it is live and
/// why not on the others).
async fn wait_until_serving(
    registry: &DynamoRegistry,
    id: &str,
    revision: u64,
    started: std::time::Instant,
) -> Result<String, String> {
    use gateway_adapters::registry::EntryState;
    use gateway_control::serving::{live_on, BundleCache};
    let published = wait_until_published(registry, id, revision, started).await?;
    let Some(store) = registry.bundles() else {
        return Err("waitFor serving needs the bundle bucket (GATEWAY_BUCKET)".into());
    };
    let (wait, poll) = registry.publish_wait();
    let proxies = registry.proxies();
    let mut cache = BundleCache::new(store);
    let mut last = String::from("no proxy report read yet");
    loop {
        match registry.status(id).await {
            Ok(Some(st)) => match st.state(revision) {
                EntryState::Quarantined => {
                    let q = st.quarantine.unwrap_or_else(|| unreachable_quarantine(revision));
                    return Err(format!(
                        "{id} revision {revision} was published, then QUARANTINED by the reconciler at stage {}: {}",
                        q.stage, q.reason
                    ));
                }
                // It was published, so pending means a newer registration's revision was
                // published since: what this deploy asked for is no longer the entry.
                EntryState::Pending => {
                    return Err(format!(
                        "{id} revision {revision} is no longer the published revision (now {:?}); see `gatewayctl status {id}`",
                        st.revision_published
                    ));
                }
                EntryState::Published => {
                    let now = gateway_adapters::registry::proxies::unix_now();
                    match proxies.read(now).await {
                        Ok(rows) => {
                            for row in &rows.ignored {
                                tracing::warn!(sort_key = ?row.sort_key, why = %row.why, "proxy report row ignored");
                            }
                            let on = live_on(&mut cache, id, &st, &rows.current).await;
                            if on.everywhere() {
                                return Ok(format!("{published}; {}", on.summary()));
                            }
                            last = describe_not_live(&on);
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "could not read the proxy reports; still waiting");
                            last = format!("proxy reports unreadable: {e}");
                        }
                    }
                }
            },
            Ok(None) => last = "status row missing".into(),
            Err(e) => tracing::warn!(error = %e, "could not read the status row; still waiting"),
        }
        if started.elapsed() + poll > wait {
            return Err(format!(
                "{id} revision {revision} is published but was not live on every proxy within {}s ({last}); \
                 see `gatewayctl status {id}`",
                wait.as_secs()
            ));
        }
        tokio::time::sleep(poll).await;
    }
}

/// "live on 1 of 2 proxies: task-b serves bundle sha256:… without billing/x".
fn describe_not_live(on: &gateway_control::serving::LiveOn) -> String {
    if on.reporting() == 0 {
        return "no proxy is reporting".into();
    }
    let others: Vec<String> = on
        .proxies
        .iter()
        .filter(|p| !p.live)
        .take(3)
        .map(|p| format!("{} {}", p.proxy.proxy_id, p.why.as_deref().unwrap_or("does not serve it")))
        .collect();
    format!("{}: {}", on.summary(), others.join("; "))
}

fn unreachable_quarantine(revision: u64) -> gateway_adapters::registry::QuarantineStatus {
    gateway_adapters::registry::QuarantineStatus {
        revision,
        stage: "unknown".into(),
        reason: "no reason recorded".into(),
        kept: String::new(),
        since: 0,
    }
}

/// Delete: deregister the physical id if this stack resource owns it. An id that was never
/// registered is already gone; one owned by someone else, or whose team the account is no longer
/// granted, is left alone and the Delete succeeds (so a failed or duplicate stack can still roll
/// back and be deleted without touching the owner's route).
async fn delete_entry(registry: &DynamoRegistry, physical_id: &str, actor: &Actor) -> Answer {
    let answer = |ok: bool, reason: String, detail: Value, decision: &str| Answer {
        ok,
        reason,
        physical_resource_id: physical_id.to_string(),
        data: BTreeMap::new(),
        detail,
        entry_id: physical_id.to_string(),
        decision: decision.to_string(),
    };
    if !looks_like_id(physical_id) {
        return answer(
            true,
            format!("{physical_id} is not a team/service id (a failed Create's placeholder): nothing to delete"),
            json!({ "ok": true, "outcome": "not-found" }),
            "not-found",
        );
    }
    match registry.deregister_as(physical_id, actor).await {
        Ok(outcome) => {
            let reason = match outcome {
                DeregisterOutcome::Deleted => format!("{physical_id}: deleted"),
                DeregisterOutcome::NotFound => format!("{physical_id}: was not registered"),
            };
            answer(
                true,
                reason,
                json!({ "ok": true, "outcome": outcome.as_str() }),
                outcome.as_str(),
            )
        }
        Err(e @ (RegistryError::Conflict { .. } | RegistryError::Forbidden(_))) => answer(
            true,
            format!("{physical_id}: left alone, not deleted: {e}"),
            json!({ "ok": true, "outcome": "left-alone", "why": e.to_string() }),
            "left-alone",
        ),
        Err(e) => answer(false, e.to_string(), failure(&e), e.kind()),
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
/// Redirects are not followed (the client from `response_url::client()` has them off); a 3xx
/// answer is a failure like any other.
async fn send(http: &ResponseClient, url: reqwest::Url, body: Vec<u8>) -> Result<(), RegisterError> {
    let mut attempt = 0;
    loop {
        PUT_RETRY.pause(attempt).await;
        let sent = http
            .http()
            .put(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "")
            .timeout(PUT_TIMEOUT)
            .body(body.clone())
            .send()
            .await;
        let last = match sent {
            Ok(resp) if resp.status().is_success() => return Ok(()),
            Ok(resp) => Undelivered::Status(resp.status()),
            Err(e) => Undelivered::Request(e),
        };
        attempt += 1;
        if attempt >= PUT_RETRY.attempts {
            return Err(RegisterError::Undelivered {
                attempts: PUT_RETRY.attempts,
                last,
            });
        }
    }
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
