//! What a registration or deregistration writes, decided from what was read. Pure: the reads
//! go in, the transaction's actions (or the conflict, named with its holder) come out.

use super::backend::{authorities, backend_conflict, BackendClaim};
use super::host::{claim_counters, enclosing_hosts, HostGuard, HostView, ATTR_CLAIMS};
use super::owner::{Actor, Owner};
use super::RegistryError;
use gateway_render::check::{path_prefixes, same_prefix};
use gateway_render::{Entry, Problem, Rejection};
use std::collections::{BTreeMap, BTreeSet};

/// The host guard's claim counters a transaction bumps, and those it requires unchanged since
/// the read (`None`: absent), see `host::claim_counters`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Claims {
    pub bump: BTreeSet<String>,
    pub expect: BTreeMap<String, Option<u64>>,
}

impl Claims {
    /// The counters for claiming `prefixes` (new on the host) on a guard read as `guard`.
    fn new<'a>(guard: Option<&HostGuard>, prefixes: impl Iterator<Item = &'a String>) -> Claims {
        let mut claims = Claims::default();
        for prefix in prefixes {
            let (bump, need) = claim_counters(prefix);
            claims.bump.extend(bump);
            for counter in need {
                claims.require(guard, &counter);
            }
        }
        claims
    }

    fn require(&mut self, guard: Option<&HostGuard>, counter: &str) {
        let read = guard.and_then(|g| g.counters.get(counter).copied());
        self.expect.insert(counter.to_string(), read);
    }
}

/// The stored entry as read, with the revision and owner its write must still match.
#[derive(Debug, Clone)]
pub(crate) struct Current {
    pub entry: Entry,
    pub revision: u64,
    /// The stored owner attribute (`None` on rows written before owners were recorded).
    pub owner: Option<String>,
}

impl Current {
    fn expected(&self) -> Expected {
        Expected {
            revision: self.revision,
            owner: self.owner.clone(),
        }
    }
}

/// The entry row as read: its revision and its stored owner (absent on old rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expected {
    pub revision: u64,
    pub owner: Option<String>,
}

/// Why a host guard row is in the transaction; decides what a failed condition means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostRole {
    /// The host the entry registers on.
    Claimed,
    /// The host the entry moves away from.
    Left,
    /// A host enclosing `inner`, whose `under` set changes.
    Enclosing { inner: String },
}

/// The enclosing hosts' guards as read: fqdn → guard (`None`: no row).
pub(crate) type Enclosing = BTreeMap<String, Option<HostGuard>>;

/// The backend claims as read, of the authorities a change starts or stops using: authority →
/// claim (`None`: no row).
pub(crate) type BackendRows = BTreeMap<String, Option<BackendClaim>>;

/// DynamoDB's limit on the actions of one TransactWriteItems.
pub(crate) const MAX_TRANSACTION_ACTIONS: usize = 100;

/// The backend authorities a registration starts and stops using: those of the new entry and
/// not the stored one, and the reverse. An authority both use needs no write: the service is
/// already one of its users.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BackendChange {
    pub claimed: BTreeSet<String>,
    pub released: BTreeSet<String>,
}

impl BackendChange {
    /// From the stored entry (`None`: a new one) to `after` (`None`: a deregistration).
    pub fn new(before: Option<&Entry>, after: Option<&Entry>) -> BackendChange {
        let before = before.map(authorities).unwrap_or_default();
        let after = after.map(authorities).unwrap_or_default();
        BackendChange {
            claimed: after.difference(&before).cloned().collect(),
            released: before.difference(&after).cloned().collect(),
        }
    }

    /// The authorities whose claims the registration reads.
    pub fn authorities(&self) -> impl Iterator<Item = &String> {
        self.claimed.iter().chain(&self.released)
    }
}

/// One item of a TransactWriteItems, each with the condition that keeps it honest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Condition: the row is still as `expected` (revision and owner), or absent when `None`.
    PutEntry {
        id: String,
        json: String,
        revision: u64,
        updated_at: u64,
        owner: String,
        expected: Option<Expected>,
    },
    /// Condition: the row is still as `expected`.
    DeleteEntry { id: String, expected: Expected },
    /// Condition: the account's grant for the team exists (so a revoke cannot race a change).
    CheckGrant { team: String, account: String },
    /// The host guard's ownership (`team`, `under`, `version`), computed from a consistent
    /// read, for a registration that claims, leaves or releases the host or changes what lies
    /// inside it. Condition: version still `expected` (no row when `None`) and the `claims`
    /// counter as read, so no new claim landed on the host since the read (a release cannot
    /// strand a service that arrived meanwhile). Written as an update that keeps the claim
    /// counters. `claimant` is the registering team, to tell a conflict from a race.
    PutHostGuard {
        fqdn: String,
        team: Option<String>,
        under: BTreeMap<String, String>,
        version: u64,
        expected: Option<u64>,
        claimant: String,
        role: HostRole,
        claims: Claims,
    },
    /// A registration on a host its team already holds, that neither claims nor leaves it:
    /// condition `team` is still `team` (a release that landed first fails it), plus the claim
    /// counters of the prefixes it claims (bumped, when there are any: then an update, else a
    /// condition check). Registrations of different services on one host therefore commit
    /// side by side.
    CheckHost {
        fqdn: String,
        team: String,
        claims: Claims,
    },
    /// Condition: absent, or already held by `service`.
    PutPathGuard {
        fqdn: String,
        prefix: String,
        service: String,
    },
    /// Condition: held by `service`.
    DeletePathGuard {
        fqdn: String,
        prefix: String,
        service: String,
    },
    /// Adds `service` to the users of backend `authority`. With `takeover: None` the condition
    /// is: no claim, or a claim of `team` or shared with it, and `team` is set only where the
    /// row has none. With `takeover: Some(holder)` (read as another team's claim nobody uses):
    /// still `holder`'s and still unused, and `team` becomes the holder.
    ClaimBackend {
        authority: String,
        service: String,
        team: String,
        takeover: Option<String>,
    },
    /// Removes `service` from the users of backend `authority`. Condition: it is one (only its
    /// own transactions remove it; the condition also keeps the update from creating a row).
    ReleaseBackend { authority: String, service: String },
}

