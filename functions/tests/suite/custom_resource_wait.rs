//! `ExposeOnGateway`'s `WaitFor`: the custom resource answers SUCCESS once the reconciler has
//! published the entry and FAILED with the stage and reason when it quarantines it or the wait
//! runs out. Against moto's server, the real Envoy and a local stand-in for the ResponseURL
//! (docs/design.md#deploys-that-wait).

use gateway_testkit::response_url;
use gateway_testkit::control as support;

use gateway_functions::register::{handle, ResponseClient};
use gateway_adapters::registry::DynamoRegistry;
use gateway_adapters::registry::rollout::Decision;
use response_url::{cfn_create_waiting as create, response_url};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::{entry, Harness};

const ACCOUNT: &str = "123456789012";
const MISSING_CA: &str = "/nonexistent/ca-certificates.crt";

async fn registry(h: &Harness, wait: Duration) -> DynamoRegistry {
    let reg = h
        .registry_view()
        .with_publish_wait(wait, Duration::from_millis(200));
    for team in ["billing", "payments"] {
        reg.tenancy().grant(team, ACCOUNT, "test").await.expect("grant");
    }
    reg
}

/// Calls the handler while reconcile runs keep coming (as the stream and schedule would).
async fn create_while_reconciling(h: &Harness, reg: &DynamoRegistry, event: Value) -> Value {
    let done = AtomicBool::new(false);
    let http = ResponseClient::new().expect("http");
    let (answer, ()) = tokio::join!(
        async {
            let a = handle(reg, &http, ACCOUNT, event).await.expect("handled");
            done.store(true, Ordering::SeqCst);
            a
        },
        async {
            while !done.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(300)).await;
                h.reconcile().await;
            }
        }
    );
    answer
}

#[tokio::test]
async fn success_once_published_failed_with_the_reason_when_quarantined_or_out_of_time() {
    let mut h = Harness::start().await;
    h.cfg.render.upstream_ca_file = MISSING_CA.into();
    for i in 0..4 {
        let team = format!("team{i}");
        h.register(entry(&team, "svc", &team, &["/a"])).await;
    }
    h.reconcile().await;
    let reg = registry(&h, Duration::from_secs(60)).await;

    // A good entry: SUCCESS only after the reconciler published it.
    let (url, mut rx) = response_url(200).await;
    let good = entry("billing", "invoices", "invoices", &["/invoices"]);
    let answer = create_while_reconciling(&h, &reg, create(&url, "r1", &good, None)).await;
    let put = rx.recv().await.expect("answered");
    assert_eq!(put.body["Status"], "SUCCESS", "{} {answer}", put.body);
    let reason = put.body["Reason"].as_str().unwrap_or_default();
    assert!(reason.contains("published in bundle"), "{reason}");
    let live = h.live().await;
    assert!(
        reason.contains(live.hash.as_deref().expect("hash")),
        "{reason}"
    );

    // An entry Envoy rejects: FAILED, naming the stage and Envoy's message; its id is the
    // physical id so a rollback's Delete deregisters it.
    let (url, mut rx) = response_url(200).await;
    let mut tls = entry("payments", "api", "payments", &["/pay"]);
    tls.backend = "https://payments.internal.example:8443".into();
    create_while_reconciling(&h, &reg, create(&url, "r2", &tls, Some("published"))).await;
    let put = rx.recv().await.expect("answered");
    assert_eq!(put.body["Status"], "FAILED", "{}", put.body);
    let reason = put.body["Reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("QUARANTINED") && reason.contains("layer 3") && reason.contains(MISSING_CA),
        "{reason}"
    );
    assert_eq!(put.body["PhysicalResourceId"], "payments/api");

    // No reconcile run at all: FAILED when the wait runs out, saying so.
    let short = registry(&h, Duration::from_secs(1)).await;
    let (url, mut rx) = response_url(200).await;
    let late = entry("billing", "late", "late", &["/late"]);
    let http = ResponseClient::new().expect("http");
    handle(&short, &http, ACCOUNT, create(&url, "r3", &late, None))
        .await
        .expect("handled");
    let put = rx.recv().await.expect("answered");
    assert_eq!(put.body["Status"], "FAILED", "{}", put.body);
    let reason = put.body["Reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("not published within 1s") && reason.contains("pending"),
        "{reason}"
    );

    // waitFor registered answers at once; an unknown value is refused before anything is stored.
    let (url, mut rx) = response_url(200).await;
    let quick = entry("billing", "quick", "quick", &["/q"]);
    handle(
        &short,
        &http,
        ACCOUNT,
        create(&url, "r4", &quick, Some("registered")),
    )
    .await
    .expect("handled");
    assert_eq!(rx.recv().await.expect("answered").body["Status"], "SUCCESS");
    // An unknown value, and `serving` on a function not given the bundle bucket, are refused
    // before anything is stored (`tests/tests/proxy_reports.rs` has `serving` working).
    for (value, says) in [("live", "expected \"registered\", \"published\", \"serving\" or \"promoted\""), ("serving", "GATEWAY_BUCKET")] {
        let (url, mut rx) = response_url(200).await;
        let refused = entry("billing", "refused", "refused", &["/s"]);
        handle(&short, &http, ACCOUNT, create(&url, "r5", &refused, Some(value)))
            .await
            .expect("handled");
        let put = rx.recv().await.expect("answered");
        assert_eq!(put.body["Status"], "FAILED");
        let reason = put.body["Reason"].as_str().unwrap_or_default();
        assert!(reason.contains("WaitFor") && reason.contains(says), "{value}: {reason}");
        assert!(short.get("billing/refused").await.expect("get").is_none());
    }
}

