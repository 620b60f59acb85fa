//! The local processes both `gatewayctl demo` and the test kit (`tests/src`) run, written once:
//! moto's server standing in for DynamoDB, S3 and CloudWatch (`moto`), the pinned Envoy from a
//! checkout's `.venv` (`envoy`), loopback backends that answer with their name (`backend`), and
//! guards for long-running children (`processes`: stopped in order, with the parent's death, as
//! the demo needs; the test kit's guards simply kill their child when a test drops them).

pub mod backend;
pub mod envoy;
pub mod moto;
pub mod processes;

use std::path::{Path, PathBuf};

/// The checkout's Python virtualenv interpreter (`scripts/setup-python.sh` installs moto's
/// server and the pinned Envoy there).
pub fn venv_python(repo: &Path) -> PathBuf {
    repo.join(".venv/bin/python")
}

/// The pinned Envoy `scripts/setup-python.sh` installs into the checkout's virtualenv.
pub fn venv_envoy(repo: &Path) -> PathBuf {
    repo.join(".venv/bin/envoy")
}
