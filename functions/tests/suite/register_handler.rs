//! The register function's handler: direct invocation, CloudFormation custom resource events
//! answered at a local stand-in for the pre-signed ResponseURL, and SNS-wrapped events.

use gateway_testkit::registry as registry_support;
use gateway_testkit::response_url;

use gateway_functions::register::{handle, ResponseClient};
use gateway_adapters::registry::DynamoRegistry;
use registry_support::{entry, invoices_api, registry};
use response_url::{redirecting_url, response_url, Captured};
use serde_json::{json, Value};
use tokio::sync::mpsc;

fn cfn_event(
    kind: &str,
    url: &str,
    request_id: &str,
    properties: Value,
    physical: Option<&str>,
    old: Option<Value>,
) -> Value {
    let mut event = json!({
        "RequestType": kind,
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:gateway-register",
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/billing/guid",
        "RequestId": request_id,
        "ResourceType": "Custom::ExposeOnGateway",
        "LogicalResourceId": "InvoicesExpose",
        "ResourceProperties": properties,
    });
    if let Some(p) = physical {
        event["PhysicalResourceId"] = json!(p);
    }
    if let Some(o) = old {
        event["OldResourceProperties"] = o;
    }
    event
}

fn as_string_property(e: &gateway_render::Entry) -> Value {
    json!({ "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:gateway-register",
            "Entry": serde_json::to_string(e).expect("json"), "WaitFor": "registered" })
}

async fn answered(rx: &mut mpsc::UnboundedReceiver<Captured>) -> Captured {
    let got = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv()).await;
    got.expect("a response within 10 s")
        .expect("listener alive")
}

fn http() -> ResponseClient {
    ResponseClient::new().expect("http client")
}

/// The gateway's own account (moto's): what direct events are trusted as.
const GATEWAY_ACCOUNT: &str = "123456789012";

/// A fresh registry whose own account is granted the teams these tests' stacks register.
async fn granted() -> DynamoRegistry {
    let reg = registry().await;
    for team in ["billing", "payments"] {
        reg.tenancy().grant(team, GATEWAY_ACCOUNT, "test")
            .await
            .expect("grant");
    }
    reg
}

/// `granted`, with `holder` registered.
async fn granted_holding(holder: &gateway_render::Entry) -> DynamoRegistry {
    let reg = granted().await;
    reg.register(holder).await.expect("holder");
    reg
}

/// The handler's answer to `event`, which it must handle (an answer, not an error).
async fn call(reg: &DynamoRegistry, event: Value) -> Value {
    handle(reg, &http(), GATEWAY_ACCOUNT, event)
        .await
        .expect("handled")
}

/// CloudFormation's Create for `entry` (a string property), answered at `url`.
fn cfn_create(url: &str, request_id: &str, entry: &gateway_render::Entry) -> Value {
    cfn_event(
        "Create",
        url,
        request_id,
        as_string_property(entry),
        None,
        None,
    )
}

/// CloudFormation's Delete of the resource `physical` whose properties held `entry`.
fn cfn_delete(url: &str, request_id: &str, entry: &gateway_render::Entry, physical: &str) -> Value {
    cfn_event(
        "Delete",
        url,
        request_id,
        as_string_property(entry),
        Some(physical),
        None,
    )
}

/// CloudFormation's Update of the resource `physical` from `old`'s properties to `new`'s.
fn cfn_update(
    url: &str,
    request_id: &str,
    new: &gateway_render::Entry,
    physical: &str,
    old: &gateway_render::Entry,
) -> Value {
    let old = Some(as_string_property(old));
    cfn_event(
        "Update",
        url,
        request_id,
        as_string_property(new),
        Some(physical),
        old,
    )
}

/// The handler takes `event`; what it then PUT at the ResponseURL.
async fn put_for(
    reg: &DynamoRegistry,
    rx: &mut mpsc::UnboundedReceiver<Captured>,
    event: Value,
) -> Captured {
    call(reg, event).await;
    answered(rx).await
}

