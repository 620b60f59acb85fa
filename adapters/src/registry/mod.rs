//! The registry: entries and the guard rows that keep teams apart, in one DynamoDB table.
//!
//! The reconciler's reads and its state record sit behind [`Registry`], so a reconcile run can
//! be tested against a wrapper that injects faults; registration itself is [`DynamoRegistry`]'s
//! own business (`register`, `deregister`, `list`); grants and owners (`grant`, `revoke`,
//! `grants`, `adopt`) are [`Tenancy`]'s, and the operators' side of backend claims (`share`,
//! `unshare`, `migrate`) is [`BackendClaims`]': rows the reconciler never reads.

mod backend;
mod backend_claims;
mod dynamo;
mod error;
mod host;
mod keys;
mod migrate;
mod owner;
mod pages;
mod pending;
mod plan;
mod state;
pub mod proxies;
mod render_record;
pub mod rollout;
mod rollout_rows;
mod status;
mod table;
mod tenancy;
mod totals;
mod verdicts;
mod write;

pub use backend::{parse_authority, BackendClaim};
pub use backend_claims::{BackendClaims, MigrationReport, Shared};
pub use dynamo::{DynamoRegistry, RegistryReader, DEFAULT_PUBLISH_WAIT_SECONDS};
pub use error::{Cause, RegistryError};
pub use migrate::{Expect, Migration};
pub use owner::{Actor, Owner};
pub use proxies::{IgnoredRow, ProxyReport, ProxyRows, ProxyTable};
pub use render_record::{RenderRecord, RENDER_RECORD_SK};
pub use status::{EntryState, EntryStatus, QuarantineStatus};
pub use state::StateRow;
pub use table::create_table_if_absent;
pub use tenancy::{is_account_id, Grant, Tenancy};
pub use pending::PENDING_SK;
pub use totals::TOTALS_SK;
pub use verdicts::{Verdict, VERDICTS_SK};

use gateway_render::Entry;
use std::future::Future;

/// One entry as stored: the entry, its revision (1 on first registration, +1 per change) and
/// when it was last written (unix seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    pub entry: Entry,
    pub revision: u64,
    pub updated_at: u64,
    /// Who may change it (`None` on rows written before owners were recorded: operators only).
    pub owner: Option<Owner>,
}

/// Every entry in the table, sorted by id. A row whose JSON no longer parses is reported in
/// `unreadable` as `(pk, why)` instead of failing the whole read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrySnapshot {
    pub entries: Vec<StoredEntry>,
    pub unreadable: Vec<(String, String)>,
}

/// What the reconciler last published: the bundle object's version id and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedState {
    pub version_id: String,
    pub hash: String,
    /// Unix seconds.
    pub published_at: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterOutcome {
    Created {
        revision: u64,
    },
    Updated {
        revision: u64,
    },
    /// The stored entry is identical: nothing was written.
    Unchanged {
        revision: u64,
    },
}

impl RegisterOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            RegisterOutcome::Created { .. } => "created",
            RegisterOutcome::Updated { .. } => "updated",
            RegisterOutcome::Unchanged { .. } => "unchanged",
        }
    }

    pub fn revision(&self) -> u64 {
        match *self {
            RegisterOutcome::Created { revision }
            | RegisterOutcome::Updated { revision }
            | RegisterOutcome::Unchanged { revision } => revision,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeregisterOutcome {
    Deleted,
    /// No such entry; callers decide whether that is an error.
    NotFound,
}

impl DeregisterOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            DeregisterOutcome::Deleted => "deleted",
            DeregisterOutcome::NotFound => "not-found",
        }
    }
}

/// The reconciler's view of the registry.
pub trait Registry {
    /// Every entry, read consistently.
    fn read_all_entries(
        &self,
    ) -> impl Future<Output = Result<RegistrySnapshot, RegistryError>> + Send;

