//! Backends belong to teams, against moto's server: the first team to register a backend
//! authority holds it, its other services share it, another team is refused naming the holder
//! unless operators shared it, a release frees it, and the migration claims the backends of a
//! registry from before claims (docs/design.md#ownership-and-conflicts).


use aws_sdk_dynamodb::types::AttributeValue;
use gateway_adapters::registry::{
    BackendClaim, DynamoRegistry, Expect, Migration, RegisterOutcome,
};
use gateway_render::{Canary, Entry, Mirror};
use gateway_testkit::registry::{entry, holder, registry, registry_holding, row, rows};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Alpha's invoices service and its backend, the one the intruder tries to take.
const ALPHA_BACKEND: &str = "https://invoices.internal.example:8443";
const AUTHORITY: &str = "invoices.internal.example:8443";

fn alpha_invoices() -> Entry {
    Entry {
        backend: ALPHA_BACKEND.into(),
        ..entry("alpha", "invoices", "invoices", &["/invoices"])
    }
}

/// `team/service` on its own host (named after the team) with `backend`.
fn on_backend(team: &str, service: &str, backend: &str) -> Entry {
    Entry {
        backend: backend.into(),
        ..entry(team, service, team, &[&format!("/{service}")])
    }
}

fn with_canary(mut e: Entry, backend: &str) -> Entry {
    e.canary = Some(Canary {
        backend: backend.into(),
        weight: 10,
        header: None,
    });
    e
}