/// The handler fails `event` as retryable once its PUT to `url` (answered with `rx`) failed
/// three times: Lambda's retry delivers the answer. The error.
async fn assert_retryable_after_three_puts(
    reg: &DynamoRegistry,
    rx: &mut mpsc::UnboundedReceiver<Captured>,
    event: Value,
) -> gateway_functions::register::RegisterError {
    let err = handle(reg, &http(), GATEWAY_ACCOUNT, event)
        .await
        .expect_err("the PUT failed");
    assert_eq!(err.kind(), "retryable");
    for _ in 0..3 {
        assert_eq!(answered(rx).await.method, "PUT");
    }
    err
}

/// The Reason CloudFormation was given.
fn reason(put: &Captured) -> &str {
    put.body["Reason"].as_str().unwrap_or("")
}

async fn is_registered(reg: &DynamoRegistry, id: &str) -> bool {
    reg.get(id).await.expect("get").is_some()
}

#[tokio::test]
async fn direct_register_and_deregister() {
    let reg = granted().await;
    let e = invoices_api();
    let answer = call(&reg, json!({ "action": "register", "entry": e })).await;
    assert_eq!(
        answer,
        json!({ "ok": true, "outcome": "created", "revision": 1 })
    );
    let answer = call(&reg, json!({ "action": "register", "entry": e })).await;
    assert_eq!(answer["outcome"], "unchanged");

    let other = entry("payments", "pay", "invoices", &["/pay"]);
    let answer = call(&reg, json!({ "action": "register", "entry": other })).await;
    assert_eq!(answer["ok"], false);
    assert_eq!(answer["error"]["kind"], "conflict");
    assert_eq!(
        answer["error"]["message"],
        "host invoices.api.example.com is held by billing"
    );

    let bad = json!({ "team": "Billing", "service": "", "host": "invoices", "backend": "x", "routes": [] });
    let answer = call(&reg, json!({ "action": "register", "entry": bad })).await;
    assert_eq!(answer["error"]["kind"], "rejected");
    let problems = answer["error"]["problems"].as_array().expect("problems");
    assert!(problems.len() >= 4, "every problem is listed: {problems:?}");
    assert!(
        problems.iter().any(|p| p["field"] == "team"),
        "{problems:?}"
    );

    let answer = call(
        &reg,
        json!({ "action": "deregister", "id": "billing/invoices-api" }),
    )
    .await;
    assert_eq!(answer["outcome"], "deleted");
    let answer = call(
        &reg,
        json!({ "action": "deregister", "id": "billing/invoices-api" }),
    )
    .await;
    assert_eq!(answer["outcome"], "not-found");

    let answer = call(&reg, json!({ "action": "publish" })).await;
    assert_eq!(answer["error"]["kind"], "bad-request");
}

#[tokio::test]
async fn custom_resource_create_answers_success_at_the_response_url() {
    let reg = granted().await;
    let (url, mut rx) = response_url(200).await;
    let e = invoices_api();
    let answer = call(&reg, cfn_create(&url, "req-1", &e)).await;
    assert_eq!(answer["ok"], true);
    let put = answered(&mut rx).await;
    assert_eq!(put.method, "PUT");
    assert_eq!(put.target, "/cfn-response/abc?X-Amz-Signature=sig");
    assert_eq!(
        put.content_type.as_deref(),
        Some(""),
        "the pre-signed URL needs an empty content type"
    );
    assert_eq!(put.body["Status"], "SUCCESS");
    assert_eq!(put.body["PhysicalResourceId"], "billing/invoices-api");
    assert_eq!(
        put.body["StackId"],
        "arn:aws:cloudformation:us-east-1:123456789012:stack/billing/guid"
    );
    assert_eq!(put.body["RequestId"], "req-1");
    assert_eq!(put.body["LogicalResourceId"], "InvoicesExpose");
    assert_eq!(put.body["Data"]["Fqdn"], "invoices.api.example.com");
    assert_eq!(put.body["Data"]["Revision"], "1");
    assert!(is_registered(&reg, "billing/invoices-api").await);
}

