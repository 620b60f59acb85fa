//! What the sidecar's tests share: bundles rendered from entries with loopback backends,
//! published into moto's versioned bucket; the sidecar binary as a subprocess; the real Envoy
//! on the gateway's bootstrap; requests through Envoy by Host header.

pub mod generated;
pub mod traffic;

use gateway_adapters::signing::KmsSigner;
use gateway_adapters::store::{s3_client, ConfigStore, Precondition, PutBundle, S3Store, Writer};
use gateway_bootstrap::{gateway_bootstrap, BootstrapParams};
use gateway_render::{render, Bundle, Entry, Limit, RenderConfig, Rendered, Route};
use crate::backend::Backend;
use crate::envoy::{EnvoyPorts, EnvoyProcess};
use crate::{free_port, unique_name, MotoServer};
use serde_json::Value;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const DOMAIN: &str = "api.example.com";

/// One moto server per test binary (it exits when the test process does); each test has its own
/// bucket. Tests that read CloudWatch start their own server, since metrics are not per bucket.
pub fn shared_moto() -> &'static MotoServer {
    static MOTO: OnceLock<MotoServer> = OnceLock::new();
    MOTO.get_or_init(MotoServer::start)
}

pub fn route(path: &str, methods: Option<&[&str]>, limits: Vec<Limit>) -> Route {
    Route::new(path, methods, limits)
}

pub fn entry(team: &str, service: &str, host: &str, backend: &str, routes: Vec<Route>) -> Entry {
    Entry {
        rollout: None,
        serving: None,
        team: team.into(),
        service: service.into(),
        host: host.into(),
        backend: backend.into(),
        protocol: Default::default(),
        canary: None,
        health_check: None,
        preserve_host: false,
        jwt: Default::default(),
        backends: vec![],
        routes,
    }
}

pub fn rendered(entries: &[Entry]) -> Rendered {
    render(entries, &RenderConfig::new(DOMAIN))
        .unwrap_or_else(|e| panic!("rendering test entries: {e}"))
}

/// Billing's `invoices` on host `billing`, served by `backend`, with one method-less route per
/// path: the bundle most delivery tests publish.
pub fn billing(backend: &str, paths: &[&str]) -> Vec<Entry> {
    let routes = paths.iter().map(|p| route(p, None, vec![])).collect();
    billing_routes(backend, routes)
}

/// Billing's `invoices` on host `billing`, served by `backend`, with `routes`.
pub fn billing_routes(backend: &str, routes: Vec<Route>) -> Vec<Entry> {
    vec![entry("billing", "invoices", "billing", backend, routes)]
}

/// The metrics named `metric` in namespace `Gateway` on `moto`'s CloudWatch.
pub async fn gateway_metrics(
    moto: &MotoServer,
    metric: &str,
) -> aws_sdk_cloudwatch::operation::list_metrics::ListMetricsOutput {
    aws_sdk_cloudwatch::Client::new(&moto.sdk_config().await)
        .list_metrics()
        .namespace("Gateway")
        .metric_name(metric)
        .send()
        .await
        .unwrap_or_else(|e| panic!("list_metrics {metric}: {e}"))
}

/// A versioned bucket in moto, whose store signs with a key of its own; sidecars started with
/// [`envoy_mode_args`] or [`ratelimit_mode_args`] for it trust that key.
pub struct Bucket {
    pub store: S3Store,
    pub name: String,
    pub s3: aws_sdk_s3::Client,
    pub signer: KmsSigner,
    /// The signing key's public key, PEM.
    pub trust_key: PathBuf,
}

pub use crate::signing::trust_args;

impl Bucket {
    pub async fn create(moto: &MotoServer) -> Bucket {
        let conf = moto.sdk_config().await;
        let name = unique_name("sidecar");
        let signer = crate::signing::new_signer(moto).await;
        let trust_key = crate::signing::trust_file(&signer).await;
        let store = S3Store::new(s3_client(&conf), &name).with_signer(signer.clone());
        store
            .create_bucket_if_absent()
            .await
            .unwrap_or_else(|e| panic!("creating bucket {name}: {e}"));
        crate::signing::trust_for(&name, trust_key.clone());
        Bucket {
            store,
            name,
            s3: s3_client(&conf),
            signer,
            trust_key,
        }
    }

