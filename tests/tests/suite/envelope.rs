//! The memory envelope: what a registry of N routes costs in memory at each stage that must hold
//! it, measured with the real pieces (docs/benchmarks.md, "Memory envelope"). A measurement, not a
//! check: run it with
//! `cargo test -p gateway-testkit --test envelope -- --ignored --nocapture` (sizes from
//! `ENVELOPE_ROUTES`, default `10000,25000,50000`); it prints the table and writes it to
//! `target/bench-envelope.md`.
//!
//! For each size: a registry of entries with ten routes each (`ENVELOPE_ROUTES_PER_ENTRY`) and
//! one https backend each (the
//! costliest cluster kind) is written to moto's table, the reconcile function's own code runs
//! (read, render, validate with the pinned Envoy, publish) while a sampler reads the resident
//! memory of this process and of its Envoy child every 10 ms, then the sidecar binary delivers
//! the published bundle to a real Envoy on the gateway's bootstrap, and the peaks of both are
//! read from `/proc` (`VmHWM`, `VmRSS`).

// The sidecar tests' harness and the functions tests' reconcile set-up, shared rather than
// copied.
use gateway_testkit::delivery as common;
use gateway_testkit::control as support;

use common::generated::{
    generated, generous_bounds, one_certificate_ca, route_counts, status_kib,
};
use common::{envoy_mode_args, start_envoy, Dirs, SidecarProcess, DOMAIN};
use gateway_adapters::metrics::CloudWatchMetrics;
use gateway_adapters::store::ConfigStore;
use gateway_control::reconcile::{reconcile, seed, Outcome};
use gateway_render::{Entry, Policy, RenderConfig};
use gateway_testkit::envoy::EnvoyPorts;
use gateway_testkit::repo_root;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Routes per entry (`ENVELOPE_ROUTES_PER_ENTRY`, default 10): fewer means more clusters for the
/// same routes, which separates the per-route cost from the per-cluster one.
fn routes_per_entry() -> usize {
    std::env::var("ENVELOPE_ROUTES_PER_ENTRY")
        .ok()
        .map(|v| v.parse().expect("ENVELOPE_ROUTES_PER_ENTRY: a count"))
        .unwrap_or(10)
}

/// Children of `parent` whose command is `envoy`.
fn envoy_children(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|d| d.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // pid (comm) state ppid ...
            let Some((comm, rest)) = stat.split_once(") ") else {
                return false;
            };
            let ppid = rest
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u32>().ok());
            comm.ends_with("(envoy") && ppid == Some(parent)
        })
        .collect()
}

/// Samples this process plus its Envoy children every 10 ms until stopped; returns the peak of
/// the sum and the peak of the children alone, in MiB.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(u64, u64)>,
}

impl Sampler {
    fn start() -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let me = std::process::id();
        let thread = std::thread::spawn(move || {
            let (mut peak_sum, mut peak_child) = (0u64, 0u64);
            while !flag.load(Ordering::Relaxed) {
                let own = status_kib(me, "VmRSS").unwrap_or(0);
                let child: u64 = envoy_children(me)
                    .into_iter()
                    .filter_map(|p| status_kib(p, "VmRSS"))
                    .sum();
                peak_sum = peak_sum.max(own + child);
                peak_child = peak_child.max(child);
                std::thread::sleep(Duration::from_millis(10));
            }
            (peak_sum / 1024, peak_child / 1024)
        });
        Sampler { stop, thread }
    }

    fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("sampler")
    }
}

struct Row {
    routes: usize,
    https_clusters: usize,
    ca: &'static str,
    reconcile_secs: f64,
    reconcile_peak: u64,
    validate_peak: u64,
    bundle_mib: f64,
    sidecar_peak: u64,
    envoy_serving: u64,
}

