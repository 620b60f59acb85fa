//! Quarantine against moto's server and the real Envoy: one team's bad entry is set aside and
//! every other team's change publishes (docs/design.md#quarantine).

use gateway_testkit::control as support;

use gateway_control::reconcile::{reconcile_report, Kept, Outcome, RunReport, Stage};
use gateway_adapters::registry::EntryState;
use gateway_adapters::store::ConfigStore;
use gateway_render::{render, Bundle, Entry};
use support::{entry, published, rejected, Harness};

const MISSING_CA: &str = "/nonexistent/ca-certificates.crt";

async fn report(h: &Harness) -> RunReport {
    reconcile_report(&h.registry, &h.store, &h.metrics, &h.cfg)
        .await
        .expect("reconcile run")
}

async fn live_bundle(h: &Harness) -> Bundle {
    let live = h.live().await;
    let bundle =
        Bundle::parse(&h.store.get_version(&live.version_id).await.expect("get")).expect("parse");
    bundle.verify().expect("verifies");
    bundle
}

fn by_id<'a>(b: &'a Bundle, id: &str) -> Option<&'a Entry> {
    b.entries.iter().find(|e| e.id() == id)
}

/// Writes a row whose `entry` attribute is not an entry at all.
async fn put_unreadable_row(h: &Harness, id: &str) {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    h.dynamo
        .put_item()
        .table_name(h.registry.table())
        .item("pk", A::S(format!("ENTRY#{id}")))
        .item("sk", A::S("ENTRY".into()))
        .item(
            "entry",
            A::S("{\"team\": \"broken\", \"surprise\": true".into()),
        )
        .item("revision", A::N("1".into()))
        .item("updated_at", A::N("0".into()))
        .send()
        .await
        .expect("raw put");
}

async fn status_of(h: &Harness, id: &str) -> gateway_adapters::registry::EntryStatus {
    h.registry.status(id).await.expect("status").expect("row")
}

/// Registers tls/svc on the host `secure` with `backend` (an https one passes the checks and
/// is refused by Envoy when the CA bundle is missing).
async fn register_tls(h: &Harness, backend: &str) {
    let mut tls = entry("tls", "svc", "secure", &["/s"]);
    tls.backend = backend.into();
    h.register(tls).await;
}

/// The version a run published, which the test expects it to.
async fn published_version(h: &Harness) -> String {
    published(&report(h).await.outcome).0.clone()
}

async fn seed_teams(h: &Harness, n: usize) {
    for i in 0..n {
        let team = format!("team{i}");
        h.register(entry(&team, "svc", &team, &["/a"])).await;
    }
}

