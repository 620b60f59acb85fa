//! Shared by the validator's tests: the real Envoy, and configs to judge.

use gateway_render::contract::{CLUSTER_TYPE_URL, ROUTE_CONFIG_NAME, ROUTE_CONFIG_TYPE_URL};
use gateway_render::{render, Entry, RenderConfig, Rendered};
use gateway_validator::EnvoyOptions;
use serde_json::{json, Value};

/// Layer 3's runner on the Envoy the test kit finds (`ENVOY_BIN`, else PATH); a missing Envoy
/// fails the test, never skips it.
pub fn envoy_options() -> EnvoyOptions {
    EnvoyOptions::new(gateway_testkit::envoy_bin())
}

pub fn cluster(name: &str) -> Value {
    json!({
        "@type": CLUSTER_TYPE_URL,
        "name": name,
        "type": "STRICT_DNS",
        "connect_timeout": "2s",
        "load_assignment": {"cluster_name": name, "endpoints": [{"lb_endpoints": [
            {"endpoint": {"address": {"socket_address": {"address": "localhost", "port_value": 8443}}}}]}]}
    })
}

pub fn vhost(name: &str, domain: &str, cluster: &str) -> Value {
    json!({"name": name, "domains": [domain], "routes": [
        {"name": format!("{name}-root"), "match": {"prefix": "/"}, "route": {"cluster": cluster}}]})
}

pub fn route_config(vhosts: Vec<Value>) -> Value {
    json!({"@type": ROUTE_CONFIG_TYPE_URL, "name": ROUTE_CONFIG_NAME, "validate_clusters": true, "virtual_hosts": vhosts})
}

pub const EMPTY_RULES: &str = "domain: gateway\n";

/// A small registry with every limit kind, through the real renderer.
pub fn sample_entries() -> Vec<Entry> {
    let docs = [
        // Billing's `invoices-api`, the sample entry in `examples/entries`.
        serde_json::from_str(include_str!(
            "../../../../examples/entries/billing-invoices-api.json"
        ))
        .expect("the sample entry is JSON"),
        json!({"team": "shipping", "service": "tracker", "host": "track", "backend": "http://tracker.internal:8080",
               "routes": [{"path": "/track"}, {"path": "/track/live", "limits": [{"per": "client-ip", "requests": 5, "every": "second"}]}]}),
        json!({"team": "shipping", "service": "labels", "host": "track", "backend": "http://10.0.0.7",
               "routes": [{"path": "/labels", "methods": ["PUT", "DELETE"], "limits": [{"burst": 3}, {"per": "route", "requests": 1000, "every": "day"}]}]}),
    ];
    docs.into_iter()
        .map(|d| serde_json::from_value(d).expect("sample entries are valid"))
        .collect()
}

pub fn rendered() -> Rendered {
    render(&sample_entries(), &RenderConfig::new("api.example.com")).expect("sample entries render")
}