async fn measure(routes: usize, ca: (&'static str, String)) -> Row {
    let moto = common::shared_moto();
    let conf = moto.sdk_config().await;
    let policy = Policy::new(DOMAIN, true);
    let dynamo = gateway_adapters::aws::dynamodb_client(&conf);
    let (registry, store) =
        support::table_and_bucket(moto, dynamo.clone(), &policy, "envelope").await;
    let bucket = store.bucket().to_string();
    let metrics = CloudWatchMetrics::from_conf(&conf);
    let mut render = RenderConfig::new(DOMAIN);
    render.upstream_ca_file = ca.1.clone();
    let cfg = support::reconcile_config(render, policy, generous_bounds());
    seed(&registry, &store, &cfg).await.expect("seed");
    let entries: Vec<Entry> = (0..routes.div_ceil(routes_per_entry()))
        .map(|i| generated(i, routes_per_entry()))
        .collect();
    let https_clusters = entries.len();
    support::load_entries(&dynamo, registry.table(), &entries).await;
    drop(entries);

    let sampler = Sampler::start();
    let started = Instant::now();
    let outcome = reconcile(&registry, &store, &metrics, &cfg)
        .await
        .expect("reconcile");
    let reconcile_secs = started.elapsed().as_secs_f64();
    let (reconcile_peak, validate_peak) = sampler.stop();
    let Outcome::Published { hash, .. } = outcome else {
        panic!("the generated registry publishes: {outcome}");
    };
    let live = store
        .head_live()
        .await
        .expect("head")
        .expect("a live bundle");
    let bundle_mib = store
        .get_version(&live.version_id)
        .await
        .expect("get")
        .len() as f64
        / 1048576.0;

    let dirs = Dirs::new();
    let ports = EnvoyPorts::free();
    let admin = format!("http://{}", ports.admin);
    let sidecar = SidecarProcess::start(moto, &envoy_mode_args(&bucket, &dirs, &admin, &[]));
    common::wait_files(&dirs, Duration::from_secs(600)).await;
    let envoy = start_envoy(&dirs, ports);
    sidecar.wait_live(&hash, Duration::from_secs(600)).await;
    let sidecar_peak = status_kib(sidecar.pid(), "VmHWM").unwrap_or(0) / 1024;
    let envoy_serving = status_kib(envoy.pid(), "VmRSS").unwrap_or(0) / 1024;
    Row {
        routes,
        https_clusters,
        ca: ca.0,
        reconcile_secs,
        reconcile_peak,
        validate_peak,
        bundle_mib,
        sidecar_peak,
        envoy_serving,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --ignored"]
async fn memory_envelope() {
    let sizes = route_counts("ENVELOPE_ROUTES", "10000,25000,50000");
    let small_ca = one_certificate_ca();
    let mut rows = Vec::new();
    for &n in &sizes {
        for ca in [
            ("one certificate", small_ca.clone()),
            (
                "system bundle",
                gateway_render::renderer::DEFAULT_UPSTREAM_CA_FILE.to_string(),
            ),
        ] {
            let row = measure(n, ca).await;
            eprintln!(
                "{} routes, {}: reconcile {:.1} s, peak {} MiB (Envoy {} MiB), sidecar {} MiB, Envoy serving {} MiB",
                row.routes, row.ca, row.reconcile_secs, row.reconcile_peak, row.validate_peak,
                row.sidecar_peak, row.envoy_serving
            );
            rows.push(row);
        }
    }
    let mut table = String::from(
        "| routes | https clusters | upstream CA | reconcile run | reconcile + validate peak | of which Envoy validate | bundle | sidecar peak | Envoy serving |\n|---:|---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in &rows {
        table.push_str(&format!(
            "| {} | {} | {} | {:.1} s | {} MiB | {} MiB | {:.1} MiB | {} MiB | {} MiB |\n",
            r.routes,
            r.https_clusters,
            r.ca,
            r.reconcile_secs,
            r.reconcile_peak,
            r.validate_peak,
            r.bundle_mib,
            r.sidecar_peak,
            r.envoy_serving
        ));
    }
    println!("{table}");
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target"));
    std::fs::write(target.join("bench-envelope.md"), &table).expect("write the table");
    assert!(
        rows.iter()
            .all(|r| r.reconcile_peak > 0 && r.sidecar_peak > 0),
        "every stage was measured"
    );
}
