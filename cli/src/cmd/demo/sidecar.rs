//! The `gateway-sidecar` binary built next to `gatewayctl`, started in Envoy mode against the
//! demo's bucket.

use super::moto;
use super::plan::{Plan, RunFiles, BUCKET, TABLE};
use gateway_proc_kit::processes::Managed;
use std::net::SocketAddr;
use std::path::Path;
use tokio::process::Command;

/// Seconds between the sidecar's polls of the bucket.
pub const INTERVAL_SECONDS: u64 = 2;

pub fn spawn(plan: &Plan, files: &RunFiles) -> Result<Managed, String> {
    let mut cmd = command(plan, plan.sidecar_listen, &files.sidecar_state, &files.trust_key)?;
    cmd.arg("--clusters-dir")
        .arg(&files.clusters_dir)
        .arg("--routes-dir")
        .arg(&files.routes_dir)
        .arg("--envoy-admin")
        .arg(format!("http://{}", plan.admin))
        // It reports what it serves, so `gatewayctl status` lists the demo's proxy.
        .arg("--table")
        .arg(TABLE)
        .arg("--proxy-id")
        .arg("demo-proxy");
    Managed::spawn("the sidecar", cmd, &files.sidecar_log, false)
}

/// The same binary in its rate-limit mode: delivers `ratelimit.yaml` for gateway-ratelimit.
pub fn spawn_ratelimit(plan: &Plan, files: &RunFiles) -> Result<Managed, String> {
    let mut cmd = command(
        plan,
        plan.ratelimit_sidecar_listen,
        &files.ratelimit_sidecar_state,
        &files.trust_key,
    )?;
    cmd.arg("--ratelimit-dir")
        .arg(&files.ratelimit_dir)
        .arg("--staging-dir")
        .arg(&files.ratelimit_staging_dir);
    Managed::spawn(
        "the rate-limit sidecar",
        cmd,
        &files.ratelimit_sidecar_log,
        false,
    )
}

/// `gateway-sidecar` with the demo's AWS environment (moto), polling the demo's bucket, serving
/// its status on `listen`, keeping its state in `state_file` and trusting `trust_key`.
fn command(
    plan: &Plan,
    listen: SocketAddr,
    state_file: &Path,
    trust_key: &Path,
) -> Result<Command, String> {
    if !plan.sidecar_bin.is_file() {
        return Err(format!(
            "{} does not exist: build it with `cargo build -p gateway-sidecar` (scripts/demo.sh builds it), or pass --sidecar-bin PATH",
            plan.sidecar_bin.display()
        ));
    }
    let mut cmd = Command::new(&plan.sidecar_bin);
    for var in moto::CHILD_ENV_REMOVED {
        cmd.env_remove(var);
    }
    cmd.envs(moto::child_env(plan.moto)).env("RUST_LOG", "info");
    cmd.arg("--bucket")
        .arg(BUCKET)
        .arg("--interval")
        .arg(INTERVAL_SECONDS.to_string())
        .arg("--listen")
        .arg(listen.to_string())
        .arg("--state-file")
        .arg(state_file)
        // Only bundles signed by the demo's key; its backends are on loopback.
        .arg("--trust-key")
        .arg(trust_key)
        .arg("--allow-loopback-backends");
    Ok(cmd)
}
