//! `gatewayctl top` against the real Envoy on the gateway's bootstrap: two teams' loopback
//! backends, one answering 500 on some paths.

use gateway_bootstrap::{gateway_bootstrap, BootstrapParams};
use gateway_render::contract::{CLUSTERS_FILE, ROUTES_FILE};
use gateway_render::{render, Entry, RenderConfig, Route};
use gateway_testkit::backend::{Backend, FAILING_PREFIX};
use gateway_testkit::envoy::EnvoyProcess;
use gateway_testkit::{free_port, http};
use serde_json::Value;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

const DOMAIN: &str = "api.example.com";

fn entry(team: &str, backend: &Backend) -> Entry {
    limited_entry(team, backend, vec![])
}

fn limited_entry(team: &str, backend: &Backend, limits: Vec<gateway_render::Limit>) -> Entry {
    Entry {
        rollout: None,
        serving: None,
        team: team.into(),
        service: "api".into(),
        host: team.into(),
        backend: backend.url(),
        protocol: Default::default(),
        canary: None,
        health_check: None,
        preserve_host: false,
        jwt: Default::default(),
        backends: vec![],
        routes: ["/ok", FAILING_PREFIX]
            .iter()
            .map(|p| Route {
                path: p.to_string(),
                methods: None,
                limits: limits.clone(),
                ..Default::default()
            })
            .collect(),
    }
}

#[test]
fn top_shows_each_services_rate_and_5xx_busiest_first() {
    let billing = Backend::start("billing");
    let search = Backend::start("search");
    let dir = tempfile::tempdir().expect("tempdir");
    let (cds, rds) = (dir.path().join("cds"), dir.path().join("rds"));
    std::fs::create_dir_all(&cds).expect("cds dir");
    std::fs::create_dir_all(&rds).expect("rds dir");
    let rendered = render(
        &[
            entry("billing", &billing),
            entry("search", &search),
            // One token a second: most of a quick burst is answered 429 by the gateway.
            limited_entry("quota", &search, vec![gateway_render::Limit::Burst { burst: 1 }]),
        ],
        &RenderConfig::new(DOMAIN),
    )
    .expect("render");
    std::fs::write(cds.join(CLUSTERS_FILE), &rendered.files[CLUSTERS_FILE]).expect("clusters");
    let jwt = gateway_render::jwt::jwt_path(&rds);
    std::fs::create_dir_all(jwt.parent().expect("jwt dir")).expect("jwt dir");
    std::fs::write(jwt, rendered.jwt_file()).expect("jwt");
    std::fs::write(rds.join(ROUTES_FILE), &rendered.files[ROUTES_FILE]).expect("routes");
    let ratelimit = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let envoy = EnvoyProcess::start(
        |ports| {
            gateway_bootstrap(&BootstrapParams::local(
                (&cds, &rds),
                (ports.listener, ports.admin.into()),
                ratelimit,
                1,
            ))
            .expect("bootstrap")
        },
        &[],
    );
    let addr = envoy.listener_addr();
    let billing_host = format!("billing.{DOMAIN}");
    let search_host = format!("search.{DOMAIN}");
    assert_eq!(
        http::wait_for_status(
            addr,
            "GET",
            &search_host,
            "/ok",
            200,
            Duration::from_secs(10)
        ),
        Some(200)
    );

    // Traffic before the window does not count.
    let admin = envoy.admin_url();
    let top = Command::new(env!("CARGO_BIN_EXE_gatewayctl"))
        .args(["top", "--admin", &admin, "--window", "3", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gatewayctl top starts");
    std::thread::sleep(Duration::from_millis(800));
    for i in 0..20 {
        let path = if i % 4 == 0 { "/fail/x" } else { "/ok" };
        http::status(addr, "GET", &billing_host, path).expect("billing answers");
    }
    for _ in 0..4 {
        http::status(addr, "GET", &search_host, "/ok").expect("search answers");
    }
    let quota_host = format!("quota.{DOMAIN}");
    let mut refused = 0;
    for _ in 0..6 {
        if http::status(addr, "GET", &quota_host, "/ok").expect("quota answers") == 429 {
            refused += 1;
        }
    }
    assert!(refused >= 3, "the burst bucket refuses most: {refused}");
    let out = top.wait_with_output().expect("gatewayctl top ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let rows: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(rows.len(), 3, "team services only (not the rate-limit cluster): {stdout}");
    assert_eq!(rows[0]["team"], "billing", "busiest first: {stdout}");
    assert_eq!(rows[0]["requests"], 20, "{stdout}");
    assert_eq!(rows[0]["responses_5xx"], 5, "{stdout}");
    assert_eq!(rows[0]["share_5xx"], 0.25, "{stdout}");
    assert!(
        rows[0]["rps"].as_f64().is_some_and(|r| r > 5.0 && r < 7.0),
        "{stdout}"
    );
    assert_eq!(rows[1]["team"], "search", "{stdout}");
    assert_eq!(rows[1]["requests"], 4, "{stdout}");
    assert_eq!(rows[1]["responses_5xx"], 0, "{stdout}");
    assert_eq!(rows[1]["limited_429"], 0, "{stdout}");
    assert_eq!(rows[2]["team"], "quota", "{stdout}");
    assert_eq!(rows[2]["limited_429"], refused, "every gateway 429 counted: {stdout}");
    assert_eq!(rows[0]["responses_4xx"], 0, "{stdout}");

    // An idle window says so; a bad admin address is a usage error; no Envoy is a failure.
    let idle = Command::new(env!("CARGO_BIN_EXE_gatewayctl"))
        .args(["top", "--admin", &admin, "--window", "1"])
        .output()
        .expect("gatewayctl top");
    let idle_out = String::from_utf8_lossy(&idle.stdout);
    assert!(idle_out.contains("no requests"), "{idle_out}");
    let bad = Command::new(env!("CARGO_BIN_EXE_gatewayctl"))
        .args(["top", "--admin", "https://example.com"])
        .output()
        .expect("gatewayctl top");
    assert_eq!(bad.status.code(), Some(2));
    let down = Command::new(env!("CARGO_BIN_EXE_gatewayctl"))
        .args([
            "top",
            "--admin",
            &format!("127.0.0.1:{}", free_port()),
            "--window",
            "1",
        ])
        .output()
        .expect("gatewayctl top");
    assert_eq!(down.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&down.stderr).contains("cannot connect"));
}
