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
//!
//! Every file comes from disk: the bundle's were staged beside their targets while it was read
//! ([`Staged`]), the union is written from the live and new clusters files, and a replaced file is
//! held open until its step is confirmed, for the rollback. No file is held in memory.

use crate::admin::{EnvoyAdmin, Stats, CDS_REJECTED, CDS_VERSION, JWT_REJECTED, JWT_VERSION};
use crate::error::SidecarError;
use crate::files::{self, Previous, TempFile};
use crate::staged::Staged;
use crate::timing;
use crate::union::{clusters_first, union_version, write_union, ClustersFirst, ClustersIndex};
use gateway_render::contract::{CLUSTERS_FILE, JWT_FILE, JWT_SUBDIR, RATE_LIMIT_FILE, ROUTES_FILE};
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use std::fs::File;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::time::Instant;

/// How often a wait re-reads Envoy's version texts (at most: a reading that took longer is
/// followed by a pause as long, so the admin calls take at most half of Envoy's main thread,
/// which applies the config). A reload takes milliseconds for small configs and seconds at 10k
/// routes; a step is seen applied within about this much of it.
const VERSIONS_POLL: Duration = Duration::from_millis(25);

/// How often a wait reads the refusal counters as well (the costly reading at 10k clusters;
/// a refusal is seen within about this much).
const REJECTIONS_POLL: Duration = Duration::from_millis(500);

/// Where a bundle goes.
#[derive(Debug, Clone)]
pub enum Target {
    /// The gateway's Envoy: clusters and routes, waiting on Envoy for each step.
    Envoy(EnvoyTarget),
    /// The rate-limit service: `ratelimit.yaml` only, written in `staging` and renamed into
    /// `dir` (envoyproxy/ratelimit reads every file of `dir`), nothing to wait on.
    RateLimit { dir: PathBuf, staging: PathBuf },
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
    /// The JWT filter's configuration (extension config discovery from `jwt.json`, in the
    /// routes' directory).
    Jwt,
}

impl Subscription {
    fn file(self) -> &'static str {
        match self {
            Subscription::Cds => CLUSTERS_FILE,
            Subscription::Rds => ROUTES_FILE,
            Subscription::Jwt => JWT_FILE,
        }
    }

    fn version(self, stats: &Stats) -> Option<&str> {
        match self {
            Subscription::Cds => stats.cds_version(),
            Subscription::Rds => stats.rds_version(),
            Subscription::Jwt => stats.jwt_version(),
        }
    }

    fn rejected(self, stats: &Stats) -> u64 {
        match self {
            Subscription::Cds => stats.cds_rejected(),
            Subscription::Rds => stats.rds_rejected(),
            Subscription::Jwt => stats.jwt_rejected(),
        }
    }

    fn stat_name(self, stats: &Stats, leaf: &str) -> String {
        match (self, leaf) {
            (Subscription::Cds, "version_text") => CDS_VERSION.to_string(),
            (Subscription::Cds, _) => CDS_REJECTED.to_string(),
            (Subscription::Rds, leaf) => stats.rds_stat_name(leaf),
            (Subscription::Jwt, "version_text") => JWT_VERSION.to_string(),
            (Subscription::Jwt, _) => JWT_REJECTED.to_string(),
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
                    && files::exists(&t.jwt_dir(), JWT_FILE)
            }
            Target::RateLimit { dir, .. } => files::exists(dir, RATE_LIMIT_FILE),
        }
    }

    /// Whether the watched files are the ones of bundle `hash`, so a state file that names it
    /// can be trusted after a restart.
    pub fn holds(&self, hash: &str) -> bool {
        match self {
            Target::Envoy(t) => {
                version_info_of(&t.clusters_dir, CLUSTERS_FILE).as_deref() == Some(hash)
                    && version_info_of(&t.routes_dir, ROUTES_FILE).as_deref() == Some(hash)
                    && version_info_of(&t.jwt_dir(), JWT_FILE).as_deref() == Some(hash)
            }
            // ratelimit.yaml carries no version; its presence is what can be checked.
            Target::RateLimit { dir, .. } => files::exists(dir, RATE_LIMIT_FILE),
        }
    }

    /// Where a bundle's files are staged while it is read: the files this target delivers, each
    /// beside its target.
    pub fn staging(&self) -> Staged {
        match self {
            Target::Envoy(t) => Staged::new(vec![
                (CLUSTERS_FILE, t.clusters_dir.clone()),
                (ROUTES_FILE, t.routes_dir.clone()),
                (JWT_FILE, t.jwt_dir()),
            ]),
            Target::RateLimit { staging, .. } => {
                Staged::new(vec![(RATE_LIMIT_FILE, staging.clone())])
            }
        }
    }

    /// Delivers the verified bundle `hash` whose files are `staged`.
    pub async fn deliver(
        &self,
        staged: &mut Staged,
        hash: &str,
    ) -> Result<Delivered, SidecarError> {
        match self {
            Target::Envoy(t) => t.deliver(staged, hash).await,
            Target::RateLimit { dir, .. } => {
                let rules = staged_file(staged, RATE_LIMIT_FILE, hash)?;
                if !files::same_content(rules.path(), &dir.join(RATE_LIMIT_FILE))? {
                    rules.put_in_place(dir, RATE_LIMIT_FILE)?;
                    tracing::info!(hash, dir = %dir.display(), "wrote {RATE_LIMIT_FILE}");
                } else {
                    tracing::info!(hash, "{RATE_LIMIT_FILE} unchanged");
                }
                Ok(Delivered::Applied)
            }
        }
    }
}