    /// The registry's totals as last recorded (docs/design.md#registry-totals), if any.
    fn read_totals(
        &self,
    ) -> impl Future<Output = Result<Option<gateway_render::bounds::Totals>, RegistryError>> + Send;

    /// Records the registry's totals, which the register path judges growth against.
    fn record_totals(
        &self,
        totals: &gateway_render::bounds::Totals,
    ) -> impl Future<Output = Result<(), RegistryError>> + Send;

    /// The last recorded publish, if any.
    fn read_state(
        &self,
    ) -> impl Future<Output = Result<Option<PublishedState>, RegistryError>> + Send;

    /// Records a publish only if the state is still `expected` (absent when `None`), so two
    /// overlapping runs cannot both record; the loser gets [`RegistryError::StateConflict`].
    fn record_published(
        &self,
        expected: Option<&PublishedState>,
        next: &PublishedState,
    ) -> impl Future<Output = Result<(), RegistryError>> + Send;

    /// Every per-entry status row, by id (docs/design.md#entry-status).
    fn read_statuses(
        &self,
    ) -> impl Future<Output = Result<std::collections::BTreeMap<String, EntryStatus>, RegistryError>>
           + Send;

    /// Writes these status rows whole.
    fn write_statuses(
        &self,
        rows: &[EntryStatus],
    ) -> impl Future<Output = Result<(), RegistryError>> + Send;

    /// The digest of what the status rows were last brought in line with, if recorded
    /// (docs/design.md#entry-status).
    fn read_statuses_digest(
        &self,
    ) -> impl Future<Output = Result<Option<String>, RegistryError>> + Send;

    /// Records that digest; `None` clears it, before status rows are written, so rows written
    /// only in part are never taken to be in line.
    fn record_statuses_digest(
        &self,
        digest: Option<&str>,
    ) -> impl Future<Output = Result<(), RegistryError>> + Send;

    /// The last render recorded: its input digest and hash
    /// (docs/design.md#skipping-an-unchanged-render).
    fn read_render_record(
        &self,
    ) -> impl Future<Output = Result<Option<RenderRecord>, RegistryError>> + Send;

    /// Replaces the render record.
    fn record_render(
        &self,
        record: &RenderRecord,
    ) -> impl Future<Output = Result<(), RegistryError>> + Send;

    /// The hash of the publish the reconciler was last about to put (docs/design.md#reconcile-run).
    fn read_pending(&self) -> impl Future<Output = Result<Option<String>, RegistryError>> + Send;

    /// Records the hash of a publish about to be put, before the conditional PUT.
    fn record_pending(&self, hash: &str)
        -> impl Future<Output = Result<(), RegistryError>> + Send;

    /// Envoy's remembered verdicts on entry revisions (docs/design.md#quarantine).
    fn read_verdicts(&self) -> impl Future<Output = Result<Vec<Verdict>, RegistryError>> + Send;

    /// Replaces the remembered verdicts.
    fn record_verdicts(
        &self,
        verdicts: &[Verdict],
    ) -> impl Future<Output = Result<(), RegistryError>> + Send;

    /// Judged rollouts' progress (docs/design.md#rollout).
    fn read_rollouts(&self) -> impl Future<Output = Result<rollout::Rollouts, RegistryError>> + Send;

    /// Replaces the judged rollouts' progress.
    fn record_rollouts(
        &self,
        rollouts: &rollout::Rollouts,
    ) -> impl Future<Output = Result<(), RegistryError>> + Send;
}

/// The reconciler's last recorded publish: what operators' read-only commands (`status`,
/// `history`) need of the registry. A [`RegistryReader`] gives it, and so does every
/// [`Registry`].
pub trait PublishedStateRead {
    fn published_state(
        &self,
    ) -> impl Future<Output = Result<Option<PublishedState>, RegistryError>> + Send;
}

impl<R: Registry + Sync> PublishedStateRead for R {
    async fn published_state(&self) -> Result<Option<PublishedState>, RegistryError> {
        self.read_state().await
    }
}
