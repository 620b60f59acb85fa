//! Envoy for the render tests: a bootstrap with the gateway's filters that inlines a render (Envoy's validate mode does not read
//! `path_config_source` files, so the rendered resources go into `static_resources`).

use gateway_render::contract::{
    CORS_FILTER, GLOBAL_RATE_LIMIT_FILTER, KILL_SWITCH_FILTER, KILL_SWITCH_RUNTIME_KEY,
    LOCAL_RATE_LIMIT_FILTER, RATE_LIMIT_CLUSTER, RATE_LIMIT_DOMAIN,
};
use gateway_render::Rendered;
use serde_json::{json, Value};

/// A resource inlined into a bootstrap is a plain message, not an `Any`: it must not carry `@type`.
pub fn without_type(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("@type");
    }
    v
}

/// Listener and admin on loopback `listen_port`/`admin_port` (0 for validate mode).
pub fn gateway_bootstrap(rendered: &Rendered, listen_port: u16, admin_port: u16) -> Value {
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
            { "name": CORS_FILTER, "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors" } },
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
        "admin": { "address": { "socket_address": { "address": "127.0.0.1", "port_value": admin_port } } },
        "static_resources": {
            "clusters": clusters,
            "listeners": [{
                "name": "gateway",
                "address": { "socket_address": { "address": "127.0.0.1", "port_value": listen_port } },
                "filter_chains": [{ "filters": [{
                    "name": "envoy.filters.network.http_connection_manager", "typed_config": hcm }] }]
            }]
        }
    })
}
