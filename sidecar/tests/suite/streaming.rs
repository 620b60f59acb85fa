//! The sidecar reads each version as a stream (docs/design.md#delivery): every forged bundle a
//! bucket writer can put is refused, end to end, naming why, and nothing of a refused version
//! reaches the watched directories (`refusals.rs` covers a tampered file, a cut-short body, a
//! metadata hash that differs, the byte cap, a gzip bomb and an uncompressed version).
//!
//! `first_delivery_memory` (ignored) is a measurement, not a check: the sidecar binary's peak
//! and idle RSS on the first delivery of a generated registry, sizes from `STREAMING_ROUTES`
//! (default `10000`), and with `STREAMING_UNION=1` its peak on a next delivery through a union
//! to a real Envoy; run it with
//! `cargo test -p gateway-sidecar --test streaming -- --ignored --nocapture`.

use gateway_testkit::delivery as common;

use common::generated::{generated, route_counts, status_kib};
use common::*;
use gateway_adapters::store::{encoding, Writer};
use gateway_render::bundle::to_json_bytes;
use gateway_render::contract::{BUNDLE_META_HASH, BUNDLE_META_WRITER, CLUSTERS_FILE, ROUTES_FILE};
use gateway_render::{compute_hash, Bundle, Entry, RenderConfig};
use serde_json::json;
use gateway_testkit::backend::Backend;
use gateway_testkit::envoy::EnvoyPorts;
use serde_json::Value;
use std::time::{Duration, Instant};

fn billing(backend: &Backend) -> Vec<Entry> {
    vec![entry(
        "billing",
        "invoices",
        "billing",
        &backend.url(),
        vec![route("/invoices", None, vec![])],
    )]
}