#[tokio::test]
async fn bad_rows_and_an_envoy_rejected_entry_are_set_aside_and_the_rest_publishes() {
    let mut h = Harness::start().await;
    h.cfg.quarantine.max_share = 0.5;
    // The CA bundle https clusters name is missing where the validator runs: Envoy refuses any
    // https cluster, while no http entry touches it. The registration checks cannot see this.
    h.cfg.render.upstream_ca_file = MISSING_CA.into();
    seed_teams(&h, 6).await;
    let first = report(&h).await;
    assert!(
        matches!(first.outcome, Outcome::Published { .. }),
        "{}",
        first.outcome
    );
    assert!(first.quarantined.is_empty());
    let before = live_bundle(&h).await;

    // A good change from team0, which must publish.
    h.register(entry("team0", "svc", "team0", &["/a", "/b"]))
        .await;
    // team1's row replaced around the register function with a backend the checks refuse.
    let mut hijacked = entry("team1", "svc", "team1", &["/a", "/stolen"]);
    hijacked.backend = "http://169.254.169.254".into();
    h.put_raw_entry(&hijacked).await;
    // A new team's row written around the register function, refused by the checks.
    let mut intruder = entry("intruder", "meta", "meta", &["/meta"]);
    intruder.backend = "http://169.254.170.2".into();
    h.put_raw_entry(&intruder).await;
    // A row that does not parse.
    put_unreadable_row(&h, "broken/svc").await;
    // Registered properly (the checks pass), but Envoy rejects its cluster.
    register_tls(&h, "https://secure.internal.example:8443").await;

    let run = report(&h).await;
    let (_, hash) = published(&run.outcome);
    let mut ids: Vec<(&str, Kept)> = run
        .quarantined
        .iter()
        .map(|q| (q.id.as_str(), q.kept))
        .collect();
    ids.sort_by_key(|(id, _)| *id);
    assert_eq!(
        ids,
        [
            ("broken/svc", Kept::LeftOut),
            ("intruder/meta", Kept::LeftOut),
            ("team1/svc", Kept::Previous),
            ("tls/svc", Kept::LeftOut)
        ]
    );
    let q = |id: &str| run.quarantined.iter().find(|q| q.id == id).expect("listed");
    assert_eq!(q("team1/svc").stage, Stage::Registry);
    assert!(
        q("team1/svc").reason.contains("backend")
            && q("team1/svc").reason.contains("169.254.169.254"),
        "{}",
        q("team1/svc").reason
    );
    assert!(
        q("broken/svc").reason.contains("unreadable"),
        "{}",
        q("broken/svc").reason
    );
    let tls_q = q("tls/svc");
    assert!(
        matches!(&tls_q.stage, Stage::Validation(l) if l.contains("layer 3")),
        "{}",
        tls_q.stage
    );
    assert!(
        tls_q.reason.contains(MISSING_CA),
        "Envoy's own message: {}",
        tls_q.reason
    );
    // One full validation, the baseline, then the halving over 2 changed entries (team0, tls).
    assert!(run.validations <= 4, "{} validations", run.validations);

    // What is live: team0's change, team1's last published version, none of the bad rows.
    let b = live_bundle(&h).await;
    assert_eq!(&b.hash, hash);
    assert_eq!(by_id(&b, "team0/svc").map(|e| e.routes.len()), Some(2));
    assert_eq!(by_id(&b, "team1/svc"), by_id(&before, "team1/svc"));
    for gone in ["intruder/meta", "broken/svc", "tls/svc"] {
        assert!(by_id(&b, gone).is_none(), "{gone} must be left out");
    }
    assert!(!b.files["routes.json"].contains("169.254"));
    let rerendered = render(&b.entries, &h.cfg.render).expect("re-render");
    assert_eq!(&rerendered.hash, hash, "the bundle's entries reproduce it");

    // The failure and Envoy's exact message are kept under failed/.
    let kept = h.get_object("failed/quarantine/tls/svc/reason.txt").await;
    assert!(
        kept.contains(MISSING_CA) && kept.contains("layer 3"),
        "{kept}"
    );
    let kept = h.get_object("failed/quarantine/team1/svc/reason.txt").await;
    assert!(kept.contains("the version in the live bundle"), "{kept}");

    // EntryQuarantined, per team.
    let metrics = h
        .cloudwatch
        .list_metrics()
        .namespace("Gateway")
        .metric_name("EntryQuarantined")
        .send()
        .await
        .expect("list");
    let mut teams: Vec<String> = metrics
        .metrics()
        .iter()
        .flat_map(|m| m.dimensions().iter())
        .filter(|d| d.name() == Some("Team"))
        .filter_map(|d| d.value().map(str::to_string))
        .collect();
    teams.sort();
    teams.dedup();
    assert_eq!(teams, ["broken", "intruder", "team1", "tls"]);
    let total = metrics.metrics().iter().any(|m| m.dimensions().is_empty());
    assert!(total, "the undimensioned total the alarm watches");

    // Its guards stay: nobody takes the quarantined entry's host meanwhile.
    let thief = entry("thief", "svc", "secure", &["/s"]);
    let (_, holder) = support::registry_support::holder(h.registry.register(&thief).await);
    assert!(holder.contains("tls"), "host still held: {holder}");

    // Status rows: team0 published at revision 2 in this bundle; the quarantined ones name why.
    let team0 = status_of(&h, "team0/svc").await;
    assert_eq!(team0.state(2), EntryState::Published);
    assert_eq!(team0.hash.as_deref(), Some(hash.as_str()));
    let team1 = status_of(&h, "team1/svc").await;
    assert_eq!(team1.state(1), EntryState::Quarantined);
    assert_eq!(
        team1.revision_published,
        Some(1),
        "the row was registered, published, then overwritten"
    );
    let tls_status = status_of(&h, "tls/svc").await;
    assert_eq!(tls_status.state(1), EntryState::Quarantined);
    let q = tls_status.quarantine.as_ref().expect("quarantine");
    assert!(
        q.stage.contains("layer 3") && q.reason.contains(MISSING_CA) && q.kept == "left-out",
        "{q:?}"
    );
    assert_eq!(tls_status.revision_published, None);

    // The next run publishes nothing new and still names them.
    let again = report(&h).await;
    assert_eq!(again.outcome, Outcome::Unchanged { hash: hash.clone() });
    assert_eq!(again.quarantined.len(), 4);

    // Fixed and registered again: it publishes and its status says so.
    register_tls(&h, "http://127.0.0.1:8443").await;
    let run = report(&h).await;
    let (_, hash) = published(&run.outcome);
    assert_eq!(run.quarantined.len(), 3);
    let tls_status = status_of(&h, "tls/svc").await;
    assert_eq!(tls_status.state(2), EntryState::Published);
    assert!(tls_status.quarantine.is_none());
    assert_eq!(tls_status.hash.as_deref(), Some(hash.as_str()));
}

