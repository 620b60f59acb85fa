//! The reconciler against moto's server (DynamoDB, versioned S3, CloudWatch) and the real Envoy.

use gateway_testkit::control as support;

use gateway_adapters::store::ConfigStore;
use gateway_control::operator::{kill_switch, restore, resume};
use gateway_control::reconcile::{reconcile, seed, Outcome, SeedOutcome, Stage};
use gateway_functions::reconcile::handle;
use gateway_render::{render, Bundle};
use serde_json::json;
use support::{entry, published, Harness};

/// Registers billing/invoices on the host `invoices` with `paths`.
async fn register_invoices(h: &Harness, paths: &[&str]) {
    h.register(entry("billing", "invoices", "invoices", paths))
        .await;
}

/// A harness with billing/invoices registered and published by a first run; that run's version
/// id and hash.
async fn first_publish() -> (Harness, String, String) {
    let h = Harness::start().await;
    register_invoices(&h, &["/invoices"]).await;
    let outcome = h.reconcile().await;
    let (version_id, hash) = published(&outcome);
    let (version_id, hash) = (version_id.clone(), hash.clone());
    (h, version_id, hash)
}

#[tokio::test]
async fn publishes_once_then_stays_unchanged_then_publishes_a_change() {
    let h = Harness::start().await;
    let seeded = seed(&h.registry, &h.store, &h.cfg).await.expect("seed");
    assert!(matches!(seeded, SeedOutcome::Seeded { .. }), "{seeded}");
    let again = seed(&h.registry, &h.store, &h.cfg)
        .await
        .expect("second seed");
    assert!(
        matches!(again, SeedOutcome::AlreadySeeded { .. }),
        "a re-run seed never overwrites: {again}"
    );

    register_invoices(&h, &["/invoices"]).await;
    h.register(entry("catalog", "products", "catalog", &["/products"]))
        .await;

    let first = h.reconcile().await;
    let Outcome::Published {
        version_id,
        hash,
        routes,
    } = &first
    else {
        panic!("expected a publish, got {first}")
    };
    assert_eq!(*routes, 2);
    let live = h.live().await;
    assert_eq!(&live.version_id, version_id);
    assert_eq!(live.hash.as_deref(), Some(hash.as_str()));
    let versions = h.version_count().await;

    let second = h.reconcile().await;
    assert_eq!(second, Outcome::Unchanged { hash: hash.clone() });
    assert_eq!(h.version_count().await, versions, "no new object version");

    register_invoices(&h, &["/invoices", "/receipts"]).await;
    let third = h.reconcile().await;
    let Outcome::Published {
        hash: new_hash,
        version_id: new_version,
        ..
    } = &third
    else {
        panic!("expected a publish, got {third}")
    };
    assert_ne!(new_hash, hash);
    assert_eq!(
        h.version_count().await,
        versions + 1,
        "exactly one new version"
    );

    // A bundle re-rendered from its own entries reproduces its hash.
    let bundle =
        Bundle::parse(&h.store.get_version(new_version).await.expect("get")).expect("parse");
    bundle.verify().expect("verifies");
    let rerendered = render(&bundle.entries, &h.cfg.render).expect("re-render");
    assert_eq!(&rerendered.hash, new_hash);
    assert_eq!(rerendered.files, bundle.files);
}

#[tokio::test]
async fn a_render_envoy_rejects_is_kept_under_failed_and_nothing_is_published() {
    let (mut h, live_version, _) = first_publish().await;

    // A real Envoy rejection the registration checks cannot see: the reconciler's image lacks the
    // CA bundle an https backend's certificate validation names. Envoy refuses the cluster.
    h.cfg.render.upstream_ca_file = "/nonexistent/ca-certificates.crt".into();
    // Two teams' entries fail at once, so quarantine cannot explain it (one team's alone would
    // be set aside and the rest published): the whole run is refused.
    for team in ["catalog", "media"] {
        let mut tls = entry(team, "products", team, &["/products"]);
        tls.backend = "https://products.internal.example:8443".into();
        h.put_raw_entry(&tls).await;
    }

    let outcome = h.reconcile().await;
    let Outcome::Rejected {
        stage,
        reason,
        failed_key,
    } = &outcome
    else {
        panic!("expected a rejection, got {outcome}")
    };
    assert!(
        matches!(stage, Stage::Validation(layer) if layer.contains("layer 3")),
        "{outcome}"
    );
    assert!(
        reason.contains("/nonexistent/ca-certificates.crt"),
        "Envoy's own message: {reason}"
    );
    let kept = h
        .get_object(&format!("failed/{failed_key}/reason.txt"))
        .await;
    assert!(kept.contains("/nonexistent/ca-certificates.crt"), "{kept}");
    let routes = h
        .get_object(&format!("failed/{failed_key}/routes.json"))
        .await;
    assert!(
        routes.contains("catalog.api.example.com"),
        "the failed render is kept"
    );

    let live = h.live().await;
    assert_eq!(
        live.version_id, live_version,
        "the previous bundle is still live"
    );
    assert!(h
        .metric_names()
        .await
        .contains(&"ValidationFailed".to_string()));
}

