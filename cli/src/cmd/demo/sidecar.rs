//! The `gateway-sidecar` binary built next to `gatewayctl`, started in Envoy mode against the
//! demo's bucket.

use super::moto;
use super::plan::{Plan, RunFiles, BUCKET};
use super::processes::Managed;
use tokio::process::Command;

/// Seconds between the sidecar's polls of the bucket.
pub const INTERVAL_SECONDS: u64 = 2;

pub fn spawn(plan: &Plan, files: &RunFiles) -> Result<Managed, String> {
    if !plan.sidecar_bin.is_file() {
        return Err(format!(
            "{} does not exist: build it with `cargo build -p gateway-sidecar` (scripts/demo.sh builds it), or pass --sidecar-bin PATH",
            plan.sidecar_bin.display()
        ));
    }
    let mut cmd = Command::new(&plan.sidecar_bin);
    cmd.arg("--bucket")
        .arg(BUCKET)
        .arg("--clusters-dir")
        .arg(&files.clusters_dir)
        .arg("--routes-dir")
        .arg(&files.routes_dir)
        .arg("--envoy-admin")
        .arg(format!("http://{}", plan.admin))
        .arg("--interval")
        .arg(INTERVAL_SECONDS.to_string())
        .arg("--listen")
        .arg(plan.sidecar_listen.to_string())
        .arg("--state-file")
        .arg(&files.sidecar_state);
    for var in moto::CHILD_ENV_REMOVED {
        cmd.env_remove(var);
    }
    cmd.envs(moto::child_env(plan.moto)).env("RUST_LOG", "info");
    Managed::spawn("the sidecar", cmd, &files.sidecar_log, false)
}
