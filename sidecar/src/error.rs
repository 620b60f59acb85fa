use std::path::PathBuf;

/// Everything a round of the sidecar can fail with. Each names the thing and the reason; none is
/// fatal to the loop: the last good files stay in place and the next round tries again.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    #[error("usage: {0}")]
    Usage(String),
    #[error("bucket {bucket}: no {object} published yet")]
    NoBundle { bucket: String, object: &'static str },
    #[error("bucket {bucket}: {action}: {reason}")]
    S3 {
        bucket: String,
        action: String,
        reason: String,
    },
    #[error("bundle version {version_id}: {reason}")]
    Unverified { version_id: String, reason: String },
    #[error("{path}: {action}: {reason}")]
    File {
        path: PathBuf,
        action: &'static str,
        reason: String,
    },
    #[error("Envoy admin {url}: {reason}")]
    Admin { url: String, reason: String },
    #[error("Envoy rejected {file} of bundle {hash} ({stat} rose from {before} to {after}); it keeps serving its previous config")]
    Rejected {
        file: &'static str,
        hash: String,
        stat: String,
        before: u64,
        after: u64,
    },
    #[error("Envoy did not apply {file} version {expected} within {seconds} s ({stat} is {found:?})")]
    ApplyTimeout {
        file: &'static str,
        expected: String,
        stat: String,
        found: Option<String>,
        seconds: u64,
    },
    #[error("{0} is not valid JSON: {1}")]
    Json(String, String),
    #[error("health server on {addr}: {reason}")]
    Listen { addr: String, reason: String },
}

impl SidecarError {
    pub fn file(path: impl Into<PathBuf>, action: &'static str, e: impl std::fmt::Display) -> Self {
        SidecarError::File {
            path: path.into(),
            action,
            reason: e.to_string(),
        }
    }

    /// Envoy refused the file: the one failure that is a `ProxyConfigRejected`.
    pub fn is_rejection(&self) -> bool {
        matches!(self, SidecarError::Rejected { .. })
    }
}
