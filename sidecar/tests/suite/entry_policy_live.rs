//! The entry-level traffic fields through the real pipeline: entries that passed the
//! registration checks, rendered, published into moto's bucket, delivered by the sidecar
//! (make-before-break) into the real Envoy on the gateway's bootstrap, and real requests:
//! - `protocol: http2` reaches a TLS backend as h2 negotiated by ALPN and an `http://` backend as
//!   h2c, `grpc` reaches a tonic server, and the default still speaks HTTP/1.1;
//! - a canary at weight 20 gets close to 20 % of a few hundred requests and all of its header
//!   cohort (an almost-matching header does not count); weight 100 is a cutover; removing the
//!   canary returns to the main backend;
//! - an active health check takes a failing backend out: an unhealthy canary's share goes to the
//!   main backend, and an unhealthy main backend's share goes to the canary;
//! - passive outlier detection never ejects a cluster's last host: a backend failing every
//!   request keeps answering (its own 500s, never Envoy's "no healthy upstream").
//!
//! One gateway (one Envoy, one sidecar) serves every case: each case has its own host and
//! backends, and a republish changes only that case's entry, so the others keep running what
//! they ran (which is the make-before-break promise itself). Every case runs even when one
//! fails, and all failures are reported together.

use gateway_testkit::delivery as common;

use common::*;
use gateway_adapters::store::Writer;
use gateway_render::check::{check_entry_value, Policy};
use gateway_render::{render, Bundle, Entry, RenderConfig};
use gateway_testkit::backend::Backend;
use gateway_testkit::upstreams::{
    grpc_call, loopback_certificate, GrpcBackend, SwitchableBackend, GRPC_METHOD_PREFIX,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SPLIT_REQUESTS: usize = 400;
const APPLY: Duration = Duration::from_secs(30);

/// Local runs' policy: loopback backends allowed, health checks as often as every second.
fn policy() -> Policy {
    let mut p = Policy::new(DOMAIN, true);
    p.min_health_check_interval_ms = 1_000;
    p
}

/// An entry document through the registration checks, as the register function would store it.
fn checked(doc: Value) -> Entry {
    check_entry_value(&doc, &policy()).unwrap_or_else(|r| panic!("entry refused:\n{r}\n{doc}"))
}

struct Backends {
    /// Behind TLS with a self-signed loopback certificate, which `ca` holds.
    tls: SwitchableBackend,
    ca: std::path::PathBuf,
    _certs: tempfile::TempDir,
    h2c: SwitchableBackend,
    h1: SwitchableBackend,
    grpc: GrpcBackend,
    split_main: SwitchableBackend,
    split_canary: SwitchableBackend,
    hc_main: SwitchableBackend,
    hc_canary: SwitchableBackend,
    failing: Backend,
}

impl Backends {
    fn start() -> Backends {
        let certs = tempfile::tempdir().expect("certificate dir");
        let (cert, key) = loopback_certificate(certs.path());
        Backends {
            tls: SwitchableBackend::start_tls("tls", &cert, &key),
            ca: cert,
            _certs: certs,
            h2c: SwitchableBackend::start("h2c"),
            h1: SwitchableBackend::start("h1"),
            grpc: GrpcBackend::start("grpc-server"),
            split_main: SwitchableBackend::start("split-main"),
            split_canary: SwitchableBackend::start("split-canary"),
            hc_main: SwitchableBackend::start("hc-main"),
            hc_canary: SwitchableBackend::start("hc-canary"),
            failing: Backend::start("failing"),
        }
    }
}

/// The registry: one entry per case. `split` is the canary case's `canary` member (or none).
fn registry(b: &Backends, split: Option<Value>) -> Vec<Entry> {
    let mut canary_entry = json!({"team": "split", "service": "api", "host": "split",
        "backend": b.split_main.url(), "routes": [{"path": "/"}]});
    if let Some(canary) = split {
        canary_entry["canary"] = canary;
    }
    let tls = b.tls.url().replace("http://", "https://");
    vec![
        checked(
            json!({"team": "tls", "service": "api", "host": "tls", "protocol": "http2",
            "backend": tls, "routes": [{"path": "/"}]}),
        ),
        checked(json!({"team": "tls1", "service": "api", "host": "tls1",
            "backend": tls, "routes": [{"path": "/"}]})),
        checked(
            json!({"team": "h2", "service": "api", "host": "h2", "protocol": "http2",
            "backend": b.h2c.url(), "routes": [{"path": "/"}]}),
        ),
        checked(json!({"team": "h1", "service": "api", "host": "h1",
            "backend": b.h1.url(), "routes": [{"path": "/"}]})),
        checked(
            json!({"team": "grpc", "service": "limits", "host": "grpc", "protocol": "grpc",
            "backend": b.grpc.url(),
            "routes": [{"path": GRPC_METHOD_PREFIX.trim_end_matches('/'), "methods": ["POST"]}]}),
        ),
        checked(canary_entry),
        checked(json!({"team": "health", "service": "api", "host": "health",
            "protocol": "http2", "backend": b.hc_main.url(),
            "canary": {"backend": b.hc_canary.url(), "weight": 50},
            "health_check": {"path": "/healthz", "interval": "1s"},
            "routes": [{"path": "/"}]})),
        checked(
            json!({"team": "outlier", "service": "api", "host": "outlier",
            "backend": b.failing.url(), "routes": [{"path": "/"}]}),
        ),
    ]
}

fn split_canary(weight: u32) -> Value {
    json!({"backend": "", "weight": weight, "header": {"name": "x-canary", "value": "always"}})
}

/// A GET of `path` on `host` through the gateway, with `header` when there is one.
fn get_on(
    gw: &Gateway,
    host: &str,
    path: &str,
    header: Option<(&str, &str)>,
) -> reqwest::RequestBuilder {
    let req = gw
        .client
        .get(format!("http://{}{path}", gw.listener()))
        .header(reqwest::header::HOST, format!("{host}.{DOMAIN}"));
    match header {
        Some((name, value)) => req.header(name, value),
        None => req,
    }
}

/// Which backends answered `n` requests, by name; anything but a 200 from a backend is counted
/// under its status and body.
async fn tally(
    gw: &Gateway,
    host: &str,
    header: Option<(&str, &str)>,
    n: usize,
) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for i in 0..n {
        let key = match get_on(gw, host, &format!("/r/{i}"), header).send().await {
            Ok(r) if r.status() == 200 => match r.json::<Value>().await {
                Ok(v) => v["backend"].as_str().unwrap_or("?").to_string(),
                Err(e) => format!("not JSON: {e}"),
            },
            Ok(r) => format!("HTTP {}", r.status().as_u16()),
            Err(e) => format!("error: {e}"),
        };
        *seen.entry(key).or_insert(0) += 1;
    }
    seen
}

