//! The scale bench (docs/benchmarks.md, "Scale: one table"): for each route count, the whole
//! reconcile run against Envoy's own `--mode validate` of the same config, the unchanged run, the
//! bundle's bytes, the sidecar's memory on its first delivery and idle, and publish → serving
//! under steady traffic. A bench binary, not a test: it prints one markdown table and writes it
//! to `target/bench.md`; nothing here asserts on time.
//!
//! `scripts/bench.sh [ROUTES...]` builds the sidecar binary and runs this bench (`cargo bench -p
//! gateway-testkit --bench scale -- ROUTES...`); it needs the pinned Envoy (`ENVOY_BIN`) and
//! moto's server (`.venv`).
//!
//! Per size, against moto's server (DynamoDB, S3) and the pinned Envoy:
//! 1. a generated registry (ten routes and one https backend per entry, four entries per host) is
//!    batch-written into a fresh table, except the last [`REGISTER_SAMPLE`] entries, which then
//!    go through the register function's own path (timed: moto's server leaks memory on
//!    transactions, so only a sample takes it); two entries with loopback backends (`live`,
//!    `steady`) carry the traffic of step 5;
//! 2. the reconcile function's code runs once (registry read → render → checks → validate with
//!    Envoy → publish), the registry read timed on its own, and the span from the registry read
//!    to the publish (the goal's span: the status rows and metrics come after it); then Envoy's
//!    own validate (the process alone, on the validation bootstrap written to a file) on the same
//!    rendered config, and the render alone;
//! 3. the run again with nothing changed (median of three), with and without its registry read;
//!    then two more publishing runs (one route's timeout changed, then changed back), so the
//!    whole run and its registry read → publish are each the median of three publishing runs;
//! 4. the sidecar binary (this build) delivers the published bundle to a real Envoy on the
//!    gateway's bootstrap: its peak RSS then, and its RSS after a few idle polls;
//! 5. under steady traffic on `live` and `steady`, bundles that move `/live` to another backend
//!    cluster (a cluster added and one removed: all three make-before-break steps) are put into
//!    the bucket at varying points of the one-second poll interval; each time until the new
//!    backend answers, and every request that did not get a 200; and the sidecar's own `step
//!    timed` log lines of each move, printed per step (median and max).
//!
//! `-- --delivery-only` runs steps 4 and 5 alone, on a bundle rendered here and put into the
//! bucket directly: the delivery at a size without the registry load and the reconcile runs.
//! `-- --reconcile-only` runs steps 1 to 3 alone: the reconcile columns without the delivery.

// The sidecar tests' harness and the functions tests' reconcile set-up, shared rather than
// copied.
use gateway_testkit::control as support;
use gateway_testkit::delivery as common;

use common::generated::{generated, generous_bounds, one_certificate_ca, status_kib};
use common::traffic::{Loops, Tally};
use common::{envoy_mode_args, start_envoy, wait_backend, Dirs, SidecarProcess, DOMAIN};
use gateway_adapters::metrics::{CloudWatchMetrics, Metric, MetricsError, MetricsSink};
use gateway_adapters::registry::{
    DynamoRegistry, EntryStatus, PublishedState, RegisterOutcome, Registry, RegistryError,
    RegistrySnapshot, RenderRecord, Verdict,
};
use gateway_adapters::store::{
    BundleHead, BundleVersion, ConfigStore, Precondition, PutBundle, S3Store, StoreError, Writer,
};
use gateway_bootstrap::ValidationBootstrap;
use gateway_control::reconcile::{reconcile, seed, Outcome};
use gateway_render::bounds::Totals;
use gateway_render::{render, Bundle, Entry, Policy, RenderConfig};
use gateway_testkit::backend::Backend;
use gateway_testkit::envoy::EnvoyPorts;
use gateway_testkit::{envoy_bin, repo_root, MotoServer};
use gateway_validator::{ConfigView, EnvoyOptions, VALIDATE_ARGS};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ROUTES_PER_ENTRY: usize = 10;
/// Entries registered through the register function's path (transactions) rather than loaded
/// (5 at 50k routes and more).
const REGISTER_SAMPLE: usize = 20;
/// Route moves measured for publish → serving (4 at 50k routes and more).
const MOVES: usize = 6;
/// The sidecar's poll interval in this bench (`envoy_mode_args`).
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// How long the sidecar idles (polls finding nothing new) before its idle RSS is read.
const IDLE: Duration = Duration::from_secs(5);

