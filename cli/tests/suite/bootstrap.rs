//! `gatewayctl bootstrap`: the production output is the checked-in `bootstrap/envoy.json` and
//! `bootstrap/envoy.args`, each flag changes one place, and bad flags are usage errors (exit 2).
use crate::common;
use common::*;
use std::path::Path;

const REGENERATE: &str =
    "regenerate with: cargo run -p gatewayctl -- bootstrap --production > bootstrap/envoy.json";

fn checked_in(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bootstrap")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn production_output_is_the_checked_in_bootstrap() {
    for args in [&["bootstrap"][..], &["bootstrap", "--production"][..]] {
        let r = run(args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stdout == checked_in("envoy.json"),
            "bootstrap/envoy.json differs from `gatewayctl {}`; {REGENERATE}",
            args.join(" ")
        );
    }
}

#[test]
fn the_default_admin_is_a_unix_socket_and_one_flag_changes_one_place() {
    let r = run(&["bootstrap"]);
    let b: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(
        b["admin"]["address"]["pipe"]["path"],
        "/run/envoy/admin.sock"
    );
    let r = run(&["bootstrap", "--admin", "unix:/tmp/x/admin.sock"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(b["admin"]["address"]["pipe"]["path"], "/tmp/x/admin.sock");
    assert_eq!(
        b["dynamic_resources"]["cds_config"]["path_config_source"]["path"],
        "/etc/envoy/cds/clusters.json"
    );
    let r = run(&["bootstrap", "--admin", "unix:relative.sock"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("absolute"), "{}", r.stderr);
}

#[test]
fn production_args_are_the_checked_in_args() {
    let r = run(&["bootstrap", "--production", "--args"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout == checked_in("envoy.args"),
        "bootstrap/envoy.args differs; regenerate with: cargo run -p gatewayctl -- bootstrap --production --args > bootstrap/envoy.args"
    );
    let local = run(&[
        "bootstrap",
        "--args",
        "--bootstrap-path",
        "/tmp/b.json",
        "--local",
    ]);
    assert_eq!(
        local.stdout,
        "-c\n/tmp/b.json\n--reject-unknown-dynamic-fields\n--disable-hot-restart\n"
    );
}

#[test]
fn custom_places_are_used() {
    let r = run(&[
        "bootstrap",
        "--clusters-dir",
        "/srv/cds",
        "--routes-dir",
        "/srv/rds",
        "--listen",
        "127.0.0.1:18080",
        "--admin",
        "127.0.0.1:19901",
        "--ratelimit",
        "127.0.0.1:18081",
        "--xff-num-trusted-hops",
        "1",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(
        b["dynamic_resources"]["cds_config"]["path_config_source"]["path"],
        "/srv/cds/clusters.json"
    );
    assert_eq!(b["admin"]["address"]["socket_address"]["port_value"], 19901);
    let hcm =
        &b["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    assert_eq!(hcm["xff_num_trusted_hops"], 1);
    assert_eq!(
        hcm["rds"]["config_source"]["path_config_source"]["watched_directory"]["path"],
        "/srv/rds"
    );
}

#[test]
fn usage_errors_exit_2() {
    let r = run(&["bootstrap", "--clusters-dir", "/etc/envoy/rds"]);
    assert_eq!(r.code, 2, "one directory for CDS and RDS: {}", r.stderr);
    let r = run(&["bootstrap", "--production", "--listen", "0.0.0.0:1"]);
    assert_eq!(
        r.code, 2,
        "--production conflicts with places: {}",
        r.stderr
    );
    let r = run(&[
        "bootstrap",
        "--clusters-dir",
        "/a",
        "--routes-dir",
        "/b",
        "--listen",
        "0.0.0.0:8080",
        "--admin",
        "0.0.0.0:9901",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("loopback"),
        "a public admin address is refused: {}",
        r.stderr
    );
}

/// Output cut short by its reader (`gatewayctl bootstrap | head -1`) ends quietly with SIGPIPE's
/// status, never a panic; completion scripts come for every shell clap knows.
#[test]
fn a_closed_pipe_ends_quietly_and_completions_are_printed() {
    for args in [&["bootstrap"][..], &["completions", "bash"][..]] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gatewayctl"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("gatewayctl starts");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("gatewayctl ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
    }
    for shell in ["bash", "zsh", "fish"] {
        let run = crate::common::run(&["completions", shell]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stdout.contains("gatewayctl") && run.stdout.contains("sync"), "{shell}");
    }
    let bad = crate::common::run(&["completions", "tcsh"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}
