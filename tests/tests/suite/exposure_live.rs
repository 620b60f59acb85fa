//! What a route may reach and who the client is, against the real Envoy in the production shape:
//! admin on a Unix socket, the gateway's own listener and filters, rendered routes in watched
//! directories. Loopback backends are allowed here (as in every local run) so that a hostile
//! team can aim at the proxy's own ports; production refuses them at registration and reconcile.

use gateway_bootstrap::{gateway_bootstrap, proxy_args, BootstrapParams};
use gateway_envoy_admin::{AdminClient, AdminEndpoint};
use gateway_render::check::{check_entry_bytes, Policy};
use gateway_render::contract::{CLUSTERS_FILE, KILL_SWITCH_RUNTIME_KEY, ROUTES_FILE};
use gateway_render::{render, render_kill_switch_for, Entry, RenderConfig};
use gateway_testkit::backend::Backend;
use gateway_testkit::envoy::{EnvoyPorts, EnvoyProcess};
use gateway_testkit::http;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

const DOMAIN: &str = "api.example.com";
const BILLING: &str = "invoices.api.example.com";
const APPLY: Duration = Duration::from_secs(15);

fn entry(team: &str, host: &str, backend: &str) -> Entry {
    let doc = serde_json::json!({
        "team": team, "service": "api", "host": host, "backend": backend,
        "routes": [{ "path": "/" }]
    });
    check_entry_bytes(doc.to_string().as_bytes(), &Policy::new(DOMAIN, true))
        .unwrap_or_else(|r| panic!("{team}: {r}"))
}

struct Stack {
    envoy: EnvoyProcess,
    dir: tempfile::TempDir,
    socket: PathBuf,
}

impl Stack {
    fn rds(&self) -> PathBuf {
        self.dir.path().join("rds")
    }

    fn admin(&self) -> AdminClient {
        AdminClient::new(AdminEndpoint::Unix(self.socket.clone()))
    }

    fn listener(&self) -> SocketAddr {
        self.envoy.listener_addr()
    }

    fn get(&self, host: &str, path: &str) -> http::Response {
        http::request(self.listener(), "GET", host, path)
            .unwrap_or_else(|| panic!("no answer from Envoy for {host}{path}"))
    }
}

/// The watched directories (CDS, RDS) under `dir`, created empty.
fn watched_dirs(dir: &Path) -> (PathBuf, PathBuf) {
    let (cds, rds) = (dir.join("cds"), dir.join("rds"));
    std::fs::create_dir_all(&cds).expect("cds dir");
    std::fs::create_dir_all(&rds).expect("rds dir");
    (cds, rds)
}

/// `entries` rendered into the watched directories `cds` and `rds`, and the production
/// bootstrap parameters on them with the listener at `listen` and the rate-limit service at
/// `ratelimit` (its admin address left for the caller to set).
fn production_params_serving(
    entries: &[Entry],
    (cds, rds): (&Path, &Path),
    listen: SocketAddr,
    ratelimit: SocketAddr,
) -> BootstrapParams {
    let rendered = render(entries, &RenderConfig::new(DOMAIN)).expect("the registry renders");
    std::fs::write(cds.join(CLUSTERS_FILE), &rendered.files[CLUSTERS_FILE]).expect("cds");
    let jwt = gateway_render::jwt::jwt_path(&rds);
    std::fs::create_dir_all(jwt.parent().expect("jwt dir")).expect("jwt dir");
    std::fs::write(jwt, rendered.jwt_file()).expect("jwt");
    std::fs::write(rds.join(ROUTES_FILE), &rendered.files[ROUTES_FILE]).expect("rds");
    let mut params = BootstrapParams::production();
    params.clusters_dir = cds.to_path_buf();
    params.routes_dir = rds.to_path_buf();
    params.listen = listen;
    params.ratelimit = ratelimit;
    params
}

/// The production bootstrap with only the places a test needs changed: the admin socket in a
/// temporary directory, free listener port, test watched directories. `entries(listener)` gives
/// the registry, rendered before Envoy starts (it exits when a watched file is missing).
fn start(hops: u32, entries: impl Fn(SocketAddr) -> Vec<Entry>) -> Stack {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cds, rds) = watched_dirs(dir.path());
    let socket = dir.path().join("admin.sock");
    let ratelimit = SocketAddr::from((Ipv4Addr::LOCALHOST, gateway_testkit::free_port()));
    let envoy = EnvoyProcess::start_with_admin_socket(
        &socket,
        |ports: EnvoyPorts| {
            let mut params = production_params_serving(
                &entries(ports.listener),
                (&cds, &rds),
                ports.listener,
                ratelimit,
            );
            params.admin = gateway_bootstrap::AdminAddress::Unix(socket.clone());
            params.xff_num_trusted_hops = hops;
            gateway_bootstrap(&params).expect("bootstrap")
        },
        |file: &Path| proxy_args(file, true),
    );
    Stack { envoy, dir, socket }
}