/// Time spent in each kind of I/O during a reconcile run, summed per label, and when the run's
/// registry read started and its publish ended.
#[derive(Default)]
struct Clock(Mutex<BTreeMap<&'static str, Duration>>, Mutex<Marks>);

#[derive(Default, Clone, Copy)]
struct Marks {
    read_started: Option<Instant>,
    published: Option<Instant>,
}

impl Clock {
    fn mark(&self, set: impl FnOnce(&mut Marks)) {
        if let Ok(mut marks) = self.1.lock() {
            set(&mut marks);
        }
    }

    /// Registry read → publish (the bundle put and the state record) of the last run that
    /// published; the marks start over.
    fn take_read_to_publish(&self) -> Option<Duration> {
        let marks = self.1.lock().map(|mut m| std::mem::take(&mut *m)).ok()?;
        Some(marks.published?.duration_since(marks.read_started?))
    }

    async fn time<T>(&self, label: &'static str, work: impl std::future::Future<Output = T>) -> T {
        let started = Instant::now();
        let out = work.await;
        if let Ok(mut spent) = self.0.lock() {
            *spent.entry(label).or_default() += started.elapsed();
        }
        out
    }

    /// The time summed per label since the last call; the sums start over.
    fn take(&self) -> BTreeMap<&'static str, Duration> {
        self.0
            .lock()
            .map(|mut spent| std::mem::take(&mut *spent))
            .unwrap_or_default()
    }
}

const READ: &str = "registry read";
const REGISTRY_WRITES: &str = "registry state and status rows";
/// The reconciler gzips the bundle beside Envoy's validate, so a publish's bucket time is the
/// put alone.
const BUCKET: &str = "bucket";
const METRICS: &str = "metrics";

/// The registry, its full read timed apart from its other calls.
struct TimedRegistry<'a> {
    inner: &'a DynamoRegistry,
    clock: &'a Clock,
}

impl TimedRegistry<'_> {
    /// Every call but the full read, summed under one label.
    async fn other<T>(&self, call: impl std::future::Future<Output = T>) -> T {
        self.clock.time(REGISTRY_WRITES, call).await
    }
}

impl Registry for TimedRegistry<'_> {
    async fn read_all_entries(&self) -> Result<RegistrySnapshot, RegistryError> {
        self.clock.mark(|m| m.read_started = Some(Instant::now()));
        self.clock.time(READ, self.inner.read_all_entries()).await
    }
    async fn read_totals(&self) -> Result<Option<Totals>, RegistryError> {
        self.other(self.inner.read_totals()).await
    }
    async fn record_totals(&self, totals: &Totals) -> Result<(), RegistryError> {
        self.other(self.inner.record_totals(totals)).await
    }
    async fn read_state(&self) -> Result<Option<PublishedState>, RegistryError> {
        self.other(self.inner.read_state()).await
    }
    async fn record_published(
        &self,
        expected: Option<&PublishedState>,
        next: &PublishedState,
    ) -> Result<(), RegistryError> {
        let recorded = self
            .other(self.inner.record_published(expected, next))
            .await;
        self.clock.mark(|m| m.published = Some(Instant::now()));
        recorded
    }
    async fn read_statuses(&self) -> Result<BTreeMap<String, EntryStatus>, RegistryError> {
        self.other(self.inner.read_statuses()).await
    }
    async fn write_statuses(&self, rows: &[EntryStatus]) -> Result<(), RegistryError> {
        self.other(self.inner.write_statuses(rows)).await
    }
    async fn read_statuses_digest(&self) -> Result<Option<String>, RegistryError> {
        self.other(self.inner.read_statuses_digest()).await
    }
    async fn record_statuses_digest(&self, digest: Option<&str>) -> Result<(), RegistryError> {
        self.other(self.inner.record_statuses_digest(digest)).await
    }
    async fn read_render_record(&self) -> Result<Option<RenderRecord>, RegistryError> {
        self.other(self.inner.read_render_record()).await
    }
    async fn record_render(&self, record: &RenderRecord) -> Result<(), RegistryError> {
        self.other(self.inner.record_render(record)).await
    }
    async fn read_pending(&self) -> Result<Option<String>, RegistryError> {
        self.other(self.inner.read_pending()).await
    }
    async fn record_pending(&self, hash: &str) -> Result<(), RegistryError> {
        self.other(self.inner.record_pending(hash)).await
    }
    async fn read_verdicts(&self) -> Result<Vec<Verdict>, RegistryError> {
        self.other(self.inner.read_verdicts()).await
    }
    async fn record_verdicts(&self, verdicts: &[Verdict]) -> Result<(), RegistryError> {
        self.other(self.inner.record_verdicts(verdicts)).await
    }
    async fn read_rollouts(&self) -> Result<gateway_adapters::registry::rollout::Rollouts, RegistryError> {
        self.other(self.inner.read_rollouts()).await
    }
    async fn record_rollouts(&self, r: &gateway_adapters::registry::rollout::Rollouts) -> Result<(), RegistryError> {
        self.other(self.inner.record_rollouts(r)).await
    }
}

/// The bucket, every call timed.
struct TimedStore<'a> {
    inner: &'a S3Store,
    clock: &'a Clock,
}

