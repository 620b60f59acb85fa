//! The DynamoDB registry against moto's server: entries, host and path guards, releases,
//! the reconciler's reads and its state record.

use gateway_testkit::registry as registry_support;

use gateway_adapters::registry::{
    DeregisterOutcome, DynamoRegistry, PublishedState, RegisterOutcome, Registry, RegistryError,
};
use registry_support::{
    entry, holder, invoices_api, pair, registry, registry_holding, row, rows, stored_entry,
};

const FQDN: &str = "invoices.api.example.com";
/// The backend authority `invoices_api()` claims.
const INVOICES_BACKEND: &str = "invoices-api.billing.internal.example:8443";

/// Why registering `e` is refused; `why` says why it must be.
async fn refusal(reg: &DynamoRegistry, e: &gateway_render::Entry, why: &str) -> String {
    reg.register(e).await.expect_err(why).to_string()
}

/// Registering `e` is refused for a conflict on `what`, held by `by`.
async fn assert_held(reg: &DynamoRegistry, e: &gateway_render::Entry, what: &str, by: &str) {
    let (conflict, holder) = holder(reg.register(e).await);
    assert_eq!((conflict.as_str(), holder.as_str()), (what, by));
}

#[tokio::test]
async fn register_update_and_identical_reregister() {
    let reg = registry().await;
    let mut e = invoices_api();
    assert_eq!(
        reg.register(&e).await.expect("create"),
        RegisterOutcome::Created { revision: 1 }
    );
    let first = row(&reg, "ENTRY#billing/invoices-api", "ENTRY")
        .await
        .expect("entry row");

    e.routes.push(
        entry("billing", "invoices-api", "invoices", &["/invoices/export"])
            .routes
            .remove(0),
    );
    assert_eq!(
        reg.register(&e).await.expect("update"),
        RegisterOutcome::Updated { revision: 2 }
    );
    assert_eq!(
        reg.register(&e).await.expect("again"),
        RegisterOutcome::Unchanged { revision: 2 }
    );

    let stored = stored_entry(&reg, "billing/invoices-api").await;
    assert_eq!(stored.entry, e);
    assert_eq!(stored.revision, 2);
    assert_ne!(
        first.get("entry"),
        row(&reg, "ENTRY#billing/invoices-api", "ENTRY")
            .await
            .expect("row")
            .get("entry")
    );
    assert_eq!(
        rows(&reg).await,
        vec![
            pair(&format!("BACKEND#{INVOICES_BACKEND}"), "BACKEND"),
            pair("ENTRY#billing/invoices-api", "ENTRY"),
            pair(&format!("HOST#{FQDN}"), "HOST"),
            pair(&format!("HOST#{FQDN}"), "PATH#/invoices"),
            pair(&format!("HOST#{FQDN}"), "PATH#/invoices/export"),
        ]
    );
    // One ownership change (the claim), so its version is 1; two registrations claimed a new
    // prefix, each counted once (`claims`, and `seg:invoices` for their first segment); the
    // unchanged re-register wrote nothing.
    let host = row(&reg, &format!("HOST#{FQDN}"), "HOST")
        .await
        .expect("host guard");
    let number = |name: &str| {
        host.get(name)
            .and_then(|v| v.as_n().ok())
            .map(String::as_str)
    };
    assert_eq!(number("version"), Some("1"));
    assert_eq!(number("claims"), Some("2"));
    assert_eq!(number("seg:invoices"), Some("2"));
    assert_eq!(number("root"), None);
    assert_eq!(
        host.get("team")
            .and_then(|v| v.as_s().ok())
            .map(String::as_str),
        Some("billing")
    );
}