/// Waits until the sidecar reports an error naming `version`; the message.
async fn refusal(sidecar: &SidecarProcess, version: &str) -> String {
    let status = sidecar
        .wait_status(
            Duration::from_secs(30),
            &format!("{version} refused"),
            |s| {
                s["last_error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(version))
            },
        )
        .await;
    status["last_error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `files` changed by `edit`, re-hashed and re-stamped: a bundle whose hash is right, as anyone
/// holding the bundle format could make.
fn rehashed(good: &Bundle, edit: impl FnOnce(&mut Value, &mut Value)) -> Bundle {
    let mut files = good.files.clone();
    let mut clusters: Value = serde_json::from_str(&files[CLUSTERS_FILE]).expect("clusters");
    let mut routes: Value = serde_json::from_str(&files[ROUTES_FILE]).expect("routes");
    edit(&mut clusters, &mut routes);
    files.insert(CLUSTERS_FILE.into(), to_json_bytes(&clusters));
    files.insert(ROUTES_FILE.into(), to_json_bytes(&routes));
    let hash = compute_hash(&files).expect("hash");
    for name in [CLUSTERS_FILE, ROUTES_FILE] {
        let mut doc: Value = serde_json::from_str(&files[name]).expect("json");
        doc["version_info"] = Value::String(hash.clone());
        files.insert(name.to_string(), to_json_bytes(&doc));
    }
    let bundle = Bundle {
        hash,
        files,
        entries: good.entries.clone(),
    };
    bundle.verify().expect("the forged bundle is well hashed");
    bundle
}

/// One more cluster with `address` and a virtual host routed to it.
fn routed_to(good: &Bundle, address: Value) -> Bundle {
    rehashed(good, |clusters, routes| {
        clusters["resources"].as_array_mut().expect("list").push(json!({
            "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            "name": "steal",
            "type": "STATIC",
            "connect_timeout": "1s",
            "load_assignment": {"cluster_name": "steal", "endpoints": [{"lb_endpoints": [
                {"endpoint": {"address": address}}]}]}
        }));
        routes["resources"][0]["virtual_hosts"]
            .as_array_mut()
            .expect("vhosts")
            .insert(0, json!({"name": "steal", "domains": ["steal.example.com"],
                "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "steal"}}]}));
    })
}

/// Every kind of forged `bundle.json` a bucket writer can put: refused by the sidecar binary,
/// each naming why, before anything reaches the watched directories; then a good one is
/// delivered byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_bundles_are_never_delivered_and_the_refusal_names_why() {
    let (moto, backend, bucket, dirs) = billing_fixture().await;
    // Nothing listens here: a first delivery never asks Envoy, and nothing refused gets further.
    let admin = format!("http://{}", EnvoyPorts::free().admin);
    let good = Bundle::new(&rendered(&billing(&backend)), &[]);
    let routes = good.files[ROUTES_FILE].clone();

    let admin_pipe = routed_to(&good, json!({"pipe": {"path": "/run/envoy/admin.sock"}}));
    let metadata = routed_to(
        &good,
        json!({"socket_address": {"address": "169.254.169.254", "port_value": 80}}),
    );
    let own_admin = routed_to(
        &good,
        json!({"socket_address": {"address": "10.1.2.3", "port_value": 15000}}),
    );
    let mut tampered = bucket.signed_archive(&good).await;
    let at = tampered
        .windows(routes.len())
        .position(|w| w == routes.as_bytes())
        .expect("routes in the archive");
    tampered[at + routes.len() / 2] ^= 0x01;
    let other_key = gateway_testkit::signing::new_signer(moto).await;
    let sealed = good.seal();
    let by_other = sealed.archive(Some(&other_key.sign(&sealed.manifest).await.expect("sign")));
    let format_1 = serde_json::to_vec(&json!({
        "entries": [], "files": good.files, "format": 1, "hash": good.hash
    }))
    .expect("json");
    let wire = encoding::compress(&bucket.signed_archive(&good).await);

    let cases: Vec<(&str, Vec<u8>, &str, bool)> = vec![
        (
            "signed, well hashed, routing to the admin pipe",
            bucket.signed_archive(&admin_pipe).await,
            "refused by the delivery policy: clusters.json: cluster steal: endpoint address [\"pipe\"]",
            false,
        ),
        (
            "signed, routing to the instance metadata",
            bucket.signed_archive(&metadata).await,
            "169.254.169.254 is a link-local/metadata address",
            false,
        ),
        (
            "signed, routing to the gateway's reserved ports",
            bucket.signed_archive(&own_admin).await,
            "one the gateway keeps (15000-15019)",
            false,
        ),
        ("one byte changed after signing", tampered, "routes.json: its bytes hash to", false),
        (
            "signed by another KMS key",
            by_other,
            "does not verify with any trusted key",
            false,
        ),
        ("unsigned", good.seal().archive(None), "bundle is unsigned", false),
        ("an unsigned format-1 bundle", format_1, "bundle is format 1", false),
        ("gzip cut short", wire[..wire.len() / 2].to_vec(), "not valid gzip", true),
    ];
    for (what, body, expected, raw_wire) in cases {
        let version = if raw_wire {
            let out = bucket
                .s3
                .put_object()
                .bucket(&bucket.name)
                .key("bundle.json")
                .content_encoding(encoding::CONTENT_ENCODING)
                .metadata(BUNDLE_META_HASH, &good.hash)
                .metadata(BUNDLE_META_WRITER, "reconciler")
                .body(body.into())
                .send()
                .await
                .expect("put");
            out.version_id().expect("versioned").to_string()
        } else {
            bucket.put_raw(&body, &good.hash, Writer::Reconciler).await.0
        };
        let sidecar =
            SidecarProcess::start(moto, &envoy_mode_args(&bucket.name, &dirs, &admin, &[]));
        let message = refusal(&sidecar, &version).await;
        assert!(message.contains(expected), "{what}: {message}");
        // Nothing written, no temp file left (the JWT filter's subdirectory, made at start,
        // stays empty).
        dirs.assert_nothing_written();
    }

    // A sidecar with no key to trust refuses to start at all.
    let mut args = envoy_mode_args(&bucket.name, &dirs, &admin, &[]);
    let at = args.iter().position(|a| a == "--trust-key").expect("flag");
    args.drain(at..at + 2);
    let mut untrusting = SidecarProcess::start(moto, &args);
    let log = untrusting.assert_exits(Duration::from_secs(20), 2);
    assert!(log.contains("no --trust-key or --trust-kms-key"), "{log}");

    // And a good version goes through, byte for byte.
    let sidecar = SidecarProcess::start(moto, &envoy_mode_args(&bucket.name, &dirs, &admin, &[]));
    let (_, hash) = bucket.put(&good, Writer::Reconciler).await;
    sidecar.wait_live(&hash, Duration::from_secs(30)).await;
    assert_eq!(
        std::fs::read_to_string(dirs.routes.join(ROUTES_FILE)).expect("routes"),
        routes
    );
    assert_eq!(Dirs::list(&dirs.routes), [gateway_render::contract::JWT_SUBDIR, ROUTES_FILE]);
    let status = sidecar.status().await.expect("status");
    assert!(
        status["live"]["signer"]
            .as_str()
            .is_some_and(|s| s.starts_with("signed, verified with")),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn first_delivery_memory() {
    let sizes = route_counts("STREAMING_ROUTES", "10000");
    let moto = shared_moto();
    for routes in sizes {
        let entries: Vec<Entry> = (0..routes / 10).map(|i| generated(i, 10)).collect();
        let rendered =
            gateway_render::render(&entries, &RenderConfig::new(DOMAIN)).expect("renders");
        let bundle = Bundle::new(&rendered, &entries);
        drop(rendered);
        let bucket = Bucket::create(moto).await;
        let (_, hash) = bucket.put(&bundle, Writer::Reconciler).await;
        let raw = bundle.seal().archive_len();
        drop(bundle);
        let dirs = Dirs::new();
        let admin = format!("http://{}", EnvoyPorts::free().admin);
        let sidecar =
            SidecarProcess::start(moto, &envoy_mode_args(&bucket.name, &dirs, &admin, &[]));
        let started = Instant::now();
        sidecar.wait_live(&hash, Duration::from_secs(600)).await;
        let took = started.elapsed();
        let peak = status_kib(sidecar.pid(), "VmHWM").unwrap_or(0);
        tokio::time::sleep(Duration::from_secs(5)).await;
        let idle = status_kib(sidecar.pid(), "VmRSS").unwrap_or(0);
        println!(
            "{routes} routes ({:.1} MB bundle): first delivery {:.1} s, peak {:.1} MiB, idle {:.1} MiB",
            raw as f64 / 1e6,
            took.as_secs_f64(),
            peak as f64 / 1024.0,
            idle as f64 / 1024.0
        );
        if std::env::var("STREAMING_UNION").is_err() {
            continue;
        }
        // A bundle without the first entry and with another's backend moved removes a cluster and
        // changes one: all three steps, a union.
        drop(sidecar);
        let ports = EnvoyPorts::free();
        let admin = format!("http://{}", ports.admin);
        let mut args = envoy_mode_args(&bucket.name, &dirs, &admin, &[]);
        let at = args
            .iter()
            .position(|a| a == "--apply-timeout")
            .expect("flag");
        args[at + 1] = "300".into();
        let envoy = start_envoy(&dirs, ports);
        let sidecar = SidecarProcess::start(moto, &args);
        sidecar.wait_live(&hash, Duration::from_secs(600)).await;
        let mut changed = entries[1..].to_vec();
        changed[0].backend = changed[0].backend.replace(":8443", ":9443");
        let rendered =
            gateway_render::render(&changed, &RenderConfig::new(DOMAIN)).expect("renders");
        let next = Bundle::new(&rendered, &changed);
        drop(rendered);
        let (_, next_hash) = bucket.put(&next, Writer::Reconciler).await;
        drop(next);
        sidecar
            .wait_live(&next_hash, Duration::from_secs(900))
            .await;
        let log = sidecar.log_text();
        assert!(log.contains("step 1: clusters union"), "{log}");
        let peak = status_kib(sidecar.pid(), "VmHWM").unwrap_or(0);
        println!(
            "{routes} routes: delivery with a union, peak {:.1} MiB (Envoy {:.0} MiB)",
            peak as f64 / 1024.0,
            status_kib(envoy.pid(), "VmRSS").unwrap_or(0) as f64 / 1024.0
        );
    }
}