/// The same Create as an Update of the stack's resource to `entry` (the owner is the stack's).
fn update(url: &str, request_id: &str, entry: &gateway_render::Entry, wait_for: &str) -> Value {
    let mut event = create(url, request_id, entry, Some(wait_for));
    event["RequestType"] = "Update".into();
    event["PhysicalResourceId"] = entry.id().into();
    event["OldResourceProperties"] = event["ResourceProperties"].clone();
    event
}

/// `waitFor: promoted` (docs/design.md#rollout): SUCCESS once the rollout ends with the new
/// revision serving everything, FAILED naming why when it is aborted or rolled back.
#[tokio::test]
async fn promoted_waits_for_the_end_of_a_rollout_and_fails_on_an_abort_or_a_rollback() {
    let mut h = Harness::start().await;
    h.cfg.policy.min_rollout_interval_ms = 1_000;
    let reg = registry(&h, Duration::from_secs(60)).await;
    let version = |path: &str, rollout: Option<Value>| {
        let mut e = entry("billing", "invoices", "invoices", &[path]);
        e.rollout = rollout.map(|r| serde_json::from_value(r).expect("a rollout"));
        e
    };
    let (url, mut rx) = response_url(200).await;
    create_while_reconciling(&h, &reg, create(&url, "c1", &version("/a", None), Some("published"))).await;
    assert_eq!(rx.recv().await.expect("answered").body["Status"], "SUCCESS");

    // An update to `path` at 30 % waiting for `promoted`, and an operator's `decision` 2 s into
    // the wait: the answer's status and reason.
    let decided = |request: &'static str, path: &'static str, decision: Decision| {
        let (h, reg, version) = (&h, &reg, &version);
        async move {
            let (url, mut rx) = response_url(200).await;
            let event = update(&url, request, &version(path, Some(serde_json::json!({ "percent": 30 }))), "promoted");
            let (_, ()) = tokio::join!(create_while_reconciling(h, reg, event), async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                h.registry.decide_rollout("billing/invoices", decision).await.expect("decided");
            });
            let put = rx.recv().await.expect("answered");
            (put.body["Status"].clone(), put.body["Reason"].as_str().unwrap_or_default().to_string())
        }
    };

    // Promoted by an operator while the deploy waits: SUCCESS.
    let (status, reason) = decided("u1", "/b", Decision::Promote).await;
    assert_eq!(status, "SUCCESS", "{reason}");
    assert!(reason.contains("promoted"), "{reason}");

    // Aborted by an operator: FAILED, so the stack rolls back to its previous entry.
    let (status, reason) = decided("u2", "/c", Decision::Abort).await;
    assert_eq!(status, "FAILED", "{reason}");
    assert!(reason.contains("aborted"), "{reason}");

    // Judged steps with no traffic at all: held, then rolled back by the gateway, and the
    // deploy fails saying why.
    let (url, mut rx) = response_url(200).await;
    let steps = serde_json::json!({ "steps": [50, 100], "interval": "1s" });
    create_while_reconciling(&h, &reg, update(&url, "u3", &version("/d", Some(steps)), "promoted")).await;
    let put = rx.recv().await.expect("answered");
    let reason = put.body["Reason"].as_str().unwrap_or_default().to_string();
    assert_eq!(put.body["Status"], "FAILED", "{reason}");
    assert!(reason.contains("ROLLED BACK") && reason.contains("too little traffic"), "{reason}");
    assert_eq!(put.body["PhysicalResourceId"], "billing/invoices");
}
