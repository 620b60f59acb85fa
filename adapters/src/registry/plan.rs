//! What a registration or deregistration writes, decided from what was read. Pure: the reads
//! go in, the transaction's actions (or the conflict, named with its holder) come out.

use super::host::{claim_counters, enclosing_hosts, HostGuard, HostView, ATTR_CLAIMS};
use super::owner::{Actor, Owner};
use super::RegistryError;
use gateway_render::check::{path_prefixes, prefixes_overlap};
use gateway_render::Entry;
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
        format!("path {held} on {fqdn} (overlapping {claimed})")
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
            if *holder != id && prefixes_overlap(&claimed, held) {
                return Some(path_conflict(&host.fqdn, held, &claimed, holder));
            }
        }
    }
    None
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
    actions
}

/// The actions removing `current` from the registry and its guards from `host`.
pub(crate) fn deregister(
    current: &Current,
    host: &HostView,
    enclosing: &Enclosing,
    base_domain: &str,
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
            team: "billing".into(),
            service: service.into(),
            host: host.into(),
            backend: "https://x.example".into(),
            protocol: Default::default(),
            canary: None,
            health_check: None,
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
        }
    }

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
        let gone = deregister(&current(e.clone(), 2), &h, &none, BASE, &ops());
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
    fn conflicts_name_the_holder_of_the_overlapping_prefix() {
        let none = Enclosing::new();
        let h = host("h.d", "billing", 1, &[("/reports/monthly", "billing/r")]);
        let err =
            conflict(&entry("all", "h", &["/reports"]), &h, &none, BASE).map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("path /reports/monthly on h.d (overlapping /reports) is held by billing/r")
        );
        let other_team = host("h.d", "payments", 1, &[]);
        let err = conflict(&entry("all", "h", &["/reports"]), &other_team, &none, BASE)
            .map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("host h.d is held by payments"));
        assert!(
            conflict(&entry("r", "h", &["/reports/monthly"]), &h, &none, BASE).is_none(),
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
        let gone = deregister(&current(e, 1), &held, &marked, BASE, &ops());
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
}
