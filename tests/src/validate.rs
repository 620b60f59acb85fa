//! Envoy's own verdict on a bootstrap: `envoy --mode validate`, bounded in time, with what it
//! printed. Tests of the renderer and the bootstrap use it; tests of the validator call the
//! validator instead, because its layer-3 runner is the thing under test there.

use crate::envoy_bin;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Validating a few hundred routes takes about a second; a machine busy with other builds is
/// much slower, and a hung Envoy must still fail the test.
const VALIDATE_TIMEOUT: Duration = Duration::from_secs(120);

/// Writes `bootstrap` to a `.json` file (Envoy picks its parser by extension) and validates it.
/// Returns whether Envoy accepted it, and its stdout and stderr (the `OK` line, warnings such
/// as deprecations, or the reason it refused).
pub fn validate_bootstrap(bootstrap: &serde_json::Value) -> (bool, String) {
    let mut file = tempfile::Builder::new()
        .suffix(".json")
        .tempfile()
        .unwrap_or_else(|e| panic!("creating a bootstrap file: {e}"));
    file.write_all(bootstrap.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("writing the bootstrap file: {e}"));
    validate_file(file.path())
}

/// `envoy --mode validate` on a bootstrap file the caller wrote.
pub fn validate_file(config: &Path) -> (bool, String) {
    let bin = envoy_bin();
    let log =
        tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("creating Envoy's log file: {e}"));
    let output = || {
        log.reopen()
            .unwrap_or_else(|e| panic!("opening Envoy's log file: {e}"))
    };
    // Both streams go to one file, so a chatty Envoy never blocks on a full pipe while this polls.
    let child = Command::new(&bin)
        .args([
            "--mode",
            "validate",
            "--disable-hot-restart",
            "--log-level",
            "warn",
            "-c",
        ])
        .arg(config)
        .stdin(Stdio::null())
        .stdout(output())
        .stderr(output())
        .spawn()
        .unwrap_or_else(|e| panic!("starting Envoy ({}): {e}", bin.display()));
    let mut guard = KillOnDrop(child);
    let deadline = Instant::now() + VALIDATE_TIMEOUT;
    let status = loop {
        match guard.0.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => panic!("waiting for envoy --mode validate: {e}"),
        }
        assert!(
            Instant::now() < deadline,
            "envoy --mode validate did not finish in {VALIDATE_TIMEOUT:?} on {}",
            config.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.success(),
        std::fs::read_to_string(log.path()).unwrap_or_default(),
    )
}

/// Kills Envoy if the test ends (a panic, the deadline) before it does.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_a_minimal_bootstrap_and_refuses_a_broken_one() {
        let (ok, output) = validate_bootstrap(&serde_json::json!({
            "static_resources": { "clusters": [ { "name": "c", "connect_timeout": "1s" } ] }
        }));
        assert!(ok, "Envoy rejected a minimal bootstrap:\n{output}");
        assert!(output.contains("OK"), "{output}");

        let (ok, output) = validate_bootstrap(&serde_json::json!({
            "static_resources": { "clusters": [ { "name": "c", "connect_timeout": "soon" } ] }
        }));
        assert!(!ok, "Envoy accepted a malformed duration:\n{output}");
        assert!(output.contains("connect_timeout"), "{output}");
    }
}
