//! Claims for a registry that predates them (`gatewayctl backend migrate`,
//! docs/design.md#ownership-and-conflicts). Pure: every entry and every claim go in, what to
//! write for each authority in use comes out. An authority one team uses is claimed for it; one
//! several teams use, without a claim that admits them all, is a conflict for operators to
//! resolve, and nothing is written for it. Entries are never written.

use super::backend::{authorities, BackendClaim};
use gateway_render::Entry;
use std::collections::{BTreeMap, BTreeSet};

/// How a migration's write requires the claim row still to be, so it never overwrites a claim
/// written since the read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// No claim.
    Absent,
    /// Held by this team (the write only adds users).
    Holder(String),
    /// This team's claim, still without users (taken over, as a registration would).
    Stale(String),
}

/// What the migration does, or did, for one authority in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Migration {
    /// `users` written as users of a claim held by `team` (planned, or done).
    Claim {
        authority: String,
        team: String,
        users: BTreeSet<String>,
        expect: Expect,
    },
    /// Already claimed, every service using it listed: nothing to write.
    Claimed { authority: String, team: String },
    /// Used by teams the claim does not admit (`holder`), or by several teams without a claim
    /// (`holder: None`): team → its services using the authority. Nothing written.
    Conflict {
        authority: String,
        holder: Option<String>,
        users: BTreeMap<String, BTreeSet<String>>,
    },
    /// Its claim changed between the read and the write (a registration claimed it): nothing
    /// written; running the migration again decides it.
    Changed { authority: String },
}

impl Migration {
    pub fn authority(&self) -> &str {
        match self {
            Migration::Claim { authority, .. }
            | Migration::Claimed { authority, .. }
            | Migration::Conflict { authority, .. }
            | Migration::Changed { authority } => authority,
        }
    }
}

/// What to write for every authority `entries` use, by authority, given the `claims` in the
/// table. Claims of authorities no entry uses are left alone.
pub(crate) fn plan_migration<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
    claims: &[BackendClaim],
) -> Vec<Migration> {
    let mut used: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for entry in entries {
        for authority in authorities(entry) {
            used.entry(authority)
                .or_default()
                .entry(entry.team.clone())
                .or_default()
                .insert(entry.id());
        }
    }
    let claims: BTreeMap<&str, &BackendClaim> =
        claims.iter().map(|c| (c.authority.as_str(), c)).collect();
    used.into_iter()
        .map(|(authority, teams)| {
            let claim = claims.get(authority.as_str()).copied();
            plan_one(authority, teams, claim)
        })
        .collect()
}