#[test]
fn hostile_routes_to_the_proxys_loopback_reach_no_admin_and_envoy_listens_only_for_traffic() {
    let billing = Backend::start("billing");
    let stack = start(1, |listener| {
        vec![
            entry("billing", "invoices", &billing.url()),
            // Aimed at the proxy itself: its own listener, and the classic TCP admin port.
            entry(
                "mallory",
                "self",
                &format!("http://127.0.0.1:{}", listener.port()),
            ),
            entry("eve", "admin", "http://127.0.0.1:9901"),
        ]
    });
    let listener = stack.listener();

    // TCP is for traffic only: the admin is a socket file, nothing else is bound.
    assert_eq!(stack.envoy.listening_tcp_ports(), vec![listener.port()]);
    assert!(stack.socket.exists(), "the admin socket is there");

    for host in ["self.api.example.com", "admin.api.example.com"] {
        for (method, path) in [
            (
                "POST",
                format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}=100"),
            ),
            ("POST", "/quitquitquit".to_string()),
            ("POST", "/drain_listeners".to_string()),
            ("GET", "/config_dump".to_string()),
            ("POST", "/healthcheck/fail".to_string()),
        ] {
            let r = http::request(listener, method, host, &path)
                .unwrap_or_else(|| panic!("Envoy stopped answering after {method} {host}{path}"));
            assert!(
                !r.body.contains("configs") && !r.body.contains("OK\n") && r.status != 200,
                "{method} {host}{path} reached something that answered: {} {}",
                r.status,
                r.body
            );
        }
    }
    // Give a stray quitquitquit time to act before judging.
    std::thread::sleep(Duration::from_millis(500));
    let mut envoy = stack.envoy;
    assert!(
        envoy.is_running(),
        "Envoy must survive: {}",
        envoy.log_text()
    );
    let r = http::request(listener, "GET", BILLING, "/invoices/7").expect("billing answers");
    assert_eq!(r.status, 200, "the other team is still served: {r:?}");
    assert!(r.body.contains("\"backend\":\"billing\""), "{r:?}");
    // The kill-switch key was never written: the admin (through its socket) says so.
    let (code, runtime) = envoy.admin_get("/runtime").expect("admin socket answers");
    assert_eq!(code, 200);
    assert!(!runtime.contains("\"final_value\": \"100\""), "{runtime}");
    assert_eq!(envoy.admin_get("/ready").map(|r| r.0), Some(200));
}

#[test]
fn healthz_on_the_catch_all_answers_200_under_both_kill_switch_levels() {
    let billing = Backend::start("billing");
    let stack = start(1, |_| vec![entry("billing", "invoices", &billing.url())]);
    let lb_probe = |s: &Stack| s.get("10.0.1.23:8080", "/healthz").status;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let level1 = |value: u32| {
        let r = rt
            .block_on(stack.admin().post(&format!(
                "/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}={value}"
            )))
            .expect("admin over the Unix socket");
        assert_eq!(r.status, 200);
    };
    assert_eq!(lb_probe(&stack), 200);
    assert!(stack.get(BILLING, "/healthz").body.contains("billing"));

    // Level 1: every request fails fast, except the load balancer's probe.
    level1(100);
    let wait = http::wait_for_status(stack.listener(), "GET", BILLING, "/x", 503, APPLY);
    assert_eq!(wait, Some(503));
    assert_eq!(lb_probe(&stack), 200);
    assert_eq!(stack.get("unknown.example", "/healthz").status, 200);
    assert_eq!(stack.get("unknown.example", "/").status, 503);
    // A team's own /healthz is a team route: killed like the rest.
    assert_eq!(stack.get(BILLING, "/healthz").status, 503);
    // Only GET is the probe.
    let post =
        http::request(stack.listener(), "POST", "10.0.1.23:8080", "/healthz").expect("answer");
    assert_eq!(post.status, 503);
    level1(0);
    assert_eq!(
        http::wait_for_status(stack.listener(), "GET", BILLING, "/x", 200, APPLY),
        Some(200)
    );

    // Level 2: the kill-switch bundle's routes, delivered the way the sidecar does (rename in),
    // keeping the live entry's host and route so the access log still names its team.
    let kill = render_kill_switch_for(
        &RenderConfig::new(DOMAIN),
        &[entry("billing", "invoices", &billing.url())],
    );
    let tmp = stack.rds().join(".routes.json.tmp");
    std::fs::write(&tmp, &kill.files[ROUTES_FILE]).expect("write");
    std::fs::rename(&tmp, stack.rds().join(ROUTES_FILE)).expect("rename");
    assert_eq!(
        http::wait_for_status(stack.listener(), "GET", BILLING, "/x", 503, APPLY),
        Some(503)
    );
    let killed = http::request_with_headers(
        stack.listener(),
        "GET",
        BILLING,
        "/x/level-2",
        &[("x-request-id", "killed-level-2")],
    )
    .expect("answer");
    assert!(killed.body.contains("kill switch"), "{killed:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let logged = loop {
        let text = stack.envoy.access_log_text();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|l| l["request_id"] == "killed-level-2");
        match found {
            Some(line) => break line,
            None if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100))
            }
            None => panic!("no access log line under the kill switch: {text}"),
        }
    };
    assert_eq!(
        (&logged["team"], &logged["service"], &logged["status"]),
        (&serde_json::json!("billing"), &serde_json::json!("api"), &serde_json::json!(503)),
        "{logged}"
    );
    assert_eq!(lb_probe(&stack), 200);
    // Both levels at once.
    level1(100);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(lb_probe(&stack), 200);
    assert_eq!(stack.get(BILLING, "/x").status, 503);
}

