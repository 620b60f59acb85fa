//! The local processes both `gatewayctl demo` and the test kit (`tests/src`) run, written once:
//! moto's server standing in for DynamoDB, S3 and CloudWatch (`moto`), the pinned Envoy from a
//! checkout's `.venv` (`envoy`), and loopback backends that answer with their name (`backend`).
//! How each caller owns and stops its processes stays with the caller: the demo's guards stop
//! children in order on a signal, the test kit's kill them when a test's guard drops.

pub mod backend;
pub mod envoy;
pub mod moto;

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