#[tokio::test]
async fn custom_resource_object_properties_arrive_as_strings_and_are_coerced() {
    let reg = granted().await;
    let (url, mut rx) = response_url(200).await;
    // What CloudFormation delivers for an object property: every scalar a string.
    let properties = json!({ "WaitFor": "registered", "Entry": {
        "team": "billing", "service": "invoices-api", "host": "invoices",
        "backend": "https://invoices.internal.example:8443",
        "routes": [ { "path": "/invoices", "methods": ["GET"],
            "limits": [ { "per": "client-ip", "requests": "100", "every": "minute" }, { "burst": "20" } ] } ] } });
    call(
        &reg,
        cfn_event("Create", &url, "req-2", properties, None, None),
    )
    .await;
    let put = answered(&mut rx).await;
    assert_eq!(put.body["Status"], "SUCCESS", "{}", put.body);
    let stored = registry_support::stored_entry(&reg, "billing/invoices-api").await;
    assert_eq!(
        serde_json::to_value(&stored.entry.routes[0].limits).expect("json"),
        json!([ { "per": "client-ip", "requests": 100, "every": "minute" }, { "burst": 20 } ])
    );
}

#[tokio::test]
async fn failed_create_then_its_delete_leaves_the_holder_alone() {
    let reg = granted_holding(&entry("payments", "pay", "invoices", &["/pay"])).await;
    let (url, mut rx) = response_url(200).await;
    let e = invoices_api();
    let answer = call(&reg, cfn_create(&url, "req-3", &e)).await;
    assert_eq!(answer["ok"], false);
    let put = answered(&mut rx).await;
    assert_eq!(put.body["Status"], "FAILED");
    assert_eq!(put.body["PhysicalResourceId"], "failed-req-3");
    assert_eq!(
        put.body["Reason"],
        "host invoices.api.example.com is held by payments"
    );

    // Rollback deletes the placeholder: success, and nothing of the holder's is touched.
    let put = put_for(&reg, &mut rx, cfn_delete(&url, "req-4", &e, "failed-req-3")).await;
    assert_eq!(put.body["Status"], "SUCCESS");
    assert_eq!(put.body["PhysicalResourceId"], "failed-req-3");
    assert!(is_registered(&reg, "payments/pay").await);
    let rows: Vec<_> = registry_support::rows(&reg)
        .await
        .into_iter()
        .filter(|(pk, _)| !pk.starts_with("GRANT#"))
        .collect();
    assert_eq!(
        rows.len(),
        4,
        "holder's backend claim, entry, host guard and path guard: {rows:?}"
    );
}

/// A stack registering another team's backend on a host of its own: the deploy fails with the
/// holder named, and the direct answer carries the conflict's parts.
#[tokio::test]
async fn a_create_on_another_teams_backend_fails_naming_the_holder() {
    let held = entry("payments", "pay", "pay", &["/pay"]);
    let reg = granted_holding(&held).await;
    let (url, mut rx) = response_url(200).await;
    let e = gateway_render::Entry {
        backend: held.backend.clone(),
        ..invoices_api()
    };
    let answer = call(&reg, cfn_create(&url, "req-9", &e)).await;
    let put = answered(&mut rx).await;
    assert_eq!(put.body["Status"], "FAILED");
    let authority = "pay.payments.internal.example:8443";
    assert_eq!(
        put.body["Reason"],
        format!("backend {authority} is held by team payments (operators can share it: gatewayctl backend share {authority} billing)")
    );
    assert_eq!(answer["ok"], false);
    assert!(!is_registered(&reg, "billing/invoices-api").await);
    let direct = call(
        &reg,
        json!({ "action": "register", "entry": serde_json::to_value(&e).expect("json") }),
    )
    .await;
    assert_eq!(direct["error"]["kind"], "conflict", "{direct}");
    assert_eq!(
        direct["error"]["conflict"]["what"],
        format!("backend {authority}")
    );
}

