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
    /// What vouched for it: `signed, verified with KEY (FINGERPRINT)` or `unsigned (allowed)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
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
    /// Unix seconds of the last poll that succeeded (found the bundle unchanged, absent or
    /// delivered it).
    pub last_success: Option<u64>,
    /// When the polling started, and how often it polls (seconds; 0: not polling in a loop).
    pub started_at: u64,
    pub poll_interval: u64,
    /// Set while no poll has succeeded for [`STALL_INTERVALS`] intervals: the poll hangs or
    /// keeps failing. Envoy keeps serving its last good files; `/ready` answers 503.
    pub stalled: Option<String>,
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
pub struct SharedStatus(Arc<Mutex<Status>>, Arc<tokio::sync::Notify>);

/// Polls without success before a sidecar says it is stalled (at least [`STALL_MIN_SECONDS`]).
pub const STALL_INTERVALS: u64 = 3;
pub const STALL_MIN_SECONDS: u64 = 15;

impl Status {
    /// Why the polling counts as stalled at `now`, if it does: no poll has succeeded for
    /// several intervals, whether the rounds fail or one never returns.
    pub fn stall(&self, now: u64) -> Option<String> {
        if self.poll_interval == 0 {
            return None;
        }
        let since = self.last_success.unwrap_or(self.started_at);
        let quiet = now.saturating_sub(since);
        let limit = (STALL_INTERVALS * self.poll_interval).max(STALL_MIN_SECONDS);
        if quiet <= limit {
            return None;
        }
        let last = match &self.last_error {
            Some(e) if e.at >= since => format!("the last round failed: {}", e.message),
            _ => "a round is still waiting for an answer".to_string(),
        };
        Some(format!(
            "no successful poll for {quiet}s (one is due every {}s); {last}; Envoy keeps serving its last good files",
            self.poll_interval
        ))
    }
}

impl SharedStatus {
    pub fn new(status: Status) -> Self {
        SharedStatus(
            Arc::new(Mutex::new(status)),
            Arc::new(tokio::sync::Notify::new()),
        )
    }

    /// Wakes the report task: a delivery is live (it reports it at once instead of at its next
    /// look, so `status` and `waitFor: serving` learn of it as soon as Envoy serves it).
    pub fn delivered(&self) {
        self.1.notify_one();
    }

    /// Until [`SharedStatus::delivered`] is called (at once if it was since the last wait).
    pub async fn wait_delivered(&self) {
        self.1.notified().await
    }

    pub fn lock(&self) -> MutexGuard<'_, Status> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn snapshot(&self) -> Status {
        let mut status = self.lock().clone();
        status.stalled = status.stall(now());
        status
    }
}

/// Unix seconds now: the clock the proxy reports' rows are stamped and judged by.
pub use gateway_adapters::registry::proxies::unix_now as now;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_that_stops_succeeding_is_stalled_after_several_intervals() {
        let mut s = Status {
            started_at: 1_000,
            poll_interval: 10,
            ..Status::default()
        };
        assert_eq!(s.stall(1_030), None, "three intervals of grace");
        let hung = s.stall(1_031).expect("stalled");
        assert!(hung.contains("no successful poll for 31s") && hung.contains("waiting for an answer"), "{hung}");
        s.last_success = Some(1_100);
        assert_eq!(s.stall(1_120), None);
        s.last_error = Some(Event { at: 1_110, version_id: None, message: "S3: reset".into() });
        let failing = s.stall(1_140).expect("stalled");
        assert!(failing.contains("the last round failed: S3: reset"), "{failing}");
        // A one-shot run (no loop) never counts as stalled.
        assert_eq!(Status { poll_interval: 0, ..s }.stall(u64::MAX), None);
        // A short interval still has a floor.
        let quick = Status { started_at: 0, poll_interval: 1, ..Status::default() };
        assert_eq!(quick.stall(STALL_MIN_SECONDS), None);
    }

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
            signer: None,
        };
        state.save(&path).expect("save");
        assert_eq!(LiveState::load(&path), Some(state));
        std::fs::write(&path, b"{").expect("write");
        assert_eq!(LiveState::load(&path), None);
    }
}
