//! moto's server standing in for DynamoDB, S3 and CloudWatch, started from the process kit's
//! command (the test kit starts the same one), and the AWS settings that point the demo's own
//! clients and its children at it.

use gateway_proc_kit::processes::Managed;
use std::net::SocketAddr;
use std::path::Path;

pub use gateway_proc_kit::moto::{endpoint, ACCESS_KEY, CHILD_ENV_REMOVED, REGION};

/// Starts `scripts/moto_server.py PORT --exit-with-stdin` (it exits when the demo's pipe to it
/// closes).
pub fn spawn(repo: &Path, python: &Path, addr: SocketAddr, log: &Path) -> Result<Managed, String> {
    let cmd = gateway_proc_kit::moto::command(repo, python, addr.port());
    Managed::spawn("moto's server", cmd.into(), log, true)
}

/// The environment a child (the sidecar) needs to reach moto's server.
pub fn child_env(addr: SocketAddr) -> Vec<(&'static str, String)> {
    gateway_proc_kit::moto::aws_env(&endpoint(addr))
}

/// The demo's own SDK configuration, built explicitly rather than from the process environment.
pub async fn sdk_config(addr: SocketAddr) -> aws_config::SdkConfig {
    gateway_proc_kit::moto::sdk_config(&endpoint(addr)).await
}
