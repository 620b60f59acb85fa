//! `gatewayctl` against moto's server: one server per test binary, a fresh table per test.

use super::{finish, Run};
use gateway_testkit::{unique_name, MotoServer};
use std::process::Command;
use std::sync::OnceLock;

pub fn moto() -> &'static MotoServer {
    static SERVER: OnceLock<MotoServer> = OnceLock::new();
    SERVER.get_or_init(MotoServer::start)
}

/// `gatewayctl ARGS` against moto, on `table` (none when empty), with nothing from the caller's
/// environment but the gateway's domain.
pub fn command(table: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gatewayctl"));
    cmd.env_clear()
        .args(args)
        .envs(moto().aws_env())
        .env("GATEWAY_DOMAIN", "api.example.com");
    if !table.is_empty() {
        cmd.env("GATEWAY_TABLE", table);
    }
    cmd
}

pub fn gatewayctl(table: &str, args: &[&str]) -> Run {
    finish(command(table, args).output().expect("gatewayctl runs"))
}

/// The output of `gatewayctl ARGS` on `table`, which must succeed.
pub fn gatewayctl_ok(table: &str, args: &[&str]) -> String {
    let run = gatewayctl(table, args);
    assert_eq!(run.code, 0, "gatewayctl {args:?}: {}", run.stderr);
    run.stdout
}

/// A new table (`gatewayctl init`) named from `prefix`.
pub fn new_table(prefix: &str) -> String {
    let table = unique_name(prefix);
    let run = gatewayctl(&table, &["init"]);
    assert_eq!(run.code, 0, "init: {}", run.stderr);
    assert!(run.stdout.contains("created table"), "{}", run.stdout);
    table
}

/// `gatewayctl register FILE` on `table` succeeds.
pub fn assert_registers(table: &str, file: &str) {
    let run = gatewayctl(table, &["register", file]);
    assert_eq!(run.code, 0, "register {file}: {}", run.stderr);
}

/// `gatewayctl register FILE` on `table` exits 1 with `reason` as its whole message.
pub fn assert_register_refused(table: &str, file: &str, reason: &str) {
    let run = gatewayctl(table, &["register", file]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(run.stderr.trim(), reason);
}

/// `gatewayctl list --json` on `table`.
pub fn list_json(table: &str) -> serde_json::Value {
    let run = gatewayctl(table, &["list", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("list --json is JSON")
}
