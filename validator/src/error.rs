use crate::rules::RuleViolation;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ValidationError {
    #[error("{file}: {reason}")]
    Malformed { file: String, reason: String },
    #[error("{} gateway rule violation(s):\n{}", .0.len(), list(.0))]
    Rules(Vec<RuleViolation>),
    #[error("{entries} entries rendered zero routes: a renderer bug, never an intent; an empty route table is an outage")]
    EmptyRender { entries: usize },
    #[error("ENVOY_BIN={}: cannot run Envoy: {source}; set ENVOY_BIN or put the pinned Envoy {pinned} on PATH", bin.display())]
    EnvoyMissing {
        bin: PathBuf,
        pinned: &'static str,
        source: std::io::Error,
    },
    #[error("ENVOY_BIN={}: --version output {output:?} names no release", bin.display())]
    EnvoyVersionUnknown { bin: PathBuf, output: String },
    #[error("ENVOY_BIN={}: Envoy {found} is not the pinned release {pinned} (bootstrap/ENVOY_VERSION); refusing to validate with a different Envoy", bin.display())]
    EnvoyVersionMismatch {
        bin: PathBuf,
        found: String,
        pinned: &'static str,
    },
    #[error("envoy --mode validate rejected the config (exit {exit}):\n{summary}")]
    EnvoyRejected {
        exit: String,
        /// Envoy's error lines without the log prefixes.
        summary: String,
        /// Everything Envoy printed, kept for diagnosis (`failed/` in the bucket).
        stderr: String,
    },
    #[error("envoy --mode validate did not finish within {seconds} s and was killed")]
    EnvoyTimeout { seconds: u64 },
    #[error("validation bootstrap: {0}")]
    Bootstrap(#[from] gateway_bootstrap::BootstrapError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

fn list(violations: &[RuleViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