pub(crate) fn host_conflict(fqdn: &str, holder: &str) -> RegistryError {
    RegistryError::Conflict {
        what: format!("host {fqdn}"),
        holder: holder.to_string(),
    }
}

/// A held host inside the one being claimed.
pub(crate) fn inner_host_conflict(inner: &str, fqdn: &str, holder: &str) -> RegistryError {
    RegistryError::Conflict {
        what: format!("host {inner} (inside {fqdn})"),
        holder: holder.to_string(),
    }
}

/// A held host enclosing the one being claimed.
pub(crate) fn enclosing_host_conflict(outer: &str, fqdn: &str, holder: &str) -> RegistryError {
    RegistryError::Conflict {
        what: format!("host {outer} (enclosing {fqdn})"),
        holder: holder.to_string(),
    }
}

pub(crate) fn path_conflict(fqdn: &str, held: &str, claimed: &str, holder: &str) -> RegistryError {
    let what = if held == claimed {
        format!("path {held} on {fqdn}")
    } else {
        format!("path {held} on {fqdn} (the same prefix as {claimed})")
    };
    RegistryError::Conflict {
        what,
        holder: holder.to_string(),
    }
}

/// An entry owned by someone other than the actor.
pub(crate) fn owner_conflict(id: &str, stored: Option<&str>) -> RegistryError {
    let holder = match stored.map(|s| (s, Owner::decode(s))) {
        Some((_, Some(owner))) => owner.to_string(),
        Some((raw, None)) => format!("an unrecognised owner {raw:?}"),
        None => "no recorded owner (registered before owners were recorded; operators hand it over with gatewayctl adopt)".to_string(),
    };
    RegistryError::Conflict {
        what: format!("entry {id}"),
        holder,
    }
}

/// Whether `actor` may change `current` (absent: anyone may create it).
pub(crate) fn check_owner(
    current: Option<&Current>,
    id: &str,
    actor: &Owner,
) -> Result<(), RegistryError> {
    let Some(current) = current else {
        return Ok(());
    };
    let admitted = current
        .owner
        .as_deref()
        .and_then(Owner::decode)
        .is_some_and(|owner| owner.admits(actor));
    // Rows from before owners were recorded: operators only, until one adopts it for a stack.
    let legacy_for_operator = current.owner.is_none() && matches!(actor, Owner::Operator { .. });
    if admitted || legacy_for_operator {
        Ok(())
    } else {
        Err(owner_conflict(id, current.owner.as_deref()))
    }
}

/// Whether registering `entry` claims its host (the team does not hold it yet): only then are
/// the enclosing hosts read and written.
pub(crate) fn claims_host(entry: &Entry, host: &HostView) -> bool {
    host.guard.as_ref().and_then(|g| g.team.as_deref()) != Some(entry.team.as_str())
}

/// Whether `id` leaving `host` releases it (no other service of the team remains there).
pub(crate) fn releases_host(host: &HostView, id: &str) -> bool {
    !host.others_remain(id)
}

/// The first conflict with another team's host (the same, an enclosing or an inner one) or
/// another service's prefix, in a stable order (host, inner hosts, enclosing hosts nearest
/// first, then claimed prefixes in order). `enclosing` holds the enclosing hosts' guards when
/// the registration claims the host.
pub(crate) fn conflict(
    entry: &Entry,
    host: &HostView,
    enclosing: &Enclosing,
    base_domain: &str,
) -> Option<RegistryError> {
    if let Some(team) = host.guard.as_ref().and_then(|g| g.team.as_deref()) {
        if team != entry.team {
            return Some(host_conflict(&host.fqdn, team));
        }
    }
    if claims_host(entry, host) {
        if let Some((inner, team)) = host
            .guard
            .as_ref()
            .and_then(|g| g.foreign_under(&entry.team))
        {
            return Some(inner_host_conflict(inner, &host.fqdn, team));
        }
        for outer in enclosing_hosts(&entry.host, base_domain) {
            let held = enclosing
                .get(&outer)
                .and_then(|g| g.as_ref())
                .and_then(|g| g.team.as_deref());
            if let Some(team) = held.filter(|t| *t != entry.team) {
                return Some(enclosing_host_conflict(&outer, &host.fqdn, team));
            }
        }
    }
    let id = entry.id();
    for claimed in path_prefixes(entry) {
        for (held, holder) in &host.paths {
            if *holder != id && same_prefix(&claimed, held) {
                return Some(path_conflict(&host.fqdn, held, &claimed, holder));
            }
        }
    }
    None
}

/// The first authority `entry` starts using that another team holds, has not shared with
/// `entry`'s team, and some service still uses, named with its holder.
pub(crate) fn backend_held(
    entry: &Entry,
    change: &BackendChange,
    backends: &BackendRows,
) -> Option<RegistryError> {
    change.claimed.iter().find_map(|authority| {
        let claim = backends.get(authority)?.as_ref()?;
        (!claim.admits(&entry.team) && !claim.is_stale())
            .then(|| backend_conflict(authority, &claim.team, &entry.team))
    })
}

