//! Real traffic through real Envoy running a render: which backend a request reaches, the JSON
//! 404s, segment-aware prefixes, method matching, the burst bucket, and the kill switch's 503.
//! (Envoy decides all of these; the other tests only look at the config.)

mod render_support;

use gateway_render::{render, render_kill_switch, Entry, Limit, Rendered, Route};
use render_support::config;
use render_support::envoy::{envoy_bin, gateway_bootstrap, ProcessGuard};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().expect("local addr").port()
}

/// A loopback backend answering every request with `name METHOD PATH host=HOST`.
struct Backend {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Backend {
    fn start(name: &'static str) -> Backend {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind backend");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => answer(name, stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Backend {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn answer(name: &str, mut stream: TcpStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let mut lines = head.lines();
    let mut request_line = lines.next().unwrap_or("").split(' ');
    let (method, path) = (
        request_line.next().unwrap_or(""),
        request_line.next().unwrap_or(""),
    );
    let host = lines
        .find_map(|l| {
            l.strip_prefix("host: ")
                .or_else(|| l.strip_prefix("Host: "))
        })
        .unwrap_or("");
    let body = format!("{name} {method} {path} host={host}");
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

struct Response {
    status: u16,
    content_type: Option<String>,
    body: String,
}

/// One HTTP/1.1 request over a fresh connection.
fn request(port: u16, method: &str, host: &str, path: &str) -> Response {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to Envoy");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(stream, "{method} {path} HTTP/1.1\r\nhost: {host}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").expect("send");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read response");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad response {raw:?}"));
    let content_type = head.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("content-type: ")
            .map(str::to_string)
    });
    Response {
        status,
        content_type,
        body: body.to_string(),
    }
}

/// Envoy running `rendered`, killed on drop.
struct RunningEnvoy {
    port: u16,
    _guard: ProcessGuard,
    _dir: tempfile::TempDir,
}

fn run_envoy(rendered: &Rendered) -> RunningEnvoy {
    let (port, admin) = (free_port(), free_port());
    let mut bootstrap = gateway_bootstrap(rendered, port, admin);
    // Point the global limiter at a port nothing listens on: with failure_mode_deny false every
    // request passes, so only the local burst bucket limits here.
    for cluster in bootstrap["static_resources"]["clusters"]
        .as_array_mut()
        .expect("clusters")
    {
        if cluster["name"] == gateway_render::contract::RATE_LIMIT_CLUSTER {
            cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
                ["socket_address"]["port_value"] = json!(free_port());
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("envoy.json");
    std::fs::write(&path, bootstrap.to_string()).expect("write bootstrap");
    let log = std::fs::File::create(dir.path().join("envoy.log")).expect("log file");
    let child = Command::new(envoy_bin())
        .args([
            "--disable-hot-restart",
            "--concurrency",
            "1",
            "--log-level",
            "warn",
            "-c",
        ])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("starting Envoy ({}): {e}", envoy_bin().display()));
    let mut guard = ProcessGuard(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = guard.0.try_wait() {
            let log = std::fs::read_to_string(dir.path().join("envoy.log")).unwrap_or_default();
            panic!("Envoy exited ({status}) before it was ready:\n{log}");
        }
        if TcpStream::connect(("127.0.0.1", admin)).is_ok()
            && request(admin, "GET", "admin", "/ready")
                .body
                .contains("LIVE")
        {
            break;
        }
        assert!(Instant::now() < deadline, "Envoy was not ready in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    RunningEnvoy {
        port,
        _guard: guard,
        _dir: dir,
    }
}

fn route(path: &str, methods: Option<&[&str]>, limits: Vec<Limit>) -> Route {
    Route {
        path: path.into(),
        methods: methods.map(|m| m.iter().map(|s| s.to_string()).collect()),
        limits,
    }
}

fn entry(service: &str, backend: &Backend, routes: Vec<Route>) -> Entry {
    Entry {
        team: "billing".into(),
        service: service.into(),
        host: "invoices".into(),
        backend: format!("http://127.0.0.1:{}", backend.port),
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

    let r = request(envoy.port, "GET", host, "/invoices/7");
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
        request(envoy.port, "GET", host, "/invoices?page=2").status,
        200,
        "a query string ends the prefix"
    );
    assert_eq!(
        request(envoy.port, "GET", &format!("{host}:8443"), "/invoices").status,
        200,
        "a port in Host matches"
    );

    let r = request(envoy.port, "GET", host, "/invoicesX");
    assert_eq!(r.status, 404, "prefixes match whole segments: {}", r.body);
    assert_eq!(r.content_type.as_deref(), Some("application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).expect("JSON 404")["error"],
        "no route for this path"
    );
    assert_eq!(
        request(envoy.port, "POST", host, "/invoices").status,
        404,
        "GET-only route"
    );

    let r = request(envoy.port, "PUT", host, "/payments/9");
    assert_eq!(
        (r.status, r.body.starts_with("payments-api PUT /payments/9")),
        (200, true),
        "{}",
        r.body
    );
    assert_eq!(request(envoy.port, "GET", host, "/payments").status, 404);

    let r = request(envoy.port, "GET", "unknown.example.org", "/invoices");
    assert_eq!(r.status, 404);
    assert_eq!(r.content_type.as_deref(), Some("application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).expect("JSON 404")["error"],
        "no route for this host"
    );

    // Burst 2: two tokens, two more each second; eight quick requests cannot all pass.
    let statuses: Vec<u16> = (0..8)
        .map(|_| request(envoy.port, "GET", host, "/invoices/export/all").status)
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
    for (host, path) in [
        ("invoices.api.example.com", "/invoices"),
        ("anything.example", "/"),
        ("x", "/a/b?c"),
    ] {
        let r = request(envoy.port, "GET", host, path);
        assert_eq!(r.status, 503, "{host}{path}");
        assert_eq!(r.content_type.as_deref(), Some("application/json"));
        assert_eq!(
            serde_json::from_str::<Value>(&r.body).expect("JSON body")["error"],
            "gateway kill switch engaged"
        );
    }
}