/// Polls (bounded) until `n` requests in a row are all answered by `backend`.
async fn wait_all(
    gw: &Gateway,
    host: &str,
    backend: &str,
    n: usize,
    within: Duration,
) -> Result<(), String> {
    let start = Instant::now();
    let mut last = BTreeMap::new();
    while start.elapsed() < within {
        last = tally(gw, host, None, n).await;
        if last.get(backend) == Some(&n) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!(
        "{host}: not all of {n} requests went to {backend} within {within:?}; last: {last:?}"
    ))
}

/// Renders with `ca` as the upstream CA bundle (the TLS backend's certificate), publishes, and
/// waits until the sidecar reports it live.
async fn publish_with(gw: &Gateway, entries: &[Entry], ca: &std::path::Path) {
    let mut cfg = RenderConfig::new(DOMAIN);
    cfg.upstream_ca_file = ca.display().to_string();
    let rendered = render(entries, &cfg).unwrap_or_else(|e| panic!("render: {e}"));
    let (_, hash) = gw
        .bucket
        .put(&Bundle::new(&rendered, entries), Writer::Reconciler)
        .await;
    gw.sidecar.wait_live(&hash, APPLY).await;
}

async fn publish(gw: &Gateway, entries: &[Entry]) {
    let (_, hash) = gw.bucket.publish(entries).await;
    gw.sidecar.wait_live(&hash, APPLY).await;
}