/// The claims and releases of backend authorities for `id` of `team`. The caller has ruled out
/// `backend_held`, so an authority read as another team's is a stale claim, taken over.
fn backend_actions(
    id: &str,
    team: &str,
    change: &BackendChange,
    backends: &BackendRows,
) -> Vec<Action> {
    let read = |authority: &String| backends.get(authority).and_then(Option::as_ref);
    let mut actions = Vec::new();
    for authority in &change.claimed {
        let takeover = match read(authority) {
            Some(claim) if claim.admits(team) && claim.users.contains(id) => continue,
            Some(claim) if !claim.admits(team) => Some(claim.team.clone()),
            _ => None,
        };
        actions.push(Action::ClaimBackend {
            authority: authority.clone(),
            service: id.to_string(),
            team: team.to_string(),
            takeover,
        });
    }
    for authority in &change.released {
        if read(authority).is_some_and(|claim| claim.users.contains(id)) {
            actions.push(Action::ReleaseBackend {
                authority: authority.clone(),
                service: id.to_string(),
            });
        }
    }
    actions
}

/// Refuses a registration whose transaction would pass DynamoDB's 100 actions. Only one that
/// changes backends while moving between hosts with many path prefixes can
/// (docs/design.md#registration-transaction); the same change in two registrations always fits.
pub(crate) fn check_size(actions: &[Action]) -> Result<(), RegistryError> {
    if actions.len() <= MAX_TRANSACTION_ACTIONS {
        return Ok(());
    }
    let reason = format!(
        "this change needs {} writes in one DynamoDB transaction, more than the {MAX_TRANSACTION_ACTIONS} it allows: it changes backends while changing many path prefixes or the host. Register it in two steps: first the new backends (backend, canary.backend, mirror backends) with the current host and routes, then the new host and routes",
        actions.len()
    );
    Err(RegistryError::Rejected(Rejection {
        problems: vec![Problem {
            field: "backend".into(),
            reason,
        }],
    }))
}

/// Host guard rows being rewritten, by fqdn: state as read, state to write.
struct HostRows {
    team: String,
    rows: BTreeMap<String, HostRow>,
}

struct HostRow {
    before: Option<HostGuard>,
    team: Option<String>,
    under: BTreeMap<String, String>,
    role: HostRole,
    claims: Claims,
}

impl HostRows {
    fn new(team: &str) -> Self {
        HostRows {
            team: team.to_string(),
            rows: BTreeMap::new(),
        }
    }

    fn row(&mut self, fqdn: &str, before: Option<&HostGuard>, role: HostRole) -> &mut HostRow {
        self.rows
            .entry(fqdn.to_string())
            .or_insert_with(|| HostRow {
                team: before.and_then(|g| g.team.clone()),
                under: before.map(|g| g.under.clone()).unwrap_or_default(),
                before: before.cloned(),
                role,
                claims: Claims::default(),
            })
    }

    /// Adds (or removes) `fqdn` in the `under` set of each host enclosing it.
    fn mark_enclosing(
        &mut self,
        host: &str,
        fqdn: &str,
        enclosing: &Enclosing,
        base: &str,
        add: bool,
    ) {
        for outer in enclosing_hosts(host, base) {
            let before = enclosing.get(&outer).and_then(|g| g.as_ref());
            let role = HostRole::Enclosing {
                inner: fqdn.to_string(),
            };
            let team = self.team.clone();
            let row = self.row(&outer, before, role);
            if add {
                row.under.insert(fqdn.to_string(), team);
            } else {
                row.under.remove(fqdn);
            }
        }
    }

    fn actions(self) -> Vec<Action> {
        let claimant = self.team;
        self.rows
            .into_iter()
            .map(|(fqdn, row)| {
                let expected = row.before.as_ref().map(|g| g.version);
                let mut claims = row.claims;
                if row.before.is_some() {
                    claims.require(row.before.as_ref(), ATTR_CLAIMS);
                }
                Action::PutHostGuard {
                    fqdn,
                    team: row.team,
                    under: row.under,
                    version: expected.unwrap_or(0) + 1,
                    expected,
                    claimant: claimant.clone(),
                    role: row.role,
                    claims,
                }
            })
            .collect()
    }
}

fn leave_paths(host: &HostView, id: &str, keep: &dyn Fn(&str) -> bool) -> Vec<Action> {
    host.held_by(id)
        .filter(|p| !keep(p))
        .map(|p| Action::DeletePathGuard {
            fqdn: host.fqdn.clone(),
            prefix: p.clone(),
            service: id.to_string(),
        })
        .collect()
}

/// What a registration read, beside the entry itself.
pub(crate) struct Reads<'a> {
    pub current: Option<&'a Current>,
    pub new_host: &'a HostView,
    /// The host the current entry is on, when it differs.
    pub old_host: Option<&'a HostView>,
    /// The guards of the hosts enclosing the new host (when claimed) and the old one (when released).
    pub enclosing: &'a Enclosing,
    pub base_domain: &'a str,
    /// The claims of the backend authorities the registration starts or stops using.
    pub backends: &'a BackendRows,
}

