//! The rules the service serves: every file of its directory, loaded as production's
//! envoyproxy/ratelimit loads its directory (`RUNTIME_IGNOREDOTFILES=true`, as infra sets it:
//! dot files and dot directories are skipped, every other file is a rules file, named by its
//! path under the directory with `/` as `.`), reloaded when any of them is replaced, added or
//! removed. A set of files the loader refuses is logged with every reason and the previous
//! rules stay in force; until a set loads, no rules are loaded and every request is an error.

use gateway_validator::rules::{load_rate_limit_files, RuleNode, RuleSet, RulesFile};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("rules in {dir} refused: {}", reasons.join("; "))]
    Refused { dir: PathBuf, reasons: Vec<String> },
}

/// The rules files under `dir` (dot entries skipped), by the name the service gives them.
fn rules_files(dir: &Path) -> Result<BTreeMap<String, PathBuf>, LoadError> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> Result<(), LoadError> {
        let read = |source| LoadError::Read {
            path: dir.to_path_buf(),
            source,
        };
        for entry in std::fs::read_dir(dir).map_err(read)? {
            let entry = entry.map_err(read)?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            let meta = std::fs::metadata(&path).map_err(|source| LoadError::Read {
                path: path.clone(),
                source,
            })?;
            if meta.is_dir() {
                walk(root, &path, out)?;
            } else {
                let name = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .replace('/', ".");
                out.insert(name, path);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out)?;
    Ok(out)
}

/// Loads every rules file under `dir`, as the service loads its directory.
pub fn load_dir(dir: &Path) -> Result<RuleSet, LoadError> {
    let mut texts = Vec::new();
    for (name, path) in rules_files(dir)? {
        let text = std::fs::read_to_string(&path).map_err(|source| LoadError::Read {
            path: path.clone(),
            source,
        })?;
        texts.push((name, text));
    }
    let files: Vec<RulesFile<'_>> = texts
        .iter()
        .map(|(name, text)| RulesFile { name, text })
        .collect();
    load_rate_limit_files(&files).map_err(|refusals| LoadError::Refused {
        dir: dir.to_path_buf(),
        reasons: refusals.iter().map(ToString::to_string).collect(),
    })
}

/// How many rules with a limit a set holds (for the reload log line).
pub fn count_limits(set: &RuleSet) -> usize {
    fn walk(nodes: &BTreeMap<String, RuleNode>) -> usize {
        nodes
            .values()
            .map(|n| usize::from(n.limit.is_some()) + walk(&n.children))
            .sum()
    }
    set.domains.values().map(|t| walk(&t.children)).sum()
}

/// The rules in force, if any loaded; readers take a snapshot, a reload swaps it.
#[derive(Debug, Default, Clone)]
pub struct LiveRules(Arc<RwLock<Option<Arc<RuleSet>>>>);

impl LiveRules {
    pub fn snapshot(&self) -> Option<Arc<RuleSet>> {
        match self.0.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn replace(&self, set: RuleSet) {
        let mut guard = match self.0.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        *guard = Some(Arc::new(set));
    }
}

/// What identifies one version of the directory: each file's name, inode, size and
/// modification time.
type Stamp = Vec<(String, u64, u64, i128)>;

fn stamp(dir: &Path) -> Option<Stamp> {
    let files = rules_files(dir).ok()?;
    let mut out = Vec::with_capacity(files.len());
    for (name, path) in files {
        let m = std::fs::metadata(&path).ok()?;
        let mtime = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
        out.push((name, m.ino(), m.len(), mtime));
    }
    Some(out)
}

/// Watches `dir` and reloads `live` whenever its files change, until the task is dropped. The
/// first look happens at once.
pub async fn watch(dir: PathBuf, live: LiveRules, every: Duration) {
    let mut seen: Option<Stamp> = None;
    let mut warned_missing = false;
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(now) = stamp(&dir) else {
            if !warned_missing {
                tracing::warn!(dir = %dir.display(), "no rules directory: no rules loaded, every request is answered with an error");
                warned_missing = true;
            }
            continue;
        };
        warned_missing = false;
        if seen.as_ref() == Some(&now) {
            continue;
        }
        seen = Some(now);
        match load_dir(&dir) {
            Ok(set) => {
                tracing::info!(dir = %dir.display(), limits = count_limits(&set), domains = set.domains.len(), "loaded rate-limit rules");
                live.replace(set);
            }
            Err(e) => {
                let kept = if live.snapshot().is_some() {
                    "previous rules kept"
                } else {
                    "no rules loaded"
                };
                tracing::error!(error = %e, "rate-limit rules not reloaded: {kept}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = "domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: second, requests_per_unit: 1}\n";

    #[test]
    fn every_file_but_dot_entries_is_a_rules_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("ratelimit.yaml"), RULES).expect("write");
        // A half-written temp file: what the limiter must never read.
        std::fs::write(dir.path().join(".ratelimit.yaml.tmp-1"), "domain: gate").expect("write");
        std::fs::create_dir(dir.path().join(".staging")).expect("mkdir");
        std::fs::write(dir.path().join(".staging/x.yaml"), "nonsense: [").expect("write");
        let set = load_dir(dir.path()).expect("loads");
        assert_eq!(count_limits(&set), 1);

        std::fs::create_dir(dir.path().join("more")).expect("mkdir");
        std::fs::write(dir.path().join("more/other.yaml"), "domain: gateway\n").expect("write");
        match load_dir(dir.path()) {
            // Named by whichever file comes second (production's order is its map's).
            Err(LoadError::Refused { reasons, .. }) => assert!(
                reasons
                    .iter()
                    .any(|r| r.ends_with("duplicate domain 'gateway' in config file")),
                "{reasons:?}"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn an_empty_directory_loads_no_rules_and_a_missing_one_fails() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(load_dir(dir.path()).expect("loads").domains.len(), 0);
        assert!(matches!(
            load_dir(&dir.path().join("absent")),
            Err(LoadError::Read { .. })
        ));
    }
}
