//! Read-only registry access (`RegistryReader`): built from a client and a table alone, no
//! policy, it reads what a `DynamoRegistry` wrote, entries, status rows and the published state,
//! and has no method that writes.

mod registry_support;

use gateway_adapters::registry::{
    EntryStatus, PublishedState, PublishedStateRead, Registry, RegistryReader,
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
