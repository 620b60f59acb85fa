//! Bounds on what one registrant can cost the shared gateway: entries per team, routes in the
//! whole registry, and the bytes of a bundle (what the reconciler publishes and every sidecar
//! downloads and holds in memory). Operators set them (`GATEWAY_MAX_ENTRIES_PER_TEAM`,
//! `GATEWAY_MAX_ROUTES`, `GATEWAY_MAX_CLUSTERS`, `GATEWAY_MAX_BUNDLE_BYTES`); every refusal
//! names the limit. Routes and https clusters are also the memory envelope the shipped
//! infrastructure is sized for (docs/design.md#memory-envelope): registration and the reconciler
//! refuse a registry past them, so nothing accepted can outgrow the memory the functions and
//! proxies are given.

use crate::check::Problem;
use crate::entry::Entry;
use std::collections::BTreeMap;

/// Entries (services) one team may register.
pub const DEFAULT_MAX_ENTRIES_PER_TEAM: usize = 100;
/// Team routes in the whole registry. Envoy's validate of 50k routes took 15-22 s here and its
/// bundle is 111 MB (docs/benchmarks.md); 20k keeps a reconcile run and every proxy's reload
/// well inside that.
pub const DEFAULT_MAX_ROUTES: usize = 20_000;
/// Backend clusters in the whole registry. The envelope prices every cluster as an https one
/// (a TLS context and its own parse of the CA file, in validation and in every proxy: the
/// largest per-cluster cost measured, docs/benchmarks.md "Memory envelope"), so a registry of
/// many plain-http clusters cannot slip past it either.
pub const DEFAULT_MAX_CLUSTERS: usize = 2_500;
/// Bytes of `bundle.json`: 2.0-2.2 KB per route measured (docs/benchmarks.md, "Bundle size"), so
/// the default route cap (about 45 MB) fits with room for longer paths and more limits.
pub const DEFAULT_MAX_BUNDLE_BYTES: usize = 128 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub max_entries_per_team: usize,
    pub max_routes: usize,
    pub max_clusters: usize,
    pub max_bundle_bytes: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_entries_per_team: DEFAULT_MAX_ENTRIES_PER_TEAM,
            max_routes: DEFAULT_MAX_ROUTES,
            max_clusters: DEFAULT_MAX_CLUSTERS,
            max_bundle_bytes: DEFAULT_MAX_BUNDLE_BYTES,
        }
    }
}

impl Bounds {
    /// Bounds from the settings' values (`None`: the default). A value must be a positive
    /// integer; the error names the setting.
    pub fn from_values(
        entries_per_team: Option<&str>,
        routes: Option<&str>,
        https_clusters: Option<&str>,
        bundle_bytes: Option<&str>,
    ) -> Result<Bounds, String> {
        let d = Bounds::default();
        Ok(Bounds {
            max_entries_per_team: parse(
                "GATEWAY_MAX_ENTRIES_PER_TEAM",
                entries_per_team,
                d.max_entries_per_team,
            )?,
            max_routes: parse("GATEWAY_MAX_ROUTES", routes, d.max_routes)?,
            max_clusters: parse("GATEWAY_MAX_CLUSTERS", https_clusters, d.max_clusters)?,
            max_bundle_bytes: parse("GATEWAY_MAX_BUNDLE_BYTES", bundle_bytes, d.max_bundle_bytes)?,
        })
    }

    /// Every bound the registry `entries` breaks, one sentence each, naming the team and the
    /// limit.
    pub fn registry_problems(&self, entries: &[Entry]) -> Vec<String> {
        self.totals_problems(&Totals::of(entries))
    }

