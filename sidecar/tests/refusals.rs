//! What the sidecar refuses to write, what Envoy refuses to apply, and the other modes.

mod common;

use common::*;
use gateway_adapters::store::Writer;
use gateway_render::bundle::to_json_bytes;
use gateway_render::contract::{CLUSTERS_FILE, RATE_LIMIT_FILE, ROUTES_FILE};
use gateway_render::{compute_hash, Bundle, Entry, Limit, Per, Unit};
use gateway_testkit::backend::{expected_body, Backend};
use gateway_testkit::envoy::EnvoyPorts;
use gateway_testkit::MotoServer;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

fn billing(backend: &Backend, paths: &[&str]) -> Vec<Entry> {
    vec![entry(
        "billing",
        "invoices",
        "billing",
        &backend.url(),
        paths.iter().map(|p| route(p, None, vec![])).collect(),
    )]
}

/// Files changed by `edit`, re-hashed and re-stamped: a bundle that verifies, as a careless
/// hand (not the reconciler, which validates first) could publish.
fn restamped(
    mut files: BTreeMap<String, String>,
    edit: impl FnOnce(&mut BTreeMap<String, String>),
) -> Bundle {
    edit(&mut files);
    let hash = compute_hash(&files).expect("hashable files");
    for name in [CLUSTERS_FILE, ROUTES_FILE] {
        let mut doc: Value = serde_json::from_str(&files[name]).expect("JSON file");
        doc["version_info"] = Value::String(hash.clone());
        files.insert(name.to_string(), to_json_bytes(&doc));
    }
    let bundle = Bundle {
        format: 1,
        hash,
        files,
        entries: vec![],
    };
    bundle.verify().expect("the hand-made bundle verifies");
    bundle
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_envoy_refuses_leave_the_old_routes_serving_and_are_reported() {
    let moto = MotoServer::start();
    let backend = Backend::start("billing");
    let gw = Gateway::start(&moto, &billing(&backend, &["/invoices"])).await;
    let live_routes = std::fs::read(gw.dirs.routes.join(ROUTES_FILE)).expect("routes file");

    // A route to a cluster that does not exist: RDS with validate_clusters refuses the file.
    let bad = restamped(
        rendered(&billing(&backend, &["/invoices", "/refunds"])).files,
        |files| {
            let text = files[ROUTES_FILE].replace(
                "\"cluster\": \"billing.invoices\"",
                "\"cluster\": \"no.such-cluster\"",
            );
            files.insert(ROUTES_FILE.to_string(), text);
        },
    );
    let (bad_version, _) = gw.bucket.put(&bad, Writer::Unknown).await;
    let status = gw
        .sidecar
        .wait_status(Duration::from_secs(30), "a rejection", |s| {
            !s["last_rejection"].is_null()
        })
        .await;
    assert_eq!(status["last_rejection"]["version_id"], bad_version.as_str());
    let message = status["last_rejection"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains(ROUTES_FILE) && message.contains("update_rejected"),
        "{message}"
    );
    assert_eq!(status["rejected"], 1);
    assert_eq!(
        status["live"]["hash"],
        gw.first_hash.as_str(),
        "the live version is still the first"
    );

    // Envoy keeps serving the previous routes, and the refused file is not left on disk.
    assert_eq!(
        gw.backend_answer("GET", "billing", "/invoices")
            .await
            .expect("old route"),
        expected_body("billing", "GET", "/invoices")
    );
    assert_eq!(
        gw.send("GET", "billing", "/refunds")
            .await
            .expect("answer")
            .0,
        404,
        "the refused route is not live"
    );
    assert!(
        gw.stat("http.gateway.rds.gateway.update_rejected")
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
            >= 1
    );
    assert_eq!(
        gw.stat("http.gateway.rds.gateway.version_text")
            .expect("rds version"),
        gw.first_hash.as_str()
    );
    wait_until(Duration::from_secs(5), "routes file rolled back", || {
        std::fs::read(gw.dirs.routes.join(ROUTES_FILE))
            .ok()
            .as_deref()
            == Some(live_routes.as_slice())
    })
    .await;

    let cw = aws_sdk_cloudwatch::Client::new(&moto.sdk_config().await);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listed = cw
            .list_metrics()
            .namespace("Gateway")
            .metric_name("ProxyConfigRejected")
            .send()
            .await
            .expect("list_metrics");
        if listed.metrics().len() == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "ProxyConfigRejected not in CloudWatch: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The refused version is not retried, and the next good bundle goes through.
    let (_, good_hash) = gw
        .bucket
        .publish(&billing(&backend, &["/invoices", "/refunds"]))
        .await;
    gw.sidecar
        .wait_live(&good_hash, Duration::from_secs(30))
        .await;
    assert_eq!(
        gw.backend_answer("GET", "billing", "/refunds/3")
            .await
            .expect("new route"),
        expected_body("billing", "GET", "/refunds/3")
    );
    let status = gw.sidecar.status().await.expect("status");
    assert_eq!(status["rejected"], 1, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_that_does_not_verify_is_never_written() {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    let bucket = Bucket::create(moto).await;
    let dirs = Dirs::new();
    // Nothing listens on this admin port: nothing here may get as far as asking Envoy.
    let admin = format!("http://{}", EnvoyPorts::free().admin);
    let good = Bundle::new(&rendered(&billing(&backend, &["/invoices"])), &[]);

    // Bytes changed after hashing, metadata still naming the stated hash.
    let mut tampered = good.clone();
    tampered.files.insert(
        RATE_LIMIT_FILE.into(),
        format!("{}# changed\n", good.files[RATE_LIMIT_FILE]),
    );
    let (tampered_version, _) = bucket
        .put_raw(tampered.to_json().as_bytes(), &good.hash, Writer::Unknown)
        .await;
    let sidecar = SidecarProcess::start(moto, &envoy_mode_args(&bucket.name, &dirs, &admin, &[]));
    let status = sidecar
        .wait_status(Duration::from_secs(30), "a verification error", |s| {
            s["last_error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(&tampered_version))
        })
        .await;
    assert!(
        status["last_error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("does not match"),
        "{status}"
    );
    assert!(
        Dirs::list(&dirs.clusters).is_empty() && Dirs::list(&dirs.routes).is_empty(),
        "nothing written"
    );
    assert_eq!(sidecar.healthz().await, Some(503));

    // A good bundle is delivered (first delivery: written for Envoy to start from).
    let (_, good_hash) = bucket.put(&good, Writer::Reconciler).await;
    sidecar.wait_live(&good_hash, Duration::from_secs(30)).await;
    assert_eq!(sidecar.healthz().await, Some(200));
    let snapshot = |d: &Dirs| {
        (
            std::fs::read(d.clusters.join(CLUSTERS_FILE)).ok(),
            std::fs::read(d.routes.join(ROUTES_FILE)).ok(),
        )
    };
    let before = snapshot(&dirs);
    assert_eq!(
        before.1.as_deref(),
        Some(good.files[ROUTES_FILE].as_bytes())
    );

    // Cut short; then a valid bundle whose metadata hash is another one.
    let body = good.to_json();
    let (short_version, _) = bucket
        .put_raw(
            &body.as_bytes()[..body.len() / 2],
            &good.hash,
            Writer::Unknown,
        )
        .await;
    sidecar
        .wait_status(
            Duration::from_secs(30),
            "the truncated version refused",
            |s| {
                s["last_error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(&short_version))
            },
        )
        .await;
    let other = Bundle::new(&rendered(&billing(&backend, &["/other"])), &[]);
    let (mislabelled, _) = bucket
        .put_raw(other.to_json().as_bytes(), &good.hash, Writer::Unknown)
        .await;
    let status = sidecar
        .wait_status(
            Duration::from_secs(30),
            "the mislabelled version refused",
            |s| {
                s["last_error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(&mislabelled))
            },
        )
        .await;
    assert!(
        status["last_error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("metadata hash"),
        "{status}"
    );
    assert_eq!(snapshot(&dirs), before, "the last good files stay");
    assert_eq!(status["live"]["hash"], good_hash.as_str());
    let leftovers: Vec<String> = [&dirs.clusters, &dirs.routes]
        .iter()
        .flat_map(|d| Dirs::list(d))
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_beyond_the_byte_cap_is_refused_unread_naming_the_limit() {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    let bucket = Bucket::create(moto).await;
    let dirs = Dirs::new();
    let admin = format!("http://{}", EnvoyPorts::free().admin);
    let good = Bundle::new(&rendered(&billing(&backend, &["/invoices"])), &[]);
    let size = good.to_json().len();
    let (version, _) = bucket.put(&good, Writer::Reconciler).await;
    let cap = (size - 1).to_string();
    let sidecar = SidecarProcess::start(
        moto,
        &envoy_mode_args(&bucket.name, &dirs, &admin, &["--max-bundle-bytes", &cap]),
    );
    let status = sidecar
        .wait_status(
            Duration::from_secs(30),
            "the oversized bundle refused",
            |s| {
                s["last_error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(&version))
            },
        )
        .await;
    let message = status["last_error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("at most {cap} (GATEWAY_MAX_BUNDLE_BYTES)")),
        "{status}"
    );
    assert!(
        Dirs::list(&dirs.clusters).is_empty() && Dirs::list(&dirs.routes).is_empty(),
        "nothing written"
    );
}

/// A small gzip bomb (8 MiB of spaces in a few KiB on the wire, with a matching hash in its
/// metadata) stops at the cap while decompressing: refused naming the limit, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_is_refused_at_the_cap_while_decompressing() {
    let moto = shared_moto();
    let bucket = Bucket::create(moto).await;
    let dirs = Dirs::new();
    let admin = format!("http://{}", EnvoyPorts::free().admin);
    let bomb = vec![b' '; 8 << 20];
    let (version, _) = bucket
        .put_raw(&bomb, "sha256:bomb", Writer::Reconciler)
        .await;
    let wire = bucket
        .s3
        .head_object()
        .bucket(&bucket.name)
        .key("bundle.json")
        .send()
        .await
        .expect("head");
    assert!(
        wire.content_length().unwrap_or(i64::MAX) < 64 << 10,
        "the bomb is small on the wire: {:?}",
        wire.content_length()
    );
    assert_eq!(wire.content_encoding(), Some("gzip"));
    let cap = (1 << 20).to_string();
    let sidecar = SidecarProcess::start(
        moto,
        &envoy_mode_args(&bucket.name, &dirs, &admin, &["--max-bundle-bytes", &cap]),
    );
    let status = sidecar
        .wait_status(Duration::from_secs(30), "the bomb refused", |s| {
            s["last_error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(&version))
        })
        .await;
    let message = status["last_error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "decompresses to more than {cap} bytes; at most {cap} (GATEWAY_MAX_BUNDLE_BYTES)"
        )),
        "{status}"
    );
    assert!(
        Dirs::list(&dirs.clusters).is_empty() && Dirs::list(&dirs.routes).is_empty(),
        "nothing written"
    );
}

/// A version written before compression (plain JSON, no Content-Encoding) is still delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncompressed_version_from_before_compression_is_delivered() {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    let bucket = Bucket::create(moto).await;
    let dirs = Dirs::new();
    let admin = format!("http://{}", EnvoyPorts::free().admin);
    let plain = Bundle::new(&rendered(&billing(&backend, &["/invoices"])), &[]);
    let version = bucket.put_plain(&plain).await;
    let _sidecar = SidecarProcess::start(
        moto,
        &envoy_mode_args(&bucket.name, &dirs, &admin, &[]),
    );
    wait_files(&dirs, Duration::from_secs(30)).await;
    let routes = std::fs::read_to_string(dirs.routes.join("routes.json")).expect("routes.json");
    assert!(routes.contains(&plain.hash), "version {version}: {routes}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_mode_writes_only_the_rules_file() {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    let bucket = Bucket::create(moto).await;
    let dirs = Dirs::new();
    let limited = |n: u32| {
        vec![entry(
            "billing",
            "invoices",
            "billing",
            &backend.url(),
            vec![route(
                "/invoices",
                None,
                vec![Limit::Global {
                    per: Per::ClientIp,
                    header: None,
                    requests: n,
                    every: Unit::Minute,
                }],
            )],
        )]
    };
    let first = rendered(&limited(10));
    bucket
        .put(&Bundle::new(&first, &limited(10)), Writer::Reconciler)
        .await;
    let args: Vec<String> = vec![
        "--bucket".into(),
        bucket.name.clone(),
        "--ratelimit-dir".into(),
        dirs.ratelimit.display().to_string(),
        "--interval".into(),
        "1".into(),
    ];
    let sidecar = SidecarProcess::start(moto, &args);
    let status = sidecar
        .wait_live(&first.hash, Duration::from_secs(30))
        .await;
    assert_eq!(status["mode"], "ratelimit");
    assert_eq!(Dirs::list(&dirs.ratelimit), [RATE_LIMIT_FILE]);
    assert_eq!(
        std::fs::read_to_string(dirs.ratelimit.join(RATE_LIMIT_FILE)).expect("rules"),
        first.files[RATE_LIMIT_FILE]
    );
    assert_eq!(sidecar.healthz().await, Some(200));

    let second = rendered(&limited(20));
    assert_ne!(second.files[RATE_LIMIT_FILE], first.files[RATE_LIMIT_FILE]);
    bucket
        .put(&Bundle::new(&second, &limited(20)), Writer::Reconciler)
        .await;
    sidecar
        .wait_live(&second.hash, Duration::from_secs(30))
        .await;
    assert_eq!(
        std::fs::read_to_string(dirs.ratelimit.join(RATE_LIMIT_FILE)).expect("rules"),
        second.files[RATE_LIMIT_FILE]
    );
    assert_eq!(Dirs::list(&dirs.ratelimit), [RATE_LIMIT_FILE]);
    for dir in [&dirs.clusters, &dirs.routes] {
        assert!(Dirs::list(dir).is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_probe_usage_and_sigterm() {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    let bucket = Bucket::create(moto).await;
    let dirs = Dirs::new();
    let ports = EnvoyPorts::free();
    let admin = format!("http://{}", ports.admin);
    let once_args = envoy_mode_args(&bucket.name, &dirs, &admin, &["--once"]);

    // Nothing published: exit 1 with the reason.
    let mut once = SidecarProcess::start(moto, &once_args);
    assert_eq!(
        once.wait_exit(Duration::from_secs(30)),
        Some(1),
        "{}",
        once.log_text()
    );
    assert!(
        once.log_text().contains("no bundle.json published yet"),
        "{}",
        once.log_text()
    );

    // First delivery: files written, exit 0, Envoy starts from them.
    let (_, first_hash) = bucket.publish(&billing(&backend, &["/invoices"])).await;
    let mut once = SidecarProcess::start(moto, &once_args);
    assert_eq!(
        once.wait_exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        once.log_text()
    );
    let envoy = start_envoy(&dirs, ports);
    let client = client();
    assert_eq!(
        backend_answer(
            &client,
            envoy.listener_addr(),
            "GET",
            "billing",
            "/invoices"
        )
        .await
        .expect("served"),
        expected_body("billing", "GET", "/invoices")
    );

    // A new bundle with --once: exits 0 only once Envoy runs it.
    let (_, second_hash) = bucket
        .publish(&billing(&backend, &["/invoices", "/refunds"]))
        .await;
    assert_ne!(first_hash, second_hash);
    let mut once = SidecarProcess::start(moto, &once_args);
    assert_eq!(
        once.wait_exit(Duration::from_secs(60)),
        Some(0),
        "{}",
        once.log_text()
    );
    let (_, stats) = envoy
        .admin_get("/stats?filter=version_text")
        .expect("stats");
    assert!(
        stats.contains(&format!(
            "cluster_manager.cds.version_text: \"{second_hash}\""
        )),
        "{stats}"
    );
    assert!(
        stats.contains(&format!(
            "http.gateway.rds.gateway.version_text: \"{second_hash}\""
        )),
        "{stats}"
    );
    assert_eq!(
        backend_answer(&client, envoy.listener_addr(), "GET", "billing", "/refunds")
            .await
            .expect("new route"),
        expected_body("billing", "GET", "/refunds")
    );

    // --probe: 0 on a 200, 1 otherwise.
    let mut running =
        SidecarProcess::start(moto, &envoy_mode_args(&bucket.name, &dirs, &admin, &[]));
    running
        .wait_live(&second_hash, Duration::from_secs(30))
        .await;
    let probe = |url: String| {
        Command::new(env!("CARGO_BIN_EXE_gateway-sidecar"))
            .arg("--probe")
            .arg(url)
            .status()
            .expect("probe runs")
            .code()
    };
    assert_eq!(probe(format!("http://{}/healthz", running.listen)), Some(0));
    assert_eq!(probe(format!("http://{}/nope", running.listen)), Some(1));
    assert_eq!(
        probe(format!("http://{}/healthz", EnvoyPorts::free().admin)),
        Some(1)
    );

    // SIGTERM: a clean exit 0.
    let killed = Command::new("kill")
        .arg("-TERM")
        .arg(running.pid().to_string())
        .status()
        .expect("kill runs");
    assert!(killed.success());
    assert_eq!(
        running.wait_exit(Duration::from_secs(10)),
        Some(0),
        "{}",
        running.log_text()
    );

    // Usage errors exit 2.
    let usage = Command::new(env!("CARGO_BIN_EXE_gateway-sidecar"))
        .args(["--clusters-dir", "/tmp/a", "--routes-dir", "/tmp/b"])
        .env_remove("GATEWAY_BUCKET")
        .output()
        .expect("runs");
    assert_eq!(
        usage.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&usage.stderr)
    );
    assert!(String::from_utf8_lossy(&usage.stderr).contains("--bucket"));
}

async fn wait_until(within: Duration, what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not within {within:?}");
}