impl ConfigStore for TimedStore<'_> {
    async fn head_live(&self) -> Result<Option<BundleHead>, StoreError> {
        self.clock.time(BUCKET, self.inner.head_live()).await
    }
    async fn head_version(&self, version_id: &str) -> Result<BundleHead, StoreError> {
        self.clock
            .time(BUCKET, self.inner.head_version(version_id))
            .await
    }
    async fn get_version(&self, version_id: &str) -> Result<Vec<u8>, StoreError> {
        self.clock
            .time(BUCKET, self.inner.get_version(version_id))
            .await
    }
    async fn put_bundle(&self, put: PutBundle<'_>) -> Result<String, StoreError> {
        self.clock.time(BUCKET, self.inner.put_bundle(put)).await
    }
    async fn put_compressed_bundle(
        &self,
        put: PutBundle<'_>,
        gzip: &[u8],
    ) -> Result<String, StoreError> {
        self.clock
            .time(BUCKET, self.inner.put_compressed_bundle(put, gzip))
            .await
    }
    async fn keep_failed(&self, key: &str, body: &[u8]) -> Result<(), StoreError> {
        self.clock
            .time(BUCKET, self.inner.keep_failed(key, body))
            .await
    }
    async fn list_versions(&self, limit: usize) -> Result<Vec<BundleVersion>, StoreError> {
        self.clock
            .time(BUCKET, self.inner.list_versions(limit))
            .await
    }
    async fn restore_version(&self, v: &str, h: &str) -> Result<String, StoreError> {
        self.clock
            .time(BUCKET, self.inner.restore_version(v, h))
            .await
    }
}

/// The metrics sink, every call timed.
struct TimedMetrics<'a> {
    inner: &'a CloudWatchMetrics,
    clock: &'a Clock,
}

impl MetricsSink for TimedMetrics<'_> {
    async fn emit(&self, data: &[(Metric, f64)]) -> Result<(), MetricsError> {
        self.clock.time(METRICS, self.inner.emit(data)).await
    }
    async fn emit_per_team(
        &self,
        metric: Metric,
        per_team: &[(String, f64)],
    ) -> Result<(), MetricsError> {
        self.clock
            .time(METRICS, self.inner.emit_per_team(metric, per_team))
            .await
    }
}

/// One size's measurements.
#[derive(Default)]
struct Row {
    routes: usize,
    clusters: usize,
    register_sample: Vec<Duration>,
    register_failures: Vec<String>,
    /// The median of the publishing runs (the first publish and two changes).
    reconcile: Duration,
    /// The same runs' median registry read → publish: the goal's span, without the status rows
    /// and metrics that follow the publish.
    read_to_publish: Duration,
    /// The first run alone, which `first_io` splits.
    first_run: Duration,
    /// Each publishing run: whole, and registry read → publish.
    publishing_runs: Vec<(Duration, Duration)>,
    /// The first run's time per kind of I/O.
    first_io: BTreeMap<&'static str, Duration>,
    render: Duration,
    validate: Duration,
    unchanged: Duration,
    unchanged_read: Duration,
    /// The median unchanged run's time per kind of I/O.
    unchanged_io: BTreeMap<&'static str, Duration>,
    bundle_raw: u64,
    bundle_gzip: u64,
    sidecar_first_peak_kib: u64,
    sidecar_idle_kib: u64,
    sidecar_peak_after_moves_kib: u64,
    envoy_serving_kib: u64,
    propagation: Vec<Duration>,
    requests_ok: u64,
    requests_failed: u64,
    failed_samples: Vec<String>,
    /// The sidecar's timed steps of each route move (its `step timed` lines).
    move_steps: Vec<Vec<(String, Duration)>>,
    /// Envoy's CPU time to apply each move (publish → the sidecar reports it live), less what
    /// the steady traffic costs over as long.
    envoy_apply_cpu: Vec<Duration>,
    /// Envoy's CPU seconds per second under the steady traffic alone (the baseline taken off).
    envoy_traffic_cpu: f64,
    envoy_peak_after_moves_kib: u64,
}

/// Linux counts a process's CPU time in clock ticks of `USER_HZ`, 100 on every architecture the
/// gateway runs on.
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// A process's user and system CPU time so far (`/proc/PID/stat`, fields 14 and 15, counted after
/// the command name's closing parenthesis, which may itself hold spaces).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // After ")": state is field 3, so utime (14) and stime (15) are at 11 and 12.
    Duration::from_secs_f64((ticks(11) + ticks(12)) as f64 / CLOCK_TICKS_PER_SECOND)
}

/// The entries that carry traffic: `/live` on `live-a` or `live-b` (each its own cluster), and
/// `/steady`, which never changes.
fn traffic_entries(on_b: bool, a: &Backend, b: &Backend, steady: &Backend) -> Vec<Entry> {
    let (service, backend) = if on_b { ("live-b", b) } else { ("live-a", a) };
    vec![
        common::entry(
            "bench",
            service,
            "live",
            &backend.url(),
            vec![common::route("/live", None, vec![])],
        ),
        common::entry(
            "bench",
            "steady",
            "steady",
            &steady.url(),
            vec![common::route("/steady", None, vec![])],
        ),
    ]
}

