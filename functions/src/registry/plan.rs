//! What a registration or deregistration writes, decided from what was read. Pure: the reads
//! go in, the transaction's actions (or the conflict, named with its holder) come out.

use super::host::HostView;
use super::RegistryError;
use gateway_render::check::{path_prefixes, prefixes_overlap};
use gateway_render::Entry;

/// The stored entry as read, with the revision its write must still match.
#[derive(Debug, Clone)]
pub(crate) struct Current {
    pub entry: Entry,
    pub revision: u64,
}

/// One item of a TransactWriteItems, each with the condition that keeps it honest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Condition: revision still `expected`, or no entry when `None`.
    PutEntry {
        id: String,
        json: String,
        revision: u64,
        updated_at: u64,
        expected: Option<u64>,
    },
    /// Condition: revision still `expected`.
    DeleteEntry { id: String, expected: u64 },
    /// Condition: version still `expected` (no row when `None`) and the row's team is absent or
    /// `claimant`. Every registration on a host writes this row, so registrations on one host
    /// are serialised: whatever was read from the host partition is still true at commit.
    PutHostGuard {
        fqdn: String,
        team: Option<String>,
        version: u64,
        expected: Option<u64>,
        claimant: String,
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

/// The first conflict with another team's host or another service's prefix, in a stable order
/// (host first, then claimed prefixes in order).
pub(crate) fn conflict(entry: &Entry, host: &HostView) -> Option<RegistryError> {
    if let Some(team) = host.guard.as_ref().and_then(|g| g.team.as_deref()) {
        if team != entry.team {
            return Some(host_conflict(&host.fqdn, team));
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

/// The host guard row after `id` leaves the host: still the team's while another of its
/// services remains there, released (no team) otherwise.
fn release_host(host: &HostView, id: &str, team: &str) -> Action {
    Action::PutHostGuard {
        fqdn: host.fqdn.clone(),
        team: host.others_remain(id).then(|| team.to_string()),
        version: host.version().unwrap_or(0) + 1,
        expected: host.version(),
        claimant: team.to_string(),
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

/// The actions registering `entry` (already checked) on `new_host`. `old_host` is the host the
/// current entry is on when it differs. The caller has already ruled out `conflict`.
pub(crate) fn register(
    entry: &Entry,
    json: &str,
    current: Option<&Current>,
    new_host: &HostView,
    old_host: Option<&HostView>,
    now: u64,
) -> Vec<Action> {
    let id = entry.id();
    let claimed = path_prefixes(entry);
    let mut actions = vec![
        Action::PutEntry {
            id: id.clone(),
            json: json.to_string(),
            revision: current.map_or(1, |c| c.revision + 1),
            updated_at: now,
            expected: current.map(|c| c.revision),
        },
        Action::PutHostGuard {
            fqdn: new_host.fqdn.clone(),
            team: Some(entry.team.clone()),
            version: new_host.version().unwrap_or(0) + 1,
            expected: new_host.version(),
            claimant: entry.team.clone(),
        },
    ];
    // Guards this service already holds need no write: the host guard's version check proves
    // they are unchanged at commit.
    for prefix in &claimed {
        if new_host.paths.get(prefix) != Some(&id) {
            actions.push(Action::PutPathGuard {
                fqdn: new_host.fqdn.clone(),
                prefix: prefix.clone(),
                service: id.clone(),
            });
        }
    }
    actions.extend(leave_paths(new_host, &id, &|p| claimed.contains(p)));
    if let Some(old) = old_host {
        actions.push(release_host(old, &id, &entry.team));
        actions.extend(leave_paths(old, &id, &|_| false));
    }
    actions
}

/// The actions removing `current` from the registry and its guards from `host`.
pub(crate) fn deregister(current: &Current, host: &HostView) -> Vec<Action> {
    let id = current.entry.id();
    let mut actions = vec![
        Action::DeleteEntry {
            id: id.clone(),
            expected: current.revision,
        },
        release_host(host, &id, &current.entry.team),
    ];
    actions.extend(leave_paths(host, &id, &|_| false));
    actions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::host::HostGuard;
    use gateway_render::Route;
    use std::collections::BTreeMap;

    fn entry(service: &str, host: &str, paths: &[&str]) -> Entry {
        Entry {
            team: "billing".into(),
            service: service.into(),
            host: host.into(),
            backend: "https://x.example".into(),
            routes: paths
                .iter()
                .map(|p| Route {
                    path: (*p).into(),
                    methods: None,
                    limits: vec![],
                })
                .collect(),
        }
    }

    fn host(fqdn: &str, team: &str, version: u64, paths: &[(&str, &str)]) -> HostView {
        HostView {
            fqdn: fqdn.into(),
            guard: Some(HostGuard {
                team: Some(team.into()),
                version,
            }),
            paths: paths
                .iter()
                .map(|(p, s)| ((*p).to_string(), (*s).to_string()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn moving_hosts_releases_the_old_host_when_the_service_was_its_last() {
        let old = entry("a", "old", &["/x"]);
        let new = entry("a", "new", &["/x"]);
        let current = Current {
            entry: old,
            revision: 3,
        };
        let old_host = host("old.d", "billing", 7, &[("/x", "billing/a")]);
        let new_host = HostView {
            fqdn: "new.d".into(),
            guard: None,
            paths: BTreeMap::new(),
        };
        let actions = register(&new, "{}", Some(&current), &new_host, Some(&old_host), 9);
        assert_eq!(
            actions[1..],
            [
                Action::PutHostGuard {
                    fqdn: "new.d".into(),
                    team: Some("billing".into()),
                    version: 1,
                    expected: None,
                    claimant: "billing".into()
                },
                Action::PutPathGuard {
                    fqdn: "new.d".into(),
                    prefix: "/x".into(),
                    service: "billing/a".into()
                },
                Action::PutHostGuard {
                    fqdn: "old.d".into(),
                    team: None,
                    version: 8,
                    expected: Some(7),
                    claimant: "billing".into()
                },
                Action::DeletePathGuard {
                    fqdn: "old.d".into(),
                    prefix: "/x".into(),
                    service: "billing/a".into()
                },
            ]
        );
        assert!(matches!(
            actions[0],
            Action::PutEntry {
                revision: 4,
                expected: Some(3),
                ..
            }
        ));
    }

    #[test]
    fn guards_already_held_are_not_rewritten_and_unused_ones_are_deleted() {
        let e = entry("a", "h", &["/keep", "/new"]);
        let current = Current {
            entry: entry("a", "h", &["/keep", "/gone"]),
            revision: 1,
        };
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
        let actions = register(&e, "{}", Some(&current), &h, None, 0);
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
            &Current {
                entry: e,
                revision: 2,
            },
            &h,
        );
        assert!(gone.contains(&Action::PutHostGuard {
            fqdn: "h.d".into(),
            team: Some("billing".into()),
            version: 3,
            expected: Some(2),
            claimant: "billing".into()
        }));
    }

    #[test]
    fn conflicts_name_the_holder_of_the_overlapping_prefix() {
        let h = host("h.d", "billing", 1, &[("/reports/monthly", "billing/r")]);
        let err = conflict(&entry("all", "h", &["/reports"]), &h).map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("path /reports/monthly on h.d (overlapping /reports) is held by billing/r")
        );
        let other_team = host("h.d", "payments", 1, &[]);
        let err = conflict(&entry("all", "h", &["/reports"]), &other_team).map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("host h.d is held by payments"));
        assert!(
            conflict(&entry("r", "h", &["/reports/monthly"]), &h).is_none(),
            "its own prefix is no conflict"
        );
    }
}
