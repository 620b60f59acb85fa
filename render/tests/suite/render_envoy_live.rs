//! Real traffic through real Envoy running a render: which backend a request reaches, the JSON
//! 404s, segment-aware prefixes, method matching, the burst bucket, and the kill switch's 503.
//! (Envoy decides all of these; the other tests only look at the config.)

use gateway_render::{render, render_kill_switch, render_kill_switch_for, Entry, Limit, Rendered, Route};
use gateway_testkit::envoy::EnvoyProcess;
use gateway_testkit::free_port;
use gateway_testkit::http::{self, Response};
use gateway_testkit::stub::{Answer, StubServer};
use crate::support::config;
use crate::support::envoy::gateway_bootstrap;
use serde_json::{json, Value};

/// A loopback backend (the test kit's stub server) answering every request with
/// `name METHOD PATH host=HOST` (the test kit's echo backends answer JSON without the Host
/// header, which these tests check Envoy rewrites).
struct Backend {
    port: u16,
    _server: StubServer,
}

impl Backend {
    fn start(name: &'static str) -> Backend {
        let server = StubServer::answering(move |r| {
            let host = r.header("host").unwrap_or("");
            Answer::status(200)
                .header("connection", "close")
                .body(&format!("{name} {} {} host={host}", r.method, r.target))
        });
        Backend {
            port: server.addr().port(),
            _server: server,
        }
    }
}

/// One request to Envoy's listener over a fresh connection.
fn request(envoy: &EnvoyProcess, method: &str, host: &str, path: &str) -> Response {
    http::request(envoy.listener_addr(), method, host, path)
        .unwrap_or_else(|| panic!("no answer from Envoy to {method} {host}{path}"))
}

/// Envoy running `rendered`, killed on drop.
fn run_envoy(rendered: &Rendered) -> EnvoyProcess {
    EnvoyProcess::start(
        |ports| {
            let mut bootstrap =
                gateway_bootstrap(rendered, ports.listener.port(), ports.admin.port());
            // Point the global limiter at a port nothing listens on: with failure_mode_deny false
            // every request passes, so only the local burst bucket limits here.
            for cluster in bootstrap["static_resources"]["clusters"]
                .as_array_mut()
                .expect("clusters")
            {
                if cluster["name"] == gateway_render::contract::RATE_LIMIT_CLUSTER {
                    cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
                        ["address"]["socket_address"]["port_value"] = json!(free_port());
                }
            }
            bootstrap
        },
        &["--concurrency", "1", "--log-level", "warn"],
    )
}

fn route(path: &str, methods: Option<&[&str]>, limits: Vec<Limit>) -> Route {
    Route::new(path, methods, limits)
}

fn entry(service: &str, backend: &Backend, routes: Vec<Route>) -> Entry {
    Entry {
        rollout: None,
        serving: None,
        team: "billing".into(),
        service: service.into(),
        host: "invoices".into(),
        backend: format!("http://127.0.0.1:{}", backend.port),
        protocol: Default::default(),
        canary: None,
        health_check: None,
        preserve_host: false,
        jwt: Default::default(),
        backends: vec![],
        routes,
    }
}

#[test]
fn envoy_routes_real_requests_as_rendered() {
    let invoices = Backend::start("invoices-api");
    let payments = Backend::start("payments-api");
    let entries = vec![
        entry(
            "invoices-api",
            &invoices,
            vec![
                route("/invoices", Some(&["GET"]), vec![]),
                route("/invoices/export", None, vec![Limit::Burst { burst: 2 }]),
            ],
        ),
        entry(
            "payments-api",
            &payments,
            vec![route("/payments", Some(&["POST", "PUT"]), vec![])],
        ),
    ];
    let rendered = render(&entries, &config()).expect("renders");
    let envoy = run_envoy(&rendered);
    let host = "invoices.api.example.com";

    let r = request(&envoy, "GET", host, "/invoices/7");
    assert_eq!(
        (r.status, r.body.as_str()),
        (
            200,
            format!(
                "invoices-api GET /invoices/7 host=127.0.0.1:{}",
                invoices.port
            )
            .as_str()
        )
    );
    assert_eq!(
        request(&envoy, "GET", host, "/invoices?page=2").status,
        200,
        "a query string ends the prefix"
    );
    assert_eq!(
        request(&envoy, "GET", &format!("{host}:8443"), "/invoices").status,
        200,
        "a port in Host matches"
    );

    let r = request(&envoy, "GET", host, "/invoicesX");
    assert_eq!(r.status, 404, "prefixes match whole segments: {}", r.body);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).expect("JSON 404")["error"],
        "no route for this path"
    );
    assert_eq!(
        request(&envoy, "POST", host, "/invoices").status,
        404,
        "GET-only route"
    );

    let r = request(&envoy, "PUT", host, "/payments/9");
    assert_eq!(
        (r.status, r.body.starts_with("payments-api PUT /payments/9")),
        (200, true),
        "{}",
        r.body
    );
    assert_eq!(request(&envoy, "GET", host, "/payments").status, 404);

    let r = request(&envoy, "GET", "unknown.example.org", "/invoices");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).expect("JSON 404")["error"],
        "no route for this host"
    );

    // Burst 2: two tokens, two more each second; eight quick requests cannot all pass.
    let statuses: Vec<u16> = (0..8)
        .map(|_| request(&envoy, "GET", host, "/invoices/export/all").status)
        .collect();
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(
        statuses.contains(&429),
        "burst bucket never limited: {statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 429),
        "{statuses:?}"
    );
}

#[test]
fn envoy_answers_503_json_to_everything_under_the_kill_switch() {
    let envoy = run_envoy(&render_kill_switch(&config()));
    stopped_everywhere(&envoy);
    // Keeping the live entries' hosts and matches stops the same requests.
    let envoy = run_envoy(&render_kill_switch_for(&config(), &crate::support::example_entries()));
    stopped_everywhere(&envoy);
}

fn stopped_everywhere(envoy: &gateway_testkit::envoy::EnvoyProcess) {
    for (host, path) in [
        ("invoices.api.example.com", "/invoices"),
        ("anything.example", "/"),
        ("x", "/a/b?c"),
    ] {
        let r = request(envoy, "GET", host, path);
        assert_eq!(r.status, 503, "{host}{path}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(
            serde_json::from_str::<Value>(&r.body).expect("JSON body")["error"],
            "gateway kill switch engaged"
        );
    }
}