#[tokio::test]
async fn quarantine_beyond_the_share_rejects_as_before_and_publishes_nothing() {
    let h = Harness::start().await;
    seed_teams(&h, 3).await;
    let version_id = published_version(&h).await;
    for i in 0..2 {
        let mut bad = entry(&format!("team{i}"), "svc", &format!("team{i}"), &["/a"]);
        bad.backend = "http://169.254.169.254".into();
        h.put_raw_entry(&bad).await;
    }
    let run = report(&h).await;
    let (stage, reason) = rejected(&run.outcome);
    assert_eq!(*stage, Stage::Registry);
    assert!(
        reason.contains("team0/svc: backend") && reason.contains("GATEWAY_QUARANTINE_MAX_SHARE"),
        "{reason}"
    );
    assert!(
        run.quarantined.is_empty(),
        "a rejected run quarantines nothing"
    );
    assert_eq!(h.live().await.version_id, version_id);
}

#[tokio::test]
async fn a_failure_the_live_versions_share_is_global_and_rejects() {
    let mut h = Harness::start().await;
    seed_teams(&h, 5).await;
    register_tls(&h, "https://secure.internal.example:8443").await;
    let version_id = published_version(&h).await;
    // The CA bundle disappears: the already-published https entry fails too, so no entry is
    // to blame and nothing is quarantined.
    h.cfg.render.upstream_ca_file = MISSING_CA.into();
    h.register(entry("team0", "svc", "team0", &["/a", "/b"]))
        .await;
    let run = report(&h).await;
    let (stage, reason) = rejected(&run.outcome);
    assert!(
        matches!(stage, Stage::Validation(l) if l.contains("layer 3")),
        "{stage}"
    );
    assert!(
        reason.contains(MISSING_CA) && reason.contains("global"),
        "{reason}"
    );
    assert!(run.quarantined.is_empty());
    assert_eq!(run.validations, 2, "the full validation and the baseline");
    assert_eq!(h.live().await.version_id, version_id);
}

#[tokio::test]
async fn the_search_is_bounded_in_validations_and_then_rejects_as_before() {
    let mut h = Harness::start().await;
    h.cfg.render.upstream_ca_file = MISSING_CA.into();
    seed_teams(&h, 8).await;
    let version_id = published_version(&h).await;
    h.cfg.quarantine.max_validations = 2;
    h.register(entry("team0", "svc", "team0", &["/a", "/b"]))
        .await;
    register_tls(&h, "https://secure.internal.example:8443").await;
    let run = report(&h).await;
    let (_, reason) = rejected(&run.outcome);
    assert!(
        reason.contains("stopped after 2 validations") && reason.contains(MISSING_CA),
        "{reason}"
    );
    assert_eq!(run.validations, 2);
    assert_eq!(h.live().await.version_id, version_id);
    // With the default budget the same registry publishes team0's change.
    h.cfg.quarantine = Default::default();
    let run = report(&h).await;
    assert!(
        matches!(run.outcome, Outcome::Published { .. }),
        "{}",
        run.outcome
    );
    assert_eq!(run.quarantined.len(), 1);
}

/// Registers `n` services of team `evil` on its host, each with an https backend Envoy refuses
/// while the CA bundle is missing (the registration checks cannot see that).
async fn register_refused_services(h: &Harness, n: usize) {
    for i in 0..n {
        let mut e = entry("evil", &format!("svc{i}"), "evil", &[&format!("/p{i}")]);
        e.backend = format!("https://svc{i}.evil.internal.example:8443");
        h.register(e).await;
    }
}

