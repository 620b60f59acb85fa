//! Per-entry status rows (`STATUS#{team}/{service}` / `STATUS`): which revision of an entry the
//! reconciler published, in which bundle, and whether it is quarantined and why
//! (docs/design.md#entry-status). Written only by the reconciler, only when they change, in
//! batches; the table stream's filter (`ENTRY#` keys) never wakes a run for them.
//!
//! Beside them, `STATE` / `STATUSES` holds a digest of what the rows were last brought in line
//! with, so an unchanged run can tell without reading them all.

use super::error::{build_error, from_sdk, Cause};
use super::keys::{self, get_n, get_s, Item};
use super::pages::scan_prefix;
use super::{DynamoRegistry, RegistryError, RegistryReader};
use crate::retry::Backoff;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::task::{JoinError, JoinSet};

pub const STATUS_PREFIX: &str = "STATUS#";
pub const STATUS_SK: &str = "STATUS";
/// Longest reason stored (Envoy's stderr can be long); the full text is under `failed/`.
pub const MAX_REASON_BYTES: usize = 8 * 1024;

/// The digest row's sort key, under the reconciler's `STATE` partition key (its role may write
/// only there and under `STATUS#`).
pub const STATUS_DIGEST_SK: &str = "STATUSES";
const ATTR_DIGEST: &str = "digest";

/// Puts per `BatchWriteItem` request: DynamoDB's limit.
const PUTS_PER_BATCH: usize = 25;
/// Batch requests in flight at once: enough to hide the round trips of a first publish (400
/// batches at 10k entries), few enough that a fresh on-demand table does not throttle them all.
const BATCHES_IN_FLIGHT: usize = 8;
/// Sends of one batch while DynamoDB leaves some of its puts unprocessed (throttling): the first
/// at once, then a jittered wait from 50 ms doubling up to 2 s (about 5 s in all).
const UNPROCESSED_SENDS: Backoff = Backoff {
    attempts: 8,
    first: Duration::from_millis(50),
    factor: 2,
    cap: Duration::from_secs(2),
    jitter: true,
};

/// Why and since which revision an entry is quarantined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineStatus {
    /// The registered revision that was set aside.
    pub revision: u64,
    pub stage: String,
    pub reason: String,
    /// `previous` (its live version is still served) or `left-out`.
    pub kept: String,
    pub since: u64,
}

/// One entry's status row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryStatus {
    pub id: String,
    /// The registered revision last published, and the bundle it was first published in.
    pub revision_published: Option<u64>,
    pub version_id: Option<String>,
    pub hash: Option<String>,
    pub published_at: Option<u64>,
    pub quarantine: Option<QuarantineStatus>,
}

/// Where an entry stands, from its registered revision and its status row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryState {
    Pending,
    Published,
    Quarantined,
}

impl EntryState {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Pending => "pending",
            EntryState::Published => "published",
            EntryState::Quarantined => "quarantined",
        }
    }
}

impl EntryStatus {
    /// `quarantined` when the registered revision is the one set aside, `published` when it is
    /// the one published, else `pending` (the next run has not decided yet).
    pub fn state(&self, registered: u64) -> EntryState {
        if self.quarantine.as_ref().map(|q| q.revision) == Some(registered) {
            EntryState::Quarantined
        } else if self.revision_published == Some(registered) {
            EntryState::Published
        } else {
            EntryState::Pending
        }
    }

