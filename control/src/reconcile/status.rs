//! The per-entry status rows a decided run brings in line (docs/design.md#entry-status), and the
//! digest that lets an unchanged run skip them.
//!
//! The rows a run would write depend only on the published version and hash, each registered
//! entry's revision, and per quarantined entry its stage and what is kept (a reason that changes
//! alone is not rewritten). The digest covers exactly those. After a run brings the rows in line
//! it records the digest; an unchanged run whose digest is the recorded one neither reads nor
//! writes a row. The digest is cleared before any row is written, so rows written only in part
//! never pass for in line; the reconciler is the rows' only writer, one run at a time.

use super::{now, Outcome, Quarantined, ReconcileError};
use gateway_adapters::registry::{EntryStatus, PublishedState, QuarantineStatus, Registry};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use tracing::debug;

/// What a decided run's status rows are brought in line with, gathered by the run.
#[derive(Debug, Default)]
pub(super) struct StatusBasis {
    /// Every registered entry's revision (an unreadable row counts as revision 0).
    pub revisions: BTreeMap<String, u64>,
    /// The recorded publish an unchanged run stands on (read by the run, or adopted by it).
    pub unchanged_on: Option<PublishedState>,
}

/// After a publish or an unchanged run every registered entry not quarantined is published at
/// its registered revision; a quarantined one records revision, stage and reason. Only rows that
/// change are written; none are read when the digest shows nothing can have changed.
pub(super) async fn record_statuses<R: Registry>(
    registry: &R,
    outcome: &Outcome,
    quarantined: &[Quarantined],
    basis: &StatusBasis,
) -> Result<(), ReconcileError> {
    let Some((version_id, hash)) = published(outcome, basis) else {
        return Ok(());
    };
    let quarantined: BTreeMap<&str, &Quarantined> =
        quarantined.iter().map(|q| (q.id.as_str(), q)).collect();
    let digest = statuses_digest(version_id, hash, &basis.revisions, &quarantined);
    if matches!(outcome, Outcome::Unchanged { .. })
        && registry.read_statuses_digest().await?.as_deref() == Some(digest.as_str())
    {
        debug!("status rows already in line with this run; not read");
        return Ok(());
    }
    let old = registry.read_statuses().await?;
    let rows = changed_rows(&old, version_id, hash, &basis.revisions, &quarantined);
    if !rows.is_empty() {
        registry.record_statuses_digest(None).await?;
        registry.write_statuses(&rows).await?;
    }
    registry.record_statuses_digest(Some(&digest)).await?;
    Ok(())
}

/// The published version and hash the rows are brought in line with: the run's own publish, or
/// the recorded one an unchanged run stands on. Other outcomes write no rows.
fn published<'a>(outcome: &'a Outcome, basis: &'a StatusBasis) -> Option<(&'a str, &'a str)> {
    match outcome {
        Outcome::Published {
            version_id, hash, ..
        } => Some((version_id, hash)),
        Outcome::Unchanged { hash } => basis
            .unchanged_on
            .as_ref()
            .filter(|s| &s.hash == hash)
            .map(|s| (s.version_id.as_str(), s.hash.as_str())),
        _ => None,
    }
}

/// The rows that differ from `old` once every registered entry is brought in line.
fn changed_rows(
    old: &BTreeMap<String, EntryStatus>,
    version_id: &str,
    hash: &str,
    revisions: &BTreeMap<String, u64>,
    quarantined: &BTreeMap<&str, &Quarantined>,
) -> Vec<EntryStatus> {
    let at = now();
    let mut rows = Vec::new();
    for (id, revision) in revisions {
        let before = old.get(id).cloned().unwrap_or_else(|| EntryStatus {
            id: id.clone(),
            ..Default::default()
        });
        let mut next = before.clone();
        match quarantined.get(id.as_str()) {
            Some(q) => {
                let same = before.quarantine.as_ref().filter(|b| {
                    b.revision == *revision
                        && b.stage == q.stage.to_string()
                        && b.kept == q.kept.as_str()
                });
                next.quarantine = Some(QuarantineStatus {
                    revision: *revision,
                    stage: q.stage.to_string(),
                    reason: q.reason.clone(),
                    kept: q.kept.as_str().to_string(),
                    since: same.map(|b| b.since).unwrap_or(at),
                });
                if let Some(b) = same {
                    // The stored (possibly truncated) reason stands while nothing else changed.
                    if let Some(n) = next.quarantine.as_mut() {
                        n.reason = b.reason.clone();
                    }
                }
            }
            None => {
                next.quarantine = None;
                if before.revision_published != Some(*revision) {
                    next.revision_published = Some(*revision);
                    next.version_id = Some(version_id.to_string());
                    next.hash = Some(hash.to_string());
                    next.published_at = Some(at);
                }
            }
        }
        if next != before {
            rows.push(next);
        }
    }
    rows
}