#[tokio::test]
async fn an_entry_written_straight_into_the_table_is_held_to_the_checks() {
    let (h, version_id, _) = first_publish().await;
    // Two teams' rows at once (one team's alone would be quarantined and the rest published).
    for (team, host) in [("intruder", "meta"), ("other", "meta2")] {
        let mut bad = entry(team, "meta", host, &["/meta"]);
        bad.backend = "http://169.254.169.254".into();
        h.put_raw_entry(&bad).await;
    }
    let outcome = h.reconcile().await;
    let Outcome::Rejected {
        stage: Stage::Registry,
        reason,
        ..
    } = &outcome
    else {
        panic!("got {outcome}")
    };
    assert!(
        reason.contains("intruder/meta") && reason.contains("backend"),
        "{reason}"
    );
    assert_eq!(h.live().await.version_id, version_id);
}

#[tokio::test]
async fn zero_entries_keep_the_live_config() {
    let (h, version_id, _) = first_publish().await;
    h.registry
        .deregister("billing/invoices")
        .await
        .expect("deregister");
    let outcome = h.reconcile().await;
    assert!(matches!(outcome, Outcome::KeptLive { .. }), "{outcome}");
    assert_eq!(h.live().await.version_id, version_id);
}

#[tokio::test]
async fn drift_holds_until_restore_or_resume() {
    let (h, _, good) = first_publish().await;

    // Level-2 kill switch: the reconciler must hold, and a team's deploy must not undo it.
    let (ks_version, ks_hash) = kill_switch(&h.store, &h.cfg.render)
        .await
        .expect("kill switch");
    register_invoices(&h, &["/invoices", "/late"]).await;
    for _ in 0..2 {
        let outcome = h.reconcile().await;
        assert!(
            matches!(&outcome, Outcome::HeldDrift { live_hash: Some(l), recorded_hash: Some(r) } if *l == ks_hash && *r == good),
            "{outcome}"
        );
        assert_eq!(h.live().await.version_id, ks_version);
    }
    assert!(h.metric_names().await.contains(&"ConfigDrift".to_string()));

    // Restoring the reconciler's last good version clears drift; the pending change then publishes.
    restore(&h.registry, &h.store, None).await.expect("restore");
    let outcome = h.reconcile().await;
    let Outcome::Published {
        hash: after_restore,
        ..
    } = &outcome
    else {
        panic!("got {outcome}")
    };
    assert_ne!(after_restore, &good);

    // Kill switch again, then resume: the operator accepts the live bundle, and the next run
    // publishes the registry's render over it.
    kill_switch(&h.store, &h.cfg.render)
        .await
        .expect("kill switch");
    assert!(matches!(h.reconcile().await, Outcome::HeldDrift { .. }));
    resume(&h.registry.state_row(), &h.store)
        .await
        .expect("resume");
    let outcome = h.reconcile().await;
    assert!(
        matches!(&outcome, Outcome::Published { hash, .. } if hash == after_restore),
        "{outcome}"
    );
}

#[tokio::test]
async fn faults_mid_run_publish_nothing_and_the_next_run_succeeds() {
    let (h, v1, _) = first_publish().await;
    register_invoices(&h, &["/invoices", "/v2"]).await;
    let versions = h.version_count().await;

    // S3 refuses the upload: nothing published, state untouched.
    assert!(h.reconcile_with_fault(&h.faults.fail_put).await.is_err());
    assert_eq!(h.version_count().await, versions);
    assert_eq!(h.live().await.version_id, v1);

    // The table fails on the read: nothing happens at all.
    assert!(h.reconcile_with_fault(&h.faults.fail_read).await.is_err());
    assert_eq!(h.version_count().await, versions);

    // The table fails after the upload (the state record): the next run adopts its own publish
    // instead of calling it drift.
    assert!(h.reconcile_with_fault(&h.faults.fail_record).await.is_err());
    let live = h.live().await;
    let outcome = h.reconcile_faulty().await.expect("next run");
    assert!(
        matches!(&outcome, Outcome::Unchanged { hash } if Some(hash) == live.hash.as_ref()),
        "{outcome}"
    );
    let state = gateway_adapters::registry::Registry::read_state(&h.registry)
        .await
        .expect("state")
        .expect("recorded");
    assert_eq!(state.version_id, live.version_id);
}

