//! An independent check of the rendered config: a minimal bootstrap written here by hand (not by
//! the bootstrap crate) that inlines the rendered clusters and route configuration, judged by
//! plain `envoy --mode validate`. If the bootstrap crate and the renderer agreed on a mistake,
//! this would still catch what Envoy itself refuses.

use crate::common;

use common::*;
use gateway_render::contract::{GLOBAL_RATE_LIMIT_FILTER, LOCAL_RATE_LIMIT_FILTER};
use gateway_testkit::validate::validate_bootstrap;
use serde_json::{json, Value};

fn strip_type(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(map) = v.as_object_mut() {
        map.remove("@type");
    }
    v
}

fn minimal_bootstrap(clusters: &[Value], route_config: &Value) -> Value {
    // The rendered routes use per-route config for the local and global rate-limit filters, so
    // those filters must exist in the chain for Envoy to accept them.
    json!({
        "static_resources": {
            "listeners": [{
                "name": "independent",
                "address": {"socket_address": {"address": "127.0.0.1", "port_value": 10000}},
                "filter_chains": [{"filters": [{
                    "name": "envoy.filters.network.http_connection_manager",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                        "stat_prefix": "independent",
                        "route_config": strip_type(route_config),
                        "http_filters": [
                            {"name": LOCAL_RATE_LIMIT_FILTER, "typed_config": {
                                "@type": "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
                                "stat_prefix": "local"}},
                            {"name": GLOBAL_RATE_LIMIT_FILTER, "typed_config": {
                                "@type": "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit",
                                "domain": "independent",
                                "rate_limit_service": {
                                    "grpc_service": {"envoy_grpc": {"cluster_name": "independent-ratelimit"}},
                                    "transport_api_version": "V3"}}},
                            {"name": "envoy.filters.http.router", "typed_config": {
                                "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}
                        ]
                    }
                }]}]
            }],
            "clusters": clusters.iter().map(strip_type).chain([json!({
                "name": "independent-ratelimit",
                "type": "STATIC",
                "connect_timeout": "1s",
                "load_assignment": {"cluster_name": "independent-ratelimit", "endpoints": [{"lb_endpoints": [
                    {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 10001}}}}]}]}
            })]).collect::<Vec<_>>()
        }
    })
}

#[test]
fn envoy_accepts_the_rendered_config_in_a_hand_written_bootstrap() {
    let r = rendered();
    assert!(r.route_count > 0);
    let (ok, text) = validate_bootstrap(&minimal_bootstrap(&r.clusters, &r.route_config));
    assert!(ok, "envoy rejected the rendered config:\n{text}");
}

#[test]
fn the_hand_written_bootstrap_really_parses_the_routes() {
    // Without this, a bootstrap that ignored its route_config would pass anything.
    let r = rendered();
    let mut rc = r.route_config.clone();
    rc["virtual_hosts"][0]["routes"][0]["route"]["cluster"] = json!("not-a-cluster");
    let (ok, text) = validate_bootstrap(&minimal_bootstrap(&r.clusters, &rc));
    assert!(!ok, "envoy accepted a route to a missing cluster");
    assert!(text.contains("not-a-cluster"), "{text}");
}
