//! Delivery of a verified bundle into the watched directories, make-before-break.
//!
//! Renaming files in order does not make Envoy apply them in order (CDS and RDS each have their
//! own watch), so each step waits for Envoy's admin stats to show the step applied:
//! 1. the union of the live and the new clusters, so old and new routes both find theirs;
//! 2. the new routes;
//! 3. the new clusters (stale clusters go).
//!
//! Steps that change nothing are skipped: no step 1 when every new cluster is already live as
//! defined; when no live cluster goes away the new clusters file is the union, so it goes in as
//! step 1 and there is no step 3; when the clusters are the live ones (only `version_info`
//! differs) there is no cluster step at all: the clusters file goes in with the routes, one wait.
//!
//! A refused file is rolled back on disk to what Envoy still runs, so a restart of Envoy starts
//! from the config it was serving, never from a file it refused.

use crate::admin::{EnvoyAdmin, Stats, CDS_REJECTED, CDS_VERSION};
use crate::error::SidecarError;
use crate::files;
use crate::union::{clusters_first, union_version, ClustersFirst};
use gateway_render::contract::{CLUSTERS_FILE, RATE_LIMIT_FILE, ROUTES_FILE};
use gateway_render::Bundle;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::time::Instant;

/// How often a wait re-reads Envoy's stats. A reload takes milliseconds for small configs and
/// seconds at 10k routes.
const STATS_POLL: Duration = Duration::from_millis(100);

/// Where a bundle goes.
#[derive(Debug, Clone)]
pub enum Target {
    /// The gateway's Envoy: clusters and routes, waiting on Envoy for each step.
    Envoy(EnvoyTarget),
    /// The rate-limit service: `ratelimit.yaml` only, nothing to wait on.
    RateLimit { dir: PathBuf },
}

#[derive(Debug, Clone)]
pub struct EnvoyTarget {
    pub clusters_dir: PathBuf,
    pub routes_dir: PathBuf,
    pub admin: EnvoyAdmin,
    pub apply_timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// The watched files did not exist: written directly for Envoy to start from.
    First,
    /// Envoy runs the bundle (or, in rate-limit mode, the file is in place).
    Applied,
}

/// Which of Envoy's subscriptions a step waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subscription {
    Cds,
    Rds,
}

impl Subscription {
    fn file(self) -> &'static str {
        match self {
            Subscription::Cds => CLUSTERS_FILE,
            Subscription::Rds => ROUTES_FILE,
        }
    }

    fn version(self, stats: &Stats) -> Option<&str> {
        match self {
            Subscription::Cds => stats.cds_version(),
            Subscription::Rds => stats.rds_version(),
        }
    }

    fn rejected(self, stats: &Stats) -> u64 {
        match self {
            Subscription::Cds => stats.cds_rejected(),
            Subscription::Rds => stats.rds_rejected(),
        }
    }

    fn stat_name(self, stats: &Stats, leaf: &str) -> String {
        match (self, leaf) {
            (Subscription::Cds, "version_text") => CDS_VERSION.to_string(),
            (Subscription::Cds, _) => CDS_REJECTED.to_string(),
            (Subscription::Rds, leaf) => stats.rds_stat_name(leaf),
        }
    }
}

impl Target {
    /// Whether the files the consumer needs are in place (what `/healthz` reports).
    pub fn files_present(&self) -> bool {
        match self {
            Target::Envoy(t) => {
                files::exists(&t.clusters_dir, CLUSTERS_FILE)
                    && files::exists(&t.routes_dir, ROUTES_FILE)
            }
            Target::RateLimit { dir } => files::exists(dir, RATE_LIMIT_FILE),
        }
    }

    /// Whether the watched files are the ones of bundle `hash`, so a state file that names it
    /// can be trusted after a restart.
    pub fn holds(&self, hash: &str) -> bool {
        match self {
            Target::Envoy(t) => {
                version_info_of(&t.clusters_dir, CLUSTERS_FILE).as_deref() == Some(hash)
                    && version_info_of(&t.routes_dir, ROUTES_FILE).as_deref() == Some(hash)
            }
            // ratelimit.yaml carries no version; its presence is what can be checked.
            Target::RateLimit { dir } => files::exists(dir, RATE_LIMIT_FILE),
        }
    }

