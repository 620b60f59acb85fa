//! `ExposeOnGateway`'s `WaitFor`: the custom resource answers SUCCESS once the reconciler has
//! published the entry and FAILED with the stage and reason when it quarantines it or the wait
//! runs out. Against moto's server, the real Envoy and a local stand-in for the ResponseURL
//! (docs/design.md#deploys-that-wait).

use gateway_testkit::response_url;
use gateway_testkit::control as support;

use gateway_functions::register::{handle, ResponseClient};
use gateway_adapters::registry::DynamoRegistry;
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
    for (value, says) in [("live", "expected \"registered\", \"published\" or \"serving\""), ("serving", "GATEWAY_BUCKET")] {
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