#[tokio::test]
async fn update_that_renames_the_service_registers_the_new_id_then_delete_removes_the_old() {
    let reg = granted().await;
    let (url, mut rx) = response_url(200).await;
    let old = entry("billing", "invoices-v1", "invoices", &["/v1"]);
    let new = entry("billing", "invoices-v2", "invoices", &["/v2"]);
    let put = put_for(&reg, &mut rx, cfn_create(&url, "r1", &old)).await;
    assert_eq!(put.body["Status"], "SUCCESS");

    let update = cfn_update(&url, "r2", &new, "billing/invoices-v1", &old);
    let put = put_for(&reg, &mut rx, update).await;
    assert_eq!(put.body["Status"], "SUCCESS");
    assert_eq!(put.body["PhysicalResourceId"], "billing/invoices-v2");

    // CloudFormation's cleanup: Delete with the old physical id.
    let delete = cfn_delete(&url, "r3", &old, "billing/invoices-v1");
    let put = put_for(&reg, &mut rx, delete).await;
    assert_eq!(put.body["Status"], "SUCCESS");
    let ids: Vec<_> = reg
        .list()
        .await
        .expect("list")
        .entries
        .into_iter()
        .map(|s| s.entry.id())
        .collect();
    assert_eq!(ids, vec!["billing/invoices-v2"]);

    // A Delete of something already gone succeeds.
    let delete = cfn_delete(&url, "r4", &old, "billing/invoices-v1");
    let put = put_for(&reg, &mut rx, delete).await;
    assert_eq!(put.body["Status"], "SUCCESS");
    assert!(reason(&put).contains("was not registered"), "{}", put.body);
}

#[tokio::test]
async fn failed_update_keeps_the_physical_id() {
    let reg = granted_holding(&entry("billing", "holder", "invoices", &["/taken"])).await;
    let (url, mut rx) = response_url(200).await;
    let mine = entry("billing", "mine", "invoices", &["/mine"]);
    let put = put_for(&reg, &mut rx, cfn_create(&url, "c1", &mine)).await;
    assert_eq!(put.body["Status"], "SUCCESS");
    let wants = entry("billing", "mine", "invoices", &["/mine", "/taken"]);
    let update = cfn_update(&url, "u1", &wants, "billing/mine", &mine);
    let put = put_for(&reg, &mut rx, update).await;
    assert_eq!(put.body["Status"], "FAILED");
    assert_eq!(put.body["PhysicalResourceId"], "billing/mine");
    assert_eq!(
        put.body["Reason"],
        "path /taken on invoices.api.example.com is held by billing/holder"
    );
    assert_eq!(
        reg.get("billing/mine")
            .await
            .expect("get")
            .expect("kept")
            .entry,
        mine
    );
}

#[tokio::test]
async fn sns_wrapped_custom_resource_event() {
    let reg = granted().await;
    let (url, mut rx) = response_url(200).await;
    let e = invoices_api();
    let inner = cfn_create(&url, "sns-1", &e);
    let event = json!({ "Records": [ { "EventSource": "aws:sns", "EventVersion": "1.0",
        "EventSubscriptionArn": "arn:aws:sns:us-east-1:123456789012:gateway-register-123456789012:sub",
        "Sns": { "Type": "Notification", "MessageId": "m1",
                 "TopicArn": "arn:aws:sns:us-east-1:123456789012:gateway-register-123456789012",
                 "Message": inner.to_string(), "Timestamp": "2026-01-01T00:00:00.000Z" } } ] });
    let answer = call(&reg, event).await;
    assert_eq!(answer["ok"], true, "{answer}");
    let put = answered(&mut rx).await;
    assert_eq!(put.body["Status"], "SUCCESS");
    assert_eq!(put.body["RequestId"], "sns-1");
    assert!(is_registered(&reg, "billing/invoices-api").await);
}