    /// Every bound a registry of these totals breaks, as [`Bounds::registry_problems`] words
    /// them: teams past their count (by name), then routes, then clusters.
    pub fn totals_problems(&self, totals: &Totals) -> Vec<String> {
        let mut problems: Vec<String> = totals
            .entries_per_team
            .iter()
            .filter(|(_, n)| **n > self.max_entries_per_team)
            .map(|(team, n)| self.entries_problem(team, *n))
            .collect();
        if totals.routes > self.max_routes {
            problems.push(self.routes_problem(totals.routes));
        }
        if totals.clusters > self.max_clusters {
            problems.push(self.clusters_problem(totals.clusters));
        }
        problems
    }

    /// What registering `entry` over `current` (its stored version, if any) would grow past, for
    /// a registry of `totals` (counted with `current` in it). Only growth is refused: a new entry
    /// past its team's count, more routes or more clusters past the registry's. A team may
    /// always shrink, or change an entry within its count. Fields as the register path names
    /// them: `team`, `routes`, `backend`.
    pub fn growth_problems(
        &self,
        totals: &Totals,
        current: Option<&Entry>,
        entry: &Entry,
    ) -> Vec<Problem> {
        let mut problems = Vec::new();
        if current.is_none() {
            let team_entries = totals.team_entries(&entry.team) + 1;
            if team_entries > self.max_entries_per_team {
                problems.push(Problem {
                    field: "team".into(),
                    reason: self.entries_problem(&entry.team, team_entries),
                });
            }
        }
        let mut after = totals.clone();
        if let Some(c) = current {
            after.remove(c);
        }
        after.add(entry);
        if after.routes > self.max_routes && after.routes > totals.routes {
            problems.push(Problem {
                field: "routes".into(),
                reason: self.routes_problem(after.routes),
            });
        }
        // The memory envelope's other axis (docs/design.md#memory-envelope): clusters.
        if after.clusters > self.max_clusters && after.clusters > totals.clusters {
            problems.push(Problem {
                field: "backend".into(),
                reason: self.clusters_problem(after.clusters),
            });
        }
        problems
    }

    /// How full the memory envelope is, in percent: the larger of routes and clusters
    /// against their bounds (over 100 when a registry is past them).
    pub fn capacity_used(&self, entries: &[Entry]) -> f64 {
        let routes: usize = entries.iter().map(|e| e.routes.len()).sum();
        let share = |n: usize, max: usize| n as f64 * 100.0 / max as f64;
        share(routes, self.max_routes).max(share(clusters(entries), self.max_clusters))
    }

    pub fn clusters_problem(&self, clusters: usize) -> String {
        format!(
            "the registry would hold {clusters} backend clusters; at most {} \
             (GATEWAY_MAX_CLUSTERS, the memory envelope the gateway is sized for)",
            self.max_clusters
        )
    }

    pub fn entries_problem(&self, team: &str, entries: usize) -> String {
        format!(
            "team {team} has {entries} entries; at most {} per team (GATEWAY_MAX_ENTRIES_PER_TEAM)",
            self.max_entries_per_team
        )
    }

    pub fn routes_problem(&self, routes: usize) -> String {
        format!(
            "the registry would hold {routes} routes; at most {} (GATEWAY_MAX_ROUTES)",
            self.max_routes
        )
    }

    /// A bundle of `bytes` is too big to publish or to download.
    pub fn bundle_problem(&self, bytes: usize) -> Option<String> {
        (bytes > self.max_bundle_bytes).then(|| {
            format!(
                "bundle.json is {bytes} bytes; at most {} (GATEWAY_MAX_BUNDLE_BYTES)",
                self.max_bundle_bytes
            )
        })
    }
}

/// What the bounds count in a registry: routes, clusters and entries per team. The reconciler
/// counts them on every run and records them; the register path judges one entry's growth
/// against the record instead of reading the whole table (docs/design.md#registry-totals).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub routes: usize,
    pub clusters: usize,
    /// Teams with at least one entry.
    pub entries_per_team: BTreeMap<String, usize>,
}

impl Totals {
    pub fn of<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Totals {
        let mut totals = Totals::default();
        for e in entries {
            totals.add(e);
        }
        totals
    }

