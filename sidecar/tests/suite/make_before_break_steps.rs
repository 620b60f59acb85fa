//! Make-before-break skips the steps that change nothing (docs/design.md#delivery): a bundle
//! that adds a cluster and moves a route to it, removing none, reaches the real Envoy in one
//! clusters reload and one routes reload (no union); a bundle that adds one and removes another
//! still goes through the union; a bundle that changes only routes has no cluster step (the
//! clusters file, whose only change is its version, goes in with the routes). Steady traffic on the moving route and on an unchanged one throughout:
//! not one request may fail.

use gateway_testkit::delivery as common;

use common::traffic::MovingAndUnchanged;
use common::*;
use gateway_render::Entry;
use gateway_testkit::backend::Backend;
use std::time::Duration;

const CDS_UPDATES: &str = "cluster_manager.cds.update_success";
const RDS_UPDATES: &str = "http.gateway.rds.gateway.update_success";

/// Billing's `invoices-a` on backend a holding `/legacy`, and `/invoices` on `service` (backend
/// `backend`; with `invoices-a` it holds both routes); shop's `/cart` throughout.
fn entries(service: &str, backend: &Backend, a: &Backend, shop: &Backend) -> Vec<Entry> {
    entries_with(service, backend, a, shop, &["/cart"])
}

/// As [`entries`], with shop's routes `paths`.
fn entries_with(
    service: &str,
    backend: &Backend,
    a: &Backend,
    shop: &Backend,
    paths: &[&str],
) -> Vec<Entry> {
    let invoices = route("/invoices", None, vec![]);
    let legacy = route("/legacy", None, vec![]);
    let mut out = if service == "invoices-a" {
        vec![entry(
            "billing",
            service,
            "billing",
            &a.url(),
            vec![invoices, legacy],
        )]
    } else {
        vec![
            entry("billing", "invoices-a", "billing", &a.url(), vec![legacy]),
            entry(
                "billing",
                service,
                "billing",
                &backend.url(),
                vec![invoices],
            ),
        ]
    };
    out.push(entry(
        "shop",
        "cart",
        "shop",
        &shop.url(),
        paths.iter().map(|p| route(p, None, vec![])).collect(),
    ));
    out
}

fn counter(gw: &Gateway, name: &str) -> u64 {
    gw.stat(name)
        .and_then(|v| v.as_u64())
        .unwrap_or_else(|| panic!("Envoy stat {name} missing"))
}

/// The sidecar log's step lines for bundle `hash`.
fn steps(gw: &Gateway, hash: &str) -> Vec<String> {
    gw.sidecar
        .log_text()
        .lines()
        .filter(|l| l.contains(hash) && l.contains("step "))
        .map(|l| {
            // `… step 2: routes hash=…` (field names may carry colour codes).
            let text = &l[l.find("step ").unwrap_or(0)..];
            let end = [" hash", "\u{1b}"]
                .iter()
                .filter_map(|m| text.find(m))
                .min()
                .unwrap_or(text.len());
            text[..end].trim().to_string()
        })
        .collect()
}

/// Publishes `entries` and waits until `(host, path)` is answered by `backend` and the sidecar
/// reports the bundle live; the CDS and RDS updates Envoy counted meanwhile and the sidecar's
/// step lines.
async fn deliver(
    gw: &Gateway,
    entries: &[Entry],
    (host, path, backend): (&str, &str, &str),
) -> (u64, u64, Vec<String>) {
    let (cds_before, rds_before) = (counter(gw, CDS_UPDATES), counter(gw, RDS_UPDATES));
    let (_, hash) = gw.bucket.publish(entries).await;
    gw.wait_served_by(host, path, backend, Duration::from_secs(60))
        .await;
    gw.sidecar.wait_live(&hash, Duration::from_secs(60)).await;
    (
        counter(gw, CDS_UPDATES) - cds_before,
        counter(gw, RDS_UPDATES) - rds_before,
        steps(gw, &hash),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn make_before_break_skips_the_steps_that_change_nothing() {
    let a = Backend::start("billing-a");
    let b = Backend::start("billing-b");
    let c = Backend::start("billing-c");
    let shop = Backend::start("shop");
    let gw = Gateway::start(shared_moto(), &entries("invoices-a", &a, &a, &shop)).await;
    let traffic = MovingAndUnchanged::start(&gw, "billing-a", 1).await;

    // (the bundle, who then answers what, the sidecar's steps, CDS and RDS reloads, why)
    let deliveries = [
        (
            // /invoices moves to a new cluster; invoices-a keeps /legacy, so no cluster goes
            // away.
            entries("invoices-b", &b, &a, &shop),
            ("billing", "/invoices/7", "billing-b"),
            [
                "step 1: new clusters (no cluster goes away, no union)",
                "step 2: routes",
                "step 3: skipped, the new clusters are in",
            ],
            (1, 1),
            "a bundle that removes no cluster: one clusters reload, no union",
        ),
        (
            // /invoices moves to another new cluster (invoices-c, backend c) and invoices-b goes
            // away with its cluster: the union is still used.
            entries("invoices-c", &c, &a, &shop),
            ("billing", "/invoices/7", "billing-c"),
            [
                "step 1: clusters union of live and new",
                "step 2: routes",
                "step 3: clusters",
            ],
            (2, 1),
            "a bundle that removes a cluster: the union, then the new clusters alone",
        ),
        (
            // Only routes change (shop gains a route): no cluster step, the unchanged clusters
            // file goes in with the routes.
            entries_with("invoices-c", &c, &a, &shop, &["/cart", "/orders"]),
            ("shop", "/orders/1", "shop"),
            [
                "step 1: skipped, the clusters are the live ones",
                "step 2: routes, with the unchanged clusters",
                "step 3: skipped, no cluster changes",
            ],
            (1, 1),
            "a bundle that changes only routes: the clusters file's new version, read once",
        ),
    ];
    for (bundle, answered, expected, reloads, what) in deliveries {
        let (cds, rds, steps) = deliver(&gw, &bundle, answered).await;
        assert_eq!(steps, expected, "the sidecar's steps for {what}");
        assert_eq!((cds, rds), reloads, "CDS and RDS reloads for {what}");
        let legacy = gw
            .backend_answer("GET", "billing", "/legacy/1")
            .await
            .expect("/legacy still answered");
        assert_eq!(legacy["backend"], "billing-a", "{legacy}");
    }
    let ready = gw.sidecar.ready().await.expect("/ready answers");
    assert_eq!(
        ready.0, 200,
        "Envoy runs the live bundle's clusters and routes: {ready:?}"
    );

    let (moving, unchanged) = traffic.stop().await;
    assert!(
        moving.ok() > 10 && unchanged.ok() > 10,
        "traffic was steady"
    );
    assert!(
        b.requests() > 0 && c.requests() > 0,
        "the new clusters served"
    );
}