#[tokio::test]
async fn a_publish_whose_end_the_run_never_saw_is_adopted_even_after_later_changes() {
    let (h, v1, _) = first_publish().await;

    // The PUT's answer is lost: the run fails, its bundle is live.
    register_invoices(&h, &["/invoices", "/lost"]).await;
    assert!(h.reconcile_with_fault(&h.faults.lose_put_answer).await.is_err());
    let landed = h.live().await;
    assert_ne!(landed.version_id, v1, "the PUT landed");
    // Another change lands before the next run: that run renders something else, yet it
    // recognises its own pending publish and publishes on from it instead of holding drift.
    register_invoices(&h, &["/invoices", "/lost", "/later"]).await;
    let next = h.reconcile_faulty().await.expect("next run");
    assert!(matches!(next, Outcome::Published { .. }), "never held as drift: {next}");

    // The state write fails after the PUT, then another change: the same.
    register_invoices(&h, &["/invoices", "/state"]).await;
    assert!(h.reconcile_with_fault(&h.faults.fail_record).await.is_err());
    register_invoices(&h, &["/invoices", "/state", "/after"]).await;
    let next = h.reconcile_faulty().await.expect("next run");
    assert!(matches!(next, Outcome::Published { .. }), "never held as drift: {next}");

    // The SDK's retry of a PUT whose answer was lost meets its own write (412): the same run
    // sees its bundle live and records it.
    register_invoices(&h, &["/invoices", "/retried"]).await;
    let run = h.reconcile_with_fault(&h.faults.put_answer_412).await.expect("run");
    let (version_id, hash) = published(&run);
    let live = h.live().await;
    assert_eq!((&live.version_id, live.hash.as_ref()), (version_id, Some(hash)));
    assert!(matches!(h.reconcile().await, Outcome::Unchanged { .. }));

    // Someone else's write is still drift.
    let operators = gateway_render::Bundle::new(&gateway_render::render_kill_switch(&h.cfg.render), &[]);
    let put = gateway_adapters::store::PutBundle {
        sealed: &operators.seal(),
        writer: gateway_adapters::store::Writer::Restore,
        precondition: gateway_adapters::store::Precondition::None,
    };
    h.store.put_bundle(put).await.expect("operator write");
    register_invoices(&h, &["/invoices", "/drift"]).await;
    assert!(matches!(h.reconcile().await, Outcome::HeldDrift { .. }));
}

#[tokio::test]
async fn stream_schedule_and_direct_events_run_the_same_reconcile() {
    let h = Harness::start().await;
    register_invoices(&h, &["/invoices"]).await;
    let stream = json!({"Records": [{"eventName": "INSERT", "dynamodb": {"Keys": {"pk": {"S": "ENTRY#evil/x"}}}}]});
    let schedule = json!({"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}});
    let direct = json!({});
    let first = handle(stream.clone(), &h.registry, &h.store, &h.metrics, &h.cfg)
        .await
        .expect("stream run");
    assert_eq!(first["outcome"], "published", "{first}");
    for event in [stream, schedule, direct] {
        let out = handle(event, &h.registry, &h.store, &h.metrics, &h.cfg)
            .await
            .expect("run");
        assert_eq!(
            out["outcome"], "unchanged",
            "the event's content is never applied: {out}"
        );
        assert_eq!(out["hash"], first["hash"]);
    }
}

#[tokio::test]
async fn overlapping_runs_publish_one_version_and_agree_on_state() {
    let (h, _, _) = first_publish().await;
    register_invoices(&h, &["/invoices", "/both"]).await;
    let versions = h.version_count().await;
    let (a, b) = tokio::join!(
        reconcile(&h.registry, &h.store, &h.metrics, &h.cfg),
        reconcile(&h.registry, &h.store, &h.metrics, &h.cfg)
    );
    let published = [&a, &b]
        .iter()
        .filter(|r| matches!(r, Ok(Outcome::Published { .. })))
        .count();
    assert!(
        published <= 1,
        "two overlapping runs both published: {a:?} {b:?}"
    );
    // Whatever the interleaving, the next run finds live == recorded == the registry's render.
    let next = h.reconcile().await;
    let after = h.version_count().await;
    assert_eq!(
        after,
        versions + 1,
        "exactly one new version: {a:?} {b:?} {next}"
    );
    assert!(
        matches!(next, Outcome::Unchanged { .. } | Outcome::Published { .. }),
        "{next}"
    );
    assert!(matches!(h.reconcile().await, Outcome::Unchanged { .. }));
}
