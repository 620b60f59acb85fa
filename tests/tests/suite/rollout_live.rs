//! A rollout through the real pieces (docs/design.md#rollout): the registry on moto, the
//! reconciler rendering both revisions and validating them with the real Envoy, the sidecar
//! delivering, and Envoy serving each client one revision by its cohort cookie. The share over
//! cookie-less requests, stickiness, other teams untouched, promote and abort, and no failed
//! request while the share moves.

use gateway_testkit::control as support;
use gateway_testkit::delivery::{
    client, envoy_mode_args, start_envoy, wait_files, Dirs, SidecarProcess, DOMAIN,
};
use gateway_adapters::metrics::CloudWatchMetrics;
use gateway_adapters::registry::rollout::Decision;
use gateway_control::reconcile::{reconcile, seed, Outcome};
use gateway_render::{Entry, Policy, RenderConfig};
use gateway_testkit::envoy::EnvoyPorts;
use gateway_testkit::policy_backend::PolicyBackend;
use gateway_testkit::MotoServer;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What one request saw: the backend's path (which names the revision), the cookie set, status.
#[derive(Debug, Clone)]
struct Seen {
    status: u16,
    path: String,
    set_cookie: Option<String>,
    cookie_at_backend: Option<String>,
}

async fn get(http: &reqwest::Client, listener: SocketAddr, host: &str, cookie: Option<&str>) -> Seen {
    let mut req = http
        .get(format!("http://{listener}/api/items"))
        .header(reqwest::header::HOST, format!("{host}.{DOMAIN}"));
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    let r = req.send().await.expect("an answer");
    let status = r.status().as_u16();
    let set_cookie = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("gw-ro-"))
        .map(str::to_string);
    let body: Value = r.json().await.unwrap_or(Value::Null);
    Seen {
        status,
        path: body["path"].as_str().unwrap_or("").to_string(),
        set_cookie,
        cookie_at_backend: body["headers"]["cookie"].as_str().map(str::to_string),
    }
}

/// Cookie-less requests to `hosts` without a pause (or `pause` between rounds), each answer
/// other than 200 counted and printed, until stopped (at most 240 s).
struct Traffic {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Traffic {
    fn start(http: &reqwest::Client, listener: SocketAddr, hosts: &'static [&'static str], pause: Duration) -> Traffic {
        let (stop, sent, failures) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let task = {
            let (stop, sent, failures, http) = (stop.clone(), sent.clone(), failures.clone(), http.clone());
            tokio::spawn(async move {
                let deadline = std::time::Instant::now() + Duration::from_secs(240);
                while !stop.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                    for host in hosts {
                        let seen = get(&http, listener, host, None).await;
                        if seen.status != 200 {
                            eprintln!("{host} answered {}", seen.status);
                            failures.fetch_add(1, Ordering::SeqCst);
                        }
                        sent.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::time::sleep(pause).await;
                }
            })
        };
        Traffic { stop, sent, failures, task }
    }

    /// Stops the requests: how many were sent, and how many did not get a 200.
    async fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.expect("client loop");
        (self.sent.load(Ordering::SeqCst), self.failures.load(Ordering::SeqCst))
    }
}