/// Envoy's own `--mode validate` (median of `runs`): the process alone, from its start to its
/// exit, on the validation bootstrap already written to a file. Not the validator's
/// `validate_with_envoy`, which also serialises the bootstrap and checks the release.
fn envoy_own_validate(view: &ConfigView<'_>, opts: &EnvoyOptions, runs: usize) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("validate.json");
    let bootstrap = ValidationBootstrap::new(&opts.params, view.clusters, view.route_config)
        .expect("the validation bootstrap");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&config).expect("create"));
    bootstrap.to_writer(&mut file).expect("write the bootstrap");
    std::io::Write::flush(&mut file).expect("write the bootstrap");
    drop(file);
    let samples = (0..runs)
        .map(|_| {
            let started = Instant::now();
            let out = std::process::Command::new(&opts.envoy_bin)
                .args(VALIDATE_ARGS)
                .arg(&config)
                .output()
                .expect("run Envoy");
            let elapsed = started.elapsed();
            assert!(
                out.status.success(),
                "Envoy refused the generated registry: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            elapsed
        })
        .collect();
    median(samples)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

async fn measure(moto: &MotoServer, routes: usize, ca_file: &str, deliver: bool) -> Row {
    let conf = moto.sdk_config().await;
    let policy = Policy::new(DOMAIN, true);
    let dynamo = gateway_adapters::aws::dynamodb_client(&conf);
    let bounds = generous_bounds();
    let (registry, store) = support::table_and_bucket(moto, dynamo.clone(), &policy, "bench").await;
    let registry = registry.with_bounds(bounds);
    let bucket = store.bucket().to_string();
    let s3 = store.client().clone();
    let cloudwatch = CloudWatchMetrics::from_conf(&conf);
    let mut render_cfg = RenderConfig::new(DOMAIN);
    render_cfg.upstream_ca_file = ca_file.to_string();
    let cfg = support::reconcile_config(render_cfg.clone(), policy, bounds);
    seed(&registry, &store, &cfg).await.expect("seed");

    // 1. The registry.
    let ((a, b, steady), entries) = generated_registry(routes);
    // The sample: the last generated entries (the traffic entries are loaded with the rest).
    let generated_len = entries.len() - 2;
    let sample = if routes >= 50_000 { 5 } else { REGISTER_SAMPLE }.min(generated_len / 2);
    let sampled = generated_len - sample..generated_len;
    let bulk: Vec<Entry> = entries
        .iter()
        .enumerate()
        .filter(|(i, _)| !sampled.contains(i))
        .map(|(_, e)| e.clone())
        .collect();
    support::load_entries(&dynamo, registry.table(), &bulk).await;
    // The totals a reconcile run over the loaded rows records: each registration judges its
    // growth against them instead of reading the table (docs/design.md#registry-totals).
    registry
        .put_totals(&Totals::of(&bulk))
        .await
        .expect("record the registry totals");
    drop(bulk);
    // A registration that exceeds the SDK's attempt timeout on moto's server (the retry then
    // finds the entry `Unchanged`, or fails), or that fails otherwise, is loaded like the rest
    // (a no-op when it is in place) and reported.
    let mut register_sample = Vec::new();
    let mut register_failures = Vec::new();
    for e in &entries[sampled] {
        let started = Instant::now();
        let outcome = registry.register(e).await;
        register_sample.push(started.elapsed());
        if !matches!(outcome, Ok(RegisterOutcome::Created { .. })) {
            register_failures.push(format!("{}: {outcome:?}", e.id()));
            support::load_entries(&dynamo, registry.table(), std::slice::from_ref(e)).await;
        }
    }

    // 2. The whole run, first publish.
    let clock = Clock::default();
    let timed = TimedRegistry {
        inner: &registry,
        clock: &clock,
    };
    let timed_store = TimedStore {
        inner: &store,
        clock: &clock,
    };
    let metrics = TimedMetrics {
        inner: &cloudwatch,
        clock: &clock,
    };
    let started = Instant::now();
    let outcome = reconcile(&timed, &timed_store, &metrics, &cfg)
        .await
        .expect("reconcile");
    let reconcile_time = started.elapsed();
    let first_io = clock.take();
    let read_to_publish = clock
        .take_read_to_publish()
        .expect("the first run reads the registry and publishes");
    let Outcome::Published {
        hash,
        routes: route_count,
        version_id,
    } = outcome
    else {
        panic!("the generated registry publishes: {outcome}");
    };

    // Envoy's validate alone on the same config, and the render alone.
    let started = Instant::now();
    let rendered = render(&entries, &render_cfg).expect("the generated registry renders");
    let render_time = started.elapsed();
    let clusters = rendered.clusters.len();
    let view = ConfigView {
        clusters: &rendered.clusters,
        route_config: &rendered.route_config,
        ratelimit_yaml: &rendered.files[gateway_render::contract::RATE_LIMIT_FILE],
            jwt: rendered.jwt.as_ref(),
    };
    let runs = if routes >= 50_000 { 1 } else { 3 };
    let validate = envoy_own_validate(&view, &cfg.validate.envoy, runs);
    drop(rendered);

    // 3. Unchanged runs.
    let mut unchanged_samples = Vec::new();
    let mut unchanged_reads = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let outcome = reconcile(&timed, &timed_store, &metrics, &cfg)
            .await
            .expect("unchanged reconcile");
        unchanged_samples.push(started.elapsed());
        unchanged_reads.push(clock.take());
        assert!(
            matches!(&outcome, Outcome::Unchanged { hash: h } if *h == hash),
            "an unchanged registry: {outcome}"
        );
    }
    let unchanged = median(unchanged_samples.clone());
    // The read of the run whose total is the median.
    let at = unchanged_samples
        .iter()
        .position(|d| *d == unchanged)
        .unwrap_or(0);
    let unchanged_io = unchanged_reads.swap_remove(at);
    let unchanged_read = unchanged_io.get(READ).copied().unwrap_or_default();

    // Two more publishing runs, for the median with the first: one route's timeout changed in
    // one entry row, then changed back (so the live bundle is the first run's again).
    let mut read_to_publish_samples = vec![read_to_publish];
    let mut reconcile_samples = vec![reconcile_time];
    let original = entries[0].clone();
    let mut changed = original.clone();
    changed.routes[0].timeout = Some("7s".to_string());
    for entry in [&changed, &original] {
        support::load_entries(&dynamo, registry.table(), std::slice::from_ref(entry)).await;
        let started = Instant::now();
        let outcome = reconcile(&timed, &timed_store, &metrics, &cfg)
            .await
            .expect("reconcile a change");
        reconcile_samples.push(started.elapsed());
        assert!(
            matches!(&outcome, Outcome::Published { .. }),
            "a changed registry publishes: {outcome}"
        );
        read_to_publish_samples.push(
            clock
                .take_read_to_publish()
                .expect("a publishing run reads the registry and publishes"),
        );
        clock.take();
    }

    // Bundle bytes: canonical and on the wire.
    let bundle_raw = store.get_version(&version_id).await.expect("get").len() as u64;
    let bundle_gzip = s3
        .head_object()
        .bucket(&bucket)
        .key("bundle.json")
        .version_id(&version_id)
        .send()
        .await
        .expect("head")
        .content_length()
        .unwrap_or_default() as u64;

    // 4. and 5.
    let backends = (&a, &b, &steady);
    let delivered = if deliver {
        deliver_and_move(moto, &store, &entries, backends, &render_cfg, &hash).await
    } else {
        Row::default()
    };
    Row {
        routes: route_count,
        clusters,
        register_sample,
        register_failures,
        reconcile: median(reconcile_samples.clone()),
        read_to_publish: median(read_to_publish_samples.clone()),
        first_run: reconcile_time,
        publishing_runs: reconcile_samples
            .iter()
            .zip(&read_to_publish_samples)
            .map(|(a, b)| (*a, *b))
            .collect(),
        first_io,
        render: render_time,
        validate,
        unchanged,
        unchanged_read,
        unchanged_io,
        bundle_raw,
        bundle_gzip,
        ..delivered
    }
}

