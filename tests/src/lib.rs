//! Test kit: the real pieces the tests run against (moto's server for DynamoDB, S3 and
//! CloudWatch; the pinned Envoy), found in the repository's `.venv`, each process owned by a
//! guard that kills it on drop; `envoy --mode validate` on a bootstrap; plain HTTP/1.1 on loopback.
//! The processes themselves (moto's command, the Envoy lookup, the echo backends) come from the
//! process kit (`proc-kit/`) that `gatewayctl demo` uses too.

pub mod backend;
#[cfg(feature = "control")]
pub mod control;
#[cfg(feature = "delivery")]
pub mod delivery;
pub mod envoy;
pub mod fault_proxy;
pub mod http;
pub mod policy_backend;
#[cfg(feature = "registry")]
pub mod registry;
#[cfg(feature = "registry")]
pub mod response_url;
mod serve;
#[cfg(any(feature = "registry", feature = "delivery"))]
pub mod signing;
pub mod stub;
#[cfg(feature = "tokens")]
pub mod tokens;
#[cfg(feature = "upstreams")]
pub mod upstreams;
pub mod validate;

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// How long moto's server may take to answer its first request (a cold Python import of moto
/// takes a few seconds on a busy machine).
const MOTO_START_TIMEOUT: Duration = Duration::from_secs(20);

/// The repository root (the workspace directory).
pub fn repo_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// The repository's Python virtualenv interpreter, which has moto's server installed.
pub fn venv_python() -> PathBuf {
    let python = gateway_proc_kit::venv_python(&repo_root());
    if !python.exists() {
        panic!(
            "{} is missing: run scripts/setup-python.sh (it installs moto's server and the pinned Envoy)",
            python.display()
        );
    }
    python
}

/// The Envoy binary: the process kit's lookup for a checkout (`ENVOY_BIN`, a path or a name on
/// PATH; else the repository's `.venv/bin/envoy`; else `envoy` on PATH). Panics (never skips)
/// when none is there, because a test that needs Envoy's verdict cannot pass without it.
pub fn envoy_bin() -> PathBuf {
    gateway_proc_kit::envoy::local_envoy(&repo_root(), None).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `future` to completion on a runtime of its own, on a thread of its own, so the kit's
/// blocking helpers work from plain tests and from inside async tests alike.
pub(crate) fn block_on<T: Send>(future: impl std::future::Future<Output = T> + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap_or_else(|e| panic!("a runtime for a blocking call: {e}"))
                    .block_on(future)
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// A backend URL for `team` that tests never send traffic to: the closed discard port on a
/// loopback address of the team's own (`127.x.y.z`, spread from its name). Backends belong to
/// teams (docs/design.md#ownership-and-conflicts), so entries of two teams never share one.
pub fn closed_backend(team: &str) -> String {
    // FNV-1a: a fixed, dependency-free spread of names over the loopback block.
    let hash = team.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let [_, a, b, c] = hash.to_be_bytes();
    format!("http://127.{a}.{b}.{c}:9")
}

/// A loopback port that was free a moment ago. Another process may take it before the caller
/// binds it; callers that spawn servers retry on a bind failure.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap_or_else(|e| panic!("binding 127.0.0.1:0 to find a free port: {e}"));
    listener
        .local_addr()
        .unwrap_or_else(|e| panic!("reading the bound port: {e}"))
        .port()
}

/// `127.0.0.1:PORT` on a port that was free a moment ago (see `free_port`).
pub fn free_addr() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()))
}

/// moto's server (`scripts/moto_server.py`, every request serialised) on a loopback port.
/// Start one per test file and give each test its own table or bucket: moto copies a table on
/// every transaction and keeps the memory.
pub struct MotoServer {
    /// `http://127.0.0.1:PORT`
    pub endpoint: String,
    pub port: u16,
    child: Child,
    log: tempfile::NamedTempFile,
}

impl MotoServer {
    /// Starts the server and waits (bounded) until it answers HTTP.
    pub fn start() -> MotoServer {
        let python = venv_python();
        let mut last_failure = String::new();
        // A free port can be taken between choosing and binding it: try a few.
        for _ in 0..3 {
            let port = free_port();
            let log = tempfile::NamedTempFile::new()
                .unwrap_or_else(|e| panic!("creating a log file for moto's server: {e}"));
            let stderr = log
                .reopen()
                .unwrap_or_else(|e| panic!("opening moto's log file: {e}"));
            let child = gateway_proc_kit::moto::command(&repo_root(), &python, port)
                // The server exits when this pipe closes, i.e. when the test process ends,
                // even if it ends without running Drop.
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .unwrap_or_else(|e| panic!("spawning {} for moto's server: {e}", python.display()));
            let mut server = MotoServer {
                endpoint: format!("http://127.0.0.1:{port}"),
                port,
                child,
                log,
            };
            match server.wait_ready() {
                Ok(()) => return server,
                Err(why) => {
                    last_failure = format!("{why}\n--- moto log ---\n{}", server.log_text())
                }
            }
        }
        panic!("moto's server did not start: {last_failure}");
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + MOTO_START_TIMEOUT;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("moto's server exited with {status}"));
            }
            if http_get_ok(addr) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "moto's server did not answer on {addr} within {MOTO_START_TIMEOUT:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What the server wrote to stderr so far (its request log and any traceback).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Environment for a subprocess (CLI, sidecar) that should talk to this server.
    pub fn aws_env(&self) -> Vec<(String, String)> {
        gateway_proc_kit::moto::aws_env(&self.endpoint)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// SDK configuration for this server, built explicitly: tests run on parallel threads, so
    /// nothing here reads or mutates the process environment.
    pub async fn sdk_config(&self) -> aws_config::SdkConfig {
        gateway_proc_kit::moto::sdk_config(&self.endpoint).await
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A unique name for a per-test table or bucket (lowercase, digits and `-`, valid for both).
pub fn unique_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{n}-{nanos}", std::process::id())
}

/// One GET of moto's dashboard; true on a 200.
fn http_get_ok(addr: SocketAddr) -> bool {
    http::status(addr, "GET", "127.0.0.1", gateway_proc_kit::moto::READY_PATH) == Some(200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moto_server_answers_and_dies_with_its_guard() {
        let server = MotoServer::start();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, server.port));
        assert!(
            http_get_ok(addr),
            "moto's server should answer once started"
        );
        drop(server);
        assert!(
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err(),
            "moto's server should be gone after its guard dropped"
        );
    }
}
