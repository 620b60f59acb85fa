//! The DynamoDB registry: registration transactions, consistent reads, the reconciler's state.

use super::backend::read_claim;
use super::error::from_sdk;
use super::host::{enclosing_hosts, read_guard, read_host};
use super::keys::{self, Item};
use super::owner::{Actor, Owner};
use super::pages::scan_prefix;
use super::plan::{self, BackendChange, BackendRows, Current, Enclosing};
use super::write::{transact, Written};
use super::{
    DeregisterOutcome, PublishedState, RegisterOutcome, Registry, RegistryError, RegistrySnapshot,
    StoredEntry,
};
use crate::resolve::BackendLookup;
use crate::retry::Backoff;
use gateway_render::bounds::Totals;
use gateway_render::check::{check_entry, check_entry_value, Policy};
use gateway_render::{Bounds, Entry, Problem, Rejection};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Rounds of read → plan → write before a registration gives up with `Retryable`, and the
/// jittered wait between them (20 ms doubling per round, so 40 ms before the second, at most 1 s).
/// Registrations racing on one host commit one per round, so this bounds how many may race and
/// all succeed.
const ROUNDS: Backoff = Backoff {
    attempts: MAX_ROUNDS,
    first: Duration::from_millis(40),
    factor: 2,
    cap: Duration::from_millis(1000),
    jitter: true,
};
const MAX_ROUNDS: u32 = 12;

/// `GATEWAY_PUBLISH_WAIT_SECONDS`' default: the register function's timeout is 5 minutes.
pub const DEFAULT_PUBLISH_WAIT_SECONDS: u64 = 240;

/// Read-only access to the registry table: entries, status rows, the published state and the
/// proxy reports. It holds no policy and has no way to write; operators' read-only commands use
/// it, and every [`DynamoRegistry`] reads through one ([`DynamoRegistry::reader`]).
#[derive(Debug, Clone)]
pub struct RegistryReader {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl RegistryReader {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        RegistryReader {
            client,
            table: table.into(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub(crate) fn client(&self) -> &aws_sdk_dynamodb::Client {
        &self.client
    }

    /// The proxy reports in this table.
    pub fn proxies(&self) -> super::ProxyTable {
        super::ProxyTable::new(self.client.clone(), self.table.clone())
    }

    /// One entry, read consistently.
    pub async fn get(&self, id: &str) -> Result<Option<StoredEntry>, RegistryError> {
        check_id(id)?;
        let found = self.get_item(keys::entry_pk(id), keys::ENTRY_SK).await?;
        found.map(|item| stored_entry(&item)).transpose()
    }

    /// Every entry (the same consistent read the reconciler uses).
    pub async fn list(&self) -> Result<RegistrySnapshot, RegistryError> {
        self.read_all_entries().await
    }

    /// Every entry, read consistently, sorted by id; rows that do not parse are reported apart.
    pub async fn read_all_entries(&self) -> Result<RegistrySnapshot, RegistryError> {
        let items = scan_prefix(
            &self.client,
            &self.table,
            keys::ENTRY_PREFIX,
            &format!("scanning table {}", self.table),
        )
        .await?;
        let mut snapshot = RegistrySnapshot::default();
        for item in &items {
            match stored_entry(item) {
                Ok(stored) => snapshot.entries.push(stored),
                Err(e) => {
                    let pk = keys::get_s(item, keys::PK).unwrap_or("?").to_string();
                    snapshot.unreadable.push((pk, e.to_string()));
                }
            }
        }
        snapshot.entries.sort_by_key(|s| s.entry.id());
        snapshot.unreadable.sort();
        Ok(snapshot)
    }

    /// The reconciler's last recorded publish, if any.
    pub async fn read_state(&self) -> Result<Option<PublishedState>, RegistryError> {
        let Some(item) = self
            .get_item(keys::STATE_PK.to_string(), keys::STATE_SK)
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(PublishedState {
            version_id: keys::need_s(&item, keys::ATTR_VERSION_ID)?.to_string(),
            hash: keys::need_s(&item, keys::ATTR_HASH)?.to_string(),
            published_at: keys::need_n(&item, keys::ATTR_PUBLISHED_AT)?,
        }))
    }