/// Steps 4 and 5 for the published bundle `hash` of `entries` (the two traffic entries last):
/// the sidecar's first delivery and idle RSS, then the route moves under steady traffic. Only
/// the delivery fields of the row are set.
async fn deliver_and_move(
    moto: &MotoServer,
    store: &S3Store,
    entries: &[Entry],
    (a, b, steady): (&Backend, &Backend, &Backend),
    render_cfg: &RenderConfig,
    hash: &str,
) -> Row {
    let bucket = store.bucket().to_string();
    let routes = entries.len() * ROUTES_PER_ENTRY;
    // 4. The sidecar's first delivery, then idle.
    let dirs = Dirs::new();
    let ports = EnvoyPorts::free();
    let admin = format!("http://{}", ports.admin);
    let mut args = envoy_mode_args(&bucket, &dirs, &admin, &[]);
    if let Some(i) = args.iter().position(|a| a == "--apply-timeout") {
        // A make-before-break step at 50k routes on two shared cores can take longer than the
        // tests' 20 s.
        args[i + 1] = "300".into();
    }
    let sidecar = SidecarProcess::start(moto, &args);
    common::wait_files(&dirs, Duration::from_secs(600)).await;
    let envoy = start_envoy(&dirs, ports);
    sidecar.wait_live(hash, Duration::from_secs(600)).await;
    let sidecar_first_peak_kib = status_kib(sidecar.pid(), "VmHWM").unwrap_or(0);
    tokio::time::sleep(IDLE).await;
    let sidecar_idle_kib = status_kib(sidecar.pid(), "VmRSS").unwrap_or(0);
    let envoy_serving_kib = status_kib(envoy.pid(), "VmRSS").unwrap_or(0);

    // 5. Publish → serving under steady traffic.
    let listener = envoy.listener_addr();
    let client = common::client();
    wait_backend(
        &client,
        listener,
        "live",
        "/live/1",
        "live-a",
        Duration::from_secs(60),
    )
    .await;
    let tally = Arc::new(Tally::default());
    let mut loops = Loops::default();
    loops.start(listener, "live", "/live/1", &tally);
    loops.start(listener, "steady", "/steady/1", &tally);
    // What the steady traffic alone costs Envoy, so each move's cost can be told from it.
    let baseline_window = Duration::from_secs(5);
    let before = cpu_time(envoy.pid());
    tokio::time::sleep(baseline_window).await;
    let envoy_traffic_cpu =
        cpu_time(envoy.pid()).saturating_sub(before).as_secs_f64() / baseline_window.as_secs_f64();
    let mut envoy_apply_cpu = Vec::new();
    let generated_entries = &entries[..entries.len() - 2];
    let mut propagation = Vec::new();
    let mut move_steps = Vec::new();
    let mut on_b = false;
    let moves = if routes >= 50_000 { 4 } else { MOVES };
    for round in 1..=moves {
        on_b = !on_b;
        let mut next: Vec<Entry> = generated_entries.to_vec();
        next.extend(traffic_entries(on_b, a, b, steady));
        let rendered = render(&next, render_cfg).expect("renders");
        let bundle = Bundle::new(&rendered, &next);
        drop(rendered);
        let sealed = bundle.seal();
        // Publish at varying points of the poll interval, so the times sample its whole phase.
        tokio::time::sleep(Duration::from_millis(
            (round as u64 * 373) % POLL_INTERVAL.as_millis() as u64,
        ))
        .await;
        let log_before = sidecar.log_text().len();
        let (cpu_before, clock_before) = (cpu_time(envoy.pid()), Instant::now());
        store
            .put_bundle(PutBundle {
                sealed: &sealed,
                writer: Writer::Reconciler,
                precondition: Precondition::None,
            })
            .await
            .expect("publish");
        let published = Instant::now();
        let target = if on_b { "live-b" } else { "live-a" };
        wait_backend(
            &client,
            listener,
            "live",
            "/live/1",
            target,
            Duration::from_secs(600),
        )
        .await;
        propagation.push(published.elapsed());
        sidecar
            .wait_live(&bundle.hash, Duration::from_secs(600))
            .await;
        let traffic = Duration::from_secs_f64(envoy_traffic_cpu * clock_before.elapsed().as_secs_f64());
        envoy_apply_cpu.push(cpu_time(envoy.pid()).saturating_sub(cpu_before).saturating_sub(traffic));
        move_steps.push(timed_steps(
            sidecar.log_text().get(log_before..).unwrap_or_default(),
        ));
    }
    loops.stop().await;
    let sidecar_peak_after_moves_kib = status_kib(sidecar.pid(), "VmHWM").unwrap_or(0);
    let envoy_peak_after_moves_kib = status_kib(envoy.pid(), "VmHWM").unwrap_or(0);
    Row {
        sidecar_first_peak_kib,
        sidecar_idle_kib,
        sidecar_peak_after_moves_kib,
        envoy_serving_kib,
        propagation,
        requests_ok: tally.ok(),
        requests_failed: tally.failed(),
        failed_samples: tally.samples(),
        move_steps,
        envoy_apply_cpu,
        envoy_traffic_cpu,
        envoy_peak_after_moves_kib,
        ..Row::default()
    }
}

