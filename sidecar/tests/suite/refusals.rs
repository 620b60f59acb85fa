//! What the sidecar refuses to write, what Envoy refuses to apply, and the other modes.

use gateway_testkit::delivery as common;

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
    common::billing(&backend.url(), paths)
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

    // A route whose regex does not compile: within the delivery policy (which judges targets,
    // not matches), and refused by Envoy's RDS.
    let bad = restamped(
        rendered(&billing(&backend, &["/invoices", "/refunds"])).files,
        |files| {
            let text = files[ROUTES_FILE].replace(
                "\"path_separated_prefix\": \"/refunds\"",
                "\"safe_regex\": {\"regex\": \"(unclosed\"}",
            );
            assert_ne!(text, files[ROUTES_FILE], "the route to break is there");
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
    gw.assert_reaches_backend("GET", "billing", "/invoices")
        .await;
    assert_eq!(
        gw.code("GET", "billing", "/refunds").await,
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

    wait_until_async(
        Duration::from_secs(10),
        "ProxyConfigRejected in CloudWatch",
        async || {
            gateway_metrics(&moto, "ProxyConfigRejected")
                .await
                .metrics()
                .len()
                == 1
        },
    )
    .await;

    // The refused version is not retried, and the next good bundle goes through.
    let (_, good_hash) = gw
        .bucket
        .publish(&billing(&backend, &["/invoices", "/refunds"]))
        .await;
    gw.sidecar
        .wait_live(&good_hash, Duration::from_secs(30))
        .await;
    gw.assert_reaches_backend("GET", "billing", "/refunds/3")
        .await;
    let status = gw.sidecar.status().await.expect("status");
    assert_eq!(status["rejected"], 1, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_that_does_not_verify_is_never_written() {
    // Nothing listens on the admin port: nothing here may get as far as asking Envoy.
    let offline = NoEnvoy::new().await;
    let (bucket, dirs) = (&offline.bucket, &offline.dirs);
    let backend = Backend::start("billing");
    let good = Bundle::new(&rendered(&billing(&backend, &["/invoices"])), &[]);

    // One byte of the rules changed after signing, metadata still naming the stated hash.
    let mut tampered = bucket.signed_archive(&good).await;
    let rules = good.files[RATE_LIMIT_FILE].as_bytes();
    let at = tampered
        .windows(rules.len())
        .position(|w| w == rules)
        .expect("the rules file in the archive");
    tampered[at] ^= 0x20;
    let (tampered_version, _) = bucket
        .put_raw(&tampered, &good.hash, Writer::Unknown)
        .await;
    let sidecar = offline.sidecar(&[]);
    let status = sidecar
        .wait_error_naming(&tampered_version, "a verification error")
        .await;
    assert!(
        last_error(&status).contains("ratelimit.yaml: its bytes hash to"),
        "{status}"
    );
    dirs.assert_nothing_written();
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
    let before = snapshot(dirs);
    assert_eq!(
        before.1.as_deref(),
        Some(good.files[ROUTES_FILE].as_bytes())
    );

    // Cut short; then a valid bundle whose metadata hash is another one.
    let body = bucket.signed_archive(&good).await;
    let short = &body[..body.len() / 2];
    let (short_version, _) = bucket.put_raw(short, &good.hash, Writer::Unknown).await;
    sidecar
        .wait_error_naming(&short_version, "the truncated version refused")
        .await;
    let other = Bundle::new(&rendered(&billing(&backend, &["/other"])), &[]);
    let (mislabelled, _) = bucket
        .put_raw(&bucket.signed_archive(&other).await, &good.hash, Writer::Unknown)
        .await;
    let status = sidecar
        .wait_error_naming(&mislabelled, "the mislabelled version refused")
        .await;
    assert!(last_error(&status).contains("metadata hash"), "{status}");
    assert_eq!(snapshot(dirs), before, "the last good files stay");
    assert_eq!(status["live"]["hash"], good_hash.as_str());
    let leftovers: Vec<String> = [&dirs.clusters, &dirs.routes]
        .iter()
        .flat_map(|d| Dirs::list(d))
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A bundle past `--max-bundle-bytes` is refused naming the limit (`limit` is the text after
/// the cap in the message), and nothing is written.
async fn assert_refused_at_cap(offline: &NoEnvoy, version: &str, cap: usize, limit: &str) {
    let cap = cap.to_string();
    let sidecar = offline.sidecar(&["--max-bundle-bytes", &cap]);
    let status = sidecar
        .wait_error_naming(version, "the oversized bundle refused")
        .await;
    let expected = limit.replace("{cap}", &cap);
    assert!(last_error(&status).contains(&expected), "{status}");
    offline.dirs.assert_nothing_written();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_beyond_the_byte_cap_is_refused_unread_naming_the_limit() {
    let offline = NoEnvoy::new().await;
    let backend = Backend::start("billing");
    let good = Bundle::new(&rendered(&billing(&backend, &["/invoices"])), &[]);
    let size = offline.bucket.signed_archive(&good).await.len();
    let (version, _) = offline.bucket.put(&good, Writer::Reconciler).await;
    assert_refused_at_cap(
        &offline,
        &version,
        size - 1,
        "at most {cap} (GATEWAY_MAX_BUNDLE_BYTES)",
    )
    .await;
}

/// A small gzip bomb (an archive member of 8 MiB of spaces in a few KiB on the wire, with a
/// matching hash in its metadata) stops at the cap while decompressing: refused naming the limit, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_is_refused_at_the_cap_while_decompressing() {
    let offline = NoEnvoy::new().await;
    let bucket = &offline.bucket;
    // A manifest member that says it is 8 MiB, and 8 MiB of spaces: an archive until the cap.
    let mut header = tar::Header::new_ustar();
    header.set_path("manifest.json").expect("path");
    header.set_size(8 << 20);
    header.set_cksum();
    let mut bomb = header.as_bytes().to_vec();
    bomb.extend(vec![b' '; 8 << 20]);
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
    assert_refused_at_cap(
        &offline,
        &version,
        1 << 20,
        "decompresses to more than {cap} bytes; at most {cap} (GATEWAY_MAX_BUNDLE_BYTES)",
    )
    .await;
}

/// A version stored uncompressed (no Content-Encoding) is still delivered: readers tell the two
/// apart by the bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncompressed_version_from_before_compression_is_delivered() {
    let offline = NoEnvoy::new().await;
    let backend = Backend::start("billing");
    let plain = Bundle::new(&rendered(&billing(&backend, &["/invoices"])), &[]);
    let version = offline.bucket.put_plain(&plain).await;
    let _sidecar = offline.sidecar(&[]);
    let dirs = &offline.dirs;
    wait_files(dirs, Duration::from_secs(30)).await;
    let routes = std::fs::read_to_string(dirs.routes.join("routes.json")).expect("routes.json");
    assert!(routes.contains(&plain.hash), "version {version}: {routes}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_mode_writes_only_the_rules_file() {
    let (moto, backend, bucket, dirs) = billing_fixture().await;
    let limited = |n: u32| {
        billing_routes(
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
        )
    };
    // The first rules are published before the sidecar starts; the second while it runs.
    let mut sidecar = None;
    let mut previous: Option<String> = None;
    for requests in [10, 20] {
        let next = rendered(&limited(requests));
        if let Some(previous) = &previous {
            assert_ne!(&next.files[RATE_LIMIT_FILE], previous);
        }
        bucket
            .put(&Bundle::new(&next, &limited(requests)), Writer::Reconciler)
            .await;
        let sidecar = sidecar.get_or_insert_with(|| {
            SidecarProcess::start(moto, &ratelimit_mode_args(&bucket.name, &dirs))
        });
        let status = sidecar.wait_live(&next.hash, Duration::from_secs(30)).await;
        assert_eq!(status["mode"], "ratelimit");
        // Written beside the rules directory and renamed in: the rate-limit service, which
        // reads every file of its directory, never finds a temp file there.
        assert_eq!(Dirs::list(&dirs.ratelimit), [RATE_LIMIT_FILE]);
        assert!(Dirs::list(&dirs.ratelimit_staging).is_empty());
        assert_eq!(
            std::fs::read_to_string(dirs.ratelimit.join(RATE_LIMIT_FILE)).expect("rules"),
            next.files[RATE_LIMIT_FILE]
        );
        assert_eq!(sidecar.healthz().await, Some(200));
        previous = Some(next.files[RATE_LIMIT_FILE].clone());
    }
    dirs.assert_nothing_written();
}

/// The stats lines saying Envoy's CDS and RDS run the config `hash`; fails the test otherwise.
fn assert_envoy_runs(envoy: &gateway_testkit::envoy::EnvoyProcess, hash: &str) {
    let (_, stats) = envoy
        .admin_get("/stats?filter=version_text")
        .expect("stats");
    for stat in [
        "cluster_manager.cds.version_text",
        "http.gateway.rds.gateway.version_text",
    ] {
        assert!(stats.contains(&format!("{stat}: \"{hash}\"")), "{stats}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_probe_usage_and_sigterm() {
    let (moto, backend, bucket, dirs) = billing_fixture().await;
    let ports = EnvoyPorts::free();
    let admin = format!("http://{}", ports.admin);
    let once_args = envoy_mode_args(&bucket.name, &dirs, &admin, &["--once"]);
    let within = Duration::from_secs(30);

    // Nothing published: exit 1 with the reason.
    let log = SidecarProcess::run_to_exit(moto, &once_args, within, 1);
    assert!(log.contains("no bundle.json published yet"), "{log}");

    // First delivery: files written, exit 0, Envoy starts from them.
    let (_, first_hash) = bucket.publish(&billing(&backend, &["/invoices"])).await;
    SidecarProcess::run_to_exit(moto, &once_args, within, 0);
    let envoy = start_envoy(&dirs, ports);
    let client = client();
    let served =
        |path: &'static str| backend_answer(&client, envoy.listener_addr(), "GET", "billing", path);
    assert_eq!(
        served("/invoices").await.expect("served"),
        expected_body("billing", "GET", "/invoices")
    );

    // A new bundle with --once: exits 0 only once Envoy runs it.
    let (_, second_hash) = bucket
        .publish(&billing(&backend, &["/invoices", "/refunds"]))
        .await;
    assert_ne!(first_hash, second_hash);
    SidecarProcess::run_to_exit(moto, &once_args, Duration::from_secs(60), 0);
    assert_envoy_runs(&envoy, &second_hash);
    assert_eq!(
        served("/refunds").await.expect("new route"),
        expected_body("billing", "GET", "/refunds")
    );

    // --probe: 0 on a 200, 1 otherwise.
    let mut running =
        SidecarProcess::start(moto, &envoy_mode_args(&bucket.name, &dirs, &admin, &[]));
    running.wait_live(&second_hash, within).await;
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
    running.assert_exits(Duration::from_secs(10), 0);

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

    // `--version` answers, and a mistyped boolean setting is a usage error naming the value.
    let version = Command::new(env!("CARGO_BIN_EXE_gateway-sidecar"))
        .arg("--version")
        .output()
        .expect("runs");
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("gateway-sidecar {}", env!("CARGO_PKG_VERSION"))
    );
    let typo = Command::new(env!("CARGO_BIN_EXE_gateway-sidecar"))
        .args(["--bucket", "b", "--clusters-dir", "/tmp/a", "--routes-dir", "/tmp/b"])
        .env("GATEWAY_ALLOW_UNSIGNED", "yes")
        .output()
        .expect("runs");
    assert_eq!(typo.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&typo.stderr);
    assert!(stderr.contains("\"yes\" is not true, false, 1 or 0"), "{stderr}");
}

async fn wait_until(within: Duration, what: &str, check: impl Fn() -> bool) {
    wait_until_async(within, what, async || check()).await
}

async fn wait_until_async(within: Duration, what: &str, check: impl AsyncFn() -> bool) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not within {within:?}");
}
