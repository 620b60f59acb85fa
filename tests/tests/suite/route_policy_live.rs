//! Route policy end to end through the real Envoy in the production shape (the production
//! bootstrap with its filter chain, admin on a Unix socket, rendered routes in watched
//! directories): timeouts, retries, the prefix rewrite, header changes both ways, CORS and
//! websockets (docs/design.md#route-policy). The entry goes through the registration checks
//! first, as the register function would take it.
//!
//! One Envoy and one backend serve every case (each case has its own paths, so none sees
//! another's traffic); each case runs even when an earlier one fails, and the test fails naming
//! every case that did.

use gateway_bootstrap::{gateway_bootstrap, proxy_args, AdminAddress, BootstrapParams};
use gateway_render::check::{check_entry_value, Policy};
use gateway_render::contract::{CLUSTERS_FILE, ROUTES_FILE};
use gateway_render::{render, RenderConfig};
use gateway_testkit::envoy::{EnvoyPorts, EnvoyProcess};
use gateway_testkit::http::{self, Response};
use gateway_testkit::policy_backend::{PolicyBackend, SLOW_ANSWER};
use tokio_tungstenite::tungstenite::{
    self, client::IntoClientRequest, HandshakeError, Message, WebSocket,
};
use serde_json::{json, Value};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

const DOMAIN: &str = "api.example.com";
const HOST: &str = "policy.api.example.com";
/// GATEWAY_MAX_WEBSOCKET_DURATION for this stack: short, so the case can watch Envoy end one.
const WEBSOCKET_SECONDS: u64 = 2;

fn entry_doc(backend: &str, shadow: &str) -> Value {
    json!({
        "team": "billing", "service": "policy", "host": "policy", "backend": backend,
        "routes": [
            { "path": "/slow-short", "methods": ["GET"], "timeout": "500ms" },
            { "path": "/slow-default", "methods": ["GET"] },
            { "path": "/flaky-retried", "methods": ["GET"],
              "retries": { "attempts": 2, "on": ["5xx"], "per_try_timeout": "2s" } },
            { "path": "/flaky-bare", "methods": ["GET"] },
            { "path": "/invoices", "methods": ["GET"], "rewrite": "/v2/invoices" },
            { "path": "/headers", "methods": ["GET"],
              "request_headers": { "add": { "x-team": "billing", "x-percent": "100% %UPSTREAM_HOST%" },
                                   "remove": ["x-debug"] },
              "response_headers": { "add": { "cache-control": "no-store" },
                                    "append": { "x-backend-kept": "gateway" },
                                    "remove": ["server", "x-backend-secret"] } },
            { "path": "/cors", "methods": ["GET"],
              "cors": { "origins": ["https://app.example.com", "https://*.corp.example.com"],
                        "methods": ["GET"], "headers": ["x-api-key"], "max_age": "10m",
                        "expose_headers": ["x-request-id"] } },
            { "path": "/ws", "methods": ["GET"], "websocket": true },
            { "path": "/no-ws", "methods": ["GET"] },
            { "path": "/pub", "methods": ["GET"], "rewrite": "/internal/pub" },
            { "path": "/cookies", "methods": ["GET"] },
            { "path": "/burst", "methods": ["GET"], "limits": [{ "burst": 1 }] },
            { "path": "/hosted", "methods": ["GET"], "host_rewrite": "api.internal.example" },
            { "path": "/moved", "methods": ["GET"], "redirect": { "prefix": "/invoices", "status": 301 } },
            { "path": "/elsewhere", "redirect": { "scheme": "https", "host": "new.example.com", "port": 8443, "path": "/start" } },
            { "path": "/strip", "methods": ["GET"], "rewrite": "/" },
            { "path": "/full", "methods": ["GET"], "rewrite": { "path": "/replaced" } },
            { "path": "/to-root", "methods": ["GET"], "redirect": { "prefix": "/" } },
            { "exact": "/match", "methods": ["GET"], "request_headers": { "set": { "x-route": "exact" } } },
            { "path": "/match", "methods": ["GET"], "request_headers": { "set": { "x-route": "prefix" } } },
            { "path": "/match", "methods": ["GET"], "headers": [{ "name": "x-version", "value": "2" }],
              "request_headers": { "set": { "x-route": "header" } } },
            { "path": "/match", "methods": ["GET"],
              "headers": [{ "name": "x-version", "value": "2" }, { "name": "x-beta", "present": true }],
              "request_headers": { "set": { "x-route": "two-headers" } } },
            { "path": "/match", "methods": ["GET"], "query": [{ "name": "v", "value": "2" }],
              "request_headers": { "set": { "x-route": "query" } } },
            { "path": "/absent", "methods": ["GET"], "headers": [{ "name": "x-debug", "present": false }],
              "request_headers": { "set": { "x-route": "clean" } } },
            { "path": "/absent", "methods": ["GET"], "request_headers": { "set": { "x-route": "any" } } },
            { "path": "/nest", "methods": ["GET"], "request_headers": { "set": { "x-route": "web" } } },
            { "path": "/mirrored", "methods": ["GET"], "mirror": { "backend": shadow, "percent": 100 } },
            { "path": "/unmirrored", "methods": ["GET"], "mirror": { "backend": shadow, "percent": 0 } },
            { "path": "/lan-only", "methods": ["GET"], "clients": { "allow": ["10.0.0.0/8"] } },
            { "path": "/local-ok", "methods": ["GET"], "clients": { "allow": ["127.0.0.0/8"], "deny": ["127.0.0.2/32"] } },
            { "path": "/local-denied", "methods": ["GET"], "clients": { "allow": ["127.0.0.0/8"], "deny": ["127.0.0.1/32"] } }
        ]
    })
}