async fn case_protocols(gw: &Gateway, b: &Backends) -> Result<(), String> {
    // Over TLS: http2 negotiates h2 by ALPN; the default speaks HTTP/1.1 without asking for it.
    publish_with(gw, &registry(b, None), &b.ca).await;
    let tls = gw.backend_answer("GET", "tls", "/over/tls").await?;
    if tls["version"] != "HTTP/2.0" || tls["alpn"] != "h2" {
        return Err(format!(
            "protocol http2 over TLS: expected h2 by ALPN, got {tls}"
        ));
    }
    let tls1 = gw.backend_answer("GET", "tls1", "/over/tls").await?;
    if tls1["version"] != "HTTP/1.1" || !(tls1["alpn"].is_null() || tls1["alpn"] == "http/1.1") {
        return Err(format!(
            "default protocol over TLS: expected HTTP/1.1, got {tls1}"
        ));
    }
    let h2 = gw.backend_answer("GET", "h2", "/over/h2c").await?;
    if h2["backend"] != "h2c" || h2["version"] != "HTTP/2.0" {
        return Err(format!(
            "protocol http2: expected the h2c backend over HTTP/2.0, got {h2}"
        ));
    }
    // The backend sees its own name, whatever the protocol (Host or :authority).
    if h2["authority"] != b.h2c.url().trim_start_matches("http://") {
        return Err(format!(
            "protocol http2: backend saw authority {}",
            h2["authority"]
        ));
    }
    let h1 = gw.backend_answer("GET", "h1", "/over/h1").await?;
    if h1["backend"] != "h1" || h1["version"] != "HTTP/1.1" {
        return Err(format!("default protocol: expected HTTP/1.1, got {h1}"));
    }
    let authority = format!("grpc.{DOMAIN}");
    let (server, echoed) = grpc_call(gw.listener(), &authority, "billing").await?;
    if (server.as_str(), echoed.as_str()) != ("grpc-server", "billing") {
        return Err(format!("protocol grpc: answer {server:?} / {echoed:?}"));
    }
    // A gRPC error status travels back as a gRPC status, not as an HTTP failure.
    match grpc_call(gw.listener(), &authority, "fail").await {
        Err(status) if status.starts_with("Unavailable") => {}
        other => return Err(format!("protocol grpc: a failing call gave {other:?}")),
    }
    if b.grpc.calls() != 2 {
        return Err(format!(
            "grpc server counted {} calls, expected 2",
            b.grpc.calls()
        ));
    }
    Ok(())
}

async fn case_canary(gw: &Gateway, b: &Backends) -> Result<(), String> {
    let with = |weight: u32| {
        let mut c = split_canary(weight);
        c["backend"] = json!(b.split_canary.url());
        registry(b, Some(c))
    };
    publish(gw, &with(20)).await;
    let seen = tally(gw, "split", None, SPLIT_REQUESTS).await;
    let canary = *seen.get("split-canary").unwrap_or(&0);
    let main = *seen.get("split-main").unwrap_or(&0);
    if canary + main != SPLIT_REQUESTS {
        return Err(format!("weight 20: some requests failed: {seen:?}"));
    }
    // 400 draws at p = 0.2: mean 80, standard deviation 8; 40..=120 is five deviations wide.
    if !(40..=120).contains(&canary) {
        return Err(format!(
            "weight 20: canary got {canary} of {SPLIT_REQUESTS}: {seen:?}"
        ));
    }
    println!(
        "weight 20: canary answered {canary} of {SPLIT_REQUESTS} requests ({:.1} %)",
        canary as f64 * 100.0 / SPLIT_REQUESTS as f64
    );
    let cohort = tally(gw, "split", Some(("x-canary", "always")), 50).await;
    if cohort.get("split-canary") != Some(&50) {
        return Err(format!(
            "the header cohort must all reach the canary: {cohort:?}"
        ));
    }
    // Each backend sees its own authority as Host, whichever way the split went.
    for (header, backend) in [
        (Some(("x-canary", "always")), &b.split_canary),
        (None, &b.split_main),
    ] {
        let want = backend.url().trim_start_matches("http://").to_string();
        let mut seen_own = false;
        for _ in 0..30 {
            let v: Value = get_on(gw, "split", "/who", header)
                .send()
                .await
                .map_err(|e| e.to_string())?
                .json()
                .await
                .map_err(|e| e.to_string())?;
            if v["backend"] == backend.name() {
                if v["authority"] != want.as_str() {
                    return Err(format!(
                        "{} saw Host {} instead of its own {want}",
                        backend.name(),
                        v["authority"]
                    ));
                }
                seen_own = true;
                break;
            }
        }
        if !seen_own {
            return Err(format!("{} never answered", backend.name()));
        }
    }
    // Exact match only: a near value is not the cohort (and gets the weighted split).
    let near = tally(gw, "split", Some(("x-canary", "ALWAYS")), 60).await;
    if near.get("split-main").copied().unwrap_or(0) < 20 {
        return Err(format!(
            "a near-miss cohort value went to the canary: {near:?}"
        ));
    }
    publish(gw, &with(100)).await;
    let cutover = tally(gw, "split", None, 100).await;
    if cutover.get("split-canary") != Some(&100) {
        return Err(format!("weight 100 is a cutover: {cutover:?}"));
    }
    publish(gw, &with(0)).await;
    let zero = tally(gw, "split", None, 100).await;
    let zero_cohort = tally(gw, "split", Some(("x-canary", "always")), 20).await;
    if zero.get("split-main") != Some(&100) || zero_cohort.get("split-canary") != Some(&20) {
        return Err(format!(
            "weight 0 keeps only the cohort on the canary: {zero:?} / {zero_cohort:?}"
        ));
    }
    publish(gw, &registry(b, None)).await;
    let removed = tally(gw, "split", Some(("x-canary", "always")), 50).await;
    if removed.get("split-main") != Some(&50) {
        return Err(format!(
            "removing the canary returns everything to the backend: {removed:?}"
        ));
    }
    Ok(())
}

