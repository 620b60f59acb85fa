//! `gateway-ratelimit`, built next to `gatewayctl`: the local rate-limit service Envoy asks for
//! every global limit, serving the rules the rate-limit sidecar delivers.

use super::plan::{Plan, RunFiles};
use gateway_proc_kit::processes::Managed;
use tokio::process::Command;

pub fn spawn(plan: &Plan, files: &RunFiles) -> Result<Managed, String> {
    if !plan.ratelimit_bin.is_file() {
        return Err(format!(
            "{} does not exist: build it with `cargo build -p gateway-ratelimit` (scripts/demo.sh builds it), or pass --ratelimit-bin PATH",
            plan.ratelimit_bin.display()
        ));
    }
    let mut cmd = Command::new(&plan.ratelimit_bin);
    cmd.arg("--config-dir")
        .arg(&files.ratelimit_dir)
        .arg("--listen")
        .arg(plan.ratelimit.to_string())
        .env("RUST_LOG", "info");
    Managed::spawn("the rate-limit service", cmd, &files.ratelimit_log, false)
}