    pub fn to_json(&self, registered: Option<u64>) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "state": registered.map(|r| self.state(r).as_str()),
            "revision_registered": registered,
            "revision_published": self.revision_published,
            "version_id": self.version_id,
            "hash": self.hash,
            "published_at": self.published_at,
            "quarantine": self.quarantine.as_ref().map(|q| serde_json::json!({
                "revision": q.revision, "stage": q.stage, "reason": q.reason,
                "kept": q.kept, "since": q.since,
            })),
        })
    }

    fn to_item(&self) -> Item {
        let mut item = keys::key(format!("{STATUS_PREFIX}{}", self.id), STATUS_SK);
        if let Some(r) = self.revision_published {
            item.insert("revision_published".into(), keys::n(r));
        }
        for (name, v) in [("version_id", &self.version_id), ("hash", &self.hash)] {
            if let Some(v) = v {
                item.insert(name.into(), keys::s(v.as_str()));
            }
        }
        if let Some(t) = self.published_at {
            item.insert("published_at".into(), keys::n(t));
        }
        if let Some(q) = &self.quarantine {
            let mut reason = q.reason.clone();
            if reason.len() > MAX_REASON_BYTES {
                let mut cut = MAX_REASON_BYTES;
                while !reason.is_char_boundary(cut) {
                    cut -= 1;
                }
                reason.truncate(cut);
                reason.push_str(" … (truncated; full text under failed/quarantine/)");
            }
            item.insert("q_revision".into(), keys::n(q.revision));
            item.insert("q_stage".into(), keys::s(q.stage.as_str()));
            item.insert("q_reason".into(), keys::s(reason));
            item.insert("q_kept".into(), keys::s(q.kept.as_str()));
            item.insert("q_since".into(), keys::n(q.since));
        }
        item
    }

    fn from_item(item: &Item) -> Option<EntryStatus> {
        let id = get_s(item, keys::PK)?
            .strip_prefix(STATUS_PREFIX)?
            .to_string();
        let quarantine = get_n(item, "q_revision").map(|revision| QuarantineStatus {
            revision,
            stage: get_s(item, "q_stage").unwrap_or_default().to_string(),
            reason: get_s(item, "q_reason").unwrap_or_default().to_string(),
            kept: get_s(item, "q_kept").unwrap_or_default().to_string(),
            since: get_n(item, "q_since").unwrap_or(0),
        });
        Some(EntryStatus {
            id,
            revision_published: get_n(item, "revision_published"),
            version_id: get_s(item, "version_id").map(str::to_string),
            hash: get_s(item, "hash").map(str::to_string),
            published_at: get_n(item, "published_at"),
            quarantine,
        })
    }
}

impl RegistryReader {
    /// Every status row, by id.
    pub async fn statuses(&self) -> Result<BTreeMap<String, EntryStatus>, RegistryError> {
        let items = scan_prefix(
            self.client(),
            self.table(),
            STATUS_PREFIX,
            &format!("scanning table {} for status rows", self.table()),
        )
        .await?;
        Ok(items
            .iter()
            .filter_map(EntryStatus::from_item)
            .map(|s| (s.id.clone(), s))
            .collect())
    }

    /// One entry's status row.
    pub async fn status(&self, id: &str) -> Result<Option<EntryStatus>, RegistryError> {
        let out = self
            .client()
            .get_item()
            .table_name(self.table())
            .consistent_read(true)
            .set_key(Some(keys::key(format!("{STATUS_PREFIX}{id}"), STATUS_SK)))
            .send()
            .await
            .map_err(|e| from_sdk(&format!("reading the status of {id}"), e))?;
        Ok(out.item().and_then(EntryStatus::from_item))
    }
}

impl DynamoRegistry {
    /// Every status row, by id.
    pub async fn statuses(&self) -> Result<BTreeMap<String, EntryStatus>, RegistryError> {
        self.reader().statuses().await
    }

    /// One entry's status row.
    pub async fn status(&self, id: &str) -> Result<Option<EntryStatus>, RegistryError> {
        self.reader().status(id).await
    }

    /// Writes each row (whole-row puts: the reconciler is their only writer), 25 to a
    /// `BatchWriteItem` request with several requests in flight; puts DynamoDB leaves
    /// unprocessed are sent again. When an id appears twice, its last row is the one written.
    /// A failed request ends the write: returning drops the set, which cancels the batches still
    /// in flight (the caller clears the status digest before writing, so a part-write is known).
    pub async fn put_statuses(&self, rows: &[EntryStatus]) -> Result<(), RegistryError> {
        let batches = put_batches(rows)?;
        let total: usize = batches.iter().map(Vec::len).sum();
        let mut in_flight = JoinSet::new();
        let mut unwritten = 0;
        for batch in batches {
            if in_flight.len() == BATCHES_IN_FLIGHT {
                if let Some(done) = in_flight.join_next().await {
                    unwritten += batch_outcome(done)?;
                }
            }
            let (client, table) = (self.client().clone(), self.table().to_string());
            in_flight.spawn(send_batch(client, table, batch));
        }
        while let Some(done) = in_flight.join_next().await {
            unwritten += batch_outcome(done)?;
        }
        if unwritten > 0 {
            return Err(RegistryError::Retryable(
                format!(
                "{unwritten} of {total} status rows in table {} not written: DynamoDB left them \
                 unprocessed through {} sends",
                self.table(),
                UNPROCESSED_SENDS.attempts
            )
                .into(),
            ));
        }
        Ok(())
    }

    /// Records the digest of what the status rows were brought in line with; `None` clears it
    /// (the row stays, without a digest).
    pub async fn put_statuses_digest(&self, digest: Option<&str>) -> Result<(), RegistryError> {
        let attributes = digest.map(|d| (ATTR_DIGEST, keys::s(d)));
        self.put_state_row(
            STATUS_DIGEST_SK,
            attributes,
            "recording the status rows' digest",
        )
        .await
    }