    pub(crate) async fn get_item(
        &self,
        pk: String,
        sk: &str,
    ) -> Result<Option<Item>, RegistryError> {
        let what = format!("reading row {pk} of table {}", self.table);
        let got = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(keys::key(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| from_sdk(&what, e))?;
        Ok(got.item().cloned())
    }
}

impl super::PublishedStateRead for RegistryReader {
    async fn published_state(&self) -> Result<Option<PublishedState>, RegistryError> {
        self.read_state().await
    }
}

pub struct DynamoRegistry {
    reader: RegistryReader,
    policy: Policy,
    backends: BackendLookup,
    bounds: Bounds,
    /// Who `register` and `deregister` act as (operators; see [`DynamoRegistry::with_operator`]).
    operator: String,
    /// How long the custom resource waits for `waitFor` (docs/design.md#deploys-that-wait).
    publish_wait: std::time::Duration,
    /// How often it reads the entry's status row meanwhile.
    publish_poll: std::time::Duration,
    /// The bundle bucket, for `waitFor: serving` (which bundles hold the entry).
    bundles: Option<crate::store::S3Store>,
}

impl DynamoRegistry {
    /// A registry on `table` for the gateway at `base_domain`, with loopback backends rejected
    /// (use [`DynamoRegistry::with_policy`] for local runs).
    pub fn new(
        client: aws_sdk_dynamodb::Client,
        table: impl Into<String>,
        base_domain: impl Into<String>,
    ) -> Self {
        let base_domain: String = base_domain.into();
        DynamoRegistry {
            reader: RegistryReader::new(client, table),
            policy: Policy::new(&base_domain, false),
            backends: BackendLookup::default(),
            bounds: Bounds::default(),
            operator: "an unidentified operator".to_string(),
            publish_wait: std::time::Duration::from_secs(DEFAULT_PUBLISH_WAIT_SECONDS),
            publish_poll: std::time::Duration::from_secs(2),
            bundles: None,
        }
    }

    /// The bundle bucket, read by `waitFor: serving` to tell which proxies serve an entry
    /// (docs/design.md#proxy-reports). Without it `serving` is refused.
    pub fn with_bundles(mut self, store: crate::store::S3Store) -> Self {
        self.bundles = Some(store);
        self
    }

    pub fn bundles(&self) -> Option<&crate::store::S3Store> {
        self.bundles.as_ref()
    }

    /// The proxy reports in this registry's table.
    pub fn proxies(&self) -> super::ProxyTable {
        self.reader.proxies()
    }

    /// The same table, read-only.
    pub fn reader(&self) -> &RegistryReader {
        &self.reader
    }

    /// The reconciler's state row in the same table.
    pub fn state_row(&self) -> super::StateRow {
        super::StateRow::from_reader(self.reader.clone())
    }

    /// Grants and entry owners in the same table.
    pub fn tenancy(&self) -> super::Tenancy {
        super::Tenancy::from_reader(self.reader.clone())
    }

    /// Backend claims in the same table, for operators.
    pub fn backend_claims(&self) -> super::BackendClaims {
        super::BackendClaims::from_reader(self.reader.clone())
    }

    /// Replaces how long the custom resource waits for its entry to publish, and how often it
    /// looks.
    pub fn with_publish_wait(
        mut self,
        wait: std::time::Duration,
        poll: std::time::Duration,
    ) -> Self {
        self.publish_wait = wait;
        self.publish_poll = poll;
        self
    }

    pub fn publish_wait(&self) -> (std::time::Duration, std::time::Duration) {
        (self.publish_wait, self.publish_poll)
    }

    /// Replaces the bounds on entries per team and routes in the registry.
    pub fn with_bounds(mut self, bounds: Bounds) -> Self {
        self.bounds = bounds;
        self
    }

    /// Replaces how backend names are resolved at registration (the system resolver by default).
    pub fn with_backend_lookup(mut self, backends: BackendLookup) -> Self {
        self.backends = backends;
        self
    }

    /// Replaces the checks' policy (its base domain becomes the registry's).
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// The operator principal (e.g. from GetCallerIdentity) recorded as the owner of what
    /// `register` writes.
    pub fn with_operator(mut self, principal: impl Into<String>) -> Self {
        self.operator = principal.into();
        self
    }