    pub fn add(&mut self, entry: &Entry) {
        self.routes += entry.revisions().map(|e| e.routes.len()).sum::<usize>();
        self.clusters += clusters(std::slice::from_ref(entry));
        *self.entries_per_team.entry(entry.team.clone()).or_default() += 1;
    }

    /// Takes `entry` out again. Saturating: totals counted before `entry` was registered may
    /// not hold it.
    pub fn remove(&mut self, entry: &Entry) {
        self.routes = self
            .routes
            .saturating_sub(entry.revisions().map(|e| e.routes.len()).sum::<usize>());
        self.clusters = self
            .clusters
            .saturating_sub(clusters(std::slice::from_ref(entry)));
        if let Some(n) = self.entries_per_team.get_mut(&entry.team) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.entries_per_team.remove(&entry.team);
            }
        }
    }

    pub fn team_entries(&self, team: &str) -> usize {
        self.entries_per_team.get(team).copied().unwrap_or(0)
    }
}

/// Clusters `entries` render to: one per entry's backend, and with a canary three more (the
/// canary's backend and the two failover pairs, docs/design.md#traffic-policy), each a cluster
/// object in every Envoy.
pub fn clusters(entries: &[Entry]) -> usize {
    entries
        .iter()
        .flat_map(Entry::revisions)
        .map(crate::clusters::cluster_count)
        .sum()
}

