//! The level-1 kill switch on a running Envoy started from the gateway bootstrap with the
//! proxy's own arguments: `POST /runtime_modify?KEY=100` on admin makes every request answer 503,
//! and `KEY=0` brings traffic back. Admin calls go through the test kit's Envoy admin client.

use gateway_bootstrap::{gateway_bootstrap, proxy_args, BootstrapParams};
use gateway_render::contract::{
    CLUSTERS_FILE, CLUSTER_TYPE_URL, KILL_SWITCH_RUNTIME_KEY, ROUTES_FILE, ROUTE_CONFIG_NAME,
    ROUTE_CONFIG_TYPE_URL,
};
use gateway_testkit::envoy::EnvoyProcess;
use gateway_testkit::{free_addr, http};
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;

/// The status of `METHOD path` with a Host no route names specially.
fn request(addr: SocketAddr, method: &str, path: &str) -> Option<u16> {
    http::status(addr, method, "anything.example", path)
}

#[test]
fn runtime_modify_throws_and_releases_the_kill_switch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (clusters_dir, routes_dir) = (dir.path().join("cds"), dir.path().join("rds"));
    std::fs::create_dir_all(&clusters_dir).expect("mkdir");
    std::fs::create_dir_all(&routes_dir).expect("mkdir");
    let clusters = json!({"version_info": "1", "type_url": CLUSTER_TYPE_URL, "resources": []});
    let routes = json!({"version_info": "1", "type_url": ROUTE_CONFIG_TYPE_URL, "resources": [{
        "@type": ROUTE_CONFIG_TYPE_URL, "name": ROUTE_CONFIG_NAME, "validate_clusters": true,
        "virtual_hosts": [{"name": "all", "domains": ["*"], "routes": [
            {"match": {"prefix": "/"}, "direct_response": {"status": 200, "body": {"inline_string": "ok"}}}]}]}]});
    std::fs::write(clusters_dir.join(CLUSTERS_FILE), clusters.to_string()).expect("write");
    std::fs::write(routes_dir.join(ROUTES_FILE), routes.to_string()).expect("write");
    let jwt = gateway_render::jwt::jwt_path(&routes_dir);
    std::fs::create_dir_all(jwt.parent().expect("jwt dir")).expect("mkdir");
    std::fs::write(jwt, gateway_render::jwt::jwt_file(gateway_render::jwt::empty_jwt_config(), "1"))
        .expect("write");
    let ratelimit = free_addr();

    // The gateway bootstrap for the ports the kit chose, started with the proxy's arguments.
    let envoy = EnvoyProcess::start_with_args(
        |ports| {
            let params = BootstrapParams::local(
                (&clusters_dir, &routes_dir),
                (ports.listener, ports.admin.into()),
                ratelimit,
                2,
            );
            gateway_bootstrap(&params).expect("valid params")
        },
        |config| {
            let mut args = proxy_args(config, true);
            args.extend(["-l".to_string(), "warning".to_string()]);
            args
        },
    );
    let listen = envoy.listener_addr();

    assert_eq!(
        http::wait_for_status(
            listen,
            "GET",
            "anything.example",
            "/",
            200,
            Duration::from_secs(20)
        ),
        Some(200),
        "envoy never served the route:\n{}",
        envoy.log_text()
    );

    let on = format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}=100");
    assert_eq!(
        envoy.admin_post(&on).map(|(code, _)| code),
        Some(200),
        "runtime_modify refused:\n{}",
        envoy.log_text()
    );
    for _ in 0..5 {
        assert_eq!(
            request(listen, "GET", "/"),
            Some(503),
            "kill switch thrown: every request answers 503"
        );
    }

    let off = format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}=0");
    assert_eq!(envoy.admin_post(&off).map(|(code, _)| code), Some(200));
    assert_eq!(
        request(listen, "GET", "/"),
        Some(200),
        "kill switch released"
    );
}