#[test]
fn with_one_trusted_hop_the_client_is_the_address_the_load_balancer_saw() {
    assert_eq!(BootstrapParams::production().xff_num_trusted_hops, 1);
    let billing = Backend::start("billing");
    for (hops, client) in [(1, "7.7.7.7"), (2, "6.6.6.6")] {
        let stack = start(hops, |_| vec![entry("billing", "invoices", &billing.url())]);
        let with_xff = |xff: &str| {
            http::request_with_headers(
                stack.listener(),
                "GET",
                BILLING,
                "/invoices",
                &[("x-forwarded-for", xff)],
            )
            .expect("answer")
        };
        // The load balancer appends what it saw (7.7.7.7) to what the client wrote (6.6.6.6).
        let r = with_xff("6.6.6.6, 7.7.7.7");
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(
            r.header("echo-x-envoy-external-address"),
            Some(client),
            "{hops} trusted hop(s): {r:?}"
        );
        // A client that writes more addresses does not move its own.
        let r = with_xff("1.1.1.1, 2.2.2.2, 6.6.6.6, 7.7.7.7");
        assert_eq!(r.header("echo-x-envoy-external-address"), Some(client));
    }
}

/// The control: the same hostile route against an admin on loopback TCP (the old shape) reaches
/// it and throws every team's kill switch. This is why production's admin is a socket file.
#[test]
fn control_a_tcp_admin_is_one_route_away() {
    let billing = Backend::start("billing");
    let dir = tempfile::tempdir().expect("tempdir");
    let (cds, rds) = watched_dirs(dir.path());
    let ratelimit = SocketAddr::from((Ipv4Addr::LOCALHOST, gateway_testkit::free_port()));
    let envoy = EnvoyProcess::start_with_args(
        |ports: EnvoyPorts| {
            let entries = vec![
                entry("billing", "invoices", &billing.url()),
                entry("eve", "admin", &format!("http://{}", ports.admin)),
            ];
            let mut params =
                production_params_serving(&entries, (&cds, &rds), ports.listener, ratelimit);
            params.admin = ports.admin.into();
            gateway_bootstrap(&params).expect("bootstrap")
        },
        |file: &Path| proxy_args(file, true),
    );
    let listener = envoy.listener_addr();
    assert_eq!(http::status(listener, "GET", BILLING, "/x"), Some(200));
    let r = http::request(
        listener,
        "POST",
        "admin.api.example.com",
        &format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}=100"),
    )
    .expect("answer");
    assert_eq!(r.status, 200, "the route reached the TCP admin: {r:?}");
    assert_eq!(
        http::wait_for_status(listener, "GET", BILLING, "/x", 503, APPLY),
        Some(503),
        "one request through a team's route killed every team"
    );
    let mut ports = envoy.listening_tcp_ports();
    ports.sort_unstable();
    assert!(ports.contains(&envoy.ports().admin.port()));
}

/// A route's `clients` judges the address past the trusted hops, as every per-client rule does:
/// behind one trusted hop (the load balancer, which appends the peer it saw), the client is the
/// last `x-forwarded-for` entry, and anything a client wrote before it counts for nothing.
#[test]
fn client_lists_judge_the_address_past_the_trusted_hops() {
    let billing = Backend::start("billing");
    let stack = start(1, |_| {
        let doc = serde_json::json!({
            "team": "billing", "service": "api", "host": "invoices", "backend": billing.url(),
            "routes": [{ "path": "/internal", "clients": { "allow": ["10.0.0.0/8"], "deny": ["10.9.0.0/16"] } },
                       { "path": "/" }]
        });
        vec![check_entry_bytes(doc.to_string().as_bytes(), &Policy::new(DOMAIN, true))
            .unwrap_or_else(|r| panic!("{r}"))]
    });
    let status = |xff: &str| {
        http::request_with_headers(stack.listener(), "GET", BILLING, "/internal/x", &[("x-forwarded-for", xff)])
            .unwrap_or_else(|| panic!("no answer for {xff}"))
            .status
    };
    assert_eq!(status("10.1.2.3"), 200, "the load balancer saw 10.1.2.3");
    assert_eq!(status("10.9.0.1"), 403, "denied inside the allowed block");
    assert_eq!(status("192.0.2.1"), 403, "outside every allowed block");
    assert_eq!(status("10.1.2.3, 192.0.2.1"), 403, "a forged entry before the hop's own is not the client");
    assert_eq!(stack.get(BILLING, "/other").status, 200, "the entry's other routes admit anyone");
}