impl EnvoyTarget {
    /// Where `jwt.json` goes: the `jwt` subdirectory of the routes' watched directory.
    pub fn jwt_dir(&self) -> PathBuf {
        self.routes_dir.join(JWT_SUBDIR)
    }

    /// The JWT filter's watched directory, created when missing (a new task's routes volume):
    /// bundles are staged in it, and Envoy watches it from its start.
    pub fn prepare_jwt_dir(&self) -> Result<(), SidecarError> {
        let dir = self.jwt_dir();
        std::fs::create_dir_all(&dir).map_err(|e| SidecarError::file(&dir, "creating", e))
    }

    async fn deliver(&self, staged: &mut Staged, hash: &str) -> Result<Delivered, SidecarError> {
        let clusters = staged_file(staged, CLUSTERS_FILE, hash)?;
        let routes = staged_file(staged, ROUTES_FILE, hash)?;
        let (jwt, carries_jwt) = match staged.take(JWT_FILE) {
            Some(file) => (file, true),
            None => (self.empty_jwt(hash)?, false),
        };
        if !files::exists(&self.clusters_dir, CLUSTERS_FILE)
            || !files::exists(&self.routes_dir, ROUTES_FILE)
        {
            // Envoy exits at start when a watched file is missing, so none is running from
            // these directories: put the files in for it to start from.
            clusters.put_in_place(&self.clusters_dir, CLUSTERS_FILE)?;
            jwt.put_in_place(&self.jwt_dir(), JWT_FILE)?;
            routes.put_in_place(&self.routes_dir, ROUTES_FILE)?;
            tracing::info!(
                hash,
                "first delivery: wrote {CLUSTERS_FILE}, {JWT_FILE} and {ROUTES_FILE} for Envoy to start from"
            );
            return Ok(Delivered::First);
        }
        if !files::exists(&self.jwt_dir(), JWT_FILE) {
            // Directories from a sidecar that wrote no JWT configuration (Envoy runs a bootstrap
            // without the filter's discovery, or none yet): the new one goes in first.
            jwt.put_in_place(&self.jwt_dir(), JWT_FILE)?;
            tracing::info!(hash, "wrote {JWT_FILE}, which the watched directory did not have");
        }
        let mut jwt_steps = self.jwt_steps(&jwt, hash)?;

        // The staged files reach the disk while the steps before their renames run, so the
        // fsync at each rename has little left to wait for.
        clusters.sync_in_background();
        routes.sync_in_background();

        // 1. Make: every cluster the new routes need, next to the ones the live routes use.
        // Envoy's refusal counters are read meanwhile: the baseline every step compares with.
        let started = std::time::Instant::now();
        let live_clusters = self.clusters_dir.join(CLUSTERS_FILE);
        let (seen, indexes) = tokio::join!(self.admin.stats(), async {
            let live = ClustersIndex::read(open(&live_clusters)?, "live clusters.json")?;
            let new = ClustersIndex::read(open(clusters.path())?, "new clusters.json")?;
            Ok::<_, SidecarError>((live, new))
        });
        let (live_index, new_index) = indexes?;
        let mut seen = seen?;
        if !carries_jwt && seen.jwt_version().is_none() {
            // Envoy runs a bootstrap without the JWT filter's discovery (a proxy image from
            // before it), and the bundle has no provider for it: the file goes in unwaited for,
            // ready for the next bootstrap. A bundle with providers still waits (and fails its
            // delivery on such a proxy): routes that require a token must not go live without it.
            jwt.put_in_place(&self.jwt_dir(), JWT_FILE)?;
            jwt_steps = JwtSteps::Unwatched;
        }
        let step1 = clusters_first(&live_index, &new_index);
        timing::step_since("index", started);
        match step1 {
            ClustersFirst::Union => {
                tracing::info!(hash, "step 1: clusters union of live and new");
                let started = std::time::Instant::now();
                let union = TempFile::create(&self.clusters_dir, CLUSTERS_FILE)?;
                let mut out = union.writer()?;
                write_union(
                    (open(&live_clusters)?, &live_index),
                    (open(clusters.path())?, &new_index),
                    hash,
                    &mut out,
                )?;
                out.flush()
                    .map_err(|e| SidecarError::file(union.path(), "writing", e))?;
                drop((out, live_index, new_index));
                timing::step_since("step 1 union", started);
                let version = union_version(hash);
                self.apply("step 1", Subscription::Cds, &union, &version, &mut seen)
                    .await?;
            }
            ClustersFirst::NewClusters => {
                // The new clusters file holds every live cluster: it is the union, and once it
                // is in, nothing is left for a step 3.
                tracing::info!(
                    hash,
                    "step 1: new clusters (no cluster goes away, no union)"
                );
                self.apply("step 1", Subscription::Cds, &clusters, hash, &mut seen)
                    .await?;
            }
            ClustersFirst::Nothing => {
                tracing::info!(hash, "step 1: every new cluster is already live")
            }
            ClustersFirst::Same => {
                // No cluster changes, so the order of the two files does not matter: both go in
                // with one wait (the clusters file still carries the new `version_info`, which
                // `/ready` and a restart read).
                tracing::info!(hash, "step 1: skipped, the clusters are the live ones");
                self.jwt_before(&jwt_steps, &jwt, hash, &mut seen).await?;
                tracing::info!(hash, "step 2: routes, with the unchanged clusters");
                self.apply_all(
                    "step 2",
                    &[
                        Step {
                            sub: Subscription::Rds,
                            file: &routes,
                            version: hash,
                        },
                        Step {
                            sub: Subscription::Cds,
                            file: &clusters,
                            version: hash,
                        },
                    ],
                    &mut seen,
                )
                .await?;
                self.jwt_after(&jwt_steps, &jwt, hash, &mut seen).await?;
                tracing::info!(hash, "step 3: skipped, no cluster changes");
                return Ok(Delivered::Applied);
            }
        }
        self.jwt_before(&jwt_steps, &jwt, hash, &mut seen).await?;
        // 2. Switch the routes.
        tracing::info!(hash, "step 2: routes");
        self.apply("step 2", Subscription::Rds, &routes, hash, &mut seen)
            .await?;
        self.jwt_after(&jwt_steps, &jwt, hash, &mut seen).await?;
        if step1 == ClustersFirst::NewClusters {
            tracing::info!(hash, "step 3: skipped, the new clusters are in");
            return Ok(Delivered::Applied);
        }
        // 3. Break: the new clusters alone.
        tracing::info!(hash, "step 3: clusters");
        self.apply("step 3", Subscription::Cds, &clusters, hash, &mut seen)
            .await?;
        Ok(Delivered::Applied)
    }

