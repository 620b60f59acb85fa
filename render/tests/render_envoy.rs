//! The rendered shapes are real Envoy 1.40 config: a bootstrap that inlines the rendered clusters
//! and route configuration (Envoy's validate mode does not read `path_config_source` files)
//! passes `envoy --mode validate`.

mod render_support;

use gateway_render::{render_kill_switch, Rendered};
use render_support::envoy::{envoy_bin, gateway_bootstrap, ProcessGuard};
use render_support::{config, render_examples};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `envoy --mode validate` on the bootstrap; returns (success, stderr + stdout).
fn envoy_validate(dir: &Path, bootstrap: &Value) -> (bool, String) {
    let config = dir.join("bootstrap.json");
    std::fs::write(
        &config,
        serde_json::to_string_pretty(bootstrap).expect("bootstrap serialises"),
    )
    .expect("write bootstrap");
    let out_path = dir.join("envoy.log");
    let log = std::fs::File::create(&out_path).expect("create log");
    let child = Command::new(envoy_bin())
        .args([
            "--mode",
            "validate",
            "--disable-hot-restart",
            "--log-level",
            "warn",
            "-c",
        ])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("clone log handle"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("starting Envoy ({}): {e}", envoy_bin().display()));
    let mut guard = ProcessGuard(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = guard.0.try_wait().expect("waiting for Envoy") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "envoy --mode validate did not finish in 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status.success(),
        std::fs::read_to_string(&out_path).unwrap_or_default(),
    )
}

fn assert_valid(rendered: &Rendered) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ok, output) = envoy_validate(dir.path(), &gateway_bootstrap(rendered, 0, 0));
    assert!(ok, "Envoy rejected the rendered config:\n{output}");
    assert!(output.contains("OK"), "Envoy did not say OK:\n{output}");
    // A deprecated field works today and breaks on a later Envoy; keep the renderer off them.
    assert!(
        !output.to_lowercase().contains("deprecated"),
        "Envoy warns about a deprecated field:\n{output}"
    );
}

#[test]
fn envoy_accepts_the_rendered_sample_registry() {
    let rendered = render_examples();
    assert!(rendered.route_count > 0);
    assert_valid(&rendered);
}

#[test]
fn envoy_accepts_the_kill_switch_render() {
    assert_valid(&render_kill_switch(&config()));
}

#[test]
fn envoy_rejects_a_broken_render_so_the_check_above_means_something() {
    let mut rendered = render_examples();
    // A route to a cluster that is not there: validate_clusters must make Envoy refuse it.
    rendered.route_config["virtual_hosts"][0]["routes"][0]["route"]["cluster"] =
        json!("nobody.missing");
    let dir = tempfile::tempdir().expect("temp dir");
    let (ok, output) = envoy_validate(dir.path(), &gateway_bootstrap(&rendered, 0, 0));
    assert!(
        !ok,
        "Envoy accepted a route to a missing cluster:\n{output}"
    );
    assert!(
        output.contains("nobody.missing"),
        "Envoy's reason should name the cluster:\n{output}"
    );
}
