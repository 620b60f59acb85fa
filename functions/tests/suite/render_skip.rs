//! Skipping the render of an unchanged run, against moto's server and the real Envoy
//! (docs/design.md#skipping-an-unchanged-render): a run whose entries, revisions, quarantine set,
//! render configuration and build are the ones recorded for the live publish ends `unchanged`
//! without rendering; any of them changed renders again, and a new build publishes what it
//! renders even over an unchanged registry. The entries are still checked and their backends
//! resolved on every run.

use gateway_testkit::control as support;

use gateway_adapters::registry::{PublishedState, Registry, RenderRecord};
use gateway_adapters::store::{ConfigStore, Precondition, PutBundle, Writer};
use gateway_control::operator::kill_switch;
use gateway_control::reconcile::{
    reconcile_report, BuildIdentity, Outcome, ReconcileConfig, RunReport, Stage,
};
use gateway_render::{render, Bundle, RenderConfig};
use support::{entry, Harness};

async fn run(h: &Harness, cfg: &ReconcileConfig) -> RunReport {
    reconcile_report(&h.registry, &h.store, &h.metrics, cfg)
        .await
        .expect("reconcile run")
}

fn built_as(h: &Harness, name: &str) -> ReconcileConfig {
    ReconcileConfig {
        build: BuildIdentity::named(name),
        ..h.cfg.clone()
    }
}

async fn render_record(h: &Harness) -> RenderRecord {
    h.registry
        .read_render_record()
        .await
        .expect("render record read")
        .expect("a render recorded")
}

/// Asserts `report` is `unchanged` on `hash` and whether it rendered.
fn assert_unchanged(report: &RunReport, hash: &str, skipped: bool, what: &str) {
    assert_eq!(
        report.outcome,
        Outcome::Unchanged { hash: hash.into() },
        "{what}"
    );
    assert_eq!(report.render_skipped, skipped, "{what}: render skipped");
    assert_eq!(report.validations, 0, "{what}: nothing validated");
}

#[tokio::test]
async fn an_unchanged_run_of_the_same_build_does_not_render_and_any_change_renders() {
    let h = Harness::start().await;
    // Four routes, so one more entry of one route stays within the quarantine share (25 %).
    let paths = ["/invoices", "/credits", "/refunds", "/taxes"];
    h.register(entry("billing", "invoices", "invoices", &paths))
        .await;
    let first = run(&h, &h.cfg).await;
    let Outcome::Published { hash, .. } = &first.outcome else {
        panic!("expected a publish, got {}", first.outcome)
    };
    assert!(!first.render_skipped);
    let recorded = render_record(&h).await;
    assert_eq!(&recorded.hash, hash, "a publish records its render");
    let versions = h.version_count().await;

    let second = run(&h, &h.cfg).await;
    assert_unchanged(
        &second,
        hash,
        true,
        "same registry, configuration and build",
    );
    assert_eq!(h.version_count().await, versions, "no new object version");
    assert_eq!(render_record(&h).await, recorded);

    // Another render configuration renders (here to the same bytes: http backends never read
    // the CA file), and its input is recorded; the next run skips again.
    let other_ca = ReconcileConfig {
        render: RenderConfig {
            upstream_ca_file: "/etc/gateway/upstream-ca.pem".into(),
            ..h.cfg.render.clone()
        },
        ..h.cfg.clone()
    };
    assert_unchanged(&run(&h, &other_ca).await, hash, false, "another CA file");
    let other_record = render_record(&h).await;
    assert_ne!(other_record.input_digest, recorded.input_digest);
    assert_eq!(&other_record.hash, hash);
    assert_unchanged(&run(&h, &other_ca).await, hash, true, "the CA file again");

    // An entry written past the register function that fails the checks is still caught on an
    // otherwise unchanged registry: it is quarantined, so the run renders; the next run with
    // the same quarantine skips and reports it again.
    let mut bad = entry("catalog", "products", "catalog", &["/products"]);
    bad.backend = "ftp://catalog.internal".into();
    h.put_raw_entry(&bad).await;
    let caught = run(&h, &h.cfg).await;
    assert_unchanged(&caught, hash, false, "a new quarantine");
    assert_eq!(caught.quarantined.len(), 1, "{:?}", caught.quarantined);
    assert_eq!(caught.quarantined[0].stage, Stage::Registry);
    let again = run(&h, &h.cfg).await;
    assert_unchanged(&again, hash, true, "the same quarantine");
    assert_eq!(again.quarantined, caught.quarantined);

    // A changed entry renders and publishes.
    let more = [&paths[..], &["/receipts"]].concat();
    h.register(entry("billing", "invoices", "invoices", &more))
        .await;
    let changed = run(&h, &h.cfg).await;
    let Outcome::Published { hash: next, .. } = &changed.outcome else {
        panic!("expected a publish, got {}", changed.outcome)
    };
    assert!(!changed.render_skipped);
    assert_ne!(next, hash);
    assert_eq!(&render_record(&h).await.hash, next);

    // An operator's kill switch: the live bundle is no longer the recorded publish, so the run
    // renders and the drift guard holds, as it always did.
    let (_, ks_hash) = kill_switch(&h.store, &h.cfg.render)
        .await
        .expect("kill switch");
    let held = run(&h, &h.cfg).await;
    assert!(
        matches!(&held.outcome, Outcome::HeldDrift { live_hash: Some(l), .. } if *l == ks_hash),
        "{}",
        held.outcome
    );
    assert!(!held.render_skipped);
}