    pub(crate) fn client(&self) -> &aws_sdk_dynamodb::Client {
        self.reader.client()
    }

    pub fn table(&self) -> &str {
        self.reader.table()
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn base_domain(&self) -> &str {
        &self.policy.base_domain
    }

    /// Creates the table unless it exists and waits until it is ACTIVE (see
    /// [`super::create_table_if_absent`]). True when it was created now.
    pub async fn create_table_if_absent(&self) -> Result<bool, RegistryError> {
        super::table::create_table_if_absent(self.client(), self.table()).await
    }

    /// Entries per team, routes and backend clusters: `entry`'s growth judged against the totals
    /// the reconciler last recorded and the entry's own row, two consistent reads whatever the
    /// registry's size (docs/design.md#registry-totals). Before the reconciler's first count (a
    /// fresh table) both come from a consistent read of the whole table instead.
    /// Only growth is refused: a team may always shrink or change an entry within its count.
    async fn check_bounds(&self, entry: &Entry) -> Result<(), RegistryError> {
        let id = entry.id();
        let (totals, current) = match self.reader.totals().await? {
            Some(totals) => (totals, self.reader.get(&id).await?.map(|s| s.entry)),
            None => {
                let snapshot = self.list().await?;
                let current = snapshot.entries.iter().find(|s| s.entry.id() == id);
                let current = current.map(|s| s.entry.clone());
                (
                    Totals::of(snapshot.entries.iter().map(|s| &s.entry)),
                    current,
                )
            }
        };
        let problems = self
            .bounds
            .growth_problems(&totals, current.as_ref(), entry);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(RegistryError::Rejected(Rejection { problems }))
        }
    }

    /// Checks raw JSON input and registers it. Rejected input writes nothing.
    pub async fn register_value(
        &self,
        input: &serde_json::Value,
    ) -> Result<RegisterOutcome, RegistryError> {
        let entry = check_entry_value(input, &self.policy).map_err(RegistryError::Rejected)?;
        self.register(&entry).await
    }

    /// [`DynamoRegistry::register_value`] for `actor`.
    pub async fn register_value_as(
        &self,
        input: &serde_json::Value,
        actor: &Actor,
    ) -> Result<RegisterOutcome, RegistryError> {
        let entry = check_entry_value(input, &self.policy).map_err(RegistryError::Rejected)?;
        self.register_as(&entry, actor).await
    }

    /// Registers (creates or replaces) an entry: the entry row, the team's claim on its host, the
    /// service's claim on each path prefix and its place among the users of each backend it
    /// starts using (and out of those it stops using), in one transaction. The checks run first, here,
    /// so nothing reaches the table without them. Re-registering an identical entry writes nothing.
    /// Acts as the operators (see [`DynamoRegistry::with_operator`]).
    pub async fn register(&self, entry: &Entry) -> Result<RegisterOutcome, RegistryError> {
        self.register_as(entry, &Actor::operator(self.operator.clone()))
            .await
    }

    /// Registers for `actor`: refused unless the actor owns the entry (or it is new), and, for
    /// an actor acting from an account, unless that account is granted the team (checked again
    /// inside the transaction, so a revoke cannot race it).
    pub async fn register_as(
        &self,
        entry: &Entry,
        actor: &Actor,
    ) -> Result<RegisterOutcome, RegistryError> {
        self.register_or_plan(entry, actor, true).await
    }

    /// [`DynamoRegistry::plan_register_as`] as the operators.
    pub async fn plan_register(&self, entry: &Entry) -> Result<RegisterOutcome, RegistryError> {
        self.plan_register_as(entry, &Actor::operator(self.operator.clone()))
            .await
    }

    /// What [`DynamoRegistry::register_as`] would answer now, writing nothing: the same checks,
    /// bounds, owner, host, prefix and backend conflicts read from the table, and the
    /// transaction's size. Only a registration that races this one between the reads and its
    /// own write can end differently (`gatewayctl preview`).
    pub async fn plan_register_as(
        &self,
        entry: &Entry,
        actor: &Actor,
    ) -> Result<RegisterOutcome, RegistryError> {
        self.register_or_plan(entry, actor, false).await
    }

