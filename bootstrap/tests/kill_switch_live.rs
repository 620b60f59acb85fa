//! The level-1 kill switch on a running Envoy started from the gateway bootstrap with the
//! proxy's own arguments: `POST /runtime_modify?KEY=100` on admin makes every request answer 503,
//! and `KEY=0` brings traffic back.

mod common;

use gateway_bootstrap::{gateway_bootstrap, proxy_args, to_pretty_json, BootstrapParams};
use gateway_render::contract::{
    CLUSTERS_FILE, CLUSTER_TYPE_URL, KILL_SWITCH_RUNTIME_KEY, ROUTES_FILE, ROUTE_CONFIG_NAME,
    ROUTE_CONFIG_TYPE_URL,
};
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills Envoy when the test ends, however it ends.
struct EnvoyGuard(Child);

impl Drop for EnvoyGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local addr")
}

/// A minimal HTTP/1.1 exchange; returns the status code.
fn request(addr: SocketAddr, method: &str, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "{method} {path} HTTP/1.1\r\nHost: anything.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

fn wait_for(addr: SocketAddr, want: u16, child: &mut Child) -> Option<u16> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = None;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("envoy exited early: {status}");
        }
        last = request(addr, "GET", "/");
        if last == Some(want) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    last
}

#[test]
fn runtime_modify_throws_and_releases_the_kill_switch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let params = BootstrapParams {
        clusters_dir: dir.path().join("cds"),
        routes_dir: dir.path().join("rds"),
        listen: free_addr(),
        admin: free_addr(),
        ratelimit: free_addr(),
        xff_num_trusted_hops: 2,
    };
    std::fs::create_dir_all(&params.clusters_dir).expect("mkdir");
    std::fs::create_dir_all(&params.routes_dir).expect("mkdir");
    let clusters = json!({"version_info": "1", "type_url": CLUSTER_TYPE_URL, "resources": []});
    let routes = json!({"version_info": "1", "type_url": ROUTE_CONFIG_TYPE_URL, "resources": [{
        "@type": ROUTE_CONFIG_TYPE_URL, "name": ROUTE_CONFIG_NAME, "validate_clusters": true,
        "virtual_hosts": [{"name": "all", "domains": ["*"], "routes": [
            {"match": {"prefix": "/"}, "direct_response": {"status": 200, "body": {"inline_string": "ok"}}}]}]}]});
    std::fs::write(
        params.clusters_dir.join(CLUSTERS_FILE),
        clusters.to_string(),
    )
    .expect("write");
    std::fs::write(params.routes_dir.join(ROUTES_FILE), routes.to_string()).expect("write");
    let config = dir.path().join("envoy.json");
    std::fs::write(
        &config,
        to_pretty_json(&gateway_bootstrap(&params).expect("valid params")),
    )
    .expect("write");

    let log = std::fs::File::create(dir.path().join("envoy.log")).expect("log file");
    let child = Command::new(common::envoy_bin())
        .args(proxy_args(&config, true))
        .args(["-l", "warning"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("envoy starts");
    let mut envoy = EnvoyGuard(child);
    let log_text = || std::fs::read_to_string(dir.path().join("envoy.log")).unwrap_or_default();

    assert_eq!(
        wait_for(params.listen, 200, &mut envoy.0),
        Some(200),
        "envoy never served the route:\n{}",
        log_text()
    );

    let on = format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}=100");
    assert_eq!(
        request(params.admin, "POST", &on),
        Some(200),
        "runtime_modify refused:\n{}",
        log_text()
    );
    for _ in 0..5 {
        assert_eq!(
            request(params.listen, "GET", "/"),
            Some(503),
            "kill switch thrown: every request answers 503"
        );
    }

    let off = format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}=0");
    assert_eq!(request(params.admin, "POST", &off), Some(200));
    assert_eq!(
        request(params.listen, "GET", "/"),
        Some(200),
        "kill switch released"
    );
}