/// The actions registering `entry` (already checked) for `actor`. The caller has already ruled
/// out `conflict` and `check_owner`.
pub(crate) fn register(
    entry: &Entry,
    json: &str,
    reads: &Reads<'_>,
    actor: &Actor,
    now: u64,
) -> Vec<Action> {
    let id = entry.id();
    let claimed = path_prefixes(entry);
    let new_host = reads.new_host;
    let mut actions = vec![Action::PutEntry {
        id: id.clone(),
        json: json.to_string(),
        revision: reads.current.map_or(1, |c| c.revision + 1),
        updated_at: now,
        owner: actor.owner.encode(),
        expected: reads.current.map(Current::expected),
    }];
    if let Some(account) = &actor.granted_account {
        actions.push(Action::CheckGrant {
            team: entry.team.clone(),
            account: account.clone(),
        });
    }
    let mut rows = HostRows::new(&entry.team);
    let claiming = claims_host(entry, new_host);
    if claiming {
        rows.row(&new_host.fqdn, new_host.guard.as_ref(), HostRole::Claimed)
            .team = Some(entry.team.clone());
        rows.mark_enclosing(
            &entry.host,
            &new_host.fqdn,
            reads.enclosing,
            reads.base_domain,
            true,
        );
    }
    let new_prefixes = claimed
        .iter()
        .filter(|p| new_host.paths.get(*p) != Some(&id));
    let claims = Claims::new(new_host.guard.as_ref(), new_prefixes);
    let mut paths = Vec::new();
    // Guards this service already holds need no write: only this service's own transactions
    // (serialised by its entry row's revision) ever delete them.
    for prefix in &claimed {
        if new_host.paths.get(prefix) != Some(&id) {
            paths.push(Action::PutPathGuard {
                fqdn: new_host.fqdn.clone(),
                prefix: prefix.clone(),
                service: id.clone(),
            });
        }
    }
    paths.extend(leave_paths(new_host, &id, &|p| claimed.contains(p)));
    if let (Some(old), Some(current)) = (reads.old_host, reads.current) {
        let released = releases_host(old, &id);
        let held = old.guard.as_ref().and_then(|g| g.team.as_deref()) == Some(entry.team.as_str());
        rows.row(&old.fqdn, old.guard.as_ref(), HostRole::Left).team =
            (!released).then(|| entry.team.clone());
        if released && held {
            rows.mark_enclosing(
                &current.entry.host,
                &old.fqdn,
                reads.enclosing,
                reads.base_domain,
                false,
            );
        }
        paths.extend(leave_paths(old, &id, &|_| false));
    }
    // The new host's row carries the claim counters: in the rewrite when this registration
    // rewrites it anyway (claiming it, or it encloses the host left behind), else in a check.
    let check = match rows.rows.get_mut(&new_host.fqdn) {
        Some(row) => {
            row.claims = claims;
            None
        }
        None => Some(Action::CheckHost {
            fqdn: new_host.fqdn.clone(),
            team: entry.team.clone(),
            claims,
        }),
    };
    actions.extend(check);
    actions.extend(rows.actions());
    actions.extend(paths);
    // After the host items: of two teams racing for one host and one backend, the loser's
    // cancellation names the host first.
    let change = BackendChange::new(reads.current.map(|c| &c.entry), Some(entry));
    actions.extend(backend_actions(&id, &entry.team, &change, reads.backends));
    actions
}