    pub async fn deliver(&self, bundle: &Bundle) -> Result<Delivered, SidecarError> {
        match self {
            Target::Envoy(t) => t.deliver(bundle).await,
            Target::RateLimit { dir } => {
                let rules = bundle_file(bundle, RATE_LIMIT_FILE)?;
                if files::read(dir, RATE_LIMIT_FILE)?.as_deref() != Some(rules.as_bytes()) {
                    files::write_atomic(dir, RATE_LIMIT_FILE, rules.as_bytes())?;
                    tracing::info!(hash = %bundle.hash, dir = %dir.display(), "wrote {RATE_LIMIT_FILE}");
                } else {
                    tracing::info!(hash = %bundle.hash, "{RATE_LIMIT_FILE} unchanged");
                }
                Ok(Delivered::Applied)
            }
        }
    }
}

impl EnvoyTarget {
    async fn deliver(&self, bundle: &Bundle) -> Result<Delivered, SidecarError> {
        let clusters = bundle_file(bundle, CLUSTERS_FILE)?;
        let routes = bundle_file(bundle, ROUTES_FILE)?;
        let live_clusters = files::read(&self.clusters_dir, CLUSTERS_FILE)?;
        let live_routes = files::read(&self.routes_dir, ROUTES_FILE)?;
        let (Some(live_clusters), Some(live_routes)) = (live_clusters, live_routes) else {
            // Envoy exits at start when a watched file is missing, so none is running from
            // these directories: write the files for it to start from.
            files::write_atomic(&self.clusters_dir, CLUSTERS_FILE, clusters.as_bytes())?;
            files::write_atomic(&self.routes_dir, ROUTES_FILE, routes.as_bytes())?;
            tracing::info!(hash = %bundle.hash, "first delivery: wrote {CLUSTERS_FILE} and {ROUTES_FILE} for Envoy to start from");
            return Ok(Delivered::First);
        };

        // 1. Make: every cluster the new routes need, next to the ones the live routes use.
        let step1 = clusters_first(&live_clusters, clusters, &bundle.hash)?;
        match &step1 {
            ClustersFirst::Union(union) => {
                tracing::info!(hash = %bundle.hash, "step 1: clusters union of live and new");
                self.apply(
                    Subscription::Cds,
                    union.as_bytes(),
                    &live_clusters,
                    &union_version(&bundle.hash),
                )
                .await?;
            }
            ClustersFirst::NewClusters => {
                // The new clusters file holds every live cluster: it is the union, and once it
                // is in, nothing is left for a step 3.
                tracing::info!(hash = %bundle.hash, "step 1: new clusters (no cluster goes away, no union)");
                self.apply(
                    Subscription::Cds,
                    clusters.as_bytes(),
                    &live_clusters,
                    &bundle.hash,
                )
                .await?;
            }
            ClustersFirst::Nothing => {
                tracing::info!(hash = %bundle.hash, "step 1: every new cluster is already live")
            }
            ClustersFirst::Same => {
                // No cluster changes, so the order of the two files does not matter: both go in
                // with one wait (the clusters file still carries the new `version_info`, which
                // `/ready` and a restart read).
                tracing::info!(hash = %bundle.hash, "step 1: skipped, the clusters are the live ones");
                tracing::info!(hash = %bundle.hash, "step 2: routes, with the unchanged clusters");
                self.apply_all(&[
                    Step {
                        sub: Subscription::Rds,
                        bytes: routes.as_bytes(),
                        previous: &live_routes,
                        version: &bundle.hash,
                    },
                    Step {
                        sub: Subscription::Cds,
                        bytes: clusters.as_bytes(),
                        previous: &live_clusters,
                        version: &bundle.hash,
                    },
                ])
                .await?;
                tracing::info!(hash = %bundle.hash, "step 3: skipped, no cluster changes");
                return Ok(Delivered::Applied);
            }
        }
        let clusters_now = files::read(&self.clusters_dir, CLUSTERS_FILE)?.unwrap_or_default();
        // 2. Switch the routes.
        tracing::info!(hash = %bundle.hash, "step 2: routes");
        self.apply(
            Subscription::Rds,
            routes.as_bytes(),
            &live_routes,
            &bundle.hash,
        )
        .await?;
        if step1 == ClustersFirst::NewClusters {
            tracing::info!(hash = %bundle.hash, "step 3: skipped, the new clusters are in");
            return Ok(Delivered::Applied);
        }
        // 3. Break: the new clusters alone.
        tracing::info!(hash = %bundle.hash, "step 3: clusters");
        self.apply(
            Subscription::Cds,
            clusters.as_bytes(),
            &clusters_now,
            &bundle.hash,
        )
        .await?;
        Ok(Delivered::Applied)
    }

    /// Puts `bytes` in place (unless they are there already) and waits until Envoy reports
    /// `version`, or refuses the file (then `previous` goes back on disk), or the time is up.
    async fn apply(
        &self,
        sub: Subscription,
        bytes: &[u8],
        previous: &[u8],
        version: &str,
    ) -> Result<(), SidecarError> {
        self.apply_all(&[Step {
            sub,
            bytes,
            previous,
            version,
        }])
        .await
    }