    async fn register_or_plan(
        &self,
        entry: &Entry,
        actor: &Actor,
        write: bool,
    ) -> Result<RegisterOutcome, RegistryError> {
        check_entry(entry, &self.policy).map_err(RegistryError::Rejected)?;
        let resolved = self
            .backends
            .problems(std::slice::from_ref(entry), &self.policy)
            .await;
        if !resolved.is_empty() {
            return Err(RegistryError::Rejected(Rejection {
                problems: resolved.into_iter().map(|(_, p)| p).collect(),
            }));
        }
        self.check_bounds(entry).await?;
        let requested = entry;
        let id = entry.id();
        let fqdn = entry.fqdn(self.base_domain());
        let mut last = String::new();
        for round in ROUNDS.attempts() {
            ROUNDS.pause(round).await;
            if let Some(account) = &actor.granted_account {
                self.tenancy().require_grant(&entry.team, account).await?;
            }
            let current = self.current(&id).await?;
            plan::check_owner(current.as_ref(), &id, &actor.owner)?;
            // A rollout stores the stable revision beside the new one (docs/design.md#rollout).
            let promoted = match &current {
                Some(c) if c.entry.serving.is_some() => self
                    .reader
                    .rollouts()
                    .await?
                    .get(&id)
                    .is_some_and(|p| p.revision == c.revision && p.state == "promoted"),
                _ => false,
            };
            let staged = super::rollout::staged(requested, current.as_ref().map(|c| (&c.entry, c.revision)), promoted)?;
            let entry = &staged;
            let json = serde_json::to_string(entry).map_err(|e| {
                RegistryError::Corrupt(format!("serialising entry {}: {e}", entry.id()))
            })?;
            if let Some(c) = &current {
                if c.entry == *entry {
                    return Ok(RegisterOutcome::Unchanged {
                        revision: c.revision,
                    });
                }
            }
            let new_host = read_host(self.reader.client(), self.reader.table(), &fqdn).await?;
            let mut enclosing = Enclosing::new();
            if plan::claims_host(entry, &new_host) {
                self.read_enclosing(&entry.host, &mut enclosing).await?;
            }
            if let Some(conflict) = plan::conflict(entry, &new_host, &enclosing, self.base_domain())
            {
                return Err(conflict);
            }
            let old_host = match &current {
                Some(c) if c.entry.host != entry.host => {
                    let old = read_host(
                        self.reader.client(),
                        self.reader.table(),
                        &c.entry.fqdn(self.base_domain()),
                    )
                    .await?;
                    if plan::releases_host(&old, &id) {
                        self.read_enclosing(&c.entry.host, &mut enclosing).await?;
                    }
                    Some(old)
                }
                _ => None,
            };
            let change = BackendChange::new(current.as_ref().map(|c| &c.entry), Some(entry));
            let backends = self.read_backends(&change).await?;
            if let Some(conflict) = plan::backend_held(entry, &change, &backends) {
                return Err(conflict);
            }
            let reads = plan::Reads {
                current: current.as_ref(),
                new_host: &new_host,
                old_host: old_host.as_ref(),
                enclosing: &enclosing,
                base_domain: self.base_domain(),
                backends: &backends,
            };
            let actions = plan::register(entry, &json, &reads, actor, now());
            plan::check_size(&actions)?;
            let written = if write {
                transact(self.reader.client(), self.reader.table(), &actions).await?
            } else {
                Written::Committed
            };
            match written {
                Written::Committed => {
                    return Ok(match current {
                        None => RegisterOutcome::Created { revision: 1 },
                        Some(c) => RegisterOutcome::Updated {
                            revision: c.revision + 1,
                        },
                    })
                }
                Written::Conflict(e) => return Err(e),
                Written::Retry(why) => last = why,
            }
        }
        Err(RegistryError::Retryable(
            format!("registering {id}: {last}, {MAX_ROUNDS} times; try again").into(),
        ))
    }

    /// Removes an entry and its guards in one transaction, releasing the host when this was the
    /// team's last service on it. An absent entry is `NotFound`, not an error.
    /// Acts as the operators (see [`DynamoRegistry::with_operator`]).
    pub async fn deregister(&self, id: &str) -> Result<DeregisterOutcome, RegistryError> {
        self.deregister_as(id, &Actor::operator(self.operator.clone()))
            .await
    }