    /// Puts `file` in place (unless its bytes are there already) and waits until Envoy reports
    /// `version`, or refuses the file (then the file it replaced goes back on disk), or the time
    /// is up.
    async fn apply(
        &self,
        label: &str,
        sub: Subscription,
        file: &TempFile,
        version: &str,
        seen: &mut Stats,
    ) -> Result<(), SidecarError> {
        self.apply_all(label, &[Step { sub, file, version }], seen)
            .await
    }

    /// [`Self::apply`] for several files at once (each of its own subscription): all are put in
    /// place, then one wait until Envoy reports every version. When Envoy refuses one, or the
    /// time is up, every file this call replaced goes back. `label` names the step in its
    /// timing lines (`{label} put`: the renames; `{label} wait`: until Envoy applied).
    ///
    /// `seen` is Envoy's stats as last read in this delivery, the baseline a refusal is told by:
    /// its counters rise only for a file this delivery wrote, and every earlier step's file was
    /// applied, so a reading from before an earlier step serves as well as a new one (and costs
    /// no reading of every counter at 10k clusters). It is left at this step's last reading.
    async fn apply_all(
        &self,
        label: &str,
        steps: &[Step<'_>],
        seen: &mut Stats,
    ) -> Result<(), SidecarError> {
        let started = std::time::Instant::now();
        let before = seen.clone();
        let rejected_before: Vec<u64> = steps.iter().map(|s| s.sub.rejected(&before)).collect();
        let mut written = Vec::new();
        for step in steps {
            let file = step.sub.file();
            let version = step.version;
            let dir = self.dir(step.sub);
            let put = files::same_content(step.file.path(), &dir.join(file)).and_then(|same| {
                if same {
                    return Ok(None);
                }
                let previous = Previous::open(&dir, file)?;
                step.file.put_in_place(&dir, file)?;
                Ok(Some(previous))
            });
            match put {
                Ok(None) => tracing::debug!(file, version, "file unchanged, not rewritten"),
                Ok(Some(previous)) => {
                    written.push(previous);
                    tracing::info!(file, version, dir = %dir.display(), "renamed into the watched directory");
                }
                Err(e) => {
                    roll_back_all(&written);
                    return Err(e);
                }
            }
        }
        let started = timing::step_since(&format!("{label} put"), started);
        let deadline = Instant::now() + self.apply_timeout;
        let mut last = before;
        let (mut rejections_read, mut took) = (Instant::now(), Duration::ZERO);
        loop {
            if steps
                .iter()
                .all(|s| s.sub.version(&last) == Some(s.version))
            {
                for s in steps {
                    tracing::info!(file = s.sub.file(), version = s.version, "Envoy applied");
                }
                timing::step_since(&format!("{label} wait"), started);
                *seen = last;
                return Ok(());
            }
            for (step, rejected_before) in steps.iter().zip(&rejected_before) {
                let rejected_now = step.sub.rejected(&last);
                if rejected_now > *rejected_before {
                    roll_back_all(&written);
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
                    roll_back_all(&written);
                }
                return Err(SidecarError::ApplyTimeout {
                    file: step.sub.file(),
                    expected: step.version.to_string(),
                    stat: step.sub.stat_name(&last, "version_text"),
                    found: step.sub.version(&last).map(str::to_string),
                    seconds: self.apply_timeout.as_secs(),
                });
            }
            tokio::time::sleep(VERSIONS_POLL.max(took)).await;
            let reading = Instant::now();
            let read = if reading >= rejections_read + REJECTIONS_POLL {
                rejections_read = reading;
                self.admin.stats().await
            } else {
                self.admin
                    .versions()
                    .await
                    .map(|v| last.clone().with_texts_of(v))
            };
            took = reading.elapsed();
            // An admin hiccup during a wait is retried until the deadline.
            match read {
                Ok(stats) => last = stats,
                Err(e) => tracing::debug!(error = %e, "reading Envoy stats during a wait"),
            }
        }
    }

    fn dir(&self, sub: Subscription) -> PathBuf {
        match sub {
            Subscription::Cds => self.clusters_dir.clone(),
            Subscription::Rds => self.routes_dir.clone(),
            Subscription::Jwt => self.jwt_dir(),
        }
    }

    /// `jwt.json` with no provider at `hash`: what a bundle without one means.
    fn empty_jwt(&self, hash: &str) -> Result<TempFile, SidecarError> {
        self.jwt_temp(&gateway_render::jwt::jwt_file(gateway_render::jwt::empty_jwt_config(), hash))
    }

    /// A temp file beside `jwt.json` holding `text`, to be put in place by a step.
    fn jwt_temp(&self, text: &str) -> Result<TempFile, SidecarError> {
        let file = TempFile::create(&self.jwt_dir(), JWT_FILE)?;
        let mut out = file.writer()?;
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| SidecarError::file(file.path(), "writing", e))?;
        drop(out);
        Ok(file)
    }

