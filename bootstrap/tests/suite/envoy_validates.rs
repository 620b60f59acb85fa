//! Real Envoy judges the bootstrap shapes.

use gateway_bootstrap::{
    envoy_version, gateway_bootstrap, to_pretty_json, validation_bootstrap, BootstrapParams,
};
use gateway_render::contract::{CLUSTERS_FILE, ROUTES_FILE, ROUTE_CONFIG_NAME};
use gateway_testkit::envoy_bin;
use gateway_testkit::validate::validate_file;
use serde_json::json;
use std::process::Command;

#[test]
fn envoy_version_matches_the_pin() {
    let out = Command::new(envoy_bin())
        .arg("--version")
        .output()
        .expect("envoy runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("/{}/", envoy_version())),
        "envoy --version says {text:?}, the pin (bootstrap/ENVOY_VERSION) is {}",
        envoy_version()
    );
}

#[test]
fn production_shape_passes_envoy_validate() {
    // Validate mode only checks that the watched files exist, so empty placeholders do.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut params = BootstrapParams::production();
    params.clusters_dir = dir.path().join("cds");
    params.routes_dir = dir.path().join("rds");
    std::fs::create_dir_all(&params.clusters_dir).expect("mkdir");
    std::fs::create_dir_all(&params.routes_dir).expect("mkdir");
    std::fs::write(params.clusters_dir.join(CLUSTERS_FILE), "").expect("write");
    std::fs::write(params.routes_dir.join(ROUTES_FILE), "").expect("write");
    let jwt = gateway_render::jwt::jwt_path(&params.routes_dir);
    std::fs::create_dir_all(jwt.parent().expect("jwt dir")).expect("mkdir");
    std::fs::write(jwt, "").expect("write");
    let file = dir.path().join("envoy.json");
    std::fs::write(
        &file,
        to_pretty_json(&gateway_bootstrap(&params).expect("valid params")),
    )
    .expect("write");
    let (ok, text) = validate_file(&file);
    assert!(ok, "envoy rejected the gateway bootstrap:\n{text}");
}

#[test]
fn validation_bootstrap_with_a_route_passes_envoy_validate() {
    let clusters = [json!({
        "@type": gateway_render::contract::CLUSTER_TYPE_URL,
        "name": "billing-invoices",
        "type": "STRICT_DNS",
        "connect_timeout": "2s",
        "load_assignment": {"cluster_name": "billing-invoices", "endpoints": [{"lb_endpoints": [
            {"endpoint": {"address": {"socket_address": {"address": "localhost", "port_value": 8443}}}}]}]}
    })];
    let route_config = json!({
        "@type": gateway_render::contract::ROUTE_CONFIG_TYPE_URL,
        "name": ROUTE_CONFIG_NAME,
        "validate_clusters": true,
        "virtual_hosts": [{"name": "billing", "domains": ["invoices.api.example.com"],
            "routes": [{"match": {"prefix": "/invoices"}, "route": {"cluster": "billing-invoices"}}]}]
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("validate.json");
    let b = validation_bootstrap(&BootstrapParams::production(), &clusters, &route_config)
        .expect("valid");
    std::fs::write(&file, to_pretty_json(&b)).expect("write");
    let (ok, text) = validate_file(&file);
    assert!(ok, "envoy rejected the validation bootstrap:\n{text}");

    // And Envoy really parsed the inlined routes: a route to a missing cluster is refused.
    let broken = json!({"name": ROUTE_CONFIG_NAME, "validate_clusters": true, "virtual_hosts": [
        {"name": "billing", "domains": ["invoices.api.example.com"],
         "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "nowhere"}}]}]});
    let b =
        validation_bootstrap(&BootstrapParams::production(), &clusters, &broken).expect("valid");
    std::fs::write(&file, to_pretty_json(&b)).expect("write");
    let (ok, text) = validate_file(&file);
    assert!(!ok, "envoy accepted a route to a missing cluster");
    assert!(
        text.contains("nowhere"),
        "envoy's message should name the cluster:\n{text}"
    );
}