    /// `bundle` archived and signed by this bucket's key, uncompressed.
    pub async fn signed_archive(&self, bundle: &Bundle) -> Vec<u8> {
        let sealed = bundle.seal();
        let signature = self
            .signer
            .sign(&sealed.manifest)
            .await
            .unwrap_or_else(|e| panic!("signing: {e}"));
        sealed.archive(Some(&signature))
    }

    /// `bundle` signed but stored uncompressed, no Content-Encoding (a reader tells the two
    /// apart by the bytes). Returns the version id.
    pub async fn put_plain(&self, bundle: &Bundle) -> String {
        let body = self.signed_archive(bundle).await;
        let out = self
            .s3
            .put_object()
            .bucket(&self.name)
            .key("bundle.json")
            .metadata("hash", &bundle.hash)
            .metadata("writer", "reconciler")
            .body(body.into())
            .send()
            .await
            .unwrap_or_else(|e| panic!("plain put into {}: {e}", self.name));
        out.version_id().unwrap_or_default().to_string()
    }

    /// Renders `entries` and publishes the bundle; returns (version id, hash).
    pub async fn publish(&self, entries: &[Entry]) -> (String, String) {
        let rendered = rendered(entries);
        let bundle = Bundle::new(&rendered, entries);
        self.put(&bundle, Writer::Reconciler).await
    }

    /// Publishes `bundle` through the store (signed, compressed).
    pub async fn put(&self, bundle: &Bundle, writer: Writer) -> (String, String) {
        let version = self
            .store
            .put_bundle(PutBundle {
                sealed: &bundle.seal(),
                writer,
                precondition: Precondition::None,
            })
            .await
            .unwrap_or_else(|e| panic!("publishing into {}: {e}", self.name));
        (version, bundle.hash.clone())
    }

    /// Any bytes as `bundle.json`, gzip-compressed as a publish stores them, with `hash` as its
    /// metadata: what anyone who can write the bucket could put there.
    pub async fn put_raw(&self, body: &[u8], hash: &str, writer: Writer) -> (String, String) {
        let out = self
            .s3
            .put_object()
            .bucket(&self.name)
            .key("bundle.json")
            .content_encoding("gzip")
            .metadata("hash", hash)
            .metadata("writer", writer.as_str())
            .body(gateway_adapters::store::encoding::compress(body).into())
            .send()
            .await
            .unwrap_or_else(|e| panic!("raw put into {}: {e}", self.name));
        (out.version_id().unwrap_or_default().to_string(), hash.to_string())
    }
}

/// Where a sidecar test of its own (no `Gateway`) starts: the shared moto, billing's backend, a
/// new bucket on moto, and empty watched directories.
pub async fn billing_fixture() -> (&'static MotoServer, Backend, Bucket, Dirs) {
    let moto = shared_moto();
    let backend = Backend::start("billing");
    let bucket = Bucket::create(moto).await;
    (moto, backend, bucket, Dirs::new())
}

/// A CDS and an RDS watched directory, and a place for the state file outside both.
pub struct Dirs {
    _root: tempfile::TempDir,
    pub clusters: PathBuf,
    pub routes: PathBuf,
    pub state_file: PathBuf,
    /// The rate-limit service's rules directory and, beside it on the same file system, where
    /// the rate-limit sidecar writes before renaming into it (production's layout).
    pub ratelimit: PathBuf,
    pub ratelimit_staging: PathBuf,
}

impl Dirs {
    pub fn new() -> Dirs {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let make = |name: &str| {
            let p = root.path().join(name);
            std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
            p
        };
        let clusters = make("cds");
        let routes = make("rds");
        let ratelimit = make("ratelimit");
        let ratelimit_staging = make("ratelimit-staging");
        let state_file = make("state").join("sidecar-state.json");
        Dirs {
            _root: root,
            clusters,
            routes,
            state_file,
            ratelimit,
            ratelimit_staging,
        }
    }

    /// Names in a directory, sorted.
    /// Fails the test unless neither watched directory holds a file.
    /// No file in the watched directories (the sidecar makes the JWT filter's subdirectory at
    /// start; it stays empty until a delivery).
    pub fn assert_nothing_written(&self) {
        let jwt = gateway_render::contract::JWT_SUBDIR;
        let routes: Vec<String> = Dirs::list(&self.routes).into_iter().filter(|n| n != jwt).collect();
        assert!(
            Dirs::list(&self.clusters).is_empty()
                && routes.is_empty()
                && Dirs::list(&self.routes.join(jwt)).is_empty(),
            "nothing written"
        );
    }