    /// What the JWT filter's configuration needs around the routes: the live and new providers
    /// together before them (so the live routes and the new ones each find their requirement),
    /// the new ones alone after. When the new configuration holds every live provider and
    /// requirement as it is, it goes in before the routes and nothing follows.
    fn jwt_steps(&self, new: &TempFile, hash: &str) -> Result<JwtSteps, SidecarError> {
        let read = |path: &Path| -> Result<Option<serde_json::Value>, SidecarError> {
            let Ok(file) = File::open(path) else { return Ok(None) };
            let doc: serde_json::Value = serde_json::from_reader(BufReader::new(file))
                .map_err(|e| SidecarError::file(path, "reading", std::io::Error::other(e)))?;
            Ok(doc.pointer("/resources/0").cloned())
        };
        let new_config = read(new.path())?.unwrap_or_else(gateway_render::jwt::empty_jwt_config);
        let Some(live) = read(&self.jwt_dir().join(JWT_FILE))? else {
            return Ok(JwtSteps::NewFirst);
        };
        let union = gateway_render::jwt::jwt_union(&live, &new_config);
        if union == new_config {
            return Ok(JwtSteps::NewFirst);
        }
        let text = gateway_render::jwt::jwt_file(union, &crate::union::union_version(hash));
        Ok(JwtSteps::UnionThenNew(self.jwt_temp(&text)?))
    }

