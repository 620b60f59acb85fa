//! What is live, on disk (the state file) and in memory (what `/status` shows).
//!
//! The state file sits outside the watched directories: Envoy reloads on any move into those.

use crate::admin::RateLimitFailures;
use crate::error::SidecarError;
use crate::files;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// The state file: the bundle version the watched files hold. JSON, e.g.
/// `{"delivered_at":1700000000,"etag":"\"9f…\"","hash":"sha256:…","version_id":"3HL4…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveState {
    pub version_id: String,
    pub etag: String,
    pub hash: String,
    /// Unix seconds.
    pub delivered_at: u64,
    /// `delivered_at` minus the bundle object's LastModified (docs/design.md#proxy-reports);
    /// absent when S3 did not say, and in state files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_seconds: Option<u64>,
}

impl LiveState {
    /// The state file's content, `None` if absent or unreadable (then the next round downloads
    /// the live bundle again, which is always safe).
    pub fn load(path: &Path) -> Option<LiveState> {
        let bytes = std::fs::read(path).ok()?;
        match serde_json::from_slice(&bytes) {
            Ok(state) => Some(state),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "ignoring an unreadable state file");
                None
            }
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), SidecarError> {
        let (dir, name) = split(path)?;
        let mut bytes = serde_json::to_vec(self)
            .map_err(|e| SidecarError::file(path, "serialising the state", e))?;
        bytes.push(b'\n');
        files::write_atomic(dir, name, &bytes)
    }
}

fn split(path: &Path) -> Result<(&Path, &str), SidecarError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| SidecarError::file(path, "naming the state file", "no UTF-8 file name"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Ok((dir, name))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    pub at: u64,
    pub version_id: Option<String>,
    pub message: String,
}

/// What `GET /status` answers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Status {
    pub mode: &'static str,
    pub bucket: String,
    pub live: Option<LiveState>,
    /// Unix seconds of the last completed poll.
    pub last_poll: Option<u64>,
    pub last_error: Option<Event>,
    pub last_rejection: Option<Event>,
    /// Bundles delivered since start.
    pub delivered: u64,
    /// Bundles Envoy refused since start.
    pub rejected: u64,
    /// The version last refused; not retried until a newer one is published.
    pub rejected_version: Option<String>,
    /// Envoy's latest global rate-limit failure counters.
    pub ratelimit: RateLimitFailures,
    /// Increase of `ratelimit.error` reported as `RateLimiterErrors` since start.
    pub ratelimit_errors_reported: u64,
    /// The proxy report in the registry table, when reporting is on (docs/design.md#proxy-reports).
    pub report: Option<ReportStatus>,
}

/// How this proxy's reports to the registry table fare.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReportStatus {
    pub proxy_id: String,
    pub table: String,
    /// Unix seconds of the last row written, and the hash it said.
    pub last_reported_at: Option<u64>,
    pub last_reported_hash: Option<String>,
    /// Reports that failed or timed out since start; the last one's error.
    pub failures: u64,
    pub last_error: Option<Event>,
}

#[derive(Debug, Clone, Default)]
pub struct SharedStatus(Arc<Mutex<Status>>);

impl SharedStatus {
    pub fn new(status: Status) -> Self {
        SharedStatus(Arc::new(Mutex::new(status)))
    }

    pub fn lock(&self) -> MutexGuard<'_, Status> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn snapshot(&self) -> Status {
        self.lock().clone()
    }
}

/// Unix seconds now: the clock the proxy reports' rows are stamped and judged by.
pub use gateway_adapters::registry::proxies::unix_now as now;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_file_round_trips_and_bad_content_reads_as_none() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("state.json");
        assert_eq!(LiveState::load(&path), None);
        let state = LiveState {
            version_id: "v1".into(),
            etag: "\"e\"".into(),
            hash: "sha256:x".into(),
            delivered_at: 7,
            lag_seconds: Some(2),
        };
        state.save(&path).expect("save");
        assert_eq!(LiveState::load(&path), Some(state));
        std::fs::write(&path, b"{").expect("write");
        assert_eq!(LiveState::load(&path), None);
    }
}