#[tokio::test]
async fn a_rejected_entry_writes_nothing() {
    let reg = registry().await;
    let mut e = invoices_api();
    e.routes[0].path = "invoices".into();
    match reg.register(&e).await {
        Err(RegistryError::Rejected(r)) => {
            assert!(r.problems.iter().any(|p| p.field.contains("path")), "{r}")
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    let raw = serde_json::json!({ "team": "Billing", "service": "x", "host": "h", "backend": "ftp://x", "routes": [] });
    match reg.register_value(&raw).await {
        Err(RegistryError::Rejected(r)) => {
            assert!(r.problems.len() >= 3, "every problem is listed: {r}")
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert!(rows(&reg).await.is_empty());
}

#[tokio::test]
async fn deregister_removes_entry_and_guards_and_releases_the_host() {
    let reg = registry_holding(&entry(
        "billing",
        "invoices-api",
        "invoices",
        &["/invoices", "/credit-notes"],
    ))
    .await;
    assert_eq!(
        reg.deregister("billing/invoices-api")
            .await
            .expect("deregister"),
        DeregisterOutcome::Deleted
    );
    // The released host guard stays as a row without a team, keeping its version; the backend
    // claim stays as its team's, used by nobody (free to the next team).
    assert_eq!(
        rows(&reg).await,
        vec![
            pair(&format!("BACKEND#{INVOICES_BACKEND}"), "BACKEND"),
            pair(&format!("HOST#{FQDN}"), "HOST")
        ]
    );
    let claim = row(&reg, &format!("BACKEND#{INVOICES_BACKEND}"), "BACKEND")
        .await
        .expect("backend claim");
    assert!(!claim.contains_key("users"), "released: {claim:?}");
    let host = row(&reg, &format!("HOST#{FQDN}"), "HOST")
        .await
        .expect("host guard");
    assert!(!host.contains_key("team"), "released: {host:?}");
    assert_eq!(
        reg.deregister("billing/invoices-api").await.expect("again"),
        DeregisterOutcome::NotFound
    );
    // Another team can now take the host.
    reg.register(&entry("payments", "pay", "invoices", &["/invoices"]))
        .await
        .expect("host is free");
    assert!(matches!(
        reg.deregister("not-an-id").await,
        Err(RegistryError::Rejected(_))
    ));
}

#[tokio::test]
async fn deregistering_one_of_two_services_keeps_the_host_for_the_team() {
    let reg = registry_holding(&invoices_api()).await;
    reg.register(&entry(
        "billing",
        "credit-notes",
        "invoices",
        &["/credit-notes"],
    ))
    .await
    .expect("second");
    reg.deregister("billing/invoices-api")
        .await
        .expect("deregister");
    let payments = entry("payments", "pay", "invoices", &["/pay"]);
    assert_held(&reg, &payments, "host invoices.api.example.com", "billing").await;
    // The first service's path is free for the team's other service.
    reg.register(&entry(
        "billing",
        "credit-notes",
        "invoices",
        &["/credit-notes", "/invoices"],
    ))
    .await
    .expect("claim");
}

#[tokio::test]
async fn another_team_cannot_take_a_host() {
    let reg = registry_holding(&entry("payments", "pay", "invoices", &["/pay"])).await;
    let err = reg.register(&invoices_api()).await.expect_err("conflict");
    assert_eq!(
        err.to_string(),
        "host invoices.api.example.com is held by payments"
    );
    assert_eq!(err.kind(), "conflict");
    assert!(reg
        .get("billing/invoices-api")
        .await
        .expect("get")
        .is_none());
}

#[tokio::test]
async fn another_service_cannot_take_a_path() {
    let reg = registry_holding(&entry("billing", "invoices-v1", "invoices", &["/invoices"])).await;
    let err = reg
        .register(&entry(
            "billing",
            "invoices-v2",
            "invoices",
            &["/other", "/invoices"],
        ))
        .await
        .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        "path /invoices on invoices.api.example.com is held by billing/invoices-v1"
    );
    assert!(reg.get("billing/invoices-v2").await.expect("get").is_none());
}

#[tokio::test]
async fn nested_prefixes_of_one_team_coexist_and_the_same_prefix_conflicts() {
    let reg = registry_holding(&entry("billing", "invoices-v1", "invoices", &["/invoices"])).await;
    reg.register(&entry(
        "billing",
        "export",
        "invoices",
        &["/invoices/export"],
    ))
    .await
    .expect("a prefix inside another service's");
    reg.register(&entry("billing", "web", "invoices", &["/"]))
        .await
        .expect("the root around every other service's");

    // The same segments with a trailing slash are the same prefix.
    let (what, who) = holder(
        reg.register(&entry("billing", "again", "invoices", &["/invoices/"]))
            .await,
    );
    assert_eq!(who, "billing/invoices-v1");
    assert_eq!(
        what,
        "path /invoices on invoices.api.example.com (the same prefix as /invoices/)"
    );
    let (_, who) = holder(
        reg.register(&entry("billing", "root-again", "invoices", &["/"]))
            .await,
    );
    assert_eq!(who, "billing/web");
    assert_eq!(reg.list().await.expect("list").entries.len(), 3);

    // Conditions tell two services' routes on one path apart; the same conditions do not.
    let versioned = |service: &str| {
        let mut e = entry("billing", service, "invoices", &["/invoices"]);
        e.routes[0].headers = vec![gateway_render::HeaderMatch {
            name: "x-version".into(),
            value: Some("2".into()),
            present: None,
        }];
        e
    };
    reg.register(&versioned("invoices-v2"))
        .await
        .expect("the same path with a header condition");
    let (what, who) = holder(reg.register(&versioned("invoices-v3")).await);
    assert_eq!(who, "billing/invoices-v2");
    assert!(what.starts_with("path /invoices~"), "{what}");
}

#[tokio::test]
async fn moving_paths_releases_the_old_guards() {
    let reg = registry_holding(&entry("billing", "a", "invoices", &["/one", "/two"])).await;
    reg.register(&entry("billing", "a", "invoices", &["/two", "/three"]))
        .await
        .expect("moved");
    let paths: Vec<_> = rows(&reg)
        .await
        .into_iter()
        .filter(|(_, sk)| sk.starts_with("PATH#"))
        .map(|(_, sk)| sk)
        .collect();
    assert_eq!(paths, vec!["PATH#/three", "PATH#/two"]);
    reg.register(&entry("billing", "b", "invoices", &["/one"]))
        .await
        .expect("old path is free");
    let (_, who) = holder(
        reg.register(&entry("billing", "b", "invoices", &["/one", "/three"]))
            .await,
    );
    assert_eq!(who, "billing/a");
}

#[tokio::test]
async fn moving_hosts_releases_the_old_host() {
    let reg = registry_holding(&entry("billing", "a", "invoices", &["/one"])).await;
    reg.register(&entry("billing", "a", "billing", &["/one"]))
        .await
        .expect("moved");
    assert_eq!(
        rows(&reg).await,
        vec![
            pair("BACKEND#a.billing.internal.example:8443", "BACKEND"),
            pair("ENTRY#billing/a", "ENTRY"),
            pair("HOST#billing.api.example.com", "HOST"),
            pair("HOST#billing.api.example.com", "PATH#/one"),
            pair(&format!("HOST#{FQDN}"), "HOST"),
        ]
    );
    let old_host = row(&reg, &format!("HOST#{FQDN}"), "HOST")
        .await
        .expect("row");
    assert!(!old_host.contains_key("team"), "released: {old_host:?}");
    reg.register(&entry("payments", "p", "invoices", &["/one"]))
        .await
        .expect("old host is free");

    // With another of the team's services still there, the old host stays the team's.
    reg.register(&entry("billing", "b", "billing", &["/two"]))
        .await
        .expect("second service");
    reg.register(&entry("billing", "a", "elsewhere", &["/one"]))
        .await
        .expect("moved again");
    let payments = entry("payments", "q", "billing", &["/q"]);
    assert_held(&reg, &payments, "host billing.api.example.com", "billing").await;
    reg.register(&entry("billing", "b", "billing", &["/two", "/one"]))
        .await
        .expect("a's old path is free");
}

#[tokio::test]
async fn snapshot_reports_unreadable_rows_without_failing() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let reg = registry_holding(&entry("billing", "b", "invoices", &["/b"])).await;
    reg.register(&entry("billing", "a", "invoices", &["/a"]))
        .await
        .expect("register");
    registry_support::client(registry_support::moto())
        .await
        .put_item()
        .table_name(reg.table())
        .item("pk", AttributeValue::S("ENTRY#broken/row".into()))
        .item("sk", AttributeValue::S("ENTRY".into()))
        .item("entry", AttributeValue::S("{not json".into()))
        .item("revision", AttributeValue::N("1".into()))
        .send()
        .await
        .expect("raw put");
    let snapshot = reg.read_all_entries().await.expect("scan");
    let ids: Vec<_> = snapshot.entries.iter().map(|s| s.entry.id()).collect();
    assert_eq!(ids, vec!["billing/a", "billing/b"]);
    assert_eq!(snapshot.unreadable.len(), 1);
    assert_eq!(snapshot.unreadable[0].0, "ENTRY#broken/row");
    assert!(
        snapshot.unreadable[0].1.contains("does not parse"),
        "{:?}",
        snapshot.unreadable
    );
    assert!(snapshot
        .entries
        .iter()
        .all(|s| s.revision == 1 && s.updated_at > 0));
}

#[tokio::test]
async fn published_state_is_recorded_conditionally() {
    let reg = registry().await;
    assert_eq!(reg.read_state().await.expect("read"), None);
    let first = PublishedState {
        version_id: "v1".into(),
        hash: "sha256:aa".into(),
        published_at: 100,
    };
    let second = PublishedState {
        version_id: "v2".into(),
        hash: "sha256:bb".into(),
        published_at: 200,
    };
    reg.record_published(None, &first)
        .await
        .expect("first record");
    assert!(matches!(
        reg.record_published(None, &second).await,
        Err(RegistryError::StateConflict)
    ));
    assert_eq!(reg.read_state().await.expect("read"), Some(first.clone()));
    reg.record_published(Some(&first), &second)
        .await
        .expect("second record");
    // A run that read `first` lost the race to the one that recorded `second`.
    let third = PublishedState {
        version_id: "v3".into(),
        hash: "sha256:cc".into(),
        published_at: 300,
    };
    assert!(matches!(
        reg.record_published(Some(&first), &third).await,
        Err(RegistryError::StateConflict)
    ));
    assert_eq!(reg.read_state().await.expect("read"), Some(second));
    // The state row is not an entry.
    assert!(reg
        .read_all_entries()
        .await
        .expect("scan")
        .entries
        .is_empty());
}

#[tokio::test]
async fn create_table_is_idempotent() {
    let reg = registry().await;
    assert!(
        !reg.create_table_if_absent().await.expect("second create"),
        "the table already existed"
    );
}

/// A host of the most labels, `{first}.{first}1.{first}2…`: three enclosing hosts.
fn deep(first: &str) -> String {
    use gateway_render::check::MAX_HOST_LABELS;
    std::iter::once(first.to_string())
        .chain((1..MAX_HOST_LABELS).map(|i| format!("{first}{i}")))
        .collect::<Vec<_>>()
        .join(".")
}

/// The most path prefixes an entry may have, `/{p}0`…
fn most_prefixes(p: &str) -> Vec<String> {
    use gateway_render::check::MAX_PATH_PREFIXES;
    (0..MAX_PATH_PREFIXES).map(|i| format!("/{p}{i}")).collect()
}

/// A registry with billing granted to a stack's account, and that stack's resource.
async fn registry_with_stack() -> (DynamoRegistry, gateway_adapters::registry::Actor) {
    let reg = registry().await;
    let account = "222222222222";
    reg.tenancy()
        .grant("billing", account, "test")
        .await
        .expect("grant");
    let stack = gateway_adapters::registry::Actor::stack(
        account,
        "arn:aws:cloudformation:us-east-1:222222222222:stack/big/1",
        "Expose",
    );
    (reg, stack)
}

/// The largest entry fits one transaction even in the worst case: a stack (so the grant is
/// checked in the transaction) moving between two hosts of the most labels, each enclosing host
/// rewritten, while swapping every prefix: entry + grant + two host guards + 2 * 3 enclosing
/// hosts + 45 claims + 45 releases = 100, DynamoDB's limit.
#[tokio::test]
async fn the_most_prefixes_an_entry_may_claim_fit_one_transaction() {
    use gateway_render::check::MAX_PATH_PREFIXES;
    let (reg, stack) = registry_with_stack().await;
    let (old_host, new_host) = (deep("a"), deep("e"));
    let first = most_prefixes("a");
    let second = most_prefixes("b");
    reg.register_as(&entry("billing", "big", &old_host, &refs(&first)), &stack)
        .await
        .expect("the most prefixes on the deepest host");
    reg.register_as(&entry("billing", "big", &old_host, &refs(&second)), &stack)
        .await
        .expect("swap all on one host");
    reg.register_as(&entry("billing", "big", &new_host, &refs(&first)), &stack)
        .await
        .expect("swap all and move between the deepest hosts");
    let rows = rows(&reg).await;
    let new_pk = format!("HOST#{new_host}.api.example.com");
    assert_eq!(
        rows.iter()
            .filter(|(_, sk)| sk.starts_with("PATH#"))
            .count(),
        MAX_PATH_PREFIXES
    );
    assert!(rows
        .iter()
        .all(|(pk, sk)| !sk.starts_with("PATH#") || *pk == new_pk));
    assert_eq!(
        reg.deregister_as("billing/big", &stack)
            .await
            .expect("deregister"),
        DeregisterOutcome::Deleted
    );
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// What the guard of host `x` records as lying inside it, sorted.
async fn inside_x(reg: &DynamoRegistry) -> Vec<String> {
    let guard = row(reg, "HOST#x.api.example.com", "HOST").await;
    let mut inside: Vec<String> = guard
        .and_then(|g| g.get("under").and_then(|v| v.as_ss().ok()).cloned())
        .unwrap_or_default();
    inside.sort();
    inside
}

/// Moving a service between a host and its subdomain touches one guard row for two reasons
/// (the old host and the new one's enclosing host): it is written once, and the record of what
/// lies inside each host follows the move.
#[tokio::test]
async fn moving_between_a_host_and_its_subdomain_keeps_the_nesting_record() {
    let reg = registry().await;
    reg.register(&entry("billing", "api", "a.x", &["/api"]))
        .await
        .expect("a.x");
    assert_eq!(inside_x(&reg).await, ["a.x.api.example.com billing"]);
    reg.register(&entry("billing", "api", "x", &["/api"]))
        .await
        .expect("a.x to x");
    assert!(inside_x(&reg).await.is_empty());
    let sibling = entry("payments", "pay", "b.x", &["/pay"]);
    assert_eq!(
        refusal(&reg, &sibling, "x is billing's now").await,
        "host x.api.example.com (enclosing b.x.api.example.com) is held by billing"
    );
    reg.register(&entry("billing", "api", "a.x", &["/api"]))
        .await
        .expect("x back to a.x");
    assert_eq!(inside_x(&reg).await, ["a.x.api.example.com billing"]);
    // x was released by the move, so payments may take a sibling of a.x but not x itself.
    reg.register(&sibling).await.expect("a sibling");
    let root = entry("payments", "root", "x", &["/root"]);
    assert_eq!(
        refusal(&reg, &root, "x encloses billing's a.x").await,
        "host a.x.api.example.com (inside x.api.example.com) is held by billing"
    );
    assert_eq!(
        reg.deregister("billing/api").await.expect("deregister"),
        DeregisterOutcome::Deleted
    );
    assert_eq!(inside_x(&reg).await, ["b.x.api.example.com payments"]);
}

/// The same worst-case move changing the backend and the canary's too needs 104 actions: it is
/// refused before anything is written, naming the split, and its two halves each fit.
#[tokio::test]
async fn a_move_that_also_changes_backends_past_100_actions_is_refused_and_fits_in_two_steps() {
    let (reg, stack) = registry_with_stack().await;
    let with_canary = |mut e: gateway_render::Entry, backend: &str| {
        e.canary = Some(gateway_render::Canary {
            backend: backend.into(),
            weight: 10,
            header: None,
        });
        e
    };
    let (first, second) = (most_prefixes("a"), most_prefixes("b"));
    let old = with_canary(
        entry("billing", "big", &deep("a"), &refs(&first)),
        "https://canary.billing.internal.example",
    );
    reg.register_as(&old, &stack)
        .await
        .expect("on the old host");
    let before = rows(&reg).await;
    let mut moved = with_canary(
        entry("billing", "big", &deep("e"), &refs(&second)),
        "https://canary-next.billing.internal.example",
    );
    moved.backend = "https://next.billing.internal.example".into();
    match reg.register_as(&moved, &stack).await {
        Err(RegistryError::Rejected(r)) => assert_eq!(
            r.to_string(),
            "backend: this change needs 104 writes in one DynamoDB transaction, more than the 100 it allows: it changes backends while changing many path prefixes or the host. Register it in two steps: first the new backends (backend, canary.backend, mirror backends) with the current host and routes, then the new host and routes"
        ),
        other => panic!("expected the refusal, got {other:?}"),
    }
    assert_eq!(rows(&reg).await, before, "nothing was written");
    let backends_first = gateway_render::Entry {
        backend: moved.backend.clone(),
        canary: moved.canary.clone(),
        ..old.clone()
    };
    reg.register_as(&backends_first, &stack)
        .await
        .expect("the backends alone");
    reg.register_as(&moved, &stack)
        .await
        .expect("then the host and routes");
    assert_eq!(stored_entry(&reg, "billing/big").await.entry, moved);
    let claims = reg.backend_claims().claims().await.expect("claims");
    let used: Vec<(&str, Vec<&str>)> = claims
        .iter()
        .map(|c| {
            (
                c.authority.as_str(),
                c.users.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        used,
        [
            ("big.billing.internal.example:8443", vec![]),
            (
                "canary-next.billing.internal.example:443",
                vec!["billing/big"]
            ),
            ("canary.billing.internal.example:443", vec![]),
            ("next.billing.internal.example:443", vec!["billing/big"]),
        ]
    );
}