    async fn jwt_before(
        &self,
        steps: &JwtSteps,
        new: &TempFile,
        hash: &str,
        seen: &mut Stats,
    ) -> Result<(), SidecarError> {
        match steps {
            JwtSteps::Unwatched => Ok(()),
            JwtSteps::NewFirst => {
                tracing::info!(hash, "JWT providers before the routes");
                self.apply("jwt", Subscription::Jwt, new, hash, seen).await
            }
            JwtSteps::UnionThenNew(union) => {
                tracing::info!(hash, "JWT providers: union of live and new, before the routes");
                let version = crate::union::union_version(hash);
                self.apply("jwt union", Subscription::Jwt, union, &version, seen).await
            }
        }
    }

    async fn jwt_after(
        &self,
        steps: &JwtSteps,
        new: &TempFile,
        hash: &str,
        seen: &mut Stats,
    ) -> Result<(), SidecarError> {
        match steps {
            JwtSteps::NewFirst | JwtSteps::Unwatched => Ok(()),
            JwtSteps::UnionThenNew(_) => {
                tracing::info!(hash, "JWT providers: the new ones alone, after the routes");
                self.apply("jwt", Subscription::Jwt, new, hash, seen).await
            }
        }
    }
}

/// The JWT filter's steps of one delivery (see [`EnvoyTarget::jwt_steps`]).
enum JwtSteps {
    NewFirst,
    UnionThenNew(TempFile),
    /// Envoy does not watch `jwt.json` (see [`EnvoyTarget::deliver`]): nothing to wait for.
    Unwatched,
}

/// One file of a delivery step: what goes in, and the version to wait for.
struct Step<'a> {
    sub: Subscription,
    file: &'a TempFile,
    version: &'a str,
}

/// Puts back the files Envoy still runs. Envoy reloads each, finds the config it already has,
/// and (for a clusters file it applied in part) re-adds what the refused file removed.
fn roll_back_all(written: &[Option<Previous>]) {
    for previous in written.iter().flatten() {
        match previous.restore() {
            Ok(()) => tracing::warn!(
                file = previous.name(),
                "refused file rolled back to the one Envoy runs"
            ),
            Err(e) => {
                tracing::error!(file = previous.name(), error = %e, "rolling back a refused file failed")
            }
        }
    }
}

/// A file of the staged bundle; verification made sure it has every file.
fn staged_file(
    staged: &mut Staged,
    name: &'static str,
    hash: &str,
) -> Result<TempFile, SidecarError> {
    staged.take(name).ok_or_else(|| SidecarError::Unverified {
        version_id: hash.to_string(),
        reason: format!("bundle has no {name}"),
    })
}

fn open(path: &Path) -> Result<BufReader<File>, SidecarError> {
    File::open(path)
        .map(BufReader::new)
        .map_err(|e| SidecarError::file(path, "opening", e))
}

/// The top-level `version_info` of a watched JSON file, read through without holding it.
fn version_info_of(dir: &Path, file: &str) -> Option<String> {
    let reader = open(&dir.join(file)).ok()?;
    serde_json::Deserializer::from_reader(reader)
        .deserialize_map(VersionInfo)
        .ok()?
}

struct VersionInfo;

impl<'de> Visitor<'de> for VersionInfo {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "version_info" {
                found = map
                    .next_value::<serde_json::Value>()?
                    .as_str()
                    .map(str::to_string);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}
