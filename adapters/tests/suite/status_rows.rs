//! Status rows against moto's server: written in batches with several in flight, read back whole;
//! and the digest row beside them (docs/design.md#entry-status).

use gateway_testkit::registry as registry_support;

use gateway_adapters::registry::{EntryStatus, QuarantineStatus, Registry};
use registry_support::{registry, row};

/// More rows than the batches in flight at once hold (8 × 25), and not a multiple of 25.
const ROWS: usize = 263;

fn status(i: usize, revision: u64) -> EntryStatus {
    let quarantine = i.is_multiple_of(7).then(|| QuarantineStatus {
        revision: revision + 1,
        stage: "validation (envoy)".into(),
        reason: format!("entry {i} refused\nsecond line"),
        kept: "previous".into(),
        since: 1_700_000_000 + i as u64,
    });
    EntryStatus {
        id: format!("team{}/svc{i:03}", i % 11),
        revision_published: Some(revision),
        version_id: Some(format!("version-{revision}")),
        hash: Some(format!("sha256:{i:064x}")),
        published_at: Some(1_700_000_000 + revision),
        quarantine,
    }
}

#[tokio::test]
async fn every_row_of_a_many_batch_write_reads_back_equal_and_a_rewrite_replaces_rows_whole() {
    let reg = registry().await;
    let first: Vec<EntryStatus> = (0..ROWS).map(|i| status(i, 1)).collect();
    reg.write_statuses(&first).await.expect("first write");
    let stored = reg.read_statuses().await.expect("read");
    assert_eq!(stored.len(), ROWS);
    for row in &first {
        assert_eq!(stored.get(&row.id), Some(row), "{}", row.id);
    }

    // A second write of some rows, one id given twice in the same call (the last one is kept,
    // and no batch names a key twice, which DynamoDB would refuse), rows whole: a quarantine
    // that is gone is gone from the row.
    let mut second: Vec<EntryStatus> = (0..60).map(|i| status(i, 2)).collect();
    second[0].quarantine = None;
    second.push(EntryStatus {
        revision_published: Some(3),
        ..status(5, 3)
    });
    reg.write_statuses(&second).await.expect("second write");
    let stored = reg.read_statuses().await.expect("read again");
    assert_eq!(stored.len(), ROWS);
    let expected = |i: usize| match i {
        0 => EntryStatus {
            quarantine: None,
            ..status(0, 2)
        },
        5 => status(5, 3),
        1..60 => status(i, 2),
        _ => status(i, 1),
    };
    for i in 0..ROWS {
        let want = expected(i);
        assert_eq!(stored.get(&want.id), Some(&want), "{}", want.id);
    }

    reg.write_statuses(&[]).await.expect("nothing to write");
}

#[tokio::test]
async fn the_digest_row_records_clears_and_keeps_clear_of_the_state_row() {
    let reg = registry().await;
    assert_eq!(reg.read_statuses_digest().await.expect("none yet"), None);
    reg.record_statuses_digest(Some("v1:abc"))
        .await
        .expect("record");
    assert_eq!(
        reg.read_statuses_digest().await.expect("read").as_deref(),
        Some("v1:abc")
    );
    reg.record_statuses_digest(None).await.expect("clear");
    assert_eq!(reg.read_statuses_digest().await.expect("cleared"), None);
    // Its own row, under the reconciler's STATE key: no published state appears, and the
    // status-row scan does not see it.
    assert_eq!(reg.read_state().await.expect("state"), None);
    assert!(row(&reg, "STATE", "STATUSES").await.is_some());
    assert!(reg.read_statuses().await.expect("statuses").is_empty());
}