async fn case_health_check(gw: &Gateway, b: &Backends) -> Result<(), String> {
    // Both healthy: a 50 % split.
    let both = tally(gw, "health", None, 100).await;
    if both.get("hc-main").copied().unwrap_or(0) < 20
        || both.get("hc-canary").copied().unwrap_or(0) < 20
    {
        return Err(format!("both healthy at weight 50: {both:?}"));
    }
    if b.hc_main.health_checks() == 0 || b.hc_canary.health_checks() == 0 {
        return Err("no active health check reached the backends".into());
    }
    // The entry speaks HTTP/2 to its backends, and so do its health checks.
    if b.hc_main.health_checks_over_h2() != b.hc_main.health_checks() {
        return Err(format!(
            "health checks of an http2 entry: {} of {} over HTTP/2",
            b.hc_main.health_checks_over_h2(),
            b.hc_main.health_checks()
        ));
    }
    // The canary fails its health check (its other paths still answer 200: only the active
    // check can know): its share moves to the main backend.
    b.hc_canary.set_healthy(false);
    all_health_traffic_on(gw, "hc-main", "unhealthy canary still served").await?;
    // The main backend fails and the canary recovers: everything goes to the canary.
    b.hc_canary.set_healthy(true);
    b.hc_main.set_healthy(false);
    all_health_traffic_on(gw, "hc-canary", "unhealthy main backend still served").await?;
    b.hc_main.set_healthy(true);
    Ok(())
}

/// Once the health checks have moved every request of the `health` entry to `served_by`, all
/// of 200 more go there; else the error says `otherwise` and what served them.
async fn all_health_traffic_on(
    gw: &Gateway,
    served_by: &str,
    otherwise: &str,
) -> Result<(), String> {
    wait_all(gw, "health", served_by, 50, Duration::from_secs(20)).await?;
    let after = tally(gw, "health", None, 200).await;
    if after.get(served_by) != Some(&200) {
        return Err(format!("{otherwise}: {after:?}"));
    }
    Ok(())
}