#[tokio::test]
async fn another_build_renders_again_and_publishes_what_it_renders() {
    let h = Harness::start().await;
    h.register(entry("billing", "invoices", "invoices", &["/invoices"]))
        .await;
    let old = built_as(&h, "old");
    let new = built_as(&h, "new");
    let first = run(&h, &old).await;
    let Outcome::Published {
        hash: rendered_now,
        version_id,
        ..
    } = first.outcome
    else {
        panic!("expected a publish, got {}", first.outcome)
    };

    // Stand in for an old renderer that rendered these same entries to other bytes: its bundle
    // is live, recorded as published, and recorded as the old build's render of this input.
    let live = h.live().await;
    let entries = Bundle::parse(&h.store.get_version(&version_id).await.expect("get"))
        .expect("parse")
        .entries;
    let old_render = render(&entries, &RenderConfig::new("old.example.com")).expect("render");
    let old_bundle = Bundle::new(&old_render, &entries);
    let old_version = h
        .store
        .put_bundle(PutBundle {
            sealed: &old_bundle.seal(),
            writer: Writer::Reconciler,
            precondition: Precondition::Matches(live.etag),
        })
        .await
        .expect("old build's bundle");
    let state = h.registry.read_state().await.expect("state");
    let old_state = PublishedState {
        version_id: old_version.clone(),
        hash: old_bundle.hash.clone(),
        published_at: 1,
    };
    h.registry
        .record_published(state.as_ref(), &old_state)
        .await
        .expect("old build's publish recorded");
    let old_record = RenderRecord {
        input_digest: render_record(&h).await.input_digest,
        hash: old_bundle.hash.clone(),
    };
    h.registry
        .record_render(&old_record)
        .await
        .expect("old build's render recorded");
    assert_ne!(old_bundle.hash, rendered_now);

    // The old build trusts its record: unchanged, nothing rendered. That is why the build is
    // part of the key.
    assert_unchanged(
        &run(&h, &old).await,
        &old_bundle.hash,
        true,
        "the old build",
    );
    assert_eq!(h.live().await.version_id, old_version);

    // The new build renders the same registry again and publishes its own render.
    let upgraded = run(&h, &new).await;
    assert!(!upgraded.render_skipped);
    let Outcome::Published { hash, .. } = &upgraded.outcome else {
        panic!("expected a publish, got {}", upgraded.outcome)
    };
    assert_eq!(hash, &rendered_now);
    assert_eq!(h.live().await.hash.as_ref(), Some(&rendered_now));
    let new_record = render_record(&h).await;
    assert_eq!(new_record.hash, rendered_now);
    assert_ne!(new_record.input_digest, old_record.input_digest);

    assert_unchanged(
        &run(&h, &new).await,
        &rendered_now,
        true,
        "the new build again",
    );
    // Back to the old build (a rollback): its input is not the recorded one, so it renders.
    assert_unchanged(
        &run(&h, &old).await,
        &rendered_now,
        false,
        "the old build again",
    );
}