    /// Deregisters for `actor`: an entry the actor does not own is a conflict naming its owner
    /// (CloudFormation's handler turns that into a Delete that leaves the entry alone).
    pub async fn deregister_as(
        &self,
        id: &str,
        actor: &Actor,
    ) -> Result<DeregisterOutcome, RegistryError> {
        check_id(id)?;
        let mut last = String::new();
        // Whether a delete of this entry was sent by this call: when its answer is lost (the
        // SDK's retry then finds the condition broken), the next round finds the entry gone,
        // and that is this call's delete, not an entry that was never there.
        let mut sent = false;
        for round in ROUNDS.attempts() {
            ROUNDS.pause(round).await;
            let Some(current) = self.current(id).await? else {
                return Ok(if sent {
                    DeregisterOutcome::Deleted
                } else {
                    DeregisterOutcome::NotFound
                });
            };
            plan::check_owner(Some(&current), id, &actor.owner)?;
            if let Some(account) = &actor.granted_account {
                self.tenancy()
                    .require_grant(&current.entry.team, account)
                    .await?;
            }
            let host = read_host(
                self.reader.client(),
                self.reader.table(),
                &current.entry.fqdn(self.base_domain()),
            )
            .await?;
            let mut enclosing = Enclosing::new();
            if plan::releases_host(&host, id) {
                self.read_enclosing(&current.entry.host, &mut enclosing)
                    .await?;
            }
            let change = BackendChange::new(Some(&current.entry), None);
            let backends = self.read_backends(&change).await?;
            let actions = plan::deregister(
                &current,
                &host,
                &enclosing,
                self.base_domain(),
                &backends,
                actor,
            );
            sent = true;
            let written = match transact(self.reader.client(), self.reader.table(), &actions).await {
                Ok(w) => w,
                // No answer (the SDK gave up): the delete may have landed; a read decides.
                Err(e) if e.is_retryable() => match self.current(id).await {
                    Ok(None) => return Ok(DeregisterOutcome::Deleted),
                    _ => return Err(e),
                },
                Err(e) => return Err(e),
            };
            match written {
                Written::Committed => return Ok(DeregisterOutcome::Deleted),
                Written::Conflict(e) => return Err(e),
                Written::Retry(why) => last = why,
            }
        }
        Err(RegistryError::Retryable(
            format!("deregistering {id}: {last}, {MAX_ROUNDS} times; try again").into(),
        ))
    }

    /// One entry, read consistently.
    pub async fn get(&self, id: &str) -> Result<Option<StoredEntry>, RegistryError> {
        self.reader.get(id).await
    }

    /// Every entry (the same consistent read the reconciler uses).
    pub async fn list(&self) -> Result<RegistrySnapshot, RegistryError> {
        self.reader.list().await
    }

    async fn read_enclosing(&self, host: &str, into: &mut Enclosing) -> Result<(), RegistryError> {
        for outer in enclosing_hosts(host, self.base_domain()) {
            if let std::collections::btree_map::Entry::Vacant(slot) = into.entry(outer) {
                let guard =
                    read_guard(self.reader.client(), self.reader.table(), slot.key()).await?;
                slot.insert(guard);
            }
        }
        Ok(())
    }

    /// The claims of the authorities `change` starts or stops using (at most two each: the
    /// backend and the canary's), read consistently.
    async fn read_backends(&self, change: &BackendChange) -> Result<BackendRows, RegistryError> {
        let mut rows = BackendRows::new();
        for authority in change.authorities() {
            let claim = read_claim(self.reader.client(), self.reader.table(), authority).await?;
            rows.insert(authority.clone(), claim);
        }
        Ok(rows)
    }

    async fn current(&self, id: &str) -> Result<Option<Current>, RegistryError> {
        let Some(item) = self.get_item(keys::entry_pk(id), keys::ENTRY_SK).await? else {
            return Ok(None);
        };
        let stored = stored_entry(&item)?;
        Ok(Some(Current {
            entry: stored.entry,
            revision: stored.revision,
            owner: keys::get_s(&item, keys::ATTR_OWNER).map(str::to_string),
        }))
    }