    pub fn list(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|it| {
                it.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// `gateway-sidecar`: Cargo's own path in the sidecar's tests; from the end-to-end tests in
/// `tests/` (which include this file), the binary beside the test's own directory
/// (`target/debug`), which `cargo test --workspace` builds before running tests.
pub fn sidecar_bin() -> PathBuf {
    if let Some(bin) = option_env!("CARGO_BIN_EXE_gateway-sidecar") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("locating the test binary: {e}"));
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("gateway-sidecar"))
        .unwrap_or_else(|| panic!("{} has no target directory", exe.display()));
    assert!(
        bin.is_file(),
        "{} is missing: build it with `cargo build -p gateway-sidecar` (or run `cargo test --workspace`, which builds it)",
        bin.display()
    );
    bin
}

/// The sidecar binary as a subprocess; killed on drop.
pub struct SidecarProcess {
    child: Child,
    pub listen: SocketAddr,
    log: tempfile::NamedTempFile,
}

impl SidecarProcess {
    /// `gateway-sidecar` with `args` plus `--listen` on a free port, talking to `moto`.
    pub fn start(moto: &MotoServer, args: &[String]) -> SidecarProcess {
        SidecarProcess::start_with_env(moto, args, &[])
    }

    /// As `start`, with more environment (`AWS_ENDPOINT_URL_CLOUDWATCH` pointed elsewhere).
    pub fn start_with_env(
        moto: &MotoServer,
        args: &[String],
        env: &[(&str, &str)],
    ) -> SidecarProcess {
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
        let log =
            tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("sidecar log file: {e}"));
        let child = Command::new(sidecar_bin())
            .args(args)
            .arg("--listen")
            .arg(listen.to_string())
            .envs(moto.aws_env())
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap_or_else(|e| panic!("sidecar log: {e}")))
            .spawn()
            .unwrap_or_else(|e| panic!("spawning gateway-sidecar: {e}"));
        SidecarProcess { child, listen, log }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Waits (bounded) for the process to exit; its exit code.
    pub fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Waits (bounded) for the process to exit; fails the test, showing the log, unless it exits
    /// with `code`. Returns the log.
    pub fn assert_exits(&mut self, within: Duration, code: i32) -> String {
        let exited = self.wait_exit(within);
        let log = self.log_text();
        assert_eq!(exited, Some(code), "{log}");
        log
    }

    /// A sidecar with `args` run to its exit (`--once`), which must be `code`; its log.
    pub fn run_to_exit(moto: &MotoServer, args: &[String], within: Duration, code: i32) -> String {
        SidecarProcess::start(moto, args).assert_exits(within, code)
    }

    pub async fn healthz(&self) -> Option<u16> {
        let url = format!("http://{}/healthz", self.listen);
        client()
            .get(url)
            .send()
            .await
            .ok()
            .map(|r| r.status().as_u16())
    }

    /// `GET /ready`: the status code and body.
    pub async fn ready(&self) -> Option<(u16, String)> {
        let url = format!("http://{}/ready", self.listen);
        let response = client().get(url).send().await.ok()?;
        let code = response.status().as_u16();
        Some((code, response.text().await.ok()?))
    }

    pub async fn status(&self) -> Option<Value> {
        let url = format!("http://{}/status", self.listen);
        client().get(url).send().await.ok()?.json().await.ok()
    }