    /// [`Self::apply`] for several files at once (each of its own subscription): all are put in
    /// place, then one wait until Envoy reports every version. When Envoy refuses one, or the
    /// time is up, every file this call rewrote goes back to its `previous`.
    async fn apply_all(&self, steps: &[Step<'_>]) -> Result<(), SidecarError> {
        let before = self.admin.stats().await?;
        let rejected_before: Vec<u64> = steps.iter().map(|s| s.sub.rejected(&before)).collect();
        let mut written = Vec::new();
        for step in steps {
            let file = step.sub.file();
            let version = step.version;
            if step.previous == step.bytes {
                tracing::debug!(file, version, "file unchanged, not rewritten");
                continue;
            }
            let dir = self.dir(step.sub);
            if let Err(e) = files::write_atomic(dir, file, step.bytes) {
                roll_back_all(&written, self);
                return Err(e);
            }
            written.push(step);
            tracing::info!(file, version, dir = %dir.display(), "renamed into the watched directory");
        }
        let deadline = Instant::now() + self.apply_timeout;
        let mut last = before;
        loop {
            if steps
                .iter()
                .all(|s| s.sub.version(&last) == Some(s.version))
            {
                for s in steps {
                    tracing::info!(file = s.sub.file(), version = s.version, "Envoy applied");
                }
                return Ok(());
            }
            for (step, rejected_before) in steps.iter().zip(&rejected_before) {
                let rejected_now = step.sub.rejected(&last);
                if rejected_now > *rejected_before {
                    roll_back_all(&written, self);
                    return Err(SidecarError::Rejected {
                        file: step.sub.file(),
                        hash: step.version.to_string(),
                        stat: step.sub.stat_name(&last, "update_rejected"),
                        before: *rejected_before,
                        after: rejected_now,
                    });
                }
            }
            if Instant::now() >= deadline {
                let step = steps
                    .iter()
                    .find(|s| s.sub.version(&last) != Some(s.version))
                    .unwrap_or(&steps[0]);
                if steps.len() > 1 {
                    // A lone step's file stays for Envoy to pick up late, as it always did;
                    // files put in together go back together.
                    roll_back_all(&written, self);
                }
                return Err(SidecarError::ApplyTimeout {
                    file: step.sub.file(),
                    expected: step.version.to_string(),
                    stat: step.sub.stat_name(&last, "version_text"),
                    found: step.sub.version(&last).map(str::to_string),
                    seconds: self.apply_timeout.as_secs(),
                });
            }
            tokio::time::sleep(STATS_POLL).await;
            // An admin hiccup during a wait is retried until the deadline.
            match self.admin.stats().await {
                Ok(stats) => last = stats,
                Err(e) => tracing::debug!(error = %e, "reading Envoy stats during a wait"),
            }
        }
    }

    fn dir(&self, sub: Subscription) -> &Path {
        match sub {
            Subscription::Cds => &self.clusters_dir,
            Subscription::Rds => &self.routes_dir,
        }
    }
}

/// One file of a delivery step: what goes in, what Envoy runs now, the version to wait for.
struct Step<'a> {
    sub: Subscription,
    bytes: &'a [u8],
    previous: &'a [u8],
    version: &'a str,
}

fn roll_back_all(written: &[&Step<'_>], target: &EnvoyTarget) {
    for step in written {
        rollback(target.dir(step.sub), step.sub.file(), step.previous);
    }
}

/// Puts back the file Envoy still runs. Envoy reloads it, finds the config it already has, and
/// (for a clusters file it applied in part) re-adds what the refused file removed.
fn rollback(dir: &Path, file: &'static str, previous: &[u8]) {
    match files::write_atomic(dir, file, previous) {
        Ok(()) => tracing::warn!(file, "refused file rolled back to the one Envoy runs"),
        Err(e) => tracing::error!(file, error = %e, "rolling back a refused file failed"),
    }
}

fn bundle_file<'b>(bundle: &'b Bundle, name: &'static str) -> Result<&'b str, SidecarError> {
    bundle
        .files
        .get(name)
        .map(String::as_str)
        .ok_or_else(|| SidecarError::Unverified {
            version_id: bundle.hash.clone(),
            reason: format!("bundle has no {name}"),
        })
}

fn version_info_of(dir: &Path, file: &str) -> Option<String> {
    let bytes = files::read(dir, file).ok()??;
    let doc: Value = serde_json::from_slice(&bytes).ok()?;
    doc.get("version_info")
        .and_then(Value::as_str)
        .map(str::to_string)
}