/// The sidecar's `step timed` lines in `log` (`step="…"` and `ms=…`, as its log writes them), in
/// their order.
fn timed_steps(log: &str) -> Vec<(String, Duration)> {
    log.lines()
        .map(strip_ansi)
        .filter(|line| line.contains("step timed"))
        .filter_map(|line| {
            let step = line.split("step=\"").nth(1)?.split('"').next()?;
            let ms: f64 = line
                .split("ms=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some((step.to_string(), Duration::from_secs_f64(ms / 1000.0)))
        })
        .collect()
}

/// A log line without its terminal colour codes.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // `ESC [ … m`
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The steps of the route moves, median and max of each over the moves (a step a move took
/// twice counts summed), in the order the sidecar took them; and the time before the route
/// answered that no step accounts for (the wait for the next poll, the traffic's own sampling).
fn step_breakdown(r: &Row) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut per_step: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    for steps in &r.move_steps {
        let mut summed: BTreeMap<&str, Duration> = BTreeMap::new();
        for (step, took) in steps {
            if !order.contains(&step.as_str()) {
                order.push(step);
            }
            *summed.entry(step).or_default() += *took;
        }
        for (step, took) in summed {
            per_step.entry(step).or_default().push(took);
        }
    }
    let mut text = format!(
        "\nThe sidecar's steps of each route move at {} routes (its `step timed` lines; \
         `body`, `staging writes` and `verify` are the parts of one streamed read), median / max \
         over {} moves, ms:\n\n| step | median | max |\n|---|---:|---:|\n",
        r.routes,
        r.move_steps.len()
    );
    for step in &order {
        let samples = per_step.get(step).cloned().unwrap_or_default();
        let max = samples.iter().max().copied().unwrap_or_default();
        text.push_str(&format!(
            "| {step} | {:.1} | {:.1} |\n",
            median(samples).as_secs_f64() * 1000.0,
            max.as_secs_f64() * 1000.0
        ));
    }
    // Until the new route answers: everything up to and including step 2's wait.
    let before_serving: Vec<Duration> = r
        .move_steps
        .iter()
        .zip(&r.propagation)
        .map(|(steps, total)| {
            let steps: Duration = steps
                .iter()
                .take_while(|(step, _)| !step.starts_with("step 3"))
                .map(|(_, took)| *took)
                .sum();
            total.saturating_sub(steps)
        })
        .collect();
    text.push_str(&format!(
        "\nPublish → serving less the steps before it (the wait for the next poll, and the \
         traffic noticing the route): median {:.0} ms, all: {}\n",
        median(before_serving.clone()).as_secs_f64() * 1000.0,
        before_serving
            .iter()
            .map(|d| format!("{:.0}", d.as_secs_f64() * 1000.0))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    text
}

/// The generated registry for `routes` routes, then the two entries that carry the traffic, on
/// their loopback backends (`live-a`, `live-b`, `steady`).
fn generated_registry(routes: usize) -> ((Backend, Backend, Backend), Vec<Entry>) {
    let (a, b, steady) = (
        Backend::start("live-a"),
        Backend::start("live-b"),
        Backend::start("steady"),
    );
    let mut entries: Vec<Entry> = (0..routes.div_ceil(ROUTES_PER_ENTRY))
        .map(|i| generated(i, ROUTES_PER_ENTRY))
        .collect();
    entries.extend(traffic_entries(false, &a, &b, &steady));
    ((a, b, steady), entries)
}

/// `--delivery-only`: steps 4 and 5 alone, on a bundle rendered here and put into the bucket
/// directly (no registry, no reconcile run), so the delivery at a size can be measured in a
/// fraction of the whole bench's time. The row's other columns stay empty.
async fn measure_delivery_only(moto: &MotoServer, routes: usize, ca_file: &str) -> Row {
    let conf = moto.sdk_config().await;
    let policy = Policy::new(DOMAIN, true);
    let dynamo = gateway_adapters::aws::dynamodb_client(&conf);
    let (_, store) = support::table_and_bucket(moto, dynamo, &policy, "bench").await;
    let mut render_cfg = RenderConfig::new(DOMAIN);
    render_cfg.upstream_ca_file = ca_file.to_string();
    let ((a, b, steady), entries) = generated_registry(routes);
    let rendered = render(&entries, &render_cfg).expect("the generated registry renders");
    let bundle = Bundle::new(&rendered, &entries);
    let (route_count, clusters) = (rendered.route_count, rendered.clusters.len());
    drop(rendered);
    store
        .put_bundle(PutBundle {
            sealed: &bundle.seal(),
            writer: Writer::Reconciler,
            precondition: Precondition::None,
        })
        .await
        .expect("publish");
    let backends = (&a, &b, &steady);
    let delivered =
        deliver_and_move(moto, &store, &entries, backends, &render_cfg, &bundle.hash).await;
    Row {
        routes: route_count,
        clusters,
        ..delivered
    }
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

fn main() {
    let delivery_only = std::env::args().any(|a| a == "--delivery-only");
    let reconcile_only = std::env::args().any(|a| a == "--reconcile-only");
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000]
    } else {
        sizes
    };
    let envoy = envoy_bin();
    gateway_validator::check_envoy_version(&envoy)
        .unwrap_or_else(|e| panic!("the bench needs the pinned Envoy: {e}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let ca = one_certificate_ca();
    let moto = common::shared_moto();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut rows = Vec::new();
    for routes in sizes {
        eprintln!("measuring {routes} routes …");
        let row = if delivery_only {
            runtime.block_on(measure_delivery_only(moto, routes, &ca))
        } else {
            runtime.block_on(measure(moto, routes, &ca, !reconcile_only))
        };
        eprintln!(
            "{} routes: reconcile {} (registry read → publish {}), validate {}, unchanged {}, sidecar peak {}",
            row.routes,
            secs(row.reconcile),
            secs(row.read_to_publish),
            secs(row.validate),
            secs(row.unchanged),
            mib(row.sidecar_first_peak_kib)
        );
        rows.push(row);
    }

    let mut table = String::from(
        "| routes | whole reconcile run | registry read → publish | Envoy `--mode validate` | ratio | ratio, read → publish | unchanged run (own work) | bundle raw / gzip | per route raw / gzip | sidecar first delivery peak / idle RSS | publish → serving p50 (max), failed requests |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in &rows {
        let mut p = r.propagation.clone();
        p.sort();
        table.push_str(&format!(
            "| {} | {} | {} | {} | {:.2}× | {:.2}× | {} ({}) | {:.1} MB / {:.2} MB | {} B / {} B | {} / {} | {} ({}), {} failed of {} |\n",
            r.routes,
            secs(r.reconcile),
            secs(r.read_to_publish),
            secs(r.validate),
            r.reconcile.as_secs_f64() / r.validate.as_secs_f64(),
            r.read_to_publish.as_secs_f64() / r.validate.as_secs_f64(),
            secs(r.unchanged),
            secs(r.unchanged.saturating_sub(r.unchanged_read)),
            r.bundle_raw as f64 / 1e6,
            r.bundle_gzip as f64 / 1e6,
            r.bundle_raw / r.routes as u64,
            r.bundle_gzip / r.routes as u64,
            mib(r.sidecar_first_peak_kib),
            mib(r.sidecar_idle_kib),
            secs(median(p.clone())),
            secs(p.last().copied().unwrap_or_default()),
            r.requests_failed,
            r.requests_ok + r.requests_failed,
        ));
    }
    let mut details = String::from(
        "| routes | clusters | first run: registry read / state + status rows / bucket (put; gzip is beside Envoy) / metrics / the rest | of the rest: render alone, Envoy validate alone | unchanged run: the same five | register path, sample (median / max) | sidecar peak after the moves | Envoy serving RSS | publish → serving, all (s) |\n\
         |---:|---:|---|---|---:|---:|---:|---:|---|\n",
    );
    // Paragraphs below the table, so they do not break it.
    let mut notes = String::new();
    for r in &rows {
        let mut p = r.propagation.clone();
        p.sort();
        let io = |label| r.first_io.get(label).copied().unwrap_or_default();
        let rest = r
            .first_run
            .saturating_sub(io(READ) + io(REGISTRY_WRITES) + io(BUCKET) + io(METRICS));
        let un = |label| r.unchanged_io.get(label).copied().unwrap_or_default();
        let unchanged_rest = r
            .unchanged
            .saturating_sub(un(READ) + un(REGISTRY_WRITES) + un(BUCKET) + un(METRICS));
        let unchanged_parts = [
            un(READ),
            un(REGISTRY_WRITES),
            un(BUCKET),
            un(METRICS),
            unchanged_rest,
        ]
        .map(secs)
        .join(" / ");
        details.push_str(&format!(
            "| {} | {} | {} / {} / {} / {} / {} | {}, {} | {} | {} / {} ({} entries) | {} | {} | {} |\n",
            r.routes,
            r.clusters,
            secs(io(READ)),
            secs(io(REGISTRY_WRITES)),
            secs(io(BUCKET)),
            secs(io(METRICS)),
            secs(rest),
            secs(r.render),
            secs(r.validate),
            unchanged_parts,
            secs(median(r.register_sample.clone())),
            secs(r.register_sample.iter().max().copied().unwrap_or_default()),
            r.register_sample.len(),
            mib(r.sidecar_peak_after_moves_kib),
            mib(r.envoy_serving_kib),
            p.iter()
                .map(|d| format!("{:.2}", d.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(", "),
        ));
        if !r.publishing_runs.is_empty() {
            let runs: Vec<String> = r
                .publishing_runs
                .iter()
                .map(|(whole, span)| format!("{} ({})", secs(*whole), secs(*span)))
                .collect();
            notes.push_str(&format!(
                "\nPublishing runs at {} routes, whole (registry read → publish): {}\n",
                r.routes,
                runs.join(", ")
            ));
        }
        if let Some(first) = r.register_failures.first() {
            notes.push_str(&format!(
                "\nRegistrations of the sample that did not come back `Created` at {} routes: {} of {}; the first: {first}\n",
                r.routes,
                r.register_failures.len(),
                r.register_sample.len()
            ));
        }
        if !r.failed_samples.is_empty() {
            notes.push_str(&format!(
                "\nFailed requests at {} routes, first few: {:?}\n",
                r.routes, r.failed_samples
            ));
        }
    }
    let mut apply = String::from(
        "\nEnvoy's cost of one changed entry (a route moving to another backend: a cluster added, \
         one removed, the routes replaced), publish → live, under the steady traffic, whose own \
         CPU is taken off:\n\n| routes | Envoy CPU per change, p50 (max) | Envoy CPU of the traffic alone | Envoy RSS serving / peak after the moves |\n|---:|---:|---:|---:|\n",
    );
    for r in rows.iter().filter(|r| !r.envoy_apply_cpu.is_empty()) {
        let mut cpu = r.envoy_apply_cpu.clone();
        cpu.sort();
        apply.push_str(&format!(
            "| {} | {} ({}) | {:.2} s/s | {} / {} |\n",
            r.routes,
            secs(median(cpu.clone())),
            secs(cpu.last().copied().unwrap_or_default()),
            r.envoy_traffic_cpu,
            mib(r.envoy_serving_kib),
            mib(r.envoy_peak_after_moves_kib),
        ));
    }
    notes.push_str(&apply);
    let steps: String = rows
        .iter()
        .filter(|r| !r.move_steps.is_empty())
        .map(step_breakdown)
        .collect();
    let text = format!(
        "# Scale\n\n{}`scripts/bench.sh`: {} build, moto's server, Envoy {}, upstream CA a \
         one-certificate file, poll interval {} s, {} route moves per size (4 at 50k routes; each adds a \
         cluster and removes one). Load average at the start: {}\n\n{table}\n{details}{notes}\n{steps}",
        if delivery_only {
            "Delivery only (`--delivery-only`): no registry and no reconcile run, their columns \
             empty.\n\n"
        } else if reconcile_only {
            "Reconcile only (`--reconcile-only`): no delivery, its columns empty.\n\n"
        } else {
            ""
        },
        if cfg!(debug_assertions) { "debug" } else { "release" },
        gateway_bootstrap::envoy_version(),
        POLL_INTERVAL.as_secs(),
        MOVES,
        load.trim(),
    );
    println!("\n{text}");
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    let file = dir.join("bench.md");
    match std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&file, text)) {
        Ok(()) => println!("written to {}", file.display()),
        Err(e) => eprintln!("{}: cannot write: {e}", file.display()),
    }
}
