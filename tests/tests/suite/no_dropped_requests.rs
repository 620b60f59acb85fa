//! Steady traffic through the real Envoy while the sidecar delivers many bundles, several of
//! which move a route to a new backend cluster and back: not one request may fail. Also
//! measures publish → new-route-answering propagation (a measurement, written to
//! `target/propagation.md`, never asserted on).

// The sidecar tests' harness (bundles in moto's bucket, the sidecar binary, Envoy on the
// gateway's bootstrap), shared rather than copied.
use gateway_testkit::delivery as common;

use common::traffic::MovingAndUnchanged;
use common::*;
use gateway_render::Entry;
use gateway_testkit::backend::Backend;
use std::time::{Duration, Instant};

const BUNDLES: usize = 24;
/// Every third bundle moves billing's route to the other backend cluster.
const MOVE_EVERY: usize = 3;
const POLL_INTERVAL_SECONDS: u64 = 1;

fn entries(round: usize, on_b: bool, a: &Backend, b: &Backend, shop: &Backend) -> Vec<Entry> {
    let (service, backend) = if on_b {
        ("invoices-b", b)
    } else {
        ("invoices-a", a)
    };
    vec![
        entry(
            "billing",
            service,
            "billing",
            &backend.url(),
            vec![route("/invoices", None, vec![])],
        ),
        // A route that changes every round, so every bundle is a new one.
        entry(
            "shop",
            "cart",
            "shop",
            &shop.url(),
            vec![
                route("/cart", None, vec![]),
                route(&format!("/extra-{round}"), None, vec![]),
            ],
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_fails_while_bundles_move_routes_between_clusters() {
    let a = Backend::start("billing-a");
    let b = Backend::start("billing-b");
    let shop = Backend::start("shop");
    let mut gw = Gateway::start(shared_moto(), &entries(0, false, &a, &b, &shop)).await;
    let pid = gw.envoy.pid();
    let traffic = MovingAndUnchanged::start(&gw, "billing-a", 2).await;

    let mut on_b = false;
    let mut propagation = Vec::new();
    let mut moves = 0;
    for round in 1..=BUNDLES {
        let moving = round % MOVE_EVERY == 0;
        if moving {
            on_b = !on_b;
            moves += 1;
        }
        // The previous wait ended just after a poll: publish at varying points of the next
        // interval, so the measurement samples the whole poll phase rather than one point of it.
        tokio::time::sleep(Duration::from_millis(
            (round as u64 * 373) % (POLL_INTERVAL_SECONDS * 1000),
        ))
        .await;
        let (_, hash) = gw
            .bucket
            .publish(&entries(round, on_b, &a, &b, &shop))
            .await;
        let published = Instant::now();
        if moving {
            let target = if on_b { "billing-b" } else { "billing-a" };
            gw.wait_served_by("billing", "/invoices/7", target, Duration::from_secs(60))
                .await;
            propagation.push(published.elapsed());
        }
        gw.sidecar.wait_live(&hash, Duration::from_secs(60)).await;
    }
    let (changed, unchanged) = traffic.stop().await;

    assert!(gw.envoy.is_running());
    assert_eq!(gw.envoy.pid(), pid, "Envoy was not restarted");
    let status = gw.sidecar.status().await.expect("status");
    assert_eq!(status["delivered"], (BUNDLES + 1) as u64, "{status}");
    assert_eq!(status["rejected"], 0, "{status}");
    let (changed_ok, changed_failed) = (changed.ok(), changed.failed());
    let (unchanged_ok, unchanged_failed) = (unchanged.ok(), unchanged.failed());
    assert!(
        changed_ok > 100 && unchanged_ok > 100,
        "traffic was steady: {changed_ok} / {unchanged_ok}"
    );
    assert!(a.requests() > 0 && b.requests() > 0, "both clusters served");

    propagation.sort();
    let median = propagation[propagation.len() / 2];
    let max = propagation[propagation.len() - 1];
    let report = format!(
        "# Publish → new route answering\n\n\
         Measured by `tests/tests/no_dropped_requests.rs`: a bundle that moves a route to a new \
         backend cluster is put into the bucket (moto), and the route is requested through the real \
         Envoy every 20 ms until the new backend answers. Publishes land at varying points of the \
         poll interval; the time includes the three make-before-break steps.\n\n\
         | poll interval | route moves | median | max |\n|---|---|---|---|\n\
         | {POLL_INTERVAL_SECONDS} s | {moves} | {:.2} s | {:.2} s |\n\n\
         All moves, sorted (s): {}\n\n\
         Traffic meanwhile: {changed_ok} requests on the moving route and {unchanged_ok} on an unchanged one, \
         {changed_failed} + {unchanged_failed} failed, across {BUNDLES} bundles, Envoy PID unchanged.\n",
        median.as_secs_f64(),
        max.as_secs_f64(),
        propagation
            .iter()
            .map(|d| format!("{:.2}", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", "),
    );
    println!("{report}");
    let out = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| gateway_testkit::repo_root().join("target"))
        .join("propagation.md");
    if let Err(e) = std::fs::write(&out, &report) {
        println!("could not write {}: {e}", out.display());
    }
}
