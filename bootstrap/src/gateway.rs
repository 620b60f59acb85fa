use crate::listener::{
    common_top, gateway_listener, path_config_source, ratelimit_cluster, RouteSource,
};
use crate::{BootstrapError, BootstrapParams};
use gateway_render::contract::CLUSTERS_FILE;
use serde_json::{json, Value};

/// The bootstrap the proxy runs: static listener and filters, clusters (CDS) and routes (RDS)
/// from files in two watched directories, delivered by the sidecar without a restart.
pub fn gateway_bootstrap(params: &BootstrapParams) -> Result<Value, BootstrapError> {
    let mut top = common_top(params)?;
    top.insert(
        "dynamic_resources".into(),
        json!({ "cds_config": path_config_source("clusters_dir", &params.clusters_dir, CLUSTERS_FILE)? }),
    );
    top.insert(
        "static_resources".into(),
        json!({
            "listeners": [gateway_listener(params, RouteSource::Rds { routes_dir: &params.routes_dir })?],
            "clusters": [ratelimit_cluster(params)]
        }),
    );
    Ok(Value::Object(top))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_render::contract::{
        CLIENT_ACCESS_FILTER, CORS_FILTER, GLOBAL_RATE_LIMIT_FILTER, KILL_SWITCH_FILTER, KILL_SWITCH_RUNTIME_KEY,
        LOCAL_RATE_LIMIT_FILTER, PATH_GUARD_FILTER, ROUTE_CONFIG_NAME, COOKIE_SCOPE_FILTER,
        JWT_FILTER,
    };

    fn hcm(b: &Value) -> &Value {
        &b["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    }

    #[test]
    fn filters_are_in_contract_order() {
        let b =
            gateway_bootstrap(&BootstrapParams::production()).expect("production params are valid");
        let names: Vec<&str> = hcm(&b)["http_filters"]
            .as_array()
            .expect("http_filters is a list")
            .iter()
            .filter_map(|f| f["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                COOKIE_SCOPE_FILTER,
                KILL_SWITCH_FILTER,
                PATH_GUARD_FILTER,
                CLIENT_ACCESS_FILTER,
                CORS_FILTER,
                JWT_FILTER,
                LOCAL_RATE_LIMIT_FILTER,
                GLOBAL_RATE_LIMIT_FILTER,
                "envoy.filters.http.router"
            ]
        );
    }

    #[test]
    fn client_forwarding_headers_are_removed_before_routing() {
        let b = gateway_bootstrap(&BootstrapParams::production()).expect("valid");
        let early = &hcm(&b)["early_header_mutation_extensions"][0]["typed_config"]["mutations"];
        let removed: Vec<&str> = early
            .as_array()
            .expect("mutations")
            .iter()
            .filter_map(|m| m["remove"].as_str())
            .collect();
        for h in ["x-forwarded-host", "forwarded", "x-real-ip", "x-original-url", "true-client-ip"] {
            assert!(removed.contains(&h), "{h} not removed: {removed:?}");
        }
        // Envoy manages these two itself (trusted hops, the listener's scheme).
        for kept in ["x-forwarded-for", "x-forwarded-proto"] {
            assert!(!removed.contains(&kept), "{kept} must stay Envoy's");
        }
    }

    #[test]
    fn kill_switch_is_off_by_default_and_runtime_controlled() {
        let b = gateway_bootstrap(&BootstrapParams::production()).expect("valid");
        let filters = hcm(&b)["http_filters"].as_array().expect("filters");
        let ks = &filters
            .iter()
            .find(|f| f["name"] == KILL_SWITCH_FILTER)
            .expect("the kill switch")["typed_config"];
        assert_eq!(ks["abort"]["percentage"]["numerator"], 0);
        assert_eq!(ks["abort"]["http_status"], 503);
        assert_eq!(ks["abort_percent_runtime"], KILL_SWITCH_RUNTIME_KEY);
        let layers = b["layered_runtime"]["layers"].as_array().expect("layers");
        assert!(
            layers.iter().any(|l| l.get("admin_layer").is_some()),
            "runtime_modify needs an admin layer"
        );
    }

    #[test]
    fn cds_and_rds_watch_separate_directories() {
        let b = gateway_bootstrap(&BootstrapParams::production()).expect("valid");
        let cds = &b["dynamic_resources"]["cds_config"]["path_config_source"];
        assert_eq!(cds["path"], "/etc/envoy/cds/clusters.json");
        assert_eq!(cds["watched_directory"]["path"], "/etc/envoy/cds");
        let rds = &hcm(&b)["rds"];
        assert_eq!(rds["route_config_name"], ROUTE_CONFIG_NAME);
        assert_eq!(
            rds["config_source"]["path_config_source"]["path"],
            "/etc/envoy/rds/routes.json"
        );
        assert_eq!(
            rds["config_source"]["path_config_source"]["watched_directory"]["path"],
            "/etc/envoy/rds"
        );
        assert_eq!(hcm(&b)["use_remote_address"], true);
        assert_eq!(hcm(&b)["xff_num_trusted_hops"], 1);
        assert_eq!(
            b["admin"]["address"],
            serde_json::json!({"pipe": {"path": "/run/envoy/admin.sock", "mode": 0o666}})
        );
    }

    #[test]
    fn refuses_public_admin() {
        let mut p = BootstrapParams::production();
        p.admin = crate::AdminAddress::Tcp("10.0.0.1:9901".parse().expect("literal"));
        assert!(matches!(
            gateway_bootstrap(&p),
            Err(BootstrapError::AdminNotLoopback(_))
        ));
    }
}
