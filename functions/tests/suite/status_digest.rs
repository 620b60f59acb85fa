//! Status rows across reconcile runs, against moto's server and the real Envoy
//! (docs/design.md#entry-status): a publish brings them in line and records their digest; an
//! unchanged run on that digest neither reads nor writes a row (a row changed behind the
//! reconciler's back stays as it is, which shows it); a new revision, or a table without a
//! digest, compares every row again.

use gateway_testkit::control as support;

use gateway_adapters::registry::{EntryStatus, Registry};
use gateway_control::reconcile::Outcome;
use support::{entry, Harness};

const A: &str = "billing/invoices";
const B: &str = "catalog/products";

async fn status_of(h: &Harness, id: &str) -> EntryStatus {
    h.registry.status(id).await.expect("status").expect("row")
}

/// One run, which must publish: its version id and hash.
async fn publish(h: &Harness) -> (String, String) {
    match h.reconcile().await {
        Outcome::Published {
            version_id, hash, ..
        } => (version_id, hash),
        other => panic!("expected a publish, got {other}"),
    }
}

/// A row no run would write: published at revision 99.
async fn tamper(h: &Harness, id: &str) {
    let row = EntryStatus {
        revision_published: Some(99),
        ..status_of(h, id).await
    };
    h.registry
        .write_statuses(&[row])
        .await
        .expect("tampered row");
}

/// A new revision of an entry whose content is unchanged (the render stays the same).
async fn bump_revision(h: &Harness, id: &str, revision: u64) {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    h.dynamo
        .update_item()
        .table_name(h.registry.table())
        .key("pk", V::S(format!("ENTRY#{id}")))
        .key("sk", V::S("ENTRY".into()))
        .update_expression("SET revision = :r")
        .expression_attribute_values(":r", V::N(revision.to_string()))
        .send()
        .await
        .expect("revision bumped");
}

#[tokio::test]
async fn an_unchanged_run_skips_rows_in_line_and_compares_again_when_anything_differs() {
    let h = Harness::start().await;
    h.register(entry("billing", "invoices", "invoices", &["/invoices"]))
        .await;
    h.register(entry("catalog", "products", "catalog", &["/products"]))
        .await;
    let (version_id, hash) = publish(&h).await;
    for id in [A, B] {
        let row = status_of(&h, id).await;
        assert_eq!(row.revision_published, Some(1), "{id}");
        assert_eq!(row.version_id.as_ref(), Some(&version_id), "{id}");
    }
    let digest = h.registry.read_statuses_digest().await.expect("digest");
    assert!(digest.is_some(), "a publish records the rows' digest");

    // Unchanged, same digest: the rows are neither read nor written.
    tamper(&h, A).await;
    let unchanged = Outcome::Unchanged { hash };
    assert_eq!(h.reconcile().await, unchanged);
    assert_eq!(status_of(&h, A).await.revision_published, Some(99));
    assert_eq!(
        h.registry.read_statuses_digest().await.expect("digest"),
        digest
    );

    // A new revision with the same render: every row compared again.
    bump_revision(&h, B, 2).await;
    assert_eq!(h.reconcile().await, unchanged);
    let b = status_of(&h, B).await;
    assert_eq!(b.revision_published, Some(2));
    assert_eq!(b.version_id.as_ref(), Some(&version_id));
    assert_eq!(status_of(&h, A).await.revision_published, Some(1));
    let bumped = h.registry.read_statuses_digest().await.expect("digest");
    assert!(
        bumped.is_some() && bumped != digest,
        "{bumped:?} after {digest:?}"
    );

    // A table from before digests: compared in full, and the digest recorded.
    tamper(&h, A).await;
    h.registry
        .record_statuses_digest(None)
        .await
        .expect("cleared");
    assert_eq!(h.reconcile().await, unchanged);
    assert_eq!(status_of(&h, A).await.revision_published, Some(1));
    assert_eq!(
        h.registry.read_statuses_digest().await.expect("digest"),
        bumped
    );

    // A publish compares in full too, whatever the digest.
    tamper(&h, A).await;
    let offers = entry("catalog", "products", "catalog", &["/products", "/offers"]);
    h.register(offers).await;
    let (next, _) = publish(&h).await;
    assert_eq!(status_of(&h, A).await.revision_published, Some(1));
    let b = status_of(&h, B).await;
    assert_eq!(b.revision_published, Some(3));
    assert_eq!(b.version_id, Some(next));
}
