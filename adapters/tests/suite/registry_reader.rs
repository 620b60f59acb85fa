//! Registry access without a policy. `RegistryReader`: built from a client and a table alone, it
//! reads what a `DynamoRegistry` wrote, entries, status rows and the published state, and has no
//! method that writes. `StateRow` (what `restore` and `resume` use): the published state alone,
//! recorded under the same condition as the reconciler's.

use gateway_testkit::registry as registry_support;

use gateway_adapters::registry::{
    EntryStatus, PublishedState, PublishedStateRead, Registry, RegistryError, RegistryReader,
    StateRow,
};
use registry_support::{client, invoices_api, moto, registry};

#[tokio::test]
async fn a_reader_without_a_policy_sees_what_the_registry_wrote() {
    let registry = registry().await;
    let reader = RegistryReader::new(client(moto()).await, registry.table());
    assert!(reader.list().await.expect("list").entries.is_empty());
    assert_eq!(reader.read_state().await.expect("state"), None);

    let entry = invoices_api();
    registry.register(&entry).await.expect("register");
    let id = entry.id();
    let stored = reader.get(&id).await.expect("get").expect("registered");
    assert_eq!(stored.entry, entry);
    assert_eq!(stored.revision, 1);
    assert_eq!(reader.list().await.expect("list").entries, vec![stored]);
    assert_eq!(reader.get("billing/nothing").await.expect("get"), None);
    assert!(
        reader.get("not-an-id").await.is_err(),
        "a malformed id is refused, as by the registry"
    );

    let state = PublishedState {
        version_id: "v1".into(),
        hash: "sha256:1".into(),
        published_at: 1_700_000_000,
    };
    registry
        .record_published(None, &state)
        .await
        .expect("record");
    assert_eq!(
        reader.read_state().await.expect("state"),
        Some(state.clone())
    );
    // The operators' read-only commands ask either handle the same way.
    assert_eq!(
        reader.published_state().await.expect("state"),
        registry.published_state().await.expect("state")
    );

    let row = EntryStatus {
        id: id.clone(),
        revision_published: Some(1),
        version_id: Some("v1".into()),
        hash: Some("sha256:1".into()),
        published_at: Some(1_700_000_000),
        ..Default::default()
    };
    registry
        .write_statuses(std::slice::from_ref(&row))
        .await
        .expect("write");
    assert_eq!(reader.status(&id).await.expect("status"), Some(row.clone()));
    assert_eq!(
        reader.statuses().await.expect("statuses").get(&id),
        Some(&row)
    );
    assert_eq!(reader.table(), registry.table());
}

#[tokio::test]
async fn a_state_row_without_a_policy_moves_the_published_state_under_its_condition() {
    let registry = registry().await;
    let row = StateRow::new(client(moto()).await, registry.table());
    let state = |v: &str| PublishedState {
        version_id: v.into(),
        hash: format!("sha256:{v}"),
        published_at: 1_700_000_000,
    };
    assert_eq!(row.published_state().await.expect("state"), None);
    row.record(None, &state("v1")).await.expect("first record");
    assert_eq!(
        registry.read_state().await.expect("state"),
        Some(state("v1")),
        "the registry reads what the state row recorded"
    );
    // A writer that expected no record, or a stale one, loses, as an overlapping run would.
    assert!(matches!(
        row.record(None, &state("v2")).await,
        Err(RegistryError::StateConflict)
    ));
    row.record(Some(&state("v1")), &state("v2"))
        .await
        .expect("record over the expected state");
    assert!(matches!(
        registry
            .record_published(Some(&state("v1")), &state("v3"))
            .await,
        Err(RegistryError::StateConflict)
    ));
    assert_eq!(
        row.published_state().await.expect("state"),
        Some(state("v2"))
    );
}