/// sha256 over everything [`changed_rows`] decides by, each field length-prefixed so no two
/// inputs read alike; `v1:` names the layout, so a new one never matches an old digest.
fn statuses_digest(
    version_id: &str,
    hash: &str,
    revisions: &BTreeMap<String, u64>,
    quarantined: &BTreeMap<&str, &Quarantined>,
) -> String {
    let mut sha = Sha256::new();
    let mut field = |bytes: &[u8]| {
        sha.update((bytes.len() as u64).to_le_bytes());
        sha.update(bytes);
    };
    field(version_id.as_bytes());
    field(hash.as_bytes());
    for (id, revision) in revisions {
        field(id.as_bytes());
        field(&revision.to_le_bytes());
        match quarantined.get(id.as_str()) {
            Some(q) => {
                field(b"quarantined");
                field(q.stage.to_string().as_bytes());
                field(q.kept.as_str().as_bytes());
            }
            None => field(b"published"),
        }
    }
    let hex: String = sha.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("v1:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::{Kept, Stage};
    use gateway_adapters::registry::{RegistryError, RegistrySnapshot, RenderRecord, Verdict};
    use gateway_render::bounds::Totals;
    use std::sync::Mutex;

    /// Status rows and the digest in memory, with every call to them noted in order.
    #[derive(Default)]
    struct Rows {
        rows: Mutex<BTreeMap<String, EntryStatus>>,
        digest: Mutex<Option<String>>,
        calls: Mutex<Vec<String>>,
        fail_writes: bool,
    }

    impl Rows {
        fn note(&self, call: String) {
            self.calls.lock().expect("calls").push(call);
        }

        fn take_calls(&self) -> Vec<String> {
            std::mem::take(&mut *self.calls.lock().expect("calls"))
        }
    }

    impl Registry for Rows {
        async fn read_all_entries(&self) -> Result<RegistrySnapshot, RegistryError> {
            unreachable!("status rows need no entries")
        }
        async fn read_totals(&self) -> Result<Option<Totals>, RegistryError> {
            unreachable!("status rows need no totals")
        }
        async fn record_totals(&self, _: &Totals) -> Result<(), RegistryError> {
            unreachable!("status rows need no totals")
        }
        async fn read_state(&self) -> Result<Option<PublishedState>, RegistryError> {
            unreachable!("the run hands over the state it stands on")
        }
        async fn record_published(
            &self,
            _: Option<&PublishedState>,
            _: &PublishedState,
        ) -> Result<(), RegistryError> {
            unreachable!("status rows never record a publish")
        }
        async fn read_statuses(&self) -> Result<BTreeMap<String, EntryStatus>, RegistryError> {
            self.note("read rows".into());
            Ok(self.rows.lock().expect("rows").clone())
        }
        async fn write_statuses(&self, rows: &[EntryStatus]) -> Result<(), RegistryError> {
            self.note(format!("write {} rows", rows.len()));
            if self.fail_writes {
                return Err(RegistryError::Retryable("injected: throttled".into()));
            }
            let mut stored = self.rows.lock().expect("rows");
            for row in rows {
                stored.insert(row.id.clone(), row.clone());
            }
            Ok(())
        }
        async fn read_statuses_digest(&self) -> Result<Option<String>, RegistryError> {
            self.note("read digest".into());
            Ok(self.digest.lock().expect("digest").clone())
        }
        async fn record_statuses_digest(&self, digest: Option<&str>) -> Result<(), RegistryError> {
            self.note(match digest {
                Some(_) => "record digest".into(),
                None => "clear digest".into(),
            });
            *self.digest.lock().expect("digest") = digest.map(str::to_string);
            Ok(())
        }
        async fn read_render_record(&self) -> Result<Option<RenderRecord>, RegistryError> {
            unreachable!("status rows need no render record")
        }
        async fn record_render(&self, _: &RenderRecord) -> Result<(), RegistryError> {
            unreachable!("status rows need no render record")
        }
        async fn read_pending(&self) -> Result<Option<String>, RegistryError> {
            unreachable!("status rows need no pending publish")
        }
        async fn record_pending(&self, _: &str) -> Result<(), RegistryError> {
            unreachable!("status rows need no pending publish")
        }
        async fn read_verdicts(&self) -> Result<Vec<Verdict>, RegistryError> {
            unreachable!("status rows need no verdicts")
        }
        async fn record_verdicts(&self, _: &[Verdict]) -> Result<(), RegistryError> {
            unreachable!("status rows need no verdicts")
        }
        async fn read_rollouts(&self) -> Result<gateway_adapters::registry::rollout::Rollouts, RegistryError> {
            unreachable!("status rows need no rollouts")
        }
        async fn record_rollouts(&self, _: &gateway_adapters::registry::rollout::Rollouts) -> Result<(), RegistryError> {
            unreachable!("status rows need no rollouts")
        }
    }

    fn basis(revisions: &[(&str, u64)], on: &str) -> StatusBasis {
        StatusBasis {
            revisions: revisions.iter().map(|(i, r)| (i.to_string(), *r)).collect(),
            unchanged_on: Some(PublishedState {
                version_id: on.into(),
                hash: "sha256:h".into(),
                published_at: 1,
            }),
        }
    }

    fn published_as(version: &str) -> Outcome {
        Outcome::Published {
            version_id: version.into(),
            hash: "sha256:h".into(),
            routes: 2,
        }
    }

    fn unchanged() -> Outcome {
        Outcome::Unchanged {
            hash: "sha256:h".into(),
        }
    }

    /// The calls one `record_statuses` made, in order.
    async fn calls(
        reg: &Rows,
        outcome: &Outcome,
        quarantined: &[Quarantined],
        basis: &StatusBasis,
    ) -> Vec<String> {
        record_statuses(reg, outcome, quarantined, basis)
            .await
            .expect("statuses recorded");
        reg.take_calls()
    }

    const SKIPPED: [&str; 1] = ["read digest"];
    const COMPARED_WROTE_ONE: [&str; 5] = [
        "read digest",
        "read rows",
        "clear digest",
        "write 1 rows",
        "record digest",
    ];

    #[tokio::test]
    async fn an_unchanged_run_on_the_recorded_digest_neither_reads_nor_writes_a_row() {
        let reg = Rows::default();
        let two = basis(&[("a/x", 1), ("b/y", 1)], "v1");
        assert_eq!(
            calls(&reg, &published_as("v1"), &[], &two).await,
            ["read rows", "clear digest", "write 2 rows", "record digest"]
        );
        assert_eq!(calls(&reg, &unchanged(), &[], &two).await, SKIPPED);

        // A new revision with the same render: compared in full, one row written.
        let bumped = basis(&[("a/x", 1), ("b/y", 2)], "v1");
        assert_eq!(
            calls(&reg, &unchanged(), &[], &bumped).await,
            COMPARED_WROTE_ONE
        );
        let rows = reg.rows.lock().expect("rows").clone();
        assert_eq!(rows["b/y"].revision_published, Some(2));

        // A quarantine that appears: compared in full; then in line again.
        let q = [Quarantined {
            id: "a/x".into(),
            team: "a".into(),
            stage: Stage::Render,
            reason: "shadowed".into(),
            kept: Kept::Previous,
        }];
        assert_eq!(
            calls(&reg, &unchanged(), &q, &bumped).await,
            COMPARED_WROTE_ONE
        );
        assert_eq!(calls(&reg, &unchanged(), &q, &bumped).await, SKIPPED);

        // No digest recorded (a table from before digests): compared in full (the rows are in
        // line, so none is written), then recorded.
        *reg.digest.lock().expect("digest") = None;
        assert_eq!(
            calls(&reg, &unchanged(), &q, &bumped).await,
            ["read digest", "read rows", "record digest"]
        );
        assert_eq!(calls(&reg, &unchanged(), &q, &bumped).await, SKIPPED);

        // The quarantine lifted: compared in full.
        assert_eq!(
            calls(&reg, &unchanged(), &[], &bumped).await,
            COMPARED_WROTE_ONE
        );
    }

    #[tokio::test]
    async fn rows_already_in_line_are_not_rewritten_and_a_publish_always_compares() {
        let reg = Rows::default();
        let two = basis(&[("a/x", 1), ("b/y", 1)], "v1");
        calls(&reg, &published_as("v1"), &[], &two).await;
        // Another version, same revisions: the rows stand (they name the bundle each revision
        // first went live in), only the digest moves on.
        assert_eq!(
            calls(&reg, &published_as("v2"), &[], &two).await,
            ["read rows", "record digest"]
        );
        let rows = reg.rows.lock().expect("rows").clone();
        assert_eq!(rows["a/x"].version_id.as_deref(), Some("v1"));
        // The unchanged run on v1's state no longer matches the digest recorded for v2.
        assert_eq!(
            calls(&reg, &unchanged(), &[], &two).await,
            ["read digest", "read rows", "record digest"]
        );
    }

    #[tokio::test]
    async fn a_failed_row_write_leaves_no_digest_behind() {
        let reg = Rows {
            fail_writes: true,
            ..Default::default()
        };
        *reg.digest.lock().expect("digest") = Some("v1:from-an-earlier-run".into());
        let two = basis(&[("a/x", 1), ("b/y", 1)], "v1");
        let failed = record_statuses(&reg, &unchanged(), &[], &two).await;
        assert!(failed.is_err(), "{failed:?}");
        assert_eq!(
            reg.take_calls(),
            ["read digest", "read rows", "clear digest", "write 2 rows"]
        );
        assert_eq!(*reg.digest.lock().expect("digest"), None);
    }

    #[tokio::test]
    async fn runs_that_publish_nothing_and_unchanged_runs_on_another_hash_touch_no_row() {
        let reg = Rows::default();
        let one = basis(&[("a/x", 1)], "v1");
        let held = Outcome::HeldDrift {
            live_hash: None,
            recorded_hash: None,
        };
        assert!(calls(&reg, &held, &[], &one).await.is_empty());
        let other = Outcome::Unchanged {
            hash: "sha256:other".into(),
        };
        assert!(calls(&reg, &other, &[], &one).await.is_empty());
    }

    fn quarantined(id: &str, stage: Stage, kept: Kept, reason: &str) -> Quarantined {
        Quarantined {
            id: id.to_string(),
            team: id.split('/').next().unwrap_or_default().to_string(),
            stage,
            reason: reason.to_string(),
            kept,
        }
    }

    fn digest(version: &str, revisions: &[(&str, u64)], q: &[&Quarantined]) -> String {
        let revisions = revisions.iter().map(|(i, r)| (i.to_string(), *r)).collect();
        let q = q.iter().map(|q| (q.id.as_str(), *q)).collect();
        statuses_digest(version, "sha256:h", &revisions, &q)
    }

    #[test]
    fn the_digest_changes_with_every_input_the_rows_depend_on_and_not_with_a_reason() {
        let base = [("a/x", 1), ("b/y", 3)];
        let q = quarantined("b/y", Stage::Render, Kept::LeftOut, "why");
        let first = digest("v1", &base, &[&q]);
        assert_eq!(first, digest("v1", &base, &[&q]), "deterministic");
        assert!(first.starts_with("v1:"), "{first}");
        let others = [
            digest("v2", &base, &[&q]),
            digest("v1", &[("a/x", 2), ("b/y", 3)], &[&q]),
            digest("v1", &[("b/y", 3)], &[&q]),
            digest("v1", &[("a/x", 1), ("b/y", 3), ("c/z", 1)], &[&q]),
            digest("v1", &base, &[]),
            digest(
                "v1",
                &base,
                &[&quarantined("b/y", Stage::Registry, Kept::LeftOut, "why")],
            ),
            digest(
                "v1",
                &base,
                &[&quarantined("b/y", Stage::Render, Kept::Previous, "why")],
            ),
            digest(
                "v1",
                &base,
                &[&quarantined("a/x", Stage::Render, Kept::LeftOut, "why")],
            ),
        ];
        for (i, other) in others.iter().enumerate() {
            assert_ne!(&first, other, "variation {i}");
        }
        let reworded = quarantined("b/y", Stage::Render, Kept::LeftOut, "other words");
        assert_eq!(first, digest("v1", &base, &[&reworded]));
    }
}