    pub(crate) async fn get_item(
        &self,
        pk: String,
        sk: &str,
    ) -> Result<Option<Item>, RegistryError> {
        self.reader.get_item(pk, sk).await
    }
}

impl Registry for DynamoRegistry {
    async fn read_statuses(
        &self,
    ) -> Result<std::collections::BTreeMap<String, super::EntryStatus>, RegistryError> {
        self.statuses().await
    }

    async fn write_statuses(&self, rows: &[super::EntryStatus]) -> Result<(), RegistryError> {
        self.put_statuses(rows).await
    }

    async fn read_statuses_digest(&self) -> Result<Option<String>, RegistryError> {
        self.reader.statuses_digest().await
    }

    async fn record_statuses_digest(&self, digest: Option<&str>) -> Result<(), RegistryError> {
        self.put_statuses_digest(digest).await
    }

    async fn read_render_record(&self) -> Result<Option<super::RenderRecord>, RegistryError> {
        self.reader.render_record().await
    }

    async fn record_render(&self, record: &super::RenderRecord) -> Result<(), RegistryError> {
        self.put_render_record(record).await
    }

    async fn read_pending(&self) -> Result<Option<String>, RegistryError> {
        self.reader.pending().await
    }

    async fn record_pending(&self, hash: &str) -> Result<(), RegistryError> {
        self.put_pending(hash).await
    }

    async fn read_verdicts(&self) -> Result<Vec<super::Verdict>, RegistryError> {
        self.reader.verdicts().await
    }

    async fn read_rollouts(&self) -> Result<super::rollout::Rollouts, RegistryError> {
        self.reader.rollouts().await
    }

    async fn record_rollouts(&self, rollouts: &super::rollout::Rollouts) -> Result<(), RegistryError> {
        self.put_rollouts(rollouts).await
    }

    async fn record_verdicts(&self, verdicts: &[super::Verdict]) -> Result<(), RegistryError> {
        self.put_verdicts(verdicts).await
    }

    async fn read_all_entries(&self) -> Result<RegistrySnapshot, RegistryError> {
        self.reader.read_all_entries().await
    }

    async fn read_totals(&self) -> Result<Option<Totals>, RegistryError> {
        self.reader.totals().await
    }

    async fn record_totals(&self, totals: &Totals) -> Result<(), RegistryError> {
        self.put_totals(totals).await
    }

    async fn read_state(&self) -> Result<Option<PublishedState>, RegistryError> {
        self.reader.read_state().await
    }

    async fn record_published(
        &self,
        expected: Option<&PublishedState>,
        next: &PublishedState,
    ) -> Result<(), RegistryError> {
        self.state_row().record(expected, next).await
    }
}

pub(super) fn stored_entry(item: &Item) -> Result<StoredEntry, RegistryError> {
    let json = keys::need_s(item, keys::ATTR_ENTRY)?;
    // The error names the field (`routes[0].limits[0].requests: invalid type …`), so an operator
    // and the entry's team can see which part of a row written around the checks is wrong.
    let entry: Entry =
        serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(json)).map_err(
            |e| {
                let pk = keys::get_s(item, keys::PK).unwrap_or("?");
                let at = e.path().to_string();
                let field = if at == "." { String::new() } else { format!("{at}: ") };
                RegistryError::Corrupt(format!(
                    "{pk}: entry JSON does not parse: {field}{}",
                    e.inner()
                ))
            },
        )?;
    let mut entry = entry;
    let revision = keys::need_n(item, keys::ATTR_REVISION)?;
    super::rollout::apply_decision(&mut entry, revision, item);
    Ok(StoredEntry {
        entry,
        revision,
        updated_at: keys::get_n(item, keys::ATTR_UPDATED_AT).unwrap_or(0),
        owner: keys::get_s(item, keys::ATTR_OWNER).and_then(Owner::decode),
    })
}

/// `team/service`: two non-empty parts. The parts' own rules are the checks' business; this only
/// keeps a malformed id from becoming a key.
pub(super) fn check_id(id: &str) -> Result<(), RegistryError> {
    match id.split_once('/') {
        Some((team, service))
            if !team.is_empty() && !service.is_empty() && !service.contains('/') =>
        {
            Ok(())
        }
        _ => Err(RegistryError::Rejected(Rejection {
            problems: vec![Problem {
                field: "id".into(),
                reason: format!("{id:?} is not a team/service id"),
            }],
        })),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
