//! The rules file the service serves, reloaded when it is replaced. The sidecar's rate-limit
//! mode renames each new `ratelimit.yaml` into the directory, so a change of the file's identity
//! (inode, size or modification time) is a new version. A file the loader refuses is logged
//! with every reason and the previous rules stay in force, as envoyproxy/ratelimit does.

use gateway_render::contract::RATE_LIMIT_FILE;
use gateway_validator::rules::{load_rate_limit_rules, RuleTree};
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
    #[error("{path} refused, previous rules kept: {}", reasons.join("; "))]
    Refused { path: PathBuf, reasons: Vec<String> },
}

/// Loads `path` with the validator's loader.
pub fn load_file(path: &Path) -> Result<RuleTree, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    load_rate_limit_rules(&text).map_err(|violations| LoadError::Refused {
        path: path.to_path_buf(),
        reasons: violations.iter().map(ToString::to_string).collect(),
    })
}

/// How many rules with a limit a tree holds (for the reload log line).
pub fn count_limits(tree: &RuleTree) -> usize {
    fn walk(
        nodes: &std::collections::BTreeMap<String, gateway_validator::rules::RuleNode>,
    ) -> usize {
        nodes
            .values()
            .map(|n| usize::from(n.limit.is_some()) + walk(&n.children))
            .sum()
    }
    walk(&tree.children)
}

/// The rules in force; readers take a snapshot, a reload swaps it.
#[derive(Debug, Default, Clone)]
pub struct LiveRules(Arc<RwLock<Arc<RuleTree>>>);

impl LiveRules {
    pub fn snapshot(&self) -> Arc<RuleTree> {
        match self.0.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    pub fn replace(&self, tree: RuleTree) {
        let mut guard = match self.0.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        *guard = Arc::new(tree);
    }
}

/// What identifies one version of the file in the directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        ino: m.ino(),
        len: m.len(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
    })
}

/// Watches `DIR/ratelimit.yaml` and reloads `live` whenever it changes, until the task is
/// dropped. The first look happens at once.
pub async fn watch(config_dir: PathBuf, live: LiveRules, every: Duration) {
    let path = config_dir.join(RATE_LIMIT_FILE);
    let mut seen: Option<Stamp> = None;
    let mut warned_missing = false;
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(now) = stamp(&path) else {
            if !warned_missing {
                tracing::warn!(path = %path.display(), "no rules file yet: every request is allowed until one is delivered");
                warned_missing = true;
            }
            continue;
        };
        if seen == Some(now) {
            continue;
        }
        seen = Some(now);
        warned_missing = false;
        match load_file(&path) {
            Ok(tree) => {
                tracing::info!(path = %path.display(), limits = count_limits(&tree), "loaded rate-limit rules");
                live.replace(tree);
            }
            Err(e) => tracing::error!(error = %e, "rate-limit rules not reloaded"),
        }
    }
}