/// The actions removing `current` from the registry, its guards from `host` and its service
/// from the users of its backends.
pub(crate) fn deregister(
    current: &Current,
    host: &HostView,
    enclosing: &Enclosing,
    base_domain: &str,
    backends: &BackendRows,
    actor: &Actor,
) -> Vec<Action> {
    let id = current.entry.id();
    let team = &current.entry.team;
    let mut actions = vec![Action::DeleteEntry {
        id: id.clone(),
        expected: current.expected(),
    }];
    if let Some(account) = &actor.granted_account {
        actions.push(Action::CheckGrant {
            team: team.clone(),
            account: account.clone(),
        });
    }
    let mut rows = HostRows::new(team);
    let released = releases_host(host, &id);
    let held = host.guard.as_ref().and_then(|g| g.team.as_deref()) == Some(team.as_str());
    rows.row(&host.fqdn, host.guard.as_ref(), HostRole::Left)
        .team = (!released).then(|| team.clone());
    if released && held {
        rows.mark_enclosing(
            &current.entry.host,
            &host.fqdn,
            enclosing,
            base_domain,
            false,
        );
    }
    actions.extend(rows.actions());
    actions.extend(leave_paths(host, &id, &|_| false));
    let change = BackendChange::new(Some(&current.entry), None);
    actions.extend(backend_actions(&id, team, &change, backends));
    actions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::host::HostGuard;
    use gateway_render::Route;
    use std::collections::BTreeMap;

    const BASE: &str = "d";

    fn entry(service: &str, host: &str, paths: &[&str]) -> Entry {
        Entry {
            rollout: None,
            serving: None,
            team: "billing".into(),
            service: service.into(),
            host: host.into(),
            backend: "https://x.example".into(),
            protocol: Default::default(),
            canary: None,
            health_check: None,
            preserve_host: false,
            jwt: Default::default(),
            backends: vec![],
            routes: paths
                .iter()
                .map(|p| Route {
                    path: (*p).into(),
                    methods: None,
                    limits: vec![],
                    timeout: None,
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn guard(team: Option<&str>, version: u64, under: &[(&str, &str)]) -> HostGuard {
        HostGuard {
            team: team.map(str::to_string),
            version,
            under: under
                .iter()
                .map(|(h, t)| ((*h).to_string(), (*t).to_string()))
                .collect(),
            counters: BTreeMap::new(),
        }
    }

    fn host(fqdn: &str, team: &str, version: u64, paths: &[(&str, &str)]) -> HostView {
        HostView {
            fqdn: fqdn.into(),
            guard: Some(guard(Some(team), version, &[])),
            paths: paths
                .iter()
                .map(|(p, s)| ((*p).to_string(), (*s).to_string()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    fn empty(fqdn: &str) -> HostView {
        HostView {
            fqdn: fqdn.into(),
            guard: None,
            paths: BTreeMap::new(),
        }
    }

    fn ops() -> Actor {
        Actor::operator("ops")
    }

    fn current(e: Entry, revision: u64) -> Current {
        Current {
            entry: e,
            revision,
            owner: Some(Owner::operator("ops").encode()),
        }
    }

    fn reads<'a>(
        current: Option<&'a Current>,
        new_host: &'a HostView,
        old_host: Option<&'a HostView>,
        enclosing: &'a Enclosing,
    ) -> Reads<'a> {
        Reads {
            current,
            new_host,
            old_host,
            enclosing,
            base_domain: BASE,
            backends: &NO_BACKENDS,
        }
    }

    static NO_BACKENDS: BackendRows = BackendRows::new();

    #[test]
    fn moving_hosts_releases_the_old_host_when_the_service_was_its_last() {
        let old = entry("a", "old", &["/x"]);
        let new = entry("a", "new", &["/x"]);
        let current = current(old, 3);
        let old_host = host("old.d", "billing", 7, &[("/x", "billing/a")]);
        let new_host = empty("new.d");
        let none = Enclosing::new();
        let actions = register(
            &new,
            "{}",
            &reads(Some(&current), &new_host, Some(&old_host), &none),
            &ops(),
            9,
        );
        assert_eq!(
            actions[1..],
            [
                Action::PutHostGuard {
                    fqdn: "new.d".into(),
                    team: Some("billing".into()),
                    under: BTreeMap::new(),
                    version: 1,
                    expected: None,
                    claimant: "billing".into(),
                    role: HostRole::Claimed,
                    claims: claims(&["claims", "seg:x"], &[("root", None), ("seg:x", None)]),
                },
                Action::PutHostGuard {
                    fqdn: "old.d".into(),
                    team: None,
                    under: BTreeMap::new(),
                    version: 8,
                    expected: Some(7),
                    claimant: "billing".into(),
                    role: HostRole::Left,
                    // A release fails if anything was claimed on the host since the read.
                    claims: claims(&[], &[("claims", None)]),
                },
                Action::PutPathGuard {
                    fqdn: "new.d".into(),
                    prefix: "/x".into(),
                    service: "billing/a".into()
                },
                Action::DeletePathGuard {
                    fqdn: "old.d".into(),
                    prefix: "/x".into(),
                    service: "billing/a".into()
                },
            ]
        );
        assert!(matches!(
            &actions[0],
            Action::PutEntry {
                revision: 4,
                expected: Some(Expected { revision: 3, .. }),
                ..
            }
        ));
    }

    #[test]
    fn guards_already_held_are_not_rewritten_and_unused_ones_are_deleted() {
        let e = entry("a", "h", &["/keep", "/new"]);
        let cur = current(entry("a", "h", &["/keep", "/gone"]), 1);
        let h = host(
            "h.d",
            "billing",
            2,
            &[
                ("/keep", "billing/a"),
                ("/gone", "billing/a"),
                ("/b", "billing/b"),
            ],
        );
        let mut h = h;
        if let Some(g) = h.guard.as_mut() {
            g.counters = BTreeMap::from([("seg:new".into(), 4), ("claims".into(), 9)]);
        }
        let none = Enclosing::new();
        let actions = register(&e, "{}", &reads(Some(&cur), &h, None, &none), &ops(), 0);
        // The team holds the host: no rewrite, a check bumping the counters of the new prefix.
        assert_eq!(
            actions[1],
            Action::CheckHost {
                fqdn: "h.d".into(),
                team: "billing".into(),
                claims: claims(
                    &["claims", "seg:new"],
                    &[("root", None), ("seg:new", Some(4))]
                ),
            }
        );
        assert_eq!(
            actions[2..],
            [
                Action::PutPathGuard {
                    fqdn: "h.d".into(),
                    prefix: "/new".into(),
                    service: "billing/a".into()
                },
                Action::DeletePathGuard {
                    fqdn: "h.d".into(),
                    prefix: "/gone".into(),
                    service: "billing/a".into()
                },
            ]
        );
        // Deregistering keeps the host for the team while billing/b remains.
        let gone = deregister(
            &current(e.clone(), 2),
            &h,
            &none,
            BASE,
            &NO_BACKENDS,
            &ops(),
        );
        assert!(gone.contains(&Action::PutHostGuard {
            fqdn: "h.d".into(),
            team: Some("billing".into()),
            under: BTreeMap::new(),
            version: 3,
            expected: Some(2),
            claimant: "billing".into(),
            role: HostRole::Left,
            claims: claims(&[], &[("claims", Some(9))]),
        }));
        // Re-registering with the same prefixes claims nothing: a bare check of the team.
        let same = register(
            &e,
            "{}",
            &reads(Some(&cur), &h_same(), None, &none),
            &ops(),
            0,
        );
        assert_eq!(
            same[1],
            Action::CheckHost {
                fqdn: "h.d".into(),
                team: "billing".into(),
                claims: Claims::default(),
            }
        );
    }

    fn h_same() -> HostView {
        host(
            "h.d",
            "billing",
            2,
            &[("/keep", "billing/a"), ("/new", "billing/a")],
        )
    }

    fn claims(bump: &[&str], expect: &[(&str, Option<u64>)]) -> Claims {
        Claims {
            bump: bump.iter().map(|b| b.to_string()).collect(),
            expect: expect.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn conflicts_name_the_holder_of_the_same_prefix_and_nested_ones_are_no_conflict() {
        let none = Enclosing::new();
        let h = host("h.d", "billing", 1, &[("/reports/", "billing/r")]);
        let err =
            conflict(&entry("all", "h", &["/reports"]), &h, &none, BASE).map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("path /reports/ on h.d (the same prefix as /reports) is held by billing/r")
        );
        for nested in ["/", "/reports/monthly", "/reports/monthly/2026"] {
            assert!(
                conflict(&entry("all", "h", &[nested]), &h, &none, BASE).is_none(),
                "{nested} nests with /reports/ on the team's own host"
            );
        }
        let other_team = host("h.d", "payments", 1, &[]);
        let err = conflict(&entry("all", "h", &["/reports"]), &other_team, &none, BASE)
            .map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("host h.d is held by payments"));
        assert!(
            conflict(&entry("r", "h", &["/reports/"]), &h, &none, BASE).is_none(),
            "its own prefix is no conflict"
        );
    }

    #[test]
    fn a_host_inside_or_around_another_teams_host_is_a_conflict_naming_it() {
        // x.d is held by payments: billing may not claim a.x.d.
        let enclosing =
            Enclosing::from([("x.d".to_string(), Some(guard(Some("payments"), 4, &[])))]);
        let err = conflict(
            &entry("a", "a.x", &["/a"]),
            &empty("a.x.d"),
            &enclosing,
            BASE,
        )
        .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("host x.d (enclosing a.x.d) is held by payments")
        );
        // a.x.d is held by payments: billing may not claim x.d.
        let x = HostView {
            fqdn: "x.d".into(),
            guard: Some(guard(None, 2, &[("a.x.d", "payments")])),
            paths: BTreeMap::new(),
        };
        let err =
            conflict(&entry("a", "x", &["/a"]), &x, &Enclosing::new(), BASE).map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("host a.x.d (inside x.d) is held by payments")
        );
        // Its own team's hosts nest freely.
        let own = HostView {
            guard: Some(guard(None, 2, &[("a.x.d", "billing")])),
            ..x
        };
        assert!(conflict(&entry("a", "x", &["/a"]), &own, &Enclosing::new(), BASE).is_none());
    }

    #[test]
    fn claiming_a_host_marks_every_enclosing_host_and_releasing_unmarks_it() {
        let enclosing = Enclosing::from([
            ("b.c.d".to_string(), None),
            (
                "c.d".to_string(),
                Some(guard(None, 5, &[("z.c.d", "search")])),
            ),
        ]);
        let e = entry("a", "a.b.c", &["/a"]);
        let actions = register(
            &e,
            "{}",
            &reads(None, &empty("a.b.c.d"), None, &enclosing),
            &ops(),
            0,
        );
        let hosts: Vec<_> = actions
            .iter()
            .filter_map(|a| match a {
                Action::PutHostGuard {
                    fqdn,
                    under,
                    expected,
                    role,
                    ..
                } => Some((
                    fqdn.as_str(),
                    under.keys().cloned().collect::<Vec<_>>(),
                    *expected,
                    role.clone(),
                )),
                _ => None,
            })
            .collect();
        let inner = HostRole::Enclosing {
            inner: "a.b.c.d".into(),
        };
        assert_eq!(
            hosts,
            [
                ("a.b.c.d", vec![], None, HostRole::Claimed),
                ("b.c.d", vec!["a.b.c.d".to_string()], None, inner.clone()),
                (
                    "c.d",
                    vec!["a.b.c.d".to_string(), "z.c.d".to_string()],
                    Some(5),
                    inner
                ),
            ]
        );
        // Deregistering the last service there takes it out of both again.
        let held = host("a.b.c.d", "billing", 1, &[("/a", "billing/a")]);
        let marked = Enclosing::from([
            (
                "b.c.d".to_string(),
                Some(guard(None, 1, &[("a.b.c.d", "billing")])),
            ),
            (
                "c.d".to_string(),
                Some(guard(
                    None,
                    6,
                    &[("a.b.c.d", "billing"), ("z.c.d", "search")],
                )),
            ),
        ]);
        let gone = deregister(&current(e, 1), &held, &marked, BASE, &NO_BACKENDS, &ops());
        let unders: Vec<_> = gone
            .iter()
            .filter_map(|a| match a {
                Action::PutHostGuard { fqdn, under, .. } => Some((fqdn.as_str(), under.len())),
                _ => None,
            })
            .collect();
        assert_eq!(unders, [("a.b.c.d", 0), ("b.c.d", 0), ("c.d", 1)]);
    }

    #[test]
    fn a_grant_check_joins_a_stack_change_and_owners_are_enforced() {
        let stack = "arn:aws:cloudformation:us-east-1:222222222222:stack/s/1";
        let actor = Actor::stack("222222222222", stack, "Expose");
        let none = Enclosing::new();
        let e = entry("a", "h", &["/a"]);
        let actions = register(
            &e,
            "{}",
            &reads(None, &empty("h.d"), None, &none),
            &actor,
            0,
        );
        assert_eq!(
            actions[1],
            Action::CheckGrant {
                team: "billing".into(),
                account: "222222222222".into()
            }
        );
        let cur = current(e.clone(), 1);
        let err = check_owner(Some(&cur), "billing/a", &actor.owner).map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err("entry billing/a is held by operators (last written by ops)".into())
        );
        let legacy = Current { owner: None, ..cur };
        assert!(check_owner(Some(&legacy), "billing/a", &actor.owner).is_err());
        assert!(check_owner(Some(&legacy), "billing/a", &Owner::operator("ops")).is_ok());
        assert!(check_owner(None, "billing/a", &actor.owner).is_ok());
    }

    fn claim(authority: &str, team: &str, users: &[&str], shared: &[&str]) -> BackendClaim {
        BackendClaim {
            authority: authority.into(),
            team: team.into(),
            users: users.iter().map(|u| u.to_string()).collect(),
            shared_with: shared.iter().map(|t| t.to_string()).collect(),
        }
    }

    fn with_canary(mut e: Entry, backend: &str) -> Entry {
        e.canary = Some(gateway_render::Canary {
            backend: backend.into(),
            weight: 10,
            header: None,
        });
        e
    }

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_backend_change_is_what_the_entry_starts_and_stops_using() {
        let before = entry("a", "h", &["/a"]);
        // The default port written out or not is one authority: nothing changes.
        let mut same = before.clone();
        same.backend = "https://x.example:443/".into();
        assert_eq!(
            BackendChange::new(Some(&before), Some(&same)),
            BackendChange::default()
        );
        let moved = with_canary(
            Entry {
                backend: "https://y.example:8443".into(),
                ..before.clone()
            },
            "https://x.example",
        );
        assert_eq!(
            BackendChange::new(Some(&before), Some(&moved)),
            BackendChange {
                claimed: set(&["y.example:8443"]),
                released: set(&[]),
            }
        );
        assert_eq!(
            BackendChange::new(Some(&moved), None),
            BackendChange {
                claimed: set(&[]),
                released: set(&["x.example:443", "y.example:8443"]),
            }
        );
        assert_eq!(
            BackendChange::new(None, Some(&before)).claimed,
            set(&["x.example:443"])
        );
    }

    #[test]
    fn a_new_backend_is_claimed_after_the_guards_and_a_kept_one_writes_nothing() {
        let none = Enclosing::new();
        let e = entry("a", "h", &["/a"]);
        let actions = register(
            &e,
            "{}",
            &reads(None, &empty("h.d"), None, &none),
            &ops(),
            0,
        );
        assert_eq!(
            actions.last(),
            Some(&Action::ClaimBackend {
                authority: "x.example:443".into(),
                service: "billing/a".into(),
                team: "billing".into(),
                takeover: None,
            })
        );
        // Only routes change: the backend row is not in the transaction.
        let cur = current(e.clone(), 1);
        let more = entry("a", "h", &["/a", "/b"]);
        let h = host("h.d", "billing", 1, &[("/a", "billing/a")]);
        let actions = register(&more, "{}", &reads(Some(&cur), &h, None, &none), &ops(), 0);
        assert!(
            !actions.iter().any(|a| matches!(
                a,
                Action::ClaimBackend { .. } | Action::ReleaseBackend { .. }
            )),
            "{actions:?}"
        );
    }

    #[test]
    fn another_teams_backend_is_held_unless_shared_with_the_team_or_unused() {
        let e = entry("a", "h", &["/a"]);
        let change = BackendChange::new(None, Some(&e));
        let rows = |c: BackendClaim| BackendRows::from([("x.example:443".to_string(), Some(c))]);
        let held = rows(claim("x.example:443", "alpha", &["alpha/api"], &[]));
        assert_eq!(
            backend_held(&e, &change, &held).map(|e| e.to_string()).as_deref(),
            Some("backend x.example:443 is held by team alpha (operators can share it: gatewayctl backend share x.example:443 billing)")
        );
        let claim_of = |rows: &BackendRows| {
            assert!(backend_held(&e, &change, rows).is_none());
            backend_actions(&e.id(), &e.team, &change, rows)
        };
        let shared = rows(claim(
            "x.example:443",
            "alpha",
            &["alpha/api"],
            &["billing"],
        ));
        let own = rows(claim("x.example:443", "billing", &["billing/other"], &[]));
        for rows in [&shared, &own, &BackendRows::new()] {
            assert_eq!(
                claim_of(rows),
                [Action::ClaimBackend {
                    authority: "x.example:443".into(),
                    service: "billing/a".into(),
                    team: "billing".into(),
                    takeover: None,
                }]
            );
        }
        // A claim nobody uses is taken over, conditioned on its holder as read.
        let stale = rows(claim("x.example:443", "alpha", &[], &[]));
        assert_eq!(
            claim_of(&stale),
            [Action::ClaimBackend {
                authority: "x.example:443".into(),
                service: "billing/a".into(),
                team: "billing".into(),
                takeover: Some("alpha".into()),
            }]
        );
        // Already a user (the migration listed it): nothing to write.
        let listed = rows(claim("x.example:443", "billing", &["billing/a"], &[]));
        assert!(claim_of(&listed).is_empty());
    }

    #[test]
    fn leaving_a_backend_releases_it_where_the_service_is_a_user() {
        let none = Enclosing::new();
        let old = with_canary(entry("a", "h", &["/a"]), "https://c.example");
        let cur = current(old.clone(), 2);
        let new = Entry {
            backend: "https://y.example".into(),
            ..entry("a", "h", &["/a"])
        };
        let h = host("h.d", "billing", 1, &[("/a", "billing/a")]);
        // x.example's claim lists the service; c.example predates claims and has no row.
        let backends = BackendRows::from([
            (
                "x.example:443".to_string(),
                Some(claim("x.example:443", "billing", &["billing/a"], &[])),
            ),
            ("c.example:443".to_string(), None),
            ("y.example:443".to_string(), None),
        ]);
        let reads = Reads {
            backends: &backends,
            ..reads(Some(&cur), &h, None, &none)
        };
        let actions = register(&new, "{}", &reads, &ops(), 0);
        assert_eq!(
            actions[actions.len() - 2..],
            [
                Action::ClaimBackend {
                    authority: "y.example:443".into(),
                    service: "billing/a".into(),
                    team: "billing".into(),
                    takeover: None,
                },
                Action::ReleaseBackend {
                    authority: "x.example:443".into(),
                    service: "billing/a".into(),
                },
            ]
        );
        let gone = deregister(&cur, &h, &none, BASE, &backends, &ops());
        assert_eq!(
            gone.last(),
            Some(&Action::ReleaseBackend {
                authority: "x.example:443".into(),
                service: "billing/a".into(),
            })
        );
        assert_eq!(
            gone.iter()
                .filter(|a| matches!(a, Action::ReleaseBackend { .. }))
                .count(),
            1
        );
    }

    /// The worst case the bounds allow without a backend change is exactly 100 actions; the
    /// same move changing the backend and the canary's needs 104 and is refused, while its two
    /// halves fit.
    #[test]
    fn a_registration_past_100_actions_is_refused_naming_the_split() {
        use gateway_render::check::{MAX_HOST_LABELS, MAX_PATH_PREFIXES};
        let deep = |first: &str| {
            std::iter::once(first.to_string())
                .chain((1..MAX_HOST_LABELS).map(|i| format!("{first}{i}")))
                .collect::<Vec<_>>()
                .join(".")
        };
        let paths = |p: &str| -> Vec<String> {
            (0..MAX_PATH_PREFIXES).map(|i| format!("/{p}{i}")).collect()
        };
        fn refs(v: &[String]) -> Vec<&str> {
            v.iter().map(String::as_str).collect()
        }
        let (old_paths, new_paths) = (paths("a"), paths("b"));
        let old = with_canary(
            entry("big", &deep("a"), &refs(&old_paths)),
            "https://c.example",
        );
        let cur = current(old.clone(), 1);
        let old_fqdn = format!("{}.{BASE}", old.host);
        let mut old_host = host(&old_fqdn, "billing", 1, &[]);
        old_host.paths = old_paths
            .iter()
            .map(|p| (p.clone(), "billing/big".to_string()))
            .collect();
        let enclosing: Enclosing = enclosing_hosts(&old.host, BASE)
            .into_iter()
            .map(|outer| {
                let under = [(old_fqdn.as_str(), "billing")];
                (outer, Some(guard(None, 1, &under)))
            })
            .chain(
                enclosing_hosts(&deep("e"), BASE)
                    .into_iter()
                    .map(|outer| (outer, None)),
            )
            .collect();
        let stack = Actor::stack(
            "222222222222",
            "arn:aws:cloudformation:us-east-1:222222222222:stack/s/1",
            "Expose",
        );
        let new_host = empty(&format!("{}.{BASE}", deep("e")));
        let moved = entry("big", &deep("e"), &refs(&new_paths));
        let backends = |e: &Entry| -> BackendRows {
            BackendChange::new(Some(&old), Some(e))
                .authorities()
                .map(|a| {
                    let users: &[&str] = if authorities(&old).contains(a) {
                        &["billing/big"]
                    } else {
                        &[]
                    };
                    (a.clone(), Some(claim(a, "billing", users, &[])))
                })
                .collect()
        };
        let plan = |e: &Entry| {
            let rows = backends(e);
            let reads = Reads {
                backends: &rows,
                ..reads(Some(&cur), &new_host, Some(&old_host), &enclosing)
            };
            register(e, "{}", &reads, &stack, 0)
        };
        // Moving and swapping every prefix, backends kept: 1 + 1 + 2 × (1 + 3) + 2 × 45.
        let kept = with_canary(moved.clone(), "https://c.example");
        assert_eq!(plan(&kept).len(), 100);
        assert!(check_size(&plan(&kept)).is_ok());
        // The same with a new backend and a new canary: two claims and two releases more.
        let all = with_canary(
            Entry {
                backend: "https://y.example".into(),
                ..moved
            },
            "https://d.example",
        );
        let actions = plan(&all);
        assert_eq!(actions.len(), 104);
        let err = check_size(&actions).expect_err("past the limit");
        assert_eq!(err.kind(), "rejected");
        assert_eq!(
            err.to_string(),
            "backend: this change needs 104 writes in one DynamoDB transaction, more than the 100 it allows: it changes backends while changing many path prefixes or the host. Register it in two steps: first the new backends (backend, canary.backend, mirror backends) with the current host and routes, then the new host and routes"
        );
        // Its first half: the backends alone.
        let first = Entry {
            backend: all.backend.clone(),
            canary: all.canary.clone(),
            ..old.clone()
        };
        let rows = backends(&first);
        let none = Enclosing::new();
        let reads = Reads {
            backends: &rows,
            ..reads(Some(&cur), &old_host, None, &none)
        };
        let first_half = register(&first, "{}", &reads, &stack, 0);
        assert_eq!(first_half.len(), 1 + 1 + 1 + 2 + 2);
    }
}
