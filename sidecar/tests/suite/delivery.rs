//! The sidecar delivering real bundles from moto's bucket into the real Envoy.

use gateway_testkit::delivery as common;

use common::*;
use gateway_adapters::store::{ConfigStore, Writer};
use gateway_render::contract::KILL_SWITCH_RUNTIME_KEY;
use gateway_render::{render_kill_switch, Bundle, Limit, Per, RenderConfig, Unit};
use gateway_testkit::backend::Backend;
use gateway_testkit::MotoServer;
use std::time::{Duration, Instant};

fn two_teams(billing: &Backend, shop: &Backend) -> Vec<gateway_render::Entry> {
    vec![
        entry(
            "billing",
            "invoices",
            "billing",
            &billing.url(),
            vec![
                route("/invoices", Some(&["GET"]), vec![]),
                route("/burst", None, vec![Limit::Burst { burst: 2 }]),
            ],
        ),
        entry(
            "shop",
            "cart",
            "shop",
            &shop.url(),
            vec![route("/cart", None, vec![])],
        ),
    ]
}

/// Billing's and shop's backends, and a gateway delivering `two_teams` on them.
async fn two_teams_gateway() -> (Backend, Backend, Gateway) {
    let billing = Backend::start("billing");
    let shop = Backend::start("shop");
    let gw = Gateway::start(shared_moto(), &two_teams(&billing, &shop)).await;
    (billing, shop, gw)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_delivery_before_envoy_then_routing_by_host_path_and_method() {
    let (billing, _shop, gw) = two_teams_gateway().await;

    assert_eq!(gw.sidecar.healthz().await, Some(200));
    let status = gw.sidecar.status().await.expect("status");
    assert_eq!(status["live"]["version_id"], gw.first_version.as_str());
    assert_eq!(status["delivered"], 1);
    assert_eq!(
        gw.stat("cluster_manager.cds.version_text")
            .expect("cds version"),
        gw.first_hash.as_str()
    );
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&gw.dirs.state_file).expect("state file"))
            .expect("state JSON");
    assert_eq!(state["hash"], gw.first_hash.as_str());
    assert_eq!(state["version_id"], gw.first_version.as_str());

    gw.assert_reaches_backend("GET", "billing", "/invoices/7")
        .await;
    gw.assert_reaches_backend("DELETE", "shop", "/cart/1").await;
    // Host picks the team: the billing path on the shop host is not billing's.
    let (code, body) = gw.send("GET", "shop", "/invoices").await.expect("answer");
    assert_eq!(code, 404, "{body}");
    // Methods are respected: /invoices is GET only.
    let (code, body) = gw
        .send("POST", "billing", "/invoices")
        .await
        .expect("answer");
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("no route for this path"), "{body}");
    // Segment-aware prefix.
    assert_eq!(gw.code("GET", "billing", "/invoicesX").await, 404);
    // Unknown host: the catch-all's JSON 404.
    let (code, body) = gw
        .send("GET", "unknown.example.org", "/anything")
        .await
        .expect("answer");
    assert_eq!(code, 404);
    let json: serde_json::Value = serde_json::from_str(&body).expect("JSON 404");
    assert_eq!(json["error"], "no route for this host");
    assert_eq!(
        billing.requests(),
        1,
        "only the one billing request reached billing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_route_burst_limit_answers_429() {
    let (_billing, _shop, gw) = two_teams_gateway().await;
    let mut codes = Vec::new();
    for _ in 0..10 {
        codes.push(gw.code("GET", "billing", "/burst").await);
    }
    assert!(
        codes.iter().filter(|c| **c == 200).count() >= 1,
        "{codes:?}"
    );
    assert!(
        codes.iter().filter(|c| **c == 429).count() >= 5,
        "2 tokens a second cannot pass 10 rapid requests: {codes:?}"
    );
    // Other routes have no bucket.
    for _ in 0..10 {
        assert_eq!(gw.code("GET", "billing", "/invoices").await, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_kill_switch_stops_every_request_and_lifts() {
    let (billing, shop, gw) = two_teams_gateway().await;
    assert_eq!(gw.code("GET", "billing", "/invoices").await, 200);

    let (code, body) = gw
        .envoy
        .admin_post(&format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}=100"))
        .expect("admin");
    assert_eq!(code, 200, "{body}");
    let thrown = Instant::now();
    wait_code(&gw, "billing", "/invoices", 503, Duration::from_secs(5)).await;
    for host in ["billing", "shop", "nobody.example.org"] {
        assert_eq!(gw.code("GET", host, "/cart").await, 503, "{host}");
    }
    println!("runtime kill switch effective after {:?}", thrown.elapsed());
    let served = billing.requests() + shop.requests();

    let (code, _) = gw
        .envoy
        .admin_post(&format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}=0"))
        .expect("admin");
    assert_eq!(code, 200);
    wait_code(&gw, "billing", "/invoices", 200, Duration::from_secs(5)).await;
    assert_eq!(gw.code("GET", "shop", "/cart").await, 200);
    assert_eq!(
        billing.requests() + shop.requests(),
        served + 2,
        "no backend saw traffic while the switch was thrown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_switch_bundle_stops_all_traffic_and_restore_brings_it_back() {
    let (_billing, _shop, gw) = two_teams_gateway().await;
    let pid = gw.envoy.pid();

    let killed = render_kill_switch(&RenderConfig::new(DOMAIN));
    let (_, kill_hash) = gw
        .bucket
        .put(&Bundle::new(&killed, &[]), Writer::KillSwitch)
        .await;
    gw.sidecar
        .wait_live(&kill_hash, Duration::from_secs(30))
        .await;
    for (host, path) in [
        ("billing", "/invoices"),
        ("shop", "/cart"),
        ("other.example.org", "/"),
    ] {
        let (code, body) = gw.send("GET", host, path).await.expect("answer");
        assert_eq!(code, 503, "{host}{path}: {body}");
        assert!(body.contains("kill switch"), "{body}");
    }
    assert_eq!(
        gw.stat("cluster_manager.cds.version_text").expect("cds"),
        kill_hash.as_str()
    );

    gw.bucket
        .store
        .restore_version(&gw.first_version, &gw.first_hash)
        .await
        .expect("restore");
    gw.sidecar
        .wait_live(&gw.first_hash, Duration::from_secs(30))
        .await;
    gw.assert_reaches_backend("GET", "billing", "/invoices/1")
        .await;
    gw.assert_reaches_backend("GET", "shop", "/cart").await;
    assert_eq!(gw.envoy.pid(), pid, "no Envoy restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_limit_fails_open_without_a_limiter_and_is_reported() {
    // Its own moto: the metric is checked in CloudWatch, which is not per bucket.
    let moto = MotoServer::start();
    let billing = Backend::start("billing");
    let limited = billing_routes(
        &billing.url(),
        vec![route(
            "/limited",
            None,
            vec![Limit::Global {
                per: Per::Route,
                header: None,
                requests: 1,
                every: Unit::Minute,
            }],
        )],
    );
    let gw = Gateway::start(&moto, &limited).await;
    // Limit 1 a minute, nothing listening where the limiter should be: every request passes.
    let (passed, status) = gw.pass_until_limiter_errors_reported("/limited").await;
    assert!(
        status["ratelimit"]["failure_mode_allowed"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{status}"
    );
    assert!(passed >= 2, "more requests passed than the limit allows");
    let errors = gw
        .stat("cluster.billing.invoices.ratelimit.error")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    assert!(
        errors >= passed - 1,
        "Envoy counted {errors} limiter errors for {passed} requests"
    );

    let listed = gateway_metrics(&moto, "RateLimiterErrors").await;
    assert_eq!(
        listed.metrics().len(),
        1,
        "RateLimiterErrors in namespace Gateway: {listed:?}"
    );
}

async fn wait_code(gw: &Gateway, host: &str, path: &str, code: u16, within: Duration) {
    let deadline = Instant::now() + within;
    let mut last = None;
    while Instant::now() < deadline {
        let answer = gw.send("GET", host, path).await;
        if matches!(&answer, Ok((c, _)) if *c == code) {
            return;
        }
        last = Some(answer);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{host}{path}: no {code} within {within:?}; last {last:?}");
}