    /// Polls `/status` until `pred` holds (bounded); the last status seen.
    pub async fn wait_status(
        &self,
        within: Duration,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + within;
        let mut last = Value::Null;
        while Instant::now() < deadline {
            if let Some(status) = self.status().await {
                if pred(&status) {
                    return status;
                }
                last = status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "sidecar: {what} not seen within {within:?}; last /status: {last}\n--- sidecar log ---\n{}",
            self.log_text()
        );
    }

    /// Waits until the sidecar's last error names `needle` (a refused version); that status.
    pub async fn wait_error_naming(&self, needle: &str, what: &str) -> Value {
        self.wait_status(Duration::from_secs(30), what, |s| {
            last_error(s).contains(needle)
        })
        .await
    }

    /// Waits until the sidecar reports `hash` live.
    pub async fn wait_live(&self, hash: &str, within: Duration) -> Value {
        self.wait_status(within, &format!("live hash {hash}"), |s| {
            s["live"]["hash"] == hash
        })
        .await
    }
}

/// The message of `/status`'s last error; empty when there is none.
pub fn last_error(status: &Value) -> &str {
    status["last_error"]["message"].as_str().unwrap_or_default()
}

impl Drop for SidecarProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Arguments of a rate-limit-mode sidecar: only the rules file, polled every second.
pub fn ratelimit_mode_args(bucket: &str, dirs: &Dirs) -> Vec<String> {
    let mut args: Vec<String> = [
        "--bucket",
        bucket,
        "--ratelimit-dir",
        &dirs.ratelimit.display().to_string(),
        "--staging-dir",
        &dirs.ratelimit_staging.display().to_string(),
        "--interval",
        "1",
    ]
    .map(String::from)
    .to_vec();
    args.extend(trust_args(bucket));
    args
}

/// Arguments of an Envoy-mode sidecar.
pub fn envoy_mode_args(bucket: &str, dirs: &Dirs, admin: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--bucket".into(),
        bucket.into(),
        "--clusters-dir".into(),
        dirs.clusters.display().to_string(),
        "--routes-dir".into(),
        dirs.routes.display().to_string(),
        "--envoy-admin".into(),
        admin.into(),
        "--state-file".into(),
        dirs.state_file.display().to_string(),
        "--interval".into(),
        "1".into(),
        "--apply-timeout".into(),
        "20".into(),
        "--allow-loopback-backends".into(),
    ];
    args.extend(trust_args(bucket));
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// The gateway's own bootstrap on these ports and directories. `ratelimit` is where the
/// rate-limit service would be (nothing listens there in these tests).
pub fn bootstrap_for(dirs: &Dirs, ratelimit: SocketAddr) -> impl Fn(EnvoyPorts) -> Value + '_ {
    bootstrap_with(dirs, ratelimit, 0)
}

/// The gateway's bootstrap with the rate-limit service at `ratelimit` and `xff_hops` trusted
/// proxies in front (1: the client address is the last X-Forwarded-For entry, as behind a load
/// balancer).
pub fn bootstrap_with(
    dirs: &Dirs,
    ratelimit: SocketAddr,
    xff_hops: u32,
) -> impl Fn(EnvoyPorts) -> Value + '_ {
    move |ports: EnvoyPorts| {
        let params = BootstrapParams::local(
            (&dirs.clusters, &dirs.routes),
            (ports.listener, ports.admin.into()),
            ratelimit,
            xff_hops,
        );
        gateway_bootstrap(&params).unwrap_or_else(|e| panic!("gateway bootstrap: {e}"))
    }
}

/// Starts the real Envoy on the gateway's bootstrap, with the proxy's flags.
pub fn start_envoy(dirs: &Dirs, ports: EnvoyPorts) -> EnvoyProcess {
    let ratelimit = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    start_envoy_with(dirs, ports, ratelimit, 0)
}

/// As [`start_envoy_with`], with the global rate-limit filter given `budget` (`"1s"`) instead of
/// the gateway's 25 ms: tests that count a limit's answers on a loaded two-core machine would
/// otherwise see a call past the budget pass uncounted, for reasons outside the gateway. What
/// the budget itself does (a limiter that does not answer lets requests pass) is tested with a
/// limiter that refuses connections.
pub fn start_envoy_with_limiter_budget(
    dirs: &Dirs,
    ports: EnvoyPorts,
    ratelimit: SocketAddr,
    xff_hops: u32,
    budget: &str,
) -> EnvoyProcess {
    start_envoy_with_filters(dirs, ports, ratelimit, xff_hops, |filters| {
        for f in filters {
            if f["name"] == gateway_render::contract::GLOBAL_RATE_LIMIT_FILTER {
                f["typed_config"]["timeout"] = Value::String(budget.to_string());
            }
        }
    })
}

/// As [`start_envoy_with`], with the listener's HTTP filters changed by `edit` first (a test's
/// own variant of the gateway's bootstrap: another limiter budget, a filter left out).
pub fn start_envoy_with_filters(
    dirs: &Dirs,
    ports: EnvoyPorts,
    ratelimit: SocketAddr,
    xff_hops: u32,
    edit: impl Fn(&mut Vec<Value>),
) -> EnvoyProcess {
    let bootstrap = bootstrap_with(dirs, ratelimit, xff_hops);
    EnvoyProcess::start_on(
        ports,
        move |ports| {
            let mut b = bootstrap(ports);
            let filters = b
                .pointer_mut("/static_resources/listeners/0/filter_chains/0/filters/0/typed_config/http_filters")
                .and_then(Value::as_array_mut)
                .expect("the listener's HTTP filters");
            edit(filters);
            b
        },
        &["--reject-unknown-dynamic-fields", "--concurrency", "2"],
    )
}