#[tokio::test]
async fn an_undeliverable_answer_is_an_error_for_the_lambda_to_retry() {
    let reg: DynamoRegistry = granted().await;
    let (url, mut rx) = response_url(500).await;
    let e = invoices_api();
    assert_retryable_after_three_puts(&reg, &mut rx, cfn_create(&url, "x1", &e)).await;
    // The registration itself happened; CloudFormation's retry finds it unchanged.
    assert!(is_registered(&reg, "billing/invoices-api").await);
}

#[tokio::test]
async fn a_redirecting_response_url_is_not_followed() {
    let reg = granted().await;
    let (target, mut followed) = response_url(200).await;
    let (url, mut rx) = redirecting_url(&target).await;
    let event = cfn_create(&url, "r1", &invoices_api());
    let err = assert_retryable_after_three_puts(&reg, &mut rx, event).await;
    assert!(err.to_string().contains("HTTP 307"), "{err}");
    assert!(
        followed.try_recv().is_err(),
        "the redirect's target was never called"
    );
}

#[tokio::test]
async fn a_response_url_off_s3_is_not_answered_and_changes_nothing() {
    let reg = granted().await;
    let answer = call(
        &reg,
        cfn_create(
            "https://collector.example.com/cfn?X-Amz-Signature=x",
            "r1",
            &invoices_api(),
        ),
    )
    .await;
    assert_eq!(answer["ok"], false);
    assert_eq!(answer["error"]["kind"], "bad-request");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("ResponseURL: host \"collector.example.com\" is not an S3 host"),
        "{answer}"
    );
    assert!(!is_registered(&reg, "billing/invoices-api").await);
}

/// A revoked grant stops the account's stack at once, and its Delete then leaves the entry alone.
#[tokio::test]
async fn a_revoked_account_can_neither_change_nor_delete() {
    let reg = granted().await;
    let (url, mut rx) = response_url(200).await;
    let e = invoices_api();
    let put = put_for(&reg, &mut rx, cfn_create(&url, "r1", &e)).await;
    assert_eq!(put.body["Status"], "SUCCESS");
    assert!(reg
        .tenancy()
        .revoke("billing", GATEWAY_ACCOUNT)
        .await
        .expect("revoke"));
    let mut changed = e.clone();
    changed.backend = "https://elsewhere.example".into();
    let update = cfn_update(&url, "r2", &changed, "billing/invoices-api", &e);
    let put = put_for(&reg, &mut rx, update).await;
    assert_eq!(put.body["Status"], "FAILED");
    assert!(
        reason(&put).starts_with("account 123456789012 is not granted team billing"),
        "{}",
        put.body
    );
    let delete = cfn_delete(&url, "r3", &e, "billing/invoices-api");
    let put = put_for(&reg, &mut rx, delete).await;
    assert_eq!(put.body["Status"], "SUCCESS");
    assert!(reason(&put).contains("left alone"), "{}", put.body);
    assert_eq!(
        reg.get("billing/invoices-api")
            .await
            .expect("get")
            .expect("kept")
            .entry,
        e
    );
}

/// An operator action smuggled through a team's topic is not an operator action.
#[tokio::test]
async fn an_action_wrapped_in_sns_is_not_obeyed() {
    let reg = granted().await;
    let smuggled = json!({ "action": "register", "entry": invoices_api() });
    let event = json!({ "Records": [ { "EventSource": "aws:sns",
        "Sns": { "Type": "Notification", "MessageId": "m1",
                 "TopicArn": "arn:aws:sns:us-east-1:123456789012:gateway-register-222222222222",
                 "Message": smuggled.to_string() } } ] });
    let answer = call(&reg, event).await;
    assert_eq!(answer["ok"], false, "{answer}");
    assert_eq!(
        answer["records"][0]["error"]["kind"], "bad-request",
        "{answer}"
    );
    assert!(!is_registered(&reg, "billing/invoices-api").await);
}