fn plan_one(
    authority: String,
    teams: BTreeMap<String, BTreeSet<String>>,
    claim: Option<&BackendClaim>,
) -> Migration {
    let ids: BTreeSet<String> = teams.values().flatten().cloned().collect();
    let only_team = (teams.len() == 1)
        .then(|| teams.keys().next().cloned())
        .flatten();
    match (claim, only_team) {
        (Some(claim), _) if teams.keys().all(|t| claim.admits(t)) => {
            let missing: BTreeSet<String> = ids.difference(&claim.users).cloned().collect();
            if missing.is_empty() {
                Migration::Claimed {
                    authority,
                    team: claim.team.clone(),
                }
            } else {
                Migration::Claim {
                    authority,
                    team: claim.team.clone(),
                    users: missing,
                    expect: Expect::Holder(claim.team.clone()),
                }
            }
        }
        (Some(claim), Some(team)) if claim.is_stale() => Migration::Claim {
            authority,
            team,
            users: ids,
            expect: Expect::Stale(claim.team.clone()),
        },
        (None, Some(team)) => Migration::Claim {
            authority,
            team,
            users: ids,
            expect: Expect::Absent,
        },
        (claim, _) => Migration::Conflict {
            authority,
            holder: claim.map(|c| c.team.clone()),
            users: teams,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_render::Route;

    fn entry(team: &str, service: &str, backend: &str) -> Entry {
        Entry {
            rollout: None,
            serving: None,
            team: team.into(),
            service: service.into(),
            host: team.into(),
            backend: backend.into(),
            protocol: Default::default(),
            canary: None,
            health_check: None,
            preserve_host: false,
            jwt: Default::default(),
            backends: vec![],
            routes: vec![Route {
                path: format!("/{service}"),
                ..Default::default()
            }],
        }
    }

    fn claim(authority: &str, team: &str, users: &[&str], shared: &[&str]) -> BackendClaim {
        BackendClaim {
            authority: authority.into(),
            team: team.into(),
            users: users.iter().map(|u| u.to_string()).collect(),
            shared_with: shared.iter().map(|t| t.to_string()).collect(),
        }
    }

    fn ids(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_teams_backend_is_claimed_and_several_teams_backend_is_a_conflict() {
        let entries = [
            entry("alpha", "a", "https://a.internal.example"),
            entry("alpha", "b", "https://a.internal.example:443"),
            entry("alpha", "c", "http://shared.internal.example:8080"),
            entry("beta", "d", "http://shared.internal.example:8080"),
        ];
        assert_eq!(
            plan_migration(&entries, &[]),
            [
                Migration::Claim {
                    authority: "a.internal.example:443".into(),
                    team: "alpha".into(),
                    users: ids(&["alpha/a", "alpha/b"]),
                    expect: Expect::Absent,
                },
                Migration::Conflict {
                    authority: "shared.internal.example:8080".into(),
                    holder: None,
                    users: BTreeMap::from([
                        ("alpha".into(), ids(&["alpha/c"])),
                        ("beta".into(), ids(&["beta/d"])),
                    ]),
                },
            ]
        );
    }

    #[test]
    fn claims_written_since_are_kept_and_only_missing_users_are_added() {
        let entries = [
            entry("alpha", "a", "https://a.internal.example"),
            entry("alpha", "b", "https://a.internal.example"),
            entry("beta", "p", "https://platform.internal.example"),
            entry("gamma", "q", "https://platform.internal.example"),
            entry("beta", "x", "https://taken.internal.example"),
        ];
        let claims = [
            // A registration since the upgrade claimed it for alpha/a; alpha/b predates claims.
            claim("a.internal.example:443", "alpha", &["alpha/a"], &[]),
            // Operators named beta its holder and shared it with gamma.
            claim("platform.internal.example:443", "beta", &[], &["gamma"]),
            // Gamma registered it since the upgrade, and beta/x predates claims.
            claim("taken.internal.example:443", "gamma", &["gamma/y"], &[]),
            // Nobody uses it: left alone.
            claim("idle.internal.example:443", "delta", &[], &[]),
        ];
        let plan = plan_migration(&entries, &claims);
        assert_eq!(
            plan,
            [
                Migration::Claim {
                    authority: "a.internal.example:443".into(),
                    team: "alpha".into(),
                    users: ids(&["alpha/b"]),
                    expect: Expect::Holder("alpha".into()),
                },
                Migration::Claim {
                    authority: "platform.internal.example:443".into(),
                    team: "beta".into(),
                    users: ids(&["beta/p", "gamma/q"]),
                    expect: Expect::Holder("beta".into()),
                },
                Migration::Conflict {
                    authority: "taken.internal.example:443".into(),
                    holder: Some("gamma".into()),
                    users: BTreeMap::from([("beta".into(), ids(&["beta/x"]))]),
                },
            ]
        );
        // Once written, the same plan writes nothing: the migration is idempotent.
        let written = [
            claim(
                "a.internal.example:443",
                "alpha",
                &["alpha/a", "alpha/b"],
                &[],
            ),
            claim(
                "platform.internal.example:443",
                "beta",
                &["beta/p", "gamma/q"],
                &["gamma"],
            ),
        ];
        let again = plan_migration(&entries[..4], &written);
        assert!(
            again.iter().all(|m| matches!(m, Migration::Claimed { .. })),
            "{again:?}"
        );
    }

    #[test]
    fn a_stale_claim_of_another_team_is_taken_over_by_its_only_user() {
        let entries = [entry("beta", "x", "https://old.internal.example")];
        let claims = [claim("old.internal.example:443", "alpha", &[], &[])];
        assert_eq!(
            plan_migration(&entries, &claims),
            [Migration::Claim {
                authority: "old.internal.example:443".into(),
                team: "beta".into(),
                users: ids(&["beta/x"]),
                expect: Expect::Stale("alpha".into()),
            }]
        );
    }

    #[test]
    fn a_canary_backend_is_claimed_like_the_backend() {
        let mut e = entry("alpha", "a", "https://a.internal.example");
        e.canary = Some(gateway_render::Canary {
            backend: "https://a-next.internal.example".into(),
            weight: 10,
            header: None,
        });
        let plan = plan_migration([&e], &[]);
        let authorities: Vec<&str> = plan.iter().map(Migration::authority).collect();
        assert_eq!(
            authorities,
            ["a-next.internal.example:443", "a.internal.example:443"]
        );
    }
}
