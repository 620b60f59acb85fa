//! Bounds on what one registrant can cost: entries per team and routes at registration, and
//! the same plus bundle bytes at every reconcile, which records the registry totals registration
//! judges growth against and sets aside the growth past a bound. Against moto's server and the
//! real Envoy.

use gateway_testkit::control as support;

use gateway_adapters::registry::RegistryError;
use gateway_adapters::store::ConfigStore;
use gateway_control::reconcile::{Kept, Outcome, Stage};
use gateway_render::bounds::Totals;
use gateway_render::Bounds;
use support::{entry, published, rejected, Harness};

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

/// The reason of a run rejected because the live registry itself is past a bound.
const NOTHING_GREW: &str = "setting aside the entries that grew since the live bundle does not \
                            bring the registry within its bounds";

#[tokio::test]
async fn the_reconciler_publishes_nothing_beyond_the_bounds() {
    let mut h = Harness::start().await;
    h.register(entry("billing", "a", "billing", &["/a"])).await;
    h.register(entry("billing", "b", "billing", &["/b"])).await;
    assert!(matches!(h.reconcile().await, Outcome::Published { .. }));
    let live = h.live().await;
    // A bound lowered below what is live: no entry grew since, so nothing can be set aside.
    let (stage, reason) = rejected_under(&mut h, |b| b.max_entries_per_team = 1).await;
    assert_eq!(stage, Stage::Registry);
    assert_eq!(
        reason,
        format!(
            "team billing has 2 entries; at most 1 per team (GATEWAY_MAX_ENTRIES_PER_TEAM)\n\
             {NOTHING_GREW}"
        )
    );
    h.register(entry("billing", "c", "billing", &["/c"])).await;
    let (stage, reason) = rejected_under(&mut h, |b| b.max_bundle_bytes = 1000).await;
    assert_eq!(stage, Stage::Render);
    assert!(
        reason.starts_with("bundle.json is ")
            && reason.ends_with("at most 1000 (GATEWAY_MAX_BUNDLE_BYTES)"),
        "{reason}"
    );
    assert_eq!(
        h.live().await.version_id,
        live.version_id,
        "nothing published"
    );
    h.cfg.bounds = Bounds::default();
    assert!(matches!(h.reconcile().await, Outcome::Published { .. }));
}

#[tokio::test]
async fn the_reconciler_records_the_totals_and_sets_aside_the_growth_past_a_bound() {
    let mut h = Harness::start().await;
    // The cart's six routes keep what quarantine holds back under its share (25 %).
    let cart = ["/c1", "/c2", "/c3", "/c4", "/c5", "/c6"];
    h.register(entry("billing", "a", "billing", &["/a"])).await;
    h.register(entry("shop", "cart", "shop", &cart)).await;
    h.cfg.bounds = Bounds {
        max_entries_per_team: 2,
        max_clusters: 2,
        ..Bounds::default()
    };
    let first = h.reconcile_report().await;
    published(&first.outcome);
    let counted = |routes, clusters, teams: &[(&str, usize)]| Totals {
        routes,
        clusters,
        entries_per_team: teams.iter().map(|(t, n)| (t.to_string(), *n)).collect(),
    };
    assert_eq!(
        h.registry.reader().totals().await.expect("read totals"),
        Some(counted(7, 2, &[("billing", 1), ("shop", 1)]))
    );

    // Between two runs, billing grows within the bounds (one more route) and shop past them:
    // two rows written around the register function, a third cluster and a third entry.
    h.register(entry("billing", "a", "billing", &["/a", "/a2"]))
        .await;
    h.put_raw_entry(&entry("shop", "pay", "shop", &["/pay"]))
        .await;
    h.put_raw_entry(&entry("shop", "till", "shop", &["/till"]))
        .await;
    let second = h.reconcile_report().await;
    assert!(
        matches!(second.outcome, Outcome::Published { routes: 8, .. }),
        "billing's change and shop's cart publish: {}",
        second.outcome
    );
    let set_aside: Vec<_> = second
        .quarantined
        .iter()
        .map(|q| (q.id.as_str(), &q.stage, q.kept, q.reason.as_str()))
        .collect();
    // Newest first (equal times: the later id): till brings clusters to 3 and shop to 3 entries;
    // once it is set aside pay's cluster still breaks the envelope.
    assert_eq!(
        set_aside,
        [
            (
                "shop/till",
                &Stage::Registry,
                Kept::LeftOut,
                "team: team shop has 3 entries; at most 2 per team (GATEWAY_MAX_ENTRIES_PER_TEAM)\n\
                 backend: the registry would hold 4 backend clusters; at most 2 \
                 (GATEWAY_MAX_CLUSTERS, the memory envelope the gateway is sized for)"
            ),
            (
                "shop/pay",
                &Stage::Registry,
                Kept::LeftOut,
                "backend: the registry would hold 3 backend clusters; at most 2 \
                 (GATEWAY_MAX_CLUSTERS, the memory envelope the gateway is sized for)"
            ),
        ]
    );
    assert_eq!(
        h.registry.reader().totals().await.expect("read totals"),
        Some(counted(10, 4, &[("billing", 1), ("shop", 3)])),
        "the totals count every registered row, set aside or not"
    );
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
    let report = h.reconcile_report().await;
    published(&report.outcome);
    assert_eq!(
        report.capacity_used,
        Some(100.0),
        "2 of 2 clusters, 3 of 10 routes"
    );
    let live = h.store.head_live().await.expect("head").expect("live");
    h.put_raw_entry(&entry("shop", "pay", "shop", &["/pay"]))
        .await;
    let over = h.reconcile_report().await;
    assert!(
        matches!(over.outcome, Outcome::Unchanged { .. }),
        "{}",
        over.outcome
    );
    assert_eq!(over.quarantined.len(), 1);
    let pay = &over.quarantined[0];
    assert_eq!(
        (pay.id.as_str(), &pay.stage, pay.kept, pay.reason.as_str()),
        (
            "shop/pay",
            &Stage::Registry,
            Kept::LeftOut,
            "backend: the registry would hold 3 backend clusters; at most 2 (GATEWAY_MAX_CLUSTERS, \
             the memory envelope the gateway is sized for)"
        )
    );
    assert_eq!(
        over.capacity_used,
        Some(150.0),
        "the registry as registered"
    );
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
async fn a_generated_registry_one_cluster_past_the_documented_default_is_set_aside_and_named() {
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
    let run =
        gateway_control::reconcile::reconcile_report(&h.registry, &h.store, &h.metrics, &h.cfg)
            .await
            .expect("run");
    assert!(
        matches!(run.outcome, Outcome::Published { routes, .. } if routes == n - 1),
        "the rest publishes: {}",
        run.outcome
    );
    // Loaded rows carry one time and revision: the later id is taken as the newer.
    let last = entries.iter().map(|e| e.id()).max().expect("entries");
    assert_eq!(run.quarantined.len(), 1);
    let q = &run.quarantined[0];
    assert_eq!(
        (q.id.as_str(), &q.stage, q.reason.as_str()),
        (
            last.as_str(),
            &Stage::Registry,
            format!(
                "backend: the registry would hold {n} backend clusters; at most {} \
                 (GATEWAY_MAX_CLUSTERS, the memory envelope the gateway is sized for)",
                n - 1
            )
            .as_str()
        )
    );
}