/// The revision a backend path names: the rewrite's first segment.
fn revision(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_serves_its_share_sticks_to_cookies_and_ends_by_promote_or_abort() {
    let moto = MotoServer::start();
    let conf = moto.sdk_config().await;
    let mut policy = Policy::new(DOMAIN, true);
    // Steps judged every few seconds (operators keep minutes: GATEWAY_MIN_ROLLOUT_INTERVAL).
    policy.min_rollout_interval_ms = 1_000;
    let dynamo = gateway_adapters::aws::dynamodb_client(&conf);
    let (registry, store) = support::table_and_bucket(&moto, dynamo, &policy, "rollout").await;
    let bucket = store.bucket().to_string();
    let metrics = CloudWatchMetrics::from_conf(&conf);
    let mut cfg = support::reconcile_config(RenderConfig::new(DOMAIN), policy.clone(), Default::default());
    // The proxies publish every second here: the first 2 s of a new candidate are left out.
    cfg.rollout.settle_seconds = 2;
    let (backend, catalog) = (PolicyBackend::start(), PolicyBackend::start());
    let version = |rewrite: &str, rollout: Option<Value>| -> Entry {
        let mut doc = json!({
            "team": "billing", "service": "invoices", "host": "invoices", "backend": backend.url(),
            "routes": [ { "path": "/api", "rewrite": rewrite } ]
        });
        if let Some(r) = rollout {
            doc["rollout"] = r;
        }
        gateway_render::check::check_entry_value(&doc, &policy).unwrap_or_else(|r| panic!("{r}"))
    };
    let other = gateway_render::check::check_entry_value(
        &json!({ "team": "catalog", "service": "products", "host": "catalog", "backend": catalog.url(),
                 "routes": [ { "path": "/api" } ] }),
        &policy,
    )
    .expect("catalog's entry");
    let publish = || {
        let (registry, store, metrics, cfg) = (&registry, &store, &metrics, &cfg);
        async move {
            match reconcile(registry, store, metrics, cfg).await.expect("reconcile") {
                Outcome::Published { hash, .. } => hash,
                other => panic!("the change publishes: {other:?}"),
            }
        }
    };
    seed(&registry, &store, &cfg).await.expect("seed");
    registry.register(&version("/v1", None)).await.expect("register v1");
    registry.register(&other).await.expect("register catalog");
    let first = publish().await;

    let dirs = Dirs::new();
    let ports = EnvoyPorts::free();
    let admin = format!("http://{}", ports.admin);
    // Per-revision request metrics every second, to moto's CloudWatch, which the reconciler reads.
    let sidecar = SidecarProcess::start(&moto, &envoy_mode_args(&bucket, &dirs, &admin, &["--metrics-interval", "1"]));
    wait_files(&dirs, Duration::from_secs(30)).await;
    let envoy = start_envoy(&dirs, ports);
    sidecar.wait_live(&first, Duration::from_secs(30)).await;
    let (pid, listener, http) = (envoy.pid(), envoy.listener_addr(), client());
    let before = get(&http, listener, "invoices", None).await;
    assert_eq!((before.status, revision(&before.path)), (200, "v1"), "{before:?}");
    assert_eq!(before.set_cookie, None, "no cohort cookie without a rollout");

    // Requests without a pause while the rollout starts, moves and ends: none may fail.
    let traffic = Traffic::start(&http, listener, &["invoices", "catalog"], Duration::ZERO);

    // v2 to 20 %.
    let outcome = registry
        .register(&version("/v2", Some(json!({ "percent": 20 }))))
        .await
        .expect("register v2 with a rollout");
    assert!(format!("{outcome:?}").contains("Updated"), "{outcome:?}");
    let twenty = publish().await;
    sidecar.wait_live(&twenty, Duration::from_secs(30)).await;
    let view = registry.rollout_view("billing/invoices").await.expect("read").expect("registered");
    assert_eq!((view.state(), view.stable_revision, view.serving_percent()), ("rolling-out", Some(1), 20));

    let mut cookies = Vec::new();
    let mut v2 = 0;
    const N: usize = 400;
    for _ in 0..N {
        let seen = get(&http, listener, "invoices", None).await;
        assert_eq!(seen.status, 200, "{seen:?}");
        let rev = revision(&seen.path).to_string();
        assert!(rev == "v1" || rev == "v2", "{seen:?}");
        v2 += usize::from(rev == "v2");
        let cookie = seen.set_cookie.clone().expect("a cookie-less client is given its cohort cookie");
        assert!(cookie.contains("Path=/") && cookie.contains("Secure") && cookie.contains("HttpOnly"), "{cookie}");
        assert!(!cookie.to_ascii_lowercase().contains("domain="), "host-only: {cookie}");
        assert_eq!(seen.cookie_at_backend, None, "the backend gets no cookie the client did not send");
        if cookies.len() < 40 {
            cookies.push((cookie.split(';').next().unwrap().to_string(), rev));
        }
    }
    let share = v2 as f64 / N as f64;
    eprintln!("rollout at 20 %: {v2} of {N} cookie-less requests reached the candidate ({:.1} %)", share * 100.0);
    assert!((0.13..=0.27).contains(&share), "share {share} of the candidate at 20 %");

    // A client that returns its cookie always reaches the same revision.
    for (cookie, rev) in &cookies {
        for _ in 0..5 {
            let seen = get(&http, listener, "invoices", Some(&format!("a=b; {cookie}"))).await;
            assert_eq!(revision(&seen.path), rev, "{cookie} moved: {seen:?}");
            assert_eq!(seen.set_cookie, None, "a client with its cookie is not given another");
        }
    }
    // A client's own request id that could carry a cookie attribute is never written into one:
    // it is served by the stable revision with no cookie.
    for hostile in ["00; Domain=api.example.com", "0a-b;Path=/x", "zz"] {
        let r = http
            .get(format!("http://{listener}/api/items"))
            .header(reqwest::header::HOST, format!("invoices.{DOMAIN}"))
            .header("x-request-id", hostile)
            .send()
            .await
            .expect("an answer");
        assert_eq!(r.status().as_u16(), 200, "{hostile}");
        assert!(r.headers().get_all("set-cookie").iter().next().is_none(), "{hostile}: {:?}", r.headers());
        let body: Value = r.json().await.expect("the backend's record");
        assert_eq!(revision(body["path"].as_str().unwrap_or("")), "v1", "{hostile}");
    }
    // Other teams: no cohort cookie, nothing added.
    for _ in 0..20 {
        let seen = get(&http, listener, "catalog", None).await;
        assert_eq!(seen.status, 200);
        assert_eq!(seen.set_cookie, None, "another team's answers carry no cohort cookie");
        assert_eq!(seen.path, "/api/items");
    }

    // 20 % → 60 %: every candidate client stays a candidate.
    registry
        .register(&version("/v2", Some(json!({ "percent": 60 }))))
        .await
        .expect("raise the share");
    let sixty = publish().await;
    sidecar.wait_live(&sixty, Duration::from_secs(30)).await;
    for (cookie, rev) in cookies.iter().filter(|(_, r)| r == "v2") {
        let seen = get(&http, listener, "invoices", Some(cookie)).await;
        assert_eq!(revision(&seen.path), rev, "a candidate client went back at a higher share");
    }
    let mut v2 = 0;
    for _ in 0..N {
        v2 += usize::from(revision(&get(&http, listener, "invoices", None).await.path) == "v2");
    }
    let share = v2 as f64 / N as f64;
    eprintln!("rollout at 60 %: {v2} of {N} cookie-less requests reached the candidate ({:.1} %)", share * 100.0);
    assert!((0.52..=0.68).contains(&share), "share {share} of the candidate at 60 %");

    // Promote: every request, cookie or not, reaches v2.
    registry.decide_rollout("billing/invoices", Decision::Promote).await.expect("promote");
    let promoted = publish().await;
    sidecar.wait_live(&promoted, Duration::from_secs(30)).await;
    for (cookie, _) in &cookies {
        let seen = get(&http, listener, "invoices", Some(cookie)).await;
        assert_eq!(revision(&seen.path), "v2", "promoted: {seen:?}");
    }
    for _ in 0..50 {
        let seen = get(&http, listener, "invoices", None).await;
        assert_eq!((revision(&seen.path), seen.set_cookie.is_none()), ("v2", true), "{seen:?}");
    }

    // v3 at 50 % beside the promoted v2, then abort: v2 serves everything again.
    registry
        .register(&version("/v3", Some(json!({ "percent": 50 }))))
        .await
        .expect("register v3");
    let fifty = publish().await;
    sidecar.wait_live(&fifty, Duration::from_secs(30)).await;
    let view = registry.rollout_view("billing/invoices").await.expect("read").expect("registered");
    assert_eq!(view.stable_revision, Some(3), "the promoted revision is the next stable one: {view:?}");
    let mut seen_v3 = 0;
    for _ in 0..60 {
        seen_v3 += usize::from(revision(&get(&http, listener, "invoices", None).await.path) == "v3");
    }
    assert!(seen_v3 > 5, "v3 serves its share before the abort ({seen_v3} of 60)");
    registry.decide_rollout("billing/invoices", Decision::Abort).await.expect("abort");
    let aborted = publish().await;
    sidecar.wait_live(&aborted, Duration::from_secs(30)).await;
    for _ in 0..60 {
        let seen = get(&http, listener, "invoices", None).await;
        assert_eq!(revision(&seen.path), "v2", "aborted: {seen:?}");
    }
    let view = registry.rollout_view("billing/invoices").await.expect("read").expect("registered");
    assert_eq!((view.state(), view.serving_percent()), ("aborted", 0));

    let (sent, failures) = traffic.stop().await;
    eprintln!("{sent} requests while the share moved, {failures} failed");
    assert!(sent > 100, "traffic flowed throughout ({sent})");
    assert_eq!(failures, 0, "no request failed while the rollout moved");
    assert_eq!(envoy.pid(), pid, "no restart");

    // Judged steps. Cookie-less traffic throughout, so each step has requests to judge.
    let traffic = Traffic::start(&http, listener, &["invoices"], Duration::from_millis(5));
    let steps = json!({ "steps": [20, 50, 100], "interval": "4s", "max_5xx_increase": 0.05 });
    // A candidate whose backend answers 5xx to every other request: rolled back by the gateway.
    registry
        .register(&version("/v4/flaky", Some(steps.clone())))
        .await
        .expect("register a failing candidate");
    let started = std::time::Instant::now();
    let mut rolled_back = None;
    let mut last = String::new();
    while started.elapsed() < Duration::from_secs(60) {
        if let Outcome::Published { hash, .. } = reconcile(&registry, &store, &metrics, &cfg).await.expect("reconcile") {
            last = hash;
        }
        let view = registry.rollout_view("billing/invoices").await.expect("read").expect("registered");
        if view.state() == "rolled-back" {
            rolled_back = Some((started.elapsed(), view));
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (took, view) = rolled_back.expect("the failing candidate is rolled back within a minute");
    let reason = view.progress.as_ref().and_then(|p| p.reason.clone()).unwrap_or_default();
    eprintln!("failing candidate rolled back {:.1} s after its registration (interval 4 s): {reason}", took.as_secs_f64());
    assert!(reason.contains("5xx share"), "status says why: {reason}");
    assert_eq!(view.serving_percent(), 0);
    assert!(crate::rollout_live::describe(&view).contains("ROLLED BACK"));
    let back = publish_or_live(&registry, &store, &metrics, &cfg, &last).await;
    sidecar.wait_live(&back, Duration::from_secs(30)).await;
    for _ in 0..40 {
        let seen = get(&http, listener, "invoices", None).await;
        assert_eq!((seen.status, revision(&seen.path)), (200, "v2"), "rolled back to stable: {seen:?}");
    }

    traffic.stop().await;

    // A healthy candidate moves through its steps and is promoted by the gateway; no request
    // fails while the share moves.
    let traffic = Traffic::start(&http, listener, &["invoices"], Duration::from_millis(5));
    registry
        .register(&version("/v5", Some(steps)))
        .await
        .expect("register a healthy candidate");
    let started = std::time::Instant::now();
    let mut shares = Vec::new();
    let mut promoted = None;
    while started.elapsed() < Duration::from_secs(90) {
        if let Outcome::Published { hash, .. } = reconcile(&registry, &store, &metrics, &cfg).await.expect("reconcile") {
            last = hash;
        }
        let view = registry.rollout_view("billing/invoices").await.expect("read").expect("registered");
        if shares.last() != Some(&view.serving_percent()) {
            shares.push(view.serving_percent());
        }
        if view.state() == "promoted" {
            promoted = Some(started.elapsed());
            break;
        }
        assert_ne!(view.state(), "rolled-back", "a healthy candidate is not rolled back: {view:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let took = promoted.expect("the healthy candidate is promoted");
    eprintln!("healthy candidate promoted {:.1} s after its registration through shares {shares:?}", took.as_secs_f64());
    assert_eq!(shares, [20, 50, 100], "every step served in turn");
    let done = publish_or_live(&registry, &store, &metrics, &cfg, &last).await;
    sidecar.wait_live(&done, Duration::from_secs(30)).await;
    for _ in 0..40 {
        let seen = get(&http, listener, "invoices", None).await;
        assert_eq!((revision(&seen.path), seen.set_cookie.is_none()), ("v5", true), "promoted: {seen:?}");
    }
    let (sent, failures) = traffic.stop().await;
    eprintln!("{sent} requests while the judged steps moved the share, {failures} failed");
    assert!(sent > 100, "traffic flowed throughout ({sent})");
    assert_eq!(failures, 0, "no request failed while the steps moved the share");
}

/// The hash the last decided run left live: a publish now, or the one already live.
async fn publish_or_live(
    registry: &gateway_adapters::registry::DynamoRegistry,
    store: &gateway_adapters::store::S3Store,
    metrics: &CloudWatchMetrics,
    cfg: &gateway_control::reconcile::ReconcileConfig,
    last: &str,
) -> String {
    match reconcile(registry, store, metrics, cfg).await.expect("reconcile") {
        Outcome::Published { hash, .. } | Outcome::Unchanged { hash } => hash,
        other => panic!("{other:?} after {last}"),
    }
}

fn describe(view: &gateway_adapters::registry::rollout::RolloutView) -> String {
    format!("{} {}", view.state().to_uppercase().replace('-', " "), view.progress.as_ref().and_then(|p| p.reason.clone()).unwrap_or_default())
}