/// Starts the real Envoy with the rate-limit service at `ratelimit` and `xff_hops` trusted hops.
pub fn start_envoy_with(
    dirs: &Dirs,
    ports: EnvoyPorts,
    ratelimit: SocketAddr,
    xff_hops: u32,
) -> EnvoyProcess {
    EnvoyProcess::start_on(
        ports,
        bootstrap_with(dirs, ratelimit, xff_hops),
        &["--reject-unknown-dynamic-fields", "--concurrency", "2"],
    )
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .unwrap_or_else(|e| panic!("HTTP client: {e}"))
}

/// One request through Envoy with `Host: {host}.{DOMAIN}` (or `host` as is if it has a dot).
pub async fn send(
    client: &reqwest::Client,
    envoy: SocketAddr,
    method: &str,
    host: &str,
    path: &str,
) -> Result<(u16, String), String> {
    let fqdn = if host.contains('.') {
        host.to_string()
    } else {
        format!("{host}.{DOMAIN}")
    };
    let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
    let response = client
        .request(method, format!("http://{envoy}{path}"))
        .header(reqwest::header::HOST, fqdn)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let code = response.status().as_u16();
    let body = response.text().await.map_err(|e| e.to_string())?;
    Ok((code, body))
}

/// The JSON body of a 200 from a test backend, or a description of what came instead.
pub async fn backend_answer(
    client: &reqwest::Client,
    envoy: SocketAddr,
    method: &str,
    host: &str,
    path: &str,
) -> Result<Value, String> {
    match send(client, envoy, method, host, path).await? {
        (200, body) => serde_json::from_str(&body).map_err(|e| format!("not JSON ({e}): {body}")),
        (code, body) => Err(format!("HTTP {code}: {body}")),
    }
}