fn parse(name: &str, value: Option<&str>, default: usize) -> Result<usize, String> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("{name}: {v:?} is not a positive integer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Route;

    fn entry(team: &str, service: &str, routes: usize) -> Entry {
        Entry {
            rollout: None,
            serving: None,
            team: team.into(),
            service: service.into(),
            host: team.into(),
            backend: "http://10.0.0.1".into(),
            protocol: Default::default(),
            canary: None,
            health_check: None,
            preserve_host: false,
            jwt: Default::default(),
            backends: vec![],
            routes: (0..routes)
                .map(|i| Route {
                    path: format!("/{service}/{i}"),
                    methods: None,
                    limits: vec![],
                    timeout: None,
                    ..Default::default()
                })
                .collect(),
        }
    }

    /// Small bounds the tests break on purpose.
    const SMALL: Bounds = Bounds {
        max_entries_per_team: 2,
        max_routes: 10,
        max_clusters: 4,
        max_bundle_bytes: 100,
    };

    #[test]
    fn refusals_name_the_team_and_the_limit() {
        let b = SMALL;
        let entries = [
            entry("a", "s1", 3),
            entry("a", "s2", 3),
            entry("b", "s1", 3),
        ];
        assert!(b.registry_problems(&entries).is_empty());
        let more = [&entries[..], &[entry("a", "s3", 2)]].concat();
        assert_eq!(
            b.registry_problems(&more),
            [
                "team a has 3 entries; at most 2 per team (GATEWAY_MAX_ENTRIES_PER_TEAM)",
                "the registry would hold 11 routes; at most 10 (GATEWAY_MAX_ROUTES)"
            ]
        );
        let roomy = Bounds {
            max_clusters: 4,
            ..b
        };
        assert_eq!(roomy.capacity_used(&entries), 90.0, "9 of 10 routes");
        assert_eq!(
            Bounds {
                max_clusters: 2,
                ..roomy
            }
            .registry_problems(&entries),
            [
                "the registry would hold 3 backend clusters; at most 2 (GATEWAY_MAX_CLUSTERS, \
              the memory envelope the gateway is sized for)"
            ]
        );
        assert_eq!(
            Bounds {
                max_clusters: 2,
                ..roomy
            }
            .capacity_used(&entries),
            150.0
        );
        // A canary renders three more clusters, and the bound counts them.
        let mut with_canary = entries.clone();
        with_canary[0].canary = Some(crate::entry::Canary {
            backend: "http://10.0.0.2".into(),
            weight: 10,
            header: None,
        });
        assert_eq!(clusters(&with_canary), 6);
        assert_eq!(
            crate::render(&with_canary, &crate::RenderConfig::new("api.example.com"))
                .expect("renders")
                .clusters
                .len(),
            6,
            "the bound counts what the renderer emits"
        );
        assert_eq!(b.bundle_problem(100), None);
        assert_eq!(
            b.bundle_problem(101).as_deref(),
            Some("bundle.json is 101 bytes; at most 100 (GATEWAY_MAX_BUNDLE_BYTES)")
        );
    }

    #[test]
    fn growth_is_judged_against_totals_and_only_growth_is_refused() {
        let b = Bounds {
            max_clusters: 3,
            ..SMALL
        };
        let registered = [
            entry("a", "s1", 4),
            entry("a", "s2", 4),
            entry("b", "s1", 1),
        ];
        let totals = Totals::of(&registered);
        assert_eq!((totals.routes, totals.clusters), (9, 3));
        assert_eq!((totals.team_entries("a"), totals.team_entries("c")), (2, 0));
        let named =
            |ps: Vec<Problem>| -> Vec<String> { ps.iter().map(|p| p.to_string()).collect() };
        assert_eq!(
            named(b.growth_problems(&totals, None, &entry("a", "s3", 2))),
            [
                "team: team a has 3 entries; at most 2 per team (GATEWAY_MAX_ENTRIES_PER_TEAM)",
                "routes: the registry would hold 11 routes; at most 10 (GATEWAY_MAX_ROUTES)",
                "backend: the registry would hold 4 backend clusters; at most 3 \
                 (GATEWAY_MAX_CLUSTERS, the memory envelope the gateway is sized for)",
            ]
        );
        // Changing an entry within its count: one more route fits, two more do not.
        let current = &registered[0];
        assert!(b
            .growth_problems(&totals, Some(current), &entry("a", "s1", 5))
            .is_empty());
        assert_eq!(
            named(b.growth_problems(&totals, Some(current), &entry("a", "s1", 6))),
            ["routes: the registry would hold 11 routes; at most 10 (GATEWAY_MAX_ROUTES)"]
        );
        // A registry already past a bound (lowered since) still lets an entry shrink.
        let tight = Bounds { max_routes: 5, ..b };
        assert!(tight
            .growth_problems(&totals, Some(current), &entry("a", "s1", 3))
            .is_empty());
        // Totals counted before `current` was registered: removing it never underflows.
        let mut before = Totals::of(&registered[2..]);
        before.remove(current);
        assert_eq!(
            (before.routes, before.clusters, before.team_entries("a")),
            (0, 0, 0)
        );
        assert_eq!(before.team_entries("b"), 1);
        assert_eq!(
            tight.totals_problems(&totals),
            tight.registry_problems(&registered),
            "the same sentences from totals as from entries"
        );
    }

    #[test]
    fn settings_parse_with_defaults_and_name_a_bad_value() {
        assert_eq!(
            Bounds::from_values(None, None, None, Some(" ")),
            Ok(Bounds::default())
        );
        let b =
            Bounds::from_values(Some("5"), Some("1000"), Some("7"), Some("4096")).expect("valid");
        assert_eq!(
            (
                b.max_entries_per_team,
                b.max_routes,
                b.max_clusters,
                b.max_bundle_bytes
            ),
            (5, 1000, 7, 4096)
        );
        for bad in ["0", "-1", "ten", "1.5"] {
            let e = Bounds::from_values(None, Some(bad), None, None).expect_err(bad);
            assert!(e.starts_with("GATEWAY_MAX_ROUTES:"), "{e}");
            let e = Bounds::from_values(None, None, Some(bad), None).expect_err(bad);
            assert!(e.starts_with("GATEWAY_MAX_CLUSTERS:"), "{e}");
        }
    }
}