/// The claim of `authority`, which the test expects to exist.
async fn claim(reg: &DynamoRegistry, authority: &str) -> BackendClaim {
    reg.backend_claims()
        .claim(authority)
        .await
        .unwrap_or_else(|e| panic!("reading the claim of {authority}: {e}"))
        .unwrap_or_else(|| panic!("{authority} is not claimed"))
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The message of a conflict naming alpha as `authority`'s holder, to `team`.
fn held_by_alpha(authority: &str, team: &str) -> String {
    format!(
        "backend {authority} is held by team alpha (operators can share it: gatewayctl backend share {authority} {team})"
    )
}

#[tokio::test]
async fn another_team_registering_a_held_backend_is_refused_naming_the_holder() {
    let reg = registry_holding(&alpha_invoices()).await;
    let before = rows(&reg).await;
    // However it spells the authority: a trailing slash, or http on the same port.
    for backend in [
        ALPHA_BACKEND,
        "https://invoices.internal.example:8443/",
        "http://invoices.internal.example:8443",
    ] {
        let intruder = on_backend("intruder", "api", backend);
        let err = reg.register(&intruder).await.expect_err("held by alpha");
        assert_eq!(err.kind(), "conflict");
        assert_eq!(err.to_string(), held_by_alpha(AUTHORITY, "intruder"));
    }
    assert_eq!(
        rows(&reg).await,
        before,
        "nothing of the intruder's was written"
    );
    let held = claim(&reg, AUTHORITY).await;
    assert_eq!(held.team, "alpha");
    assert_eq!(held.users, set(&["alpha/invoices"]));
}

#[tokio::test]
async fn a_second_service_of_the_team_shares_the_teams_backend() {
    let reg = registry_holding(&alpha_invoices()).await;
    let second = on_backend("alpha", "exports", ALPHA_BACKEND);
    assert_eq!(
        reg.register(&second).await.expect("the team's own backend"),
        RegisterOutcome::Created { revision: 1 }
    );
    assert_eq!(
        claim(&reg, AUTHORITY).await.users,
        set(&["alpha/exports", "alpha/invoices"])
    );
    // A change that keeps the backend writes nothing to its claim.
    let mut changed = second.clone();
    changed.routes[0].path = "/exports/v2".into();
    reg.register(&changed).await.expect("routes only");
    assert_eq!(
        claim(&reg, AUTHORITY).await.users,
        set(&["alpha/exports", "alpha/invoices"])
    );
    // One service leaving keeps the claim for the team: the other still uses it.
    reg.deregister("alpha/invoices").await.expect("deregister");
    let (what, _) = holder(
        reg.register(&on_backend("intruder", "api", ALPHA_BACKEND))
            .await,
    );
    assert_eq!(what, format!("backend {AUTHORITY}"));
}

#[tokio::test]
async fn a_released_backend_can_be_claimed_by_another_team() {
    let reg = registry_holding(&alpha_invoices()).await;
    // Alpha moves to another backend: its old one has no users left.
    let moved = Entry {
        backend: "https://invoices-v2.internal.example:8443".into(),
        ..alpha_invoices()
    };
    reg.register(&moved).await.expect("alpha moves");
    let released = row(&reg, &format!("BACKEND#{AUTHORITY}"), "BACKEND")
        .await
        .expect("the claim stays");
    assert!(!released.contains_key("users"), "{released:?}");
    reg.register(&on_backend("beta", "api", ALPHA_BACKEND))
        .await
        .expect("a claim nobody uses is free");
    let taken = claim(&reg, AUTHORITY).await;
    assert_eq!(
        (taken.team.as_str(), taken.users),
        ("beta", set(&["beta/api"]))
    );
    // Alpha cannot come back to it now, and a deregistration frees it again.
    let (_, by) = holder(reg.register(&alpha_invoices()).await);
    assert!(by.starts_with("team beta "), "{by}");
    reg.deregister("beta/api").await.expect("deregister");
    reg.register(&alpha_invoices()).await.expect("free again");
    assert_eq!(claim(&reg, AUTHORITY).await.team, "alpha");
}

fn with_mirror(mut e: Entry, backend: &str) -> Entry {
    e.routes[0].mirror = Some(Mirror {
        backend: backend.into(),
        percent: 10,
    });
    e
}

/// Mirroring copies requests, so reaching another team's backend that way is reaching it.
#[tokio::test]
async fn a_mirror_backend_is_claimed_like_the_backend() {
    const SHADOW: &str = "https://invoices-shadow.internal.example";
    const SHADOW_AUTHORITY: &str = "invoices-shadow.internal.example:443";
    let reg = registry_holding(&with_mirror(alpha_invoices(), SHADOW)).await;
    assert_eq!(
        claim(&reg, SHADOW_AUTHORITY).await.users,
        set(&["alpha/invoices"])
    );
    // Another team may neither mirror to alpha's backend nor take alpha's mirror backend.
    let mirrors_alpha = with_mirror(
        on_backend("intruder", "api", "https://api.intruder.internal.example"),
        ALPHA_BACKEND,
    );
    let err = reg.register(&mirrors_alpha).await.expect_err("alpha's backend");
    assert_eq!(err.to_string(), held_by_alpha(AUTHORITY, "intruder"));
    let err = reg
        .register(&on_backend("intruder", "api", SHADOW))
        .await
        .expect_err("alpha's mirror");
    assert_eq!(err.to_string(), held_by_alpha(SHADOW_AUTHORITY, "intruder"));
    // Dropping the mirror releases it.
    reg.register(&alpha_invoices()).await.expect("no mirror");
    assert!(claim(&reg, SHADOW_AUTHORITY).await.is_stale());
    reg.register(&on_backend("intruder", "api", SHADOW))
        .await
        .expect("the released one is free");
}

#[tokio::test]
async fn a_canary_backend_is_claimed_like_the_backend() {
    const CANARY: &str = "https://invoices-next.internal.example";
    const CANARY_AUTHORITY: &str = "invoices-next.internal.example:443";
    let reg = registry_holding(&with_canary(alpha_invoices(), CANARY)).await;
    assert_eq!(
        claim(&reg, CANARY_AUTHORITY).await.users,
        set(&["alpha/invoices"])
    );
    // Neither as its backend nor as its own canary.
    let as_backend = on_backend("intruder", "api", CANARY);
    let as_canary = with_canary(
        on_backend("intruder", "api", "https://api.intruder.internal.example"),
        &format!("{CANARY}:443"),
    );
    for e in [&as_backend, &as_canary] {
        let err = reg.register(e).await.expect_err("alpha's canary");
        assert_eq!(err.to_string(), held_by_alpha(CANARY_AUTHORITY, "intruder"));
    }
    // The cutover: the canary becomes the backend, the old backend is released.
    let cut_over = Entry {
        backend: CANARY.into(),
        ..alpha_invoices()
    };
    reg.register(&cut_over).await.expect("cutover");
    assert_eq!(
        claim(&reg, CANARY_AUTHORITY).await.users,
        set(&["alpha/invoices"])
    );
    assert!(claim(&reg, AUTHORITY).await.is_stale());
    reg.register(&as_canary)
        .await
        .expect_err("still alpha's backend");
    reg.register(&on_backend("intruder", "api", ALPHA_BACKEND))
        .await
        .expect("the released one is free");
}

#[tokio::test]
async fn a_shared_backend_admits_the_teams_operators_named_and_no_other() {
    let reg = registry_holding(&alpha_invoices()).await;
    let claims = reg.backend_claims();
    let shared = claims.share(AUTHORITY, "beta", None).await.expect("share");
    assert_eq!((shared.holder.as_str(), shared.already), ("alpha", false));
    assert!(
        claims
            .share(AUTHORITY, "beta", None)
            .await
            .expect("again")
            .already
    );
    reg.register(&on_backend("beta", "reports", ALPHA_BACKEND))
        .await
        .expect("shared with beta");
    let err = reg
        .register(&on_backend("gamma", "api", ALPHA_BACKEND))
        .await
        .expect_err("not shared with gamma");
    assert_eq!(err.to_string(), held_by_alpha(AUTHORITY, "gamma"));
    let now = claim(&reg, AUTHORITY).await;
    assert_eq!(now.team, "alpha", "a share never moves the claim");
    assert_eq!(now.users, set(&["alpha/invoices", "beta/reports"]));
    assert_eq!(now.shared_with, set(&["beta"]));

    // Unsharing keeps beta's live service, and refuses the next one.
    let after = claims
        .unshare(AUTHORITY, "beta")
        .await
        .expect("unshare")
        .expect("it was shared");
    assert_eq!(after.users, set(&["alpha/invoices", "beta/reports"]));
    assert!(after.shared_with.is_empty());
    assert!(claims
        .unshare(AUTHORITY, "beta")
        .await
        .expect("again")
        .is_none());
    let err = reg
        .register(&on_backend("beta", "more", ALPHA_BACKEND))
        .await
        .expect_err("no longer shared");
    assert_eq!(err.to_string(), held_by_alpha(AUTHORITY, "beta"));

    // A share needs a claim, or a holder named for it, and the holder is not a share.
    let unclaimed = claims
        .share("platform.internal.example:443", "beta", None)
        .await
        .expect_err("nobody holds it");
    assert!(
        unclaimed
            .to_string()
            .starts_with("backend: platform.internal.example:443 is not claimed by any team"),
        "{unclaimed}"
    );
    let own = claims
        .share(AUTHORITY, "alpha", None)
        .await
        .expect_err("alpha holds it");
    assert_eq!(
        own.to_string(),
        format!("team: alpha holds backend {AUTHORITY}; a backend is shared with other teams")
    );
    let named = claims
        .share("https://platform.internal.example", "beta", Some("alpha"))
        .await
        .expect("a holder named");
    assert_eq!(
        (named.holder.as_str(), named.authority.as_str()),
        ("alpha", "platform.internal.example:443")
    );
    let err = claims
        .share(AUTHORITY, "delta", Some("gamma"))
        .await
        .expect_err("alpha holds it and uses it");
    assert_eq!(
        err.to_string(),
        format!("backend {AUTHORITY} is held by team alpha (used by alpha/invoices, beta/reports)")
    );
}

/// The entry row code from before claims wrote for `e` (the migration reads only entries).
async fn put_pre_claim_entry(reg: &DynamoRegistry, e: &Entry) {
    gateway_testkit::registry::client(gateway_testkit::registry::moto())
        .await
        .put_item()
        .table_name(reg.table())
        .item("pk", AttributeValue::S(format!("ENTRY#{}", e.id())))
        .item("sk", AttributeValue::S("ENTRY".into()))
        .item(
            "entry",
            AttributeValue::S(serde_json::to_string(e).expect("entry JSON")),
        )
        .item("revision", AttributeValue::N("1".into()))
        .item("updated_at", AttributeValue::N("1".into()))
        .item("owner", AttributeValue::S("operator:ops".into()))
        .send()
        .await
        .expect("raw put");
}

/// Every entry row's attributes, by key: what "live entries untouched" compares.
async fn entry_rows(reg: &DynamoRegistry) -> Vec<Option<HashMap<String, AttributeValue>>> {
    let mut out = Vec::new();
    for (pk, sk) in rows(reg).await {
        if pk.starts_with("ENTRY#") {
            out.push(row(reg, &pk, &sk).await);
        }
    }
    out
}

#[tokio::test]
async fn the_migration_claims_one_teams_backends_and_reports_shared_ones_without_writing() {
    let reg = registry().await;
    let one_team = "https://ledger.internal.example";
    let two_teams = "http://shared.internal.example:8080";
    for e in [
        on_backend("alpha", "ledger", one_team),
        with_canary(
            on_backend(
                "alpha",
                "ledger-admin",
                "https://ledger-admin.internal.example",
            ),
            one_team,
        ),
        on_backend("alpha", "search", two_teams),
        on_backend("beta", "search", two_teams),
    ] {
        put_pre_claim_entry(&reg, &e).await;
    }
    let entries = entry_rows(&reg).await;
    let report = reg.backend_claims().migrate().await.expect("migrate");
    let shared_users = BTreeMap::from([
        ("alpha".to_string(), set(&["alpha/search"])),
        ("beta".to_string(), set(&["beta/search"])),
    ]);
    assert_eq!(
        report.steps,
        [
            Migration::Claim {
                authority: "ledger-admin.internal.example:443".into(),
                team: "alpha".into(),
                users: set(&["alpha/ledger-admin"]),
                expect: Expect::Absent,
            },
            Migration::Claim {
                authority: "ledger.internal.example:443".into(),
                team: "alpha".into(),
                users: set(&["alpha/ledger", "alpha/ledger-admin"]),
                expect: Expect::Absent,
            },
            Migration::Conflict {
                authority: "shared.internal.example:8080".into(),
                holder: None,
                users: shared_users.clone(),
            },
        ]
    );
    assert!(!report.is_complete());
    assert_eq!(entry_rows(&reg).await, entries, "live entries untouched");
    let backend_rows: Vec<String> = rows(&reg)
        .await
        .into_iter()
        .filter(|(pk, _)| pk.starts_with("BACKEND#"))
        .map(|(pk, _)| pk)
        .collect();
    assert_eq!(
        backend_rows,
        [
            "BACKEND#ledger-admin.internal.example:443",
            "BACKEND#ledger.internal.example:443"
        ],
        "nothing written for the shared one"
    );
    // The claims hold from now on.
    let err = reg
        .register(&on_backend("gamma", "ledger", one_team))
        .await
        .expect_err("alpha's now");
    assert!(
        err.to_string()
            .starts_with("backend ledger.internal.example:443 is held by team alpha"),
        "{err}"
    );

    // Idempotent: a second run writes nothing and reports the same conflict.
    let again = reg.backend_claims().migrate().await.expect("again");
    assert_eq!(
        again.steps[..2],
        [
            Migration::Claimed {
                authority: "ledger-admin.internal.example:443".into(),
                team: "alpha".into(),
            },
            Migration::Claimed {
                authority: "ledger.internal.example:443".into(),
                team: "alpha".into(),
            },
        ]
    );
    assert!(matches!(&again.steps[2], Migration::Conflict { users, .. } if *users == shared_users));

    // An operator names the holder and shares it; the migration then lists both users.
    reg.backend_claims()
        .share("shared.internal.example:8080", "beta", Some("alpha"))
        .await
        .expect("share with a holder");
    let resolved = reg.backend_claims().migrate().await.expect("resolved");
    assert!(resolved.is_complete(), "{resolved:?}");
    assert_eq!(
        claim(&reg, "shared.internal.example:8080").await.users,
        set(&["alpha/search", "beta/search"])
    );
    assert_eq!(
        entry_rows(&reg).await,
        entries,
        "live entries still untouched"
    );
}

/// A claim written by a registration since the upgrade is never overwritten: a pre-claim entry
/// of another team on that authority is reported with the holder, and the holder's own
/// pre-claim services are added to its users.
#[tokio::test]
async fn the_migration_never_overwrites_a_claim_written_since() {
    let reg = registry().await;
    let backend = "https://reports.internal.example";
    put_pre_claim_entry(&reg, &on_backend("alpha", "reports-old", backend)).await;
    put_pre_claim_entry(&reg, &on_backend("beta", "reports", backend)).await;
    // Since the upgrade, before the migration: the next registration claims it.
    reg.register(&on_backend("alpha", "reports", backend))
        .await
        .expect("claimed by the next registration");
    let report = reg.backend_claims().migrate().await.expect("migrate");
    assert_eq!(
        report.steps,
        [Migration::Conflict {
            authority: "reports.internal.example:443".into(),
            holder: Some("alpha".into()),
            users: BTreeMap::from([
                (
                    "alpha".to_string(),
                    set(&["alpha/reports", "alpha/reports-old"])
                ),
                ("beta".to_string(), set(&["beta/reports"])),
            ]),
        }]
    );
    let held = claim(&reg, "reports.internal.example:443").await;
    assert_eq!(
        (held.team.as_str(), held.users),
        ("alpha", set(&["alpha/reports"]))
    );
    // Shared with beta, the migration completes the users.
    reg.backend_claims()
        .share("reports.internal.example:443", "beta", None)
        .await
        .expect("share");
    let report = reg.backend_claims().migrate().await.expect("migrate");
    assert!(report.is_complete(), "{report:?}");
    assert_eq!(
        claim(&reg, "reports.internal.example:443").await.users,
        set(&["alpha/reports", "alpha/reports-old", "beta/reports"])
    );
    // The pre-claim service, deregistered, is released like any other.
    reg.deregister("alpha/reports-old")
        .await
        .expect("deregister");
    assert_eq!(
        claim(&reg, "reports.internal.example:443").await.users,
        set(&["alpha/reports", "beta/reports"])
    );
}