/// Polls until a request is answered by `backend` (bounded); how long it took.
pub async fn wait_backend(
    client: &reqwest::Client,
    envoy: SocketAddr,
    host: &str,
    path: &str,
    backend: &str,
    within: Duration,
) -> Duration {
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < within {
        match backend_answer(client, envoy, "GET", host, path).await {
            Ok(v) if v["backend"] == backend => return start.elapsed(),
            Ok(v) => last = v.to_string(),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{host}{path} not answered by {backend} within {within:?}; last answer: {last}");
}

/// Waits (bounded) until the watched files exist (the sidecar's first delivery).
pub async fn wait_files(dirs: &Dirs, within: Duration) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if dirs.clusters.join("clusters.json").is_file()
            && dirs.routes.join("routes.json").is_file()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the sidecar did not write the watched files within {within:?}");
}

/// A bucket and watched directories on the shared moto server for an Envoy-mode sidecar whose
/// admin address nothing listens on: for what the sidecar refuses before it would ask Envoy.
pub struct NoEnvoy {
    pub moto: &'static MotoServer,
    pub bucket: Bucket,
    pub dirs: Dirs,
    pub admin: String,
}

impl NoEnvoy {
    pub async fn new() -> NoEnvoy {
        let moto = shared_moto();
        NoEnvoy {
            moto,
            bucket: Bucket::create(moto).await,
            dirs: Dirs::new(),
            admin: format!("http://{}", EnvoyPorts::free().admin),
        }
    }

    /// The sidecar on this bucket and these directories, with `extra` arguments.
    pub fn sidecar(&self, extra: &[&str]) -> SidecarProcess {
        let args = envoy_mode_args(&self.bucket.name, &self.dirs, &self.admin, extra);
        SidecarProcess::start(self.moto, &args)
    }
}

/// A bucket with a first bundle, a sidecar that delivered it before Envoy started, and Envoy
/// started from the delivered files.
pub struct Gateway {
    pub bucket: Bucket,
    pub dirs: Dirs,
    pub sidecar: SidecarProcess,
    pub envoy: EnvoyProcess,
    pub client: reqwest::Client,
    pub first_hash: String,
    pub first_version: String,
}

impl Gateway {
    pub async fn start(moto: &MotoServer, entries: &[Entry]) -> Gateway {
        Gateway::start_with(moto, entries, &[]).await
    }

    /// As `start`, with more sidecar arguments (`--metrics-interval 1`).
    pub async fn start_with(moto: &MotoServer, entries: &[Entry], extra: &[&str]) -> Gateway {
        let bucket = Bucket::create(moto).await;
        let first = bucket.publish(entries).await;
        Gateway::deliver(moto, bucket, first, Dirs::new(), extra, start_envoy).await
    }

    /// An Envoy-mode sidecar (with `extra` arguments) delivers `bucket`'s live bundle (`first`:
    /// version id, hash) into `dirs` before Envoy runs; then `envoy` starts Envoy from the
    /// delivered files.
    pub async fn deliver(
        moto: &MotoServer,
        bucket: Bucket,
        (first_version, first_hash): (String, String),
        dirs: Dirs,
        extra: &[&str],
        envoy: impl FnOnce(&Dirs, EnvoyPorts) -> EnvoyProcess,
    ) -> Gateway {
        let ports = EnvoyPorts::free();
        let admin = format!("http://{}", ports.admin);
        let sidecar =
            SidecarProcess::start(moto, &envoy_mode_args(&bucket.name, &dirs, &admin, extra));
        wait_files(&dirs, Duration::from_secs(30)).await;
        let envoy = envoy(&dirs, ports);
        sidecar
            .wait_live(&first_hash, Duration::from_secs(30))
            .await;
        Gateway {
            bucket,
            dirs,
            sidecar,
            envoy,
            client: client(),
            first_hash,
            first_version,
        }
    }

    pub fn listener(&self) -> SocketAddr {
        self.envoy.listener_addr()
    }

    pub async fn send(
        &self,
        method: &str,
        host: &str,
        path: &str,
    ) -> Result<(u16, String), String> {
        send(&self.client, self.listener(), method, host, path).await
    }

    /// Waits (bounded) until `path` on `host` is answered by the backend named `backend`; how
    /// long that took.
    pub async fn wait_served_by(
        &self,
        host: &str,
        path: &str,
        backend: &str,
        within: Duration,
    ) -> Duration {
        wait_backend(&self.client, self.listener(), host, path, backend, within).await
    }

    /// The status code of `method` `path` on `host`; fails the test when nothing answers.
    pub async fn code(&self, method: &str, host: &str, path: &str) -> u16 {
        self.send(method, host, path).await.expect("answer").0
    }

    pub async fn backend_answer(
        &self,
        method: &str,
        host: &str,
        path: &str,
    ) -> Result<Value, String> {
        backend_answer(&self.client, self.listener(), method, host, path).await
    }

    /// Fails the test unless `method` `path` on `host` reaches the backend named `host` (the
    /// tests name each backend after its team's host) with that request.
    pub async fn assert_reaches_backend(&self, method: &str, host: &str, path: &str) {
        let answer = self
            .backend_answer(method, host, path)
            .await
            .unwrap_or_else(|e| panic!("{method} {host}{path}: {e}"));
        assert_eq!(
            answer,
            crate::backend::expected_body(host, method, path)
        );
    }

    /// GETs `path` on host `billing` until the sidecar reports rate-limiter errors (bounded);
    /// every request must pass, since a down limiter must not block. How many were sent, and
    /// the sidecar's status then.
    pub async fn pass_until_limiter_errors_reported(&self, path: &str) -> (u64, Value) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut passed = 0;
        loop {
            let (code, body) = self.send("GET", "billing", path).await.expect("answer");
            assert_eq!(code, 200, "a down limiter must not block: {body}");
            passed += 1;
            let status = self.sidecar.status().await.expect("sidecar status");
            if status["ratelimit_errors_reported"].as_u64().unwrap_or(0) > 0 {
                return (passed, status);
            }
            assert!(
                Instant::now() < deadline,
                "RateLimiterErrors never reported; /status {status}\n{}",
                self.sidecar.log_text()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// An admin stat's value (`/stats?filter=^name$`).
    pub fn stat(&self, name: &str) -> Option<Value> {
        let (_, body) = self.envoy.admin_get(&format!(
            "/stats?format=json&filter=%5E{}%24",
            name.replace('.', "%5C.")
        ))?;
        let doc: Value = serde_json::from_str(&body).ok()?;
        doc["stats"]
            .as_array()?
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["value"].clone())
    }
}