fn ids_of(run: &RunReport) -> Vec<String> {
    let mut ids: Vec<String> = run.quarantined.iter().map(|q| q.id.clone()).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn one_teams_refused_entries_cost_that_team_alone_and_are_remembered() {
    let mut h = Harness::start().await;
    h.cfg.render.upstream_ca_file = MISSING_CA.into();
    seed_teams(&h, 6).await;
    published_version(&h).await;

    // Ten entries of one team that Envoy refuses, beside another team's good change.
    register_refused_services(&h, 10).await;
    h.register(entry("team0", "svc", "team0", &["/a", "/b"])).await;
    let first = report(&h).await;
    let (_, hash) = published(&first.outcome);
    let evil: Vec<String> = (0..10).map(|i| format!("evil/svc{i}")).collect();
    let mut expected = evil.clone();
    expected.sort();
    assert_eq!(ids_of(&first), expected, "only evil's entries are set aside");
    let b = live_bundle(&h).await;
    assert_eq!(&b.hash, hash);
    assert_eq!(by_id(&b, "team0/svc").map(|e| e.routes.len()), Some(2), "team0's change is live");
    assert!(b.entries.iter().all(|e| e.team != "evil"));
    // The run-wide part found the one failing team; the rest of the budget was evil's own.
    let held: Vec<&str> = first
        .quarantined
        .iter()
        .filter(|q| q.reason.contains("held back with team evil's"))
        .map(|q| q.id.as_str())
        .collect();
    assert!(
        first.validations <= 2 * h.cfg.quarantine.max_validations,
        "{} validations",
        first.validations
    );

    // Each later run sets the isolated ones aside before rendering and searches only what is
    // still undecided, until nothing is: then a run validates once.
    let mut runs = vec![first.validations];
    for _ in 0..4 {
        let run = report(&h).await;
        assert_eq!(ids_of(&run), expected);
        runs.push(run.validations);
    }
    let last = *runs.last().expect("runs");
    assert_eq!(last, 0, "nothing changed and every refusal is remembered: {runs:?} (held first: {held:?})");
    let remembered = report(&h).await;
    assert!(
        remembered.quarantined.iter().all(|q| q.reason.contains("remembered")),
        "{:?}",
        remembered.quarantined
    );

    // Another team's change now costs one validation.
    h.register(entry("team1", "svc", "team1", &["/a", "/c"])).await;
    let run = report(&h).await;
    published(&run.outcome);
    assert_eq!(run.validations, 1, "the known-bad revisions cost nothing");
    assert_eq!(ids_of(&run), expected);

    // A new revision of a remembered entry is judged again (and refused again).
    let mut fixed = entry("evil", "svc0", "evil", &["/p0"]);
    fixed.backend = "http://127.0.0.1:8443".into();
    h.register(fixed).await;
    let run = report(&h).await;
    published(&run.outcome);
    let mut still: Vec<String> = evil[1..].to_vec();
    still.sort();
    assert_eq!(ids_of(&run), still, "the fixed revision publishes");
}

#[tokio::test]
async fn on_a_small_registry_one_teams_failures_do_not_reject_the_run() {
    let mut h = Harness::start().await;
    h.cfg.render.upstream_ca_file = MISSING_CA.into();
    seed_teams(&h, 2).await;
    published_version(&h).await;
    // Most of the registry's routes, all refused, all one team's.
    register_refused_services(&h, 4).await;
    let mut hijack = entry("evil", "raw", "evil", &["/raw"]);
    hijack.backend = "http://169.254.169.254".into();
    h.put_raw_entry(&hijack).await;
    h.register(entry("team0", "svc", "team0", &["/a", "/b"])).await;
    let run = report(&h).await;
    published(&run.outcome);
    assert_eq!(run.quarantined.len(), 5, "{:?}", run.quarantined);
    assert!(run.quarantined.iter().all(|q| q.team == "evil"));
    let b = live_bundle(&h).await;
    assert_eq!(by_id(&b, "team0/svc").map(|e| e.routes.len()), Some(2));
}

#[tokio::test]
async fn many_teams_failing_at_once_is_systemic_and_rejects() {
    let mut h = Harness::start().await;
    seed_teams(&h, 4).await;
    let version_id = published_version(&h).await;
    h.cfg.render.upstream_ca_file = MISSING_CA.into();
    // Every team's change now names an https backend Envoy refuses: one cause, all teams.
    for i in 0..4 {
        let mut e = entry(&format!("team{i}"), "svc", &format!("team{i}"), &["/a", "/b"]);
        e.backend = format!("https://team{i}.internal.example:8443");
        h.register(e).await;
    }
    let run = report(&h).await;
    let (_, reason) = rejected(&run.outcome);
    assert!(reason.contains("teams") && reason.contains("GATEWAY_QUARANTINE_MAX_SHARE"), "{reason}");
    assert_eq!(h.live().await.version_id, version_id);
}

#[tokio::test]
async fn a_released_host_serves_its_new_holder_not_the_old_owners_kept_version() {
    let mut h = Harness::start().await;
    h.cfg.render.upstream_ca_file = MISSING_CA.into();
    seed_teams(&h, 4).await;
    h.register(entry("old", "svc", "shared", &["/x"])).await;
    published_version(&h).await;
    // old moves to another host (releasing `shared`) with a revision Envoy refuses: its last
    // good version, on `shared`, is kept meanwhile.
    let mut moved = entry("old", "svc", "elsewhere", &["/x"]);
    moved.backend = "https://old.internal.example:8443".into();
    h.register(moved).await;
    let run = report(&h).await;
    assert!(matches!(run.outcome, Outcome::Unchanged { .. }), "{}", run.outcome);
    let q = run.quarantined.iter().find(|q| q.id == "old/svc").expect("old quarantined");
    assert_eq!(q.kept, Kept::Previous);

    // Another team claims the released host: its entry renders, the old version goes.
    h.register(entry("new", "svc", "shared", &["/y"])).await;
    let run = report(&h).await;
    published(&run.outcome);
    let ids: Vec<(&str, Kept)> = run.quarantined.iter().map(|q| (q.id.as_str(), q.kept)).collect();
    assert_eq!(ids, [("old/svc", Kept::LeftOut)], "{:?}", run.quarantined);
    let why = &run.quarantined[0].reason;
    assert!(why.contains("no longer served") && why.contains("new/svc"), "{why}");
    let b = live_bundle(&h).await;
    assert!(by_id(&b, "new/svc").is_some(), "the holder's entry is live");
    assert!(by_id(&b, "old/svc").is_none());
    assert!(!b.files["routes.json"].contains("old.svc"), "nothing of old is routed");
}

#[tokio::test]
async fn a_live_bundle_that_does_not_verify_lends_no_entry_its_version() {
    let h = Harness::start().await;
    seed_teams(&h, 4).await;
    published_version(&h).await;
    // Someone with write access to the bucket, but not the signing key, puts a bundle whose
    // files and entries name another backend (one the checks accept), with the recorded hash in
    // its manifest and metadata and the reconciler's name as writer: not signed by the key.
    let live = h.live().await;
    let body = h.store.get_version(&live.version_id).await.expect("get");
    let mut forged = gateway_render::Bundle::parse(&body).expect("the live bundle");
    for e in &mut forged.entries {
        e.backend = e.backend.replace("http://127.0.0.1:9", "http://127.0.0.1:19");
    }
    for text in forged.files.values_mut() {
        *text = text.replace("\"port_value\": 9", "\"port_value\": 19");
    }
    assert!(forged.files["clusters.json"].contains("port_value\": 19"), "the files were changed too");
    let forged = forged.seal().archive(None);
    h.store
        .client()
        .put_object()
        .bucket(h.store.bucket())
        .key("bundle.json")
        .body(forged.into())
        .metadata("hash", live.hash.clone().expect("hash"))
        .metadata("writer", "reconciler")
        .send()
        .await
        .expect("forged put");
    // team1's registered row now fails the checks: it is quarantined, and since the live
    // bundle is not signed by the reconciler's key, nothing of it is kept.
    let mut bad = entry("team1", "svc", "team1", &["/a"]);
    bad.backend = "http://169.254.169.254".into();
    h.put_raw_entry(&bad).await;
    let run = report(&h).await;
    let q = run.quarantined.iter().find(|q| q.id == "team1/svc").expect("quarantined");
    assert_eq!(q.kept, Kept::LeftOut, "a forged bundle lends no version");
    if let Outcome::Published { .. } = run.outcome {
        let b = live_bundle(&h).await;
        assert!(!b.files["clusters.json"].contains("169.254"));
        assert!(!b.files["clusters.json"].contains("port_value\": 19"), "nothing of the forgery");
    }
}
