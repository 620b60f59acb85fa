//! The pinned Envoy: finding it, its version, and starting it from the gateway's bootstrap.

use super::plan::{Plan, RunFiles};
use super::processes::Managed;
use gateway_bootstrap::{gateway_bootstrap, proxy_args, to_pretty_json, BootstrapParams};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// Where the Envoy binary is, or why it cannot be used.
pub fn locate(plan: &Plan) -> Result<PathBuf, String> {
    let Some(bin) = &plan.envoy_bin else {
        let bin = plan.default_envoy();
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!(
                "{} is missing after installing: run scripts/setup-python.sh and read its errors",
                bin.display()
            ))
        };
    };
    if bin.components().count() > 1 {
        return if bin.is_file() {
            Ok(bin.clone())
        } else {
            Err(format!(
                "Envoy binary {} (--envoy-bin or ENVOY_BIN) does not exist: unset ENVOY_BIN to use the pinned Envoy the demo installs into .venv",
                bin.display()
            ))
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(bin))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "Envoy binary {:?} (--envoy-bin or ENVOY_BIN) is not on PATH: unset ENVOY_BIN to use the pinned Envoy the demo installs into .venv",
                bin.display().to_string()
            )
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
    parse_version(&text).ok_or_else(|| {
        format!(
            "{} --version printed no Envoy version: {:?}",
            bin.display(),
            text.trim()
        )
    })
}

fn parse_version(text: &str) -> Option<String> {
    let (_, rest) = text.split_once("version: ")?;
    rest.split('/').nth(1).map(str::to_string)
}

/// Writes the gateway's bootstrap for the demo's addresses and directories and starts Envoy with
/// the proxy's own arguments (plus `--disable-hot-restart` for a local run).
pub fn spawn(plan: &Plan, files: &RunFiles, bin: &Path) -> Result<Managed, String> {
    let params = BootstrapParams {
        clusters_dir: files.clusters_dir.clone(),
        routes_dir: files.routes_dir.clone(),
        listen: plan.listen,
        admin: plan.admin.into(),
        ratelimit: plan.ratelimit,
        // Nothing sits in front of the demo's Envoy: the client's address is the peer's.
        xff_num_trusted_hops: 0,
    };
    let bootstrap = gateway_bootstrap(&params).map_err(|e| format!("the bootstrap: {e}"))?;
    std::fs::write(&files.bootstrap, to_pretty_json(&bootstrap))
        .map_err(|e| format!("writing {}: {e}", files.bootstrap.display()))?;
    let mut cmd = Command::new(bin);
    cmd.args(proxy_args(&files.bootstrap, true))
        // A few workers are plenty for a demo, whatever the machine's core count.
        .args(["--concurrency", "2"]);
    Managed::spawn("Envoy", cmd, &files.envoy_log, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_release_from_the_version_line() {
        let line = "\nenvoy  version: 0bd94a2e7a2c16b0bbb9f9d64a5de03cf2f3d1bf/1.40.0/Clean/RELEASE/BoringSSL\n";
        assert_eq!(parse_version(line).as_deref(), Some("1.40.0"));
        assert_eq!(parse_version("no version here"), None);
    }
}