    /// Replaces the reconciler's `STATE` / `sk` row with these attributes.
    pub(super) async fn put_state_row(
        &self,
        sk: &str,
        attributes: impl IntoIterator<Item = (&str, AttributeValue)>,
        what: &str,
    ) -> Result<(), RegistryError> {
        let mut row = keys::key(keys::STATE_PK.to_string(), sk);
        row.extend(attributes.into_iter().map(|(k, v)| (k.to_string(), v)));
        self.client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(row))
            .send()
            .await
            .map_err(|e| from_sdk(what, e))?;
        Ok(())
    }
}

impl RegistryReader {
    /// The digest of what the status rows were last brought in line with, if one is recorded.
    pub async fn statuses_digest(&self) -> Result<Option<String>, RegistryError> {
        let row = self
            .get_item(keys::STATE_PK.to_string(), STATUS_DIGEST_SK)
            .await?;
        Ok(row
            .as_ref()
            .and_then(|r| get_s(r, ATTR_DIGEST))
            .map(str::to_string))
    }
}

/// The rows as batches of puts, one put per id: DynamoDB refuses a batch that names a key twice.
/// The last row given for an id wins, as it would with one put after another.
fn put_batches(rows: &[EntryStatus]) -> Result<Vec<Vec<WriteRequest>>, RegistryError> {
    let last: BTreeMap<&str, &EntryStatus> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let puts = last
        .into_values()
        .map(|row| {
            let put = PutRequest::builder()
                .set_item(Some(row.to_item()))
                .build()
                .map_err(|e| build_error(&format!("the status-row put of {}", row.id), e))?;
            Ok(WriteRequest::builder().put_request(put).build())
        })
        .collect::<Result<Vec<_>, RegistryError>>()?;
    Ok(puts.chunks(PUTS_PER_BATCH).map(<[_]>::to_vec).collect())
}

/// Sends one batch until DynamoDB has processed all of it or the sends run out; returns how many
/// puts it still left unprocessed.
async fn send_batch(
    client: aws_sdk_dynamodb::Client,
    table: String,
    mut puts: Vec<WriteRequest>,
) -> Result<usize, RegistryError> {
    for attempt in UNPROCESSED_SENDS.attempts() {
        UNPROCESSED_SENDS.pause(attempt).await;
        let sending = puts.len();
        let out = client
            .batch_write_item()
            .request_items(&table, std::mem::take(&mut puts))
            .send()
            .await
            .map_err(|e| {
                from_sdk(
                    &format!("writing {sending} status rows to table {table}"),
                    e,
                )
            })?;
        puts = out
            .unprocessed_items
            .and_then(|mut left| left.remove(&table))
            .unwrap_or_default();
        if puts.is_empty() {
            return Ok(0);
        }
    }
    Ok(puts.len())
}

/// A finished batch's unprocessed count; a panic in it is the caller's panic.
fn batch_outcome(
    done: Result<Result<usize, RegistryError>, JoinError>,
) -> Result<usize, RegistryError> {
    match done {
        Ok(outcome) => outcome,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(RegistryError::Aws(Cause::new(
            format!("a status-row batch did not finish: {e}"),
            e,
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, revision: u64) -> EntryStatus {
        EntryStatus {
            id: id.to_string(),
            revision_published: Some(revision),
            ..Default::default()
        }
    }

    fn pk(put: &WriteRequest) -> String {
        let item = put.put_request().expect("a put").item();
        get_s(item, keys::PK).expect("pk").to_string()
    }

    #[test]
    fn batches_hold_at_most_25_puts_and_never_one_key_twice_and_the_last_row_wins() {
        // 60 ids, each given twice (revision 1, then 2), and once more out of order.
        let mut rows: Vec<EntryStatus> = (0..60).map(|i| row(&format!("t/s{i:02}"), 1)).collect();
        rows.extend((0..60).rev().map(|i| row(&format!("t/s{i:02}"), 2)));
        let batches = put_batches(&rows).expect("batches");
        assert_eq!(
            batches.iter().map(Vec::len).collect::<Vec<_>>(),
            [25, 25, 10]
        );
        let mut seen = std::collections::BTreeSet::new();
        for batch in &batches {
            for put in batch {
                assert!(seen.insert(pk(put)), "{} put twice", pk(put));
                let item = put.put_request().expect("a put").item();
                assert_eq!(get_n(item, "revision_published"), Some(2), "{}", pk(put));
            }
        }
        assert_eq!(seen.len(), 60);
        assert!(put_batches(&[]).expect("none").is_empty());
    }
}
