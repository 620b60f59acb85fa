//! Bounds on what one registrant can cost: entries per team and routes at registration, and
//! the same plus bundle bytes at every reconcile. Against moto's server and the real Envoy.

mod support;

use gateway_functions::reconcile::{Outcome, Stage};
use gateway_adapters::registry::RegistryError;
use gateway_adapters::store::ConfigStore;
use gateway_render::Bounds;
use support::{entry, rejected, Harness};

fn rejection(err: RegistryError) -> Vec<String> {
    match err {
        RegistryError::Rejected(r) => r.problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected a rejection, got {other}"),
    }
}

/// Registers each step's entry (team, service, paths; the team's host) in order, through a
/// registry held to `bounds`: one whose step names no problem must be accepted, any other
/// refused with exactly that problem.
async fn register_in_order(
    h: &Harness,
    bounds: Bounds,
    steps: &[(&str, &str, &[&str], Option<&str>)],
) {
    let registry = h.registry_view().with_bounds(bounds);
    for (team, service, paths, refused) in steps {
        let result = registry.register(&entry(team, service, team, paths)).await;
        match (result, refused) {
            (Ok(_), None) => {}
            (Err(err), Some(problem)) => assert_eq!(rejection(err), [*problem]),
            (other, _) => panic!("{team}/{service} {paths:?}: got {other:?}, expected {refused:?}"),
        }
    }
}

/// A reconcile run under the default bounds with one changed by `bound`, which must reject: its
/// stage and reason.
async fn rejected_under(h: &mut Harness, bound: impl FnOnce(&mut Bounds)) -> (Stage, String) {
    let mut bounds = Bounds::default();
    bound(&mut bounds);
    h.cfg.bounds = bounds;
    let outcome = h.reconcile().await;
    let (stage, reason) = rejected(&outcome);
    (stage.clone(), reason.to_string())
}

#[tokio::test]
async fn registration_refuses_growth_beyond_the_bounds_naming_the_limit() {
    let h = Harness::start().await;
    register_in_order(
        &h,
        Bounds {
            max_entries_per_team: 2,
            max_routes: 5,
            ..Bounds::default()
        },
        &[
            ("billing", "a", &["/a"], None),
            ("billing", "b", &["/b", "/b2"], None),
            (
                "billing",
                "c",
                &["/c"],
                Some("team: team billing has 3 entries; at most 2 per team (GATEWAY_MAX_ENTRIES_PER_TEAM)"),
            ),
            // Another team is not held to billing's count, but to the registry's routes.
            (
                "shop",
                "cart",
                &["/x", "/y", "/z"],
                Some("routes: the registry would hold 6 routes; at most 5 (GATEWAY_MAX_ROUTES)"),
            ),
            ("shop", "cart", &["/x", "/y"], None),
            // Changing an entry within its count is always allowed.
            ("billing", "b", &["/b"], None),
        ],
    )
    .await;
}

#[tokio::test]
async fn the_reconciler_publishes_nothing_beyond_the_bounds() {
    let mut h = Harness::start().await;
    h.register(entry("billing", "a", "billing", &["/a"])).await;
    h.register(entry("billing", "b", "billing", &["/b"])).await;
    let (stage, reason) = rejected_under(&mut h, |b| b.max_entries_per_team = 1).await;
    assert_eq!(stage, Stage::Registry);
    assert_eq!(
        reason,
        "team billing has 2 entries; at most 1 per team (GATEWAY_MAX_ENTRIES_PER_TEAM)"
    );
    let (stage, reason) = rejected_under(&mut h, |b| b.max_bundle_bytes = 1000).await;
    assert_eq!(stage, Stage::Render);
    assert!(
        reason.starts_with("bundle.json is ")
            && reason.ends_with("at most 1000 (GATEWAY_MAX_BUNDLE_BYTES)"),
        "{reason}"
    );
    assert!(
        h.store.head_live().await.expect("head").is_none(),
        "nothing published"
    );
    h.cfg.bounds = Bounds::default();
    assert!(matches!(h.reconcile().await, Outcome::Published { .. }));
}

#[tokio::test]
async fn the_memory_envelope_counts_clusters_at_registration_and_at_every_run() {
    let mut h = Harness::start().await;
    let bounds = Bounds {
        max_routes: 10,
        max_clusters: 2,
        ..Bounds::default()
    };
    register_in_order(
        &h,
        bounds,
        &[
            ("billing", "a", &["/a"], None),
            ("shop", "cart", &["/a"], None),
            (
                "shop",
                "pay",
                &["/pay"],
                Some(
                    "backend: the registry would hold 3 backend clusters; at most 2 \
                     (GATEWAY_MAX_CLUSTERS, the memory envelope the gateway is sized for)",
                ),
            ),
            // An entry holding its cluster may always change.
            ("billing", "a", &["/a", "/a2"], None),
        ],
    )
    .await;

    // The reconciler measures the same envelope on every run and holds the line on rows
    // written around the register function; the live config stays.
    h.cfg.bounds = bounds;
    let run = || {
        gateway_functions::reconcile::reconcile_report(&h.registry, &h.store, &h.metrics, &h.cfg)
    };
    let report = run().await.expect("run");
    assert!(
        matches!(report.outcome, Outcome::Published { .. }),
        "{}",
        report.outcome
    );
    assert_eq!(
        report.capacity_used,
        Some(100.0),
        "2 of 2 clusters, 3 of 10 routes"
    );
    let live = h.store.head_live().await.expect("head").expect("live");
    h.put_raw_entry(&entry("shop", "pay", "shop", &["/pay"]))
        .await;
    let over = run().await.expect("run");
    let (stage, reason) = rejected(&over.outcome);
    assert_eq!(*stage, Stage::Registry);
    assert_eq!(
        reason,
        "the registry would hold 3 backend clusters; at most 2 (GATEWAY_MAX_CLUSTERS, \
         the memory envelope the gateway is sized for)"
    );
    assert_eq!(over.capacity_used, Some(150.0));
    assert_eq!(
        h.store
            .head_live()
            .await
            .expect("head")
            .expect("live")
            .version_id,
        live.version_id,
        "the live config stays"
    );
    assert!(
        h.metric_names().await.contains(&"CapacityUsed".to_string()),
        "CapacityUsed reaches CloudWatch"
    );
}

#[tokio::test]
async fn a_generated_registry_one_cluster_past_the_documented_default_is_refused_and_named() {
    let h = Harness::start().await;
    assert_eq!(h.cfg.bounds, Bounds::default(), "the documented defaults");
    let n = gateway_render::bounds::DEFAULT_MAX_CLUSTERS + 1;
    let entries: Vec<_> = (0..n)
        .map(|i| {
            entry(
                &format!("team{}", i / 50),
                &format!("svc{i}"),
                &format!("team{}", i / 50),
                &[&format!("/svc{i}")],
            )
        })
        .collect();
    support::load_entries(&h.dynamo, h.registry.table(), &entries).await;
    let over = h.reconcile().await;
    let (stage, reason) = rejected(&over);
    assert_eq!(*stage, Stage::Registry);
    assert_eq!(
        reason,
        format!(
            "the registry would hold {n} backend clusters; at most {} (GATEWAY_MAX_CLUSTERS, \
             the memory envelope the gateway is sized for)",
            n - 1
        )
    );
    assert!(
        h.store.head_live().await.expect("head").is_none(),
        "nothing published"
    );
}