/// A second service of the same team on the same host, nested inside the first's `/nest`; its
/// backend sees the client's Host.
fn nested_doc(backend: &str) -> Value {
    json!({
        "team": "billing", "service": "policy-api", "host": "policy", "backend": backend,
        "preserve_host": true,
        "routes": [
            { "path": "/nest/api", "methods": ["GET"], "request_headers": { "set": { "x-route": "api" } } },
            { "path": "/nest", "methods": ["GET"], "headers": [{ "name": "x-api", "value": "yes" }],
              "request_headers": { "set": { "x-route": "api-by-header" } } }
        ]
    })
}

/// A third service splitting its traffic 3:1 between the two backends.
fn split_doc(backend: &str, shadow: &str) -> Value {
    json!({
        "team": "billing", "service": "policy-split", "host": "policy",
        "backends": [{ "url": backend, "weight": 75 }, { "url": shadow, "weight": 25 }],
        "routes": [{ "path": "/split", "methods": ["GET"] }]
    })
}

struct Stack {
    envoy: EnvoyProcess,
    backend: PolicyBackend,
    /// The mirror backend of `/mirrored` and `/unmirrored`.
    shadow: PolicyBackend,
    _dir: tempfile::TempDir,
}

impl Stack {
    fn start() -> Stack {
        let backend = PolicyBackend::start();
        let shadow = PolicyBackend::start();
        let checked = |doc: Value| {
            check_entry_value(&doc, &Policy::new(DOMAIN, true))
                .unwrap_or_else(|r| panic!("the test entry is refused:\n{r}"))
        };
        // The nested service comes first: the longer prefix wins whatever the order.
        let entries = [
            checked(nested_doc(&backend.url())),
            checked(entry_doc(&backend.url(), &shadow.url())),
            checked(split_doc(&backend.url(), &shadow.url())),
        ];
        let mut cfg = RenderConfig::new(DOMAIN);
        cfg.max_websocket_seconds = WEBSOCKET_SECONDS;
        let rendered = render(&entries, &cfg).expect("renders");
        let dir = tempfile::tempdir().expect("tempdir");
        let (cds, rds) = (dir.path().join("cds"), dir.path().join("rds"));
        std::fs::create_dir_all(&cds).expect("cds dir");
        std::fs::create_dir_all(&rds).expect("rds dir");
        std::fs::write(cds.join(CLUSTERS_FILE), &rendered.files[CLUSTERS_FILE]).expect("cds");
        let jwt = gateway_render::jwt::jwt_path(&rds);
        std::fs::create_dir_all(jwt.parent().expect("jwt dir")).expect("jwt dir");
        std::fs::write(jwt, rendered.jwt_file()).expect("jwt");
        std::fs::write(rds.join(ROUTES_FILE), &rendered.files[ROUTES_FILE]).expect("rds");
        let socket = dir.path().join("admin.sock");
        // Nothing listens here: the global limiter fails open, as production's does when down.
        let ratelimit = SocketAddr::from((Ipv4Addr::LOCALHOST, gateway_testkit::free_port()));
        let envoy = EnvoyProcess::start_with_admin_socket(
            &socket,
            |ports: EnvoyPorts| {
                let mut params = BootstrapParams::production();
                params.clusters_dir = cds.clone();
                params.routes_dir = rds.clone();
                params.listen = ports.listener;
                params.admin = AdminAddress::Unix(socket.clone());
                params.ratelimit = ratelimit;
                params.xff_num_trusted_hops = 0;
                gateway_bootstrap(&params).expect("bootstrap")
            },
            |file: &Path| proxy_args(file, true),
        );
        Stack {
            envoy,
            backend,
            shadow,
            _dir: dir,
        }
    }

    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Response {
        http::request_with_headers(self.envoy.listener_addr(), method, HOST, path, headers)
            .unwrap_or_else(|| panic!("no answer from Envoy for {method} {path}"))
    }

    fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[])
    }
}

fn body(r: &Response) -> Value {
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.body))
}

/// A named case run against the shared stack.
type Case = (&'static str, fn(&Stack));

#[test]
fn route_policy_through_real_envoy() {
    let stack = Stack::start();
    let cases: [Case; 20] = [
        (
            "a slow backend past a short timeout answers 504 in time",
            timeout_504,
        ),
        (
            "a backend failing every other request succeeds through retries",
            retries_hide_failures,
        ),
        (
            "a POST route asking to retry on 5xx is refused at registration",
            post_retries_refused,
        ),
        ("the rewrite reaches the backend with the new path", rewrite),
        ("headers are added and removed both ways", headers_both_ways),
        (
            "CORS preflight from an allowed origin is answered, from another not",
            cors,
        ),
        (
            "websocket upgrade passes where allowed and nowhere else",
            websocket,
        ),
        (
            "a client's forwarding headers never reach the backend",
            client_forwarding_headers,
        ),
        (
            "a dot-segment path parameter never leaves the prefix at the backend",
            dot_segment_parameters,
        ),
        (
            "a backend's cookies stay on the host that answered",
            cookies_stay_on_their_host,
        ),
        (
            "the burst bucket's 429 is JSON like the gateway's other answers",
            burst_429_is_json,
        ),
        ("a redirect route answers with the new URL", redirects),
        ("a host rewrite is the Host the backend sees", host_rewrite),
        ("a prefix strips to the root and a whole path is replaced", strip_and_full_rewrites),
        (
            "the most specific of exact, prefix, header and query matches wins",
            match_precedence,
        ),
        (
            "a team's nested services each take their longest prefix",
            nested_services,
        ),
        ("preserve_host shows the backend the client's Host", preserve_host),
        (
            "a mirror gets its share of copies and the client only the backend's answer",
            mirror,
        ),
        ("weighted backends share the traffic by weight", weighted_backends),
        (
            "client allow and deny lists answer 403 by the peer's address, never a forged header",
            client_lists,
        ),
    ];
    let failed: Vec<&str> = cases
        .iter()
        .filter_map(|(name, case)| {
            eprintln!("case: {name}");
            catch_unwind(AssertUnwindSafe(|| case(&stack)))
                .err()
                .map(|_| *name)
        })
        .collect();
    assert!(
        failed.is_empty(),
        "failed cases (panics above):\n  {}",
        failed.join("\n  ")
    );
}

fn timeout_504(stack: &Stack) {
    let started = Instant::now();
    let r = stack.get("/slow-short/1");
    let waited = started.elapsed();
    assert_eq!(r.status, 504, "{}", r.body);
    // The backend answers after 3 s; a 504 before that is the route's 500 ms timeout firing, not
    // the backend's answer or the default 15 s.
    assert!(waited < SLOW_ANSWER, "504 after {waited:?}");
    // The same backend without a route timeout does answer (the default is 15 s): the 504 above
    // came from the route's own timeout.
    let r = stack.get("/slow-default/1");
    assert_eq!(r.status, 200, "{}", r.body);
}

fn retries_hide_failures(stack: &Stack) {
    let retried: Vec<u16> = (0..10)
        .map(|i| stack.get(&format!("/flaky-retried/{i}")).status)
        .collect();
    assert_eq!(
        retried,
        vec![200; 10],
        "every request succeeds through one retry"
    );
    let tries = stack.backend.seen_under("/flaky-retried").len();
    assert_eq!(tries, 20, "each request took a failed try and a retry");
    let bare: Vec<u16> = (0..10)
        .map(|i| stack.get(&format!("/flaky-bare/{i}")).status)
        .collect();
    assert_eq!(
        bare.iter().filter(|s| **s == 503).count(),
        5,
        "without retries every other request fails: {bare:?}"
    );
}

fn post_retries_refused(stack: &Stack) {
    let mut doc = entry_doc(&stack.backend.url(), &stack.shadow.url());
    doc["routes"] = json!([{ "path": "/orders", "methods": ["POST"],
                             "retries": { "attempts": 2, "on": ["connect-failure", "5xx"] } }]);
    let r = check_entry_value(&doc, &Policy::new(DOMAIN, true)).expect_err("refused");
    assert_eq!(
        r.to_string(),
        "routes[0].retries.on[1]: \"5xx\" retries a POST route; a route accepting POST may retry only on connect-failure or refused-stream (the backend never saw the request)"
    );
}

fn rewrite(stack: &Stack) {
    for (asked, arrives) in [
        ("/invoices/7", "/v2/invoices/7"),
        ("/invoices", "/v2/invoices"),
        ("/invoices/7?expand=lines", "/v2/invoices/7?expand=lines"),
    ] {
        let r = stack.get(asked);
        assert_eq!(r.status, 200, "{asked}: {}", r.body);
        assert_eq!(body(&r)["path"], arrives, "{asked}");
    }
    let r = stack.get("/invoicesX/7");
    assert_eq!(
        r.status, 404,
        "the rewrite applies to whole segments only: {}",
        r.body
    );
    // The access log keeps the client's path, and what the backend got beside it; a client's
    // own x-envoy-original-path changes neither.
    let logged = |id: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let found = stack
                .envoy
                .access_log_text()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|l| l["request_id"] == id);
            match found {
                Some(line) => return line,
                None if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                None => panic!("no access log line for {id}"),
            }
        }
    };
    let r = stack.request("GET", "/invoices/8?x=1", &[("x-request-id", "rewrite-logged")]);
    assert_eq!(r.status, 200, "{}", r.body);
    let line = logged("rewrite-logged");
    assert_eq!((&line["path"], &line["upstream_path"]), (&json!("/invoices/8"), &json!("/v2/invoices/8")), "{line}");
    let r = stack.request(
        "GET",
        "/headers/real",
        &[("x-request-id", "forged-original"), ("x-envoy-original-path", "/admin")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let line = logged("forged-original");
    assert_eq!((&line["path"], &line["upstream_path"]), (&json!("/headers/real"), &json!("/headers/real")), "{line}");
}

fn headers_both_ways(stack: &Stack) {
    let r = stack.request(
        "GET",
        "/headers/1",
        &[("x-debug", "1"), ("x-team", "spoofed")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let seen = &body(&r)["headers"];
    assert_eq!(
        seen["x-team"], "billing",
        "set, overwriting the client's: {seen}"
    );
    assert_eq!(
        seen["x-percent"], "100% %UPSTREAM_HOST%",
        "a % arrives as written: {seen}"
    );
    assert!(
        seen.get("x-debug").is_none(),
        "removed before the backend: {seen}"
    );
    assert_eq!(r.header("cache-control"), Some("no-store"), "{}", r.head);
    let kept: Vec<&str> = r
        .head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim().eq_ignore_ascii_case("x-backend-kept"))
        .map(|(_, v)| v.trim())
        .collect();
    assert_eq!(kept, ["yes", "gateway"], "append keeps the backend's value: {}", r.head);
    assert_eq!(
        r.header("x-backend-secret"),
        None,
        "removed from the response: {}",
        r.head
    );
    assert_eq!(r.header("x-backend-kept"), Some("yes"), "{}", r.head);
    assert_eq!(r.header("server"), None, "the backend's server header removed, none added: {}", r.head);
    // A route without header changes passes both ways untouched.
    let r = stack.request("GET", "/invoices/1", &[("x-debug", "1")]);
    assert_eq!(body(&r)["headers"]["x-debug"], "1");
    assert_eq!(r.header("x-backend-secret"), Some("internal-build-42"));
    assert_eq!(r.header("server"), Some("policy-backend"), "{}", r.head);
}

fn cors(stack: &Stack) {
    let preflight = |origin: &str| {
        stack.request(
            "OPTIONS",
            "/cors/items",
            &[
                ("origin", origin),
                ("access-control-request-method", "GET"),
                ("access-control-request-headers", "x-api-key"),
            ],
        )
    };
    for origin in ["https://app.example.com", "https://a.b.corp.example.com"] {
        let r = preflight(origin);
        assert_eq!(r.status, 200, "{origin}: {}", r.head);
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some(origin),
            "{}",
            r.head
        );
        assert_eq!(
            r.header("access-control-allow-methods"),
            Some("GET"),
            "{}",
            r.head
        );
        assert_eq!(
            r.header("access-control-allow-headers"),
            Some("x-api-key"),
            "{}",
            r.head
        );
        assert_eq!(
            r.header("access-control-max-age"),
            Some("600"),
            "{}",
            r.head
        );
    }
    for origin in [
        "https://evil.example",
        "https://corp.example.com",
        "https://app.example.com.evil.example",
    ] {
        // Answered by Envoy without access-control-allow-origin: the browser's refusal.
        let r = preflight(origin);
        assert_eq!(
            r.header("access-control-allow-origin"),
            None,
            "{origin}: {}",
            r.head
        );
    }
    assert!(
        stack
            .backend
            .seen_under("/cors")
            .iter()
            .all(|s| s.method != "OPTIONS"),
        "no preflight reaches the backend"
    );
    // The request itself carries the allow-origin header for an allowed origin only.
    let r = stack.request(
        "GET",
        "/cors/items",
        &[("origin", "https://app.example.com")],
    );
    assert_eq!(
        (r.status, r.header("access-control-allow-origin")),
        (200, Some("https://app.example.com"))
    );
    assert_eq!(
        r.header("access-control-expose-headers"),
        Some("x-request-id"),
        "the page's script may read what expose_headers lists: {}",
        r.head
    );
    let r = stack.request("GET", "/cors/items", &[("origin", "https://evil.example")]);
    assert_eq!(
        (r.status, r.header("access-control-allow-origin")),
        (200, None)
    );
    // A route without a policy answers no preflight.
    let r = stack.request(
        "OPTIONS",
        "/invoices/1",
        &[
            ("origin", "https://app.example.com"),
            ("access-control-request-method", "GET"),
        ],
    );
    assert_eq!(r.header("access-control-allow-origin"), None, "{}", r.head);
}

/// A websocket client through Envoy's listener, on one connection.
type Client = WebSocket<TcpStream>;

/// The websocket handshake for `path` (tungstenite checks the `Sec-WebSocket-Accept` the answer
/// carries): the client, or the status Envoy answered with instead.
fn upgrade(stack: &Stack, path: &str) -> Result<Client, u16> {
    let s = TcpStream::connect(stack.envoy.listener_addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let request = format!("ws://{HOST}{path}")
        .into_client_request()
        .expect("a websocket request");
    match tungstenite::client(request, s) {
        Ok((client, response)) => {
            assert_eq!(response.status(), 101);
            Ok(client)
        }
        Err(HandshakeError::Failure(tungstenite::Error::Http(response))) => {
            Err(response.status().as_u16())
        }
        Err(e) => panic!("the websocket handshake for {path} failed: {e}"),
    }
}

/// The next text message, or why there is none.
fn next_text(client: &mut Client) -> Result<String, tungstenite::Error> {
    loop {
        match client.read()? {
            Message::Text(text) => return Ok(text.to_string()),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => return Ok(format!("{other:?}")),
        }
    }
}

fn websocket(stack: &Stack) {
    let mut chat = upgrade(stack, "/ws/chat").expect("an upgrade on a websocket route");
    chat.send(Message::text("hello through envoy")).expect("send");
    assert_eq!(
        next_text(&mut chat).expect("an answer"),
        "hello through envoy",
        "echoed through the tunnel"
    );
    chat.close(None).expect("close");

    // A connection that stays open is ended by Envoy at the operators' maximum duration, busy
    // or not, so no client holds a shared task's connections without bound.
    let mut held = upgrade(stack, "/ws/held").expect("an upgrade on a websocket route");
    let opened = Instant::now();
    held.send(Message::text("still here")).expect("send");
    assert_eq!(next_text(&mut held).expect("an answer"), "still here");
    while next_text(&mut held).is_ok() {}
    let lived = opened.elapsed();
    assert!(
        lived >= Duration::from_millis(WEBSOCKET_SECONDS * 1000 - 200)
            && lived < Duration::from_secs(WEBSOCKET_SECONDS + 5),
        "the upgraded connection lived {lived:?}; the maximum is {WEBSOCKET_SECONDS}s"
    );

    let refused = upgrade(stack, "/no-ws/chat").err();
    assert_eq!(
        refused,
        Some(403),
        "Envoy refuses an upgrade the route does not allow"
    );
    assert!(
        stack
            .backend
            .seen_under("/no-ws")
            .iter()
            .all(|s| !s.headers.contains_key("upgrade")),
        "no upgrade request reaches the backend"
    );
}

fn client_forwarding_headers(stack: &Stack) {
    let forged = [
        ("x-forwarded-host", "evil.example.net"),
        ("forwarded", "for=203.0.113.9;host=evil.example.net;proto=https"),
        ("x-real-ip", "203.0.113.9"),
        ("true-client-ip", "203.0.113.9"),
        ("x-client-ip", "203.0.113.9"),
        ("x-original-url", "/admin"),
        ("x-rewrite-url", "/admin"),
        ("x-forwarded-prefix", "/admin"),
        ("x-forwarded-port", "1"),
        ("x-http-method-override", "DELETE"),
        ("x-envoy-original-path", "/admin"),
    ];
    let r = stack.request("GET", "/headers/forged", &forged);
    assert_eq!(r.status, 200, "{}", r.body);
    let seen = &body(&r)["headers"];
    assert_eq!(
        seen["x-forwarded-host"], HOST,
        "only the host the client asked for, set by the gateway: {seen}"
    );
    for (name, _) in forged.iter().filter(|(n, _)| *n != "x-forwarded-host") {
        assert!(seen.get(*name).is_none(), "{name} reached the backend: {seen}");
    }
}

fn dot_segment_parameters(stack: &Stack) {
    // Spellings Envoy's normalisation leaves as they are: refused by the path guard.
    for path in [
        "/pub/%2e%2e;/%2e%2e;/admin",
        "/pub/%2E%2e%3B/admin",
        "/pub/%252e%252e%253b/admin",
        "/pub/x/%2e%2e%3bjsessionid=1/admin",
    ] {
        let r = stack.get(path);
        assert_eq!(r.status, 403, "{path}: {}", r.body);
    }
    // Whatever the spelling, the request is refused at the gateway (403), or Envoy resolves the
    // segment as a dot segment before routing (`/pub/..;/admin` routes as `/admin`, which this
    // host does not serve; `/pub/.;/admin` as `/pub/admin`): it never leaves the route's prefix
    // at the backend.
    for path in ["/pub/..;/admin", "/pub/.;/admin", "/pub/.%2e;/admin", "/pub/%2e;/admin", "/pub/..%3b/admin"] {
        let r = stack.get(path);
        match r.status {
            403 | 404 => {}
            200 => {
                let arrived = body(&r)["path"].as_str().unwrap_or_default().to_string();
                assert!(
                    arrived.starts_with("/internal/pub/") && !arrived.contains(';') && !arrived.contains(".."),
                    "{path} arrived as {arrived}"
                );
            }
            other => panic!("{path}: {other} {}", r.body),
        }
    }
    let escaped: Vec<String> = stack
        .backend
        .seen_under("/")
        .into_iter()
        .map(|s| s.path)
        .filter(|p| p.contains(';') || p.contains("..") || p.to_ascii_lowercase().contains("%2e"))
        .collect();
    assert!(escaped.is_empty(), "reached the backend: {escaped:?}");
    // A `;` elsewhere in a segment is an ordinary character.
    let r = stack.get("/pub/a;b=1");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(body(&r)["path"], "/internal/pub/a;b=1");
}

fn cookies_stay_on_their_host(stack: &Stack) {
    let r = stack.get("/cookies/1");
    assert_eq!(r.status, 200, "{}", r.body);
    let set: Vec<&str> = r
        .head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.trim())
        .collect();
    // Scoped to the base domain or its parent: every other tenant's host. The Domain attribute
    // goes (the cookie becomes host-only); the rest is as the backend wrote it.
    assert!(set.contains(&"tenant=1; Path=/; Secure"), "{set:?}");
    assert!(set.contains(&"parent=2; HttpOnly"), "{set:?}");
    // Its own host and names below it are the team's: kept as written.
    assert!(set.contains(&"own=3; Domain=policy.api.example.com; Path=/"), "{set:?}");
    assert!(set.contains(&"below=4; Domain=eu.policy.api.example.com"), "{set:?}");
    assert!(set.contains(&"plain=5; Secure"), "{set:?}");
    assert_eq!(set.len(), 5, "{set:?}");
}

fn burst_429_is_json(stack: &Stack) {
    let limited = (0..8)
        .map(|_| stack.get("/burst"))
        .find(|r| r.status == 429)
        .expect("one token a second: a quick burst is limited");
    assert_eq!(limited.header("content-type"), Some("application/json"), "{}", limited.head);
    assert_eq!(body(&limited)["error"], "rate limit exceeded", "{}", limited.body);
}

fn redirects(stack: &Stack) {
    let seen_before = stack.backend.seen_under("/moved").len();
    let r = stack.get("/moved/7?expand=lines");
    assert_eq!(r.status, 301, "{}", r.head);
    assert_eq!(
        r.header("location"),
        Some(format!("http://{HOST}/invoices/7?expand=lines").as_str()),
        "the matched prefix replaced, the query kept: {}",
        r.head
    );
    let r = stack.request("POST", "/elsewhere/a/b", &[]);
    assert_eq!(r.status, 302, "the default status: {}", r.head);
    assert_eq!(r.header("location"), Some("https://new.example.com:8443/start"), "{}", r.head);
    assert_eq!(stack.backend.seen_under("/moved").len(), seen_before, "nothing reached the backend");
    // Segment-aware, as every prefix: /movedX is not the redirect's.
    assert_eq!(stack.get("/movedX").status, 404);
}

fn host_rewrite(stack: &Stack) {
    let r = stack.get("/hosted/x");
    assert_eq!(r.status, 200, "{}", r.body);
    let seen = &body(&r)["headers"];
    assert_eq!(seen["host"], "api.internal.example", "{seen}");
    assert_eq!(seen["x-forwarded-host"], HOST, "the client's host travels beside it: {seen}");
    // Without one, the backend sees its own name.
    let r = stack.get("/headers/x");
    assert_ne!(body(&r)["headers"]["host"], "api.internal.example");
}

fn strip_and_full_rewrites(stack: &Stack) {
    for (asked, arrives) in [
        ("/strip/three", "/three"),
        ("/strip", "/"),
        ("/strip/", "/"),
        ("/strip/a/b?x=1", "/a/b?x=1"),
        ("/full/a/b?q=1", "/replaced?q=1"),
        ("/full", "/replaced"),
    ] {
        let r = stack.get(asked);
        assert_eq!(r.status, 200, "{asked}: {}", r.body);
        assert_eq!(body(&r)["path"], arrives, "{asked}");
    }
    // Segment-aware still: /stripX is no route's.
    assert_eq!(stack.get("/stripX").status, 404);
    let r = stack.get("/to-root/a?k=v");
    assert_eq!(r.status, 302, "{}", r.head);
    assert_eq!(r.header("location"), Some(format!("http://{HOST}/a?k=v").as_str()), "{}", r.head);
}

fn routed(stack: &Stack, path: &str, headers: &[(&str, &str)]) -> String {
    let r = stack.request("GET", path, headers);
    assert_eq!(r.status, 200, "{path} {headers:?}: {}", r.body);
    body(&r)["headers"]["x-route"]
        .as_str()
        .unwrap_or_else(|| panic!("{path}: no x-route: {}", r.body))
        .to_string()
}

fn match_precedence(stack: &Stack) {
    for (path, headers, want) in [
        ("/match", &[][..], "exact"),
        ("/match", &[("x-version", "2")][..], "exact"),
        ("/match?v=2", &[][..], "exact"),
        ("/match/1", &[][..], "prefix"),
        ("/match/1", &[("x-version", "3")][..], "prefix"),
        ("/match/1", &[("x-version", "2")][..], "header"),
        ("/match/1", &[("x-version", "2"), ("x-beta", "yes")][..], "two-headers"),
        ("/match/1?v=2", &[][..], "query"),
        ("/match/1?v=22", &[][..], "prefix"),
        ("/match/1?v=2", &[("x-version", "2")][..], "header"),
        ("/absent/1", &[][..], "clean"),
        ("/absent/1", &[("x-debug", "1")][..], "any"),
    ] {
        assert_eq!(routed(stack, path, headers), want, "{path} {headers:?}");
    }
    // An exact path is only itself.
    assert_eq!(routed(stack, "/match/", &[]), "prefix");
}

fn nested_services(stack: &Stack) {
    assert_eq!(routed(stack, "/nest/api/7", &[]), "api");
    assert_eq!(routed(stack, "/nest/api", &[]), "api");
    assert_eq!(routed(stack, "/nest/apix", &[]), "web");
    assert_eq!(routed(stack, "/nest", &[]), "web");
    assert_eq!(routed(stack, "/nest/other", &[]), "web");
    // The other service's route on the same path, told apart by a header condition.
    assert_eq!(routed(stack, "/nest/other", &[("x-api", "yes")]), "api-by-header");
    assert_eq!(routed(stack, "/nest/api/1", &[("x-api", "yes")]), "api", "the longer prefix still first");
}

fn preserve_host(stack: &Stack) {
    let r = stack.get("/nest/api/1");
    let seen = &body(&r)["headers"];
    assert_eq!(seen["host"], HOST, "the client's Host: {seen}");
    assert!(seen.get("x-forwarded-host").is_none(), "no rewrite, nothing to forward: {seen}");
    // A client's own x-forwarded-host is still removed on arrival.
    let r = stack.request("GET", "/nest/api/1", &[("x-forwarded-host", "evil.example.com")]);
    assert!(body(&r)["headers"].get("x-forwarded-host").is_none(), "{}", r.body);
    // The other service of the host keeps the backend's own name.
    let r = stack.get("/nest/1");
    assert_ne!(body(&r)["headers"]["host"], HOST, "{}", r.body);
}

fn mirror(stack: &Stack) {
    for i in 0..5 {
        let r = stack.get(&format!("/mirrored/{i}"));
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(body(&r)["path"], format!("/mirrored/{i}"), "the backend's own answer");
        let r = stack.get(&format!("/unmirrored/{i}"));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_eq!(stack.backend.seen_under("/mirrored").len(), 5);
    // Envoy sends the copies without waiting for them.
    let deadline = Instant::now() + Duration::from_secs(10);
    while stack.shadow.seen_under("/mirrored").len() < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let copies = stack.shadow.seen_under("/mirrored");
    assert_eq!(copies.len(), 5, "100 %: every request copied");
    for copy in &copies {
        let host = &copy.headers["host"];
        // Envoy marks the name, before any port: `127.0.0.1-shadow:PORT`.
        let name = host.rsplit_once(':').map_or(host.as_str(), |(name, _)| name);
        assert!(name.ends_with("-shadow"), "a copy's Host is marked: {host}");
    }
    assert!(stack.shadow.seen_under("/unmirrored").is_empty(), "0 %: none copied");
}

fn weighted_backends(stack: &Stack) {
    const REQUESTS: usize = 400;
    for i in 0..REQUESTS {
        let r = stack.get(&format!("/split/{i}"));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let to_shadow = stack.shadow.seen_under("/split").len();
    let to_backend = stack.backend.seen_under("/split").len();
    assert_eq!(to_shadow + to_backend, REQUESTS, "every request reached one of the two");
    // Envoy picks each request's cluster at random by weight: 25 % of 400 is 100, and its
    // standard deviation about 8.7, so 100 ± 40 fails only at 4.6 deviations.
    assert!((60..=140).contains(&to_shadow), "the 25 % backend got {to_shadow} of {REQUESTS}");
    // Each backend sees its own name, as a split's endpoints do.
    let host = &stack.shadow.seen_under("/split")[0].headers["host"];
    assert_eq!(host, &stack.shadow.url().trim_start_matches("http://"), "{host}");
}

fn client_lists(stack: &Stack) {
    // No trusted hops in this stack: the client is the peer, 127.0.0.1.
    for (path, headers, want) in [
        ("/lan-only/1", &[][..], 403),
        ("/lan-only/1", &[("x-forwarded-for", "10.1.2.3")][..], 403),
        ("/local-ok/1", &[][..], 200),
        ("/local-denied/1", &[][..], 403),
    ] {
        let r = stack.request("GET", path, headers);
        assert_eq!(r.status, want, "{path} {headers:?}: {}", r.body);
        if want == 403 {
            assert_eq!(body(&r), json!({ "error": "forbidden" }), "the gateway's JSON: {}", r.body);
        }
    }
    assert!(stack.backend.seen_under("/lan-only").is_empty(), "nothing refused reached the backend");
    assert!(stack.backend.seen_under("/local-denied").is_empty());
}
