//! Runs the built `gatewayctl` binary.

pub mod on_moto;

use gateway_testkit::envoy_bin;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code, and that stderr names each of `needles`.
    pub fn assert_exit_naming(&self, code: i32, needles: &[&str]) {
        assert_eq!(self.code, code, "{}", self.stderr);
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "stderr does not name {needle:?}: {}",
                self.stderr
            );
        }
    }
}

/// The exit code and output of a finished `gatewayctl`.
pub fn finish(out: Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `gatewayctl ARGS` with a clean environment for the gateway's variables.
pub fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gatewayctl"));
    cmd.args(args)
        .env_remove("GATEWAY_DOMAIN")
        .env_remove("GATEWAY_ALLOW_LOOPBACK_BACKENDS")
        .env_remove("GATEWAY_BACKEND_DOMAINS")
        .env_remove("GATEWAY_BACKEND_CIDRS")
        .env_remove("GATEWAY_REQUIRE_RESOLVABLE_BACKENDS")
        .env_remove("GATEWAY_MAX_ROUTE_TIMEOUT")
        .env_remove("GATEWAY_MAX_RETRY_ATTEMPTS")
        .env("ENVOY_BIN", envoy_bin());
    cmd
}

pub fn run(args: &[&str]) -> Run {
    finish(command(args).output().expect("gatewayctl runs"))
}

pub fn run_with_stdin(args: &[&str], stdin: &str) -> Run {
    run_command_with_stdin(command(args), stdin)
}

/// `gatewayctl check - --domain api.example.com FLAGS` with `entry` on stdin.
pub fn check_stdin(flags: &[&str], entry: &str) -> Run {
    run_command_with_stdin(check_command(flags), entry)
}

/// The `check_stdin` command, for a test to add environment variables.
pub fn check_command(flags: &[&str]) -> Command {
    command(&[&["check", "-", "--domain", "api.example.com"][..], flags].concat())
}

/// A prepared `command` (extra variables set) with `stdin` written to it.
pub fn run_command_with_stdin(mut cmd: Command, stdin: &str) -> Run {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // A usage error exits before reading stdin: a broken pipe then is the program's answer,
    // not the test's failure.
    if let Err(e) = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
    {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
    }
    finish(child.wait_with_output().expect("gatewayctl runs"))
}

/// Billing's `invoices-api`, the sample entry in `examples/entries`.
pub const BILLING: &str = include_str!("../../../../examples/entries/billing-invoices-api.json");

pub const SHIPPING: &str = r#"[
  {"team": "shipping", "service": "tracker", "host": "track", "backend": "http://127.0.0.1:9000", "routes": [{"path": "/track"}]},
  {"team": "shipping", "service": "labels", "host": "track", "backend": "http://labels.internal",
   "routes": [{"path": "/labels", "limits": [{"per": "client-ip", "requests": 5, "every": "second"}]}]}
]"#;

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}