async fn case_outlier_detection_keeps_the_last_host(
    gw: &Gateway,
    _b: &Backends,
) -> Result<(), String> {
    // Every request fails with the backend's own 500, far past consecutive_5xx (5).
    for i in 0..30 {
        let (status, body) = gw.send("GET", "outlier", &format!("/fail/{i}")).await?;
        if status != 500 || !body.contains("\"backend\"") {
            return Err(format!(
                "request {i}: expected the backend's own 500, got {status} {body}"
            ));
        }
    }
    let stat = |leaf: &str| {
        gw.stat(&format!("cluster.outlier.api.outlier_detection.{leaf}"))
            .and_then(|v| v.as_u64())
    };
    println!(
        "outlier stats: {:?}",
        [
            "ejections_active",
            "ejections_overflow",
            "ejections_detected_consecutive_5xx",
            "ejections_enforced_total",
            "ejections_total"
        ]
        .map(|l| (l, stat(l)))
    );
    let ejected = stat("ejections_active").ok_or("no ejections_active stat")?;
    // Envoy did see the outlier (five 5xx in a row, several times over) and held back only
    // because ejecting would exceed max_ejection_percent.
    let detected = stat("ejections_detected_consecutive_5xx").unwrap_or(0);
    let overflow = stat("ejections_overflow").unwrap_or(0);
    if detected == 0 || overflow == 0 {
        return Err(format!(
            "outlier detection did not run: detected {detected}, held back {overflow}"
        ));
    }
    if ejected != 0 {
        return Err(format!(
            "outlier detection ejected the cluster's only host ({ejected} active)"
        ));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entry_level_fields_work_through_the_real_gateway() {
    let backends = Backends::start();
    let gw = Gateway::start(shared_moto(), &registry(&backends, None)).await;
    let mut failures = Vec::new();
    for (name, result) in [
        ("protocols", case_protocols(&gw, &backends).await),
        ("canary", case_canary(&gw, &backends).await),
        ("health check", case_health_check(&gw, &backends).await),
        (
            "outlier detection",
            case_outlier_detection_keeps_the_last_host(&gw, &backends).await,
        ),
    ] {
        if let Err(why) = result {
            failures.push(format!("{name}: {why}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n--- sidecar log ---\n{}\n--- envoy log ---\n{}",
        failures.join("\n"),
        gw.sidecar.log_text(),
        gw.envoy.log_text()
    );
}

/// Steady traffic while the canary's weight changes through the sidecar's make-before-break
/// delivery (0 → 20 → 50 → 100 → 0 → removed → 20): every request must be answered by one of
/// the two backends. The count is written to `target/canary-shift.md` (a measurement for
/// docs/benchmarks.md; only the zero-failure promise is asserted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_weight_changes_under_load_fail_no_request() {
    let main = SwitchableBackend::start("shift-main");
    let canary = SwitchableBackend::start("shift-canary");
    let entries = |weight: Option<u32>| {
        let mut doc = json!({"team": "shift", "service": "api", "host": "shift",
            "backend": main.url(), "routes": [{"path": "/"}]});
        if let Some(w) = weight {
            doc["canary"] = json!({"backend": canary.url(), "weight": w});
        }
        vec![checked(doc)]
    };
    let gw = Gateway::start(shared_moto(), &entries(None)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let samples = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut loops = Vec::new();
    for _ in 0..4 {
        let (stop, ok, failed, samples) =
            (stop.clone(), ok.clone(), failed.clone(), samples.clone());
        let listener = gw.listener();
        loops.push(tokio::spawn(async move {
            let client = client();
            let started = Instant::now();
            while !stop.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(180) {
                match send(&client, listener, "GET", "shift", "/load").await {
                    Ok((200, _)) => {
                        ok.fetch_add(1, Ordering::SeqCst);
                    }
                    other => {
                        failed.fetch_add(1, Ordering::SeqCst);
                        let mut s = samples.lock().unwrap_or_else(|p| p.into_inner());
                        if s.len() < 5 {
                            s.push(format!("{other:?}"));
                        }
                    }
                }
            }
        }));
    }
    let steps = [
        Some(0),
        Some(20),
        Some(50),
        Some(100),
        Some(0),
        None,
        Some(20),
        None,
    ];
    let started = Instant::now();
    for step in steps {
        tokio::time::sleep(Duration::from_millis(500)).await;
        publish(&gw, &entries(step)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let elapsed = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    for l in loops {
        let _ = l.await;
    }
    let (ok, failed) = (ok.load(Ordering::SeqCst), failed.load(Ordering::SeqCst));
    let report = format!(
        "| canary weight changes (sidecar deliveries) | requests answered | failed | time |\n|---|---|---|---|\n| {} | {ok} | {failed} | {:.1} s |\n",
        steps.len(),
        elapsed.as_secs_f64()
    );
    let out = gateway_testkit::repo_root().join("target/canary-shift.md");
    let _ = std::fs::write(&out, &report);
    println!("{report}");
    assert!(ok > 100, "too little traffic to mean anything: {ok}");
    assert!(
        canary.requests() > 0 && main.requests() > 0,
        "both backends should have served"
    );
    assert_eq!(
        failed,
        0,
        "requests failed while the canary weight changed: {:?}",
        samples.lock().unwrap_or_else(|p| p.into_inner())
    );
}
