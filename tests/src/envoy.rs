//! The real Envoy for tests: started with a bootstrap the test builds for free loopback ports,
//! `--disable-hot-restart` (with hot restart an Envoy launched from a process that exits dies
//! with it), and killed when its guard drops.

use crate::{envoy_bin, free_port};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Envoy with a few hundred routes initialises in well under a second; a busy machine is slower.
const ENVOY_START_TIMEOUT: Duration = Duration::from_secs(30);

/// The loopback addresses one Envoy listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvoyPorts {
    pub admin: SocketAddr,
    pub listener: SocketAddr,
}

impl EnvoyPorts {
    /// Two loopback ports that were free a moment ago.
    pub fn free() -> EnvoyPorts {
        EnvoyPorts {
            admin: SocketAddr::from((Ipv4Addr::LOCALHOST, free_port())),
            listener: SocketAddr::from((Ipv4Addr::LOCALHOST, free_port())),
        }
    }
}

pub struct EnvoyProcess {
    child: Child,
    ports: EnvoyPorts,
    log: tempfile::NamedTempFile,
    _bootstrap: tempfile::NamedTempFile,
}

impl EnvoyProcess {
    /// Starts Envoy with the bootstrap `bootstrap(ports)` builds for free ports, and waits
    /// (bounded) until its admin `/ready` answers 200, i.e. it initialised from its config.
    /// `extra_args` go after `-c FILE --disable-hot-restart`. Retries with other ports when one
    /// was taken in between.
    pub fn start(bootstrap: impl Fn(EnvoyPorts) -> serde_json::Value, extra_args: &[&str]) -> EnvoyProcess {
        let mut last_failure = String::new();
        for _ in 0..3 {
            match EnvoyProcess::try_start(EnvoyPorts::free(), &bootstrap, extra_args) {
                Ok(envoy) => return envoy,
                Err(why) => last_failure = why,
            }
        }
        panic!("Envoy did not start: {last_failure}");
    }

    /// Like `start`, on ports the caller chose (e.g. because a sidecar must know the admin
    /// address before Envoy runs). Panics if Envoy does not become ready.
    pub fn start_on(
        ports: EnvoyPorts,
        bootstrap: impl Fn(EnvoyPorts) -> serde_json::Value,
        extra_args: &[&str],
    ) -> EnvoyProcess {
        EnvoyProcess::try_start(ports, &bootstrap, extra_args)
            .unwrap_or_else(|why| panic!("Envoy did not start: {why}"))
    }

    fn try_start(
        ports: EnvoyPorts,
        bootstrap: &dyn Fn(EnvoyPorts) -> serde_json::Value,
        extra_args: &[&str],
    ) -> Result<EnvoyProcess, String> {
        let bin = envoy_bin();
        // Envoy picks its parser by extension.
        let mut file = tempfile::Builder::new()
            .suffix(".json")
            .tempfile()
            .unwrap_or_else(|e| panic!("creating a bootstrap file: {e}"));
        file.write_all(bootstrap(ports).to_string().as_bytes())
            .unwrap_or_else(|e| panic!("writing the bootstrap file: {e}"));
        let log = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("creating Envoy's log file: {e}"));
        let child = Command::new(&bin)
            .arg("-c")
            .arg(file.path())
            .arg("--disable-hot-restart")
            .args(extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap_or_else(|e| panic!("opening Envoy's log file: {e}")))
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {}: {e}", bin.display()));
        let mut envoy = EnvoyProcess {
            child,
            ports,
            log,
            _bootstrap: file,
        };
        match envoy.wait_ready() {
            Ok(()) => Ok(envoy),
            Err(why) => Err(format!("{why}\n--- Envoy log ---\n{}", envoy.log_text())),
        }
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + ENVOY_START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("Envoy exited with {status}"));
            }
            if http_get(self.ports.admin, "/ready").map(|(code, _)| code) == Some(200) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "Envoy's admin on {} was not ready within {ENVOY_START_TIMEOUT:?}",
                    self.ports.admin
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `http://127.0.0.1:PORT` of the admin endpoint.
    pub fn admin_url(&self) -> String {
        format!("http://{}", self.ports.admin)
    }

    pub fn listener_addr(&self) -> SocketAddr {
        self.ports.listener
    }

    pub fn ports(&self) -> EnvoyPorts {
        self.ports
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the process has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// What Envoy wrote to stderr so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    pub fn log_path(&self) -> &Path {
        self.log.path()
    }

    /// One admin GET (`/stats?filter=…`, `/ready`, …): status code and body.
    pub fn admin_get(&self, path_and_query: &str) -> Option<(u16, String)> {
        http_get(self.ports.admin, path_and_query)
    }

    /// One admin POST (`/runtime_modify?key=value`, …): status code and body.
    pub fn admin_post(&self, path_and_query: &str) -> Option<(u16, String)> {
        http_request(self.ports.admin, "POST", path_and_query)
    }
}

impl Drop for EnvoyProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.1 GET on loopback, one request per connection (Envoy refuses HTTP/1.0 by
/// default): status code and body.
fn http_get(addr: SocketAddr, path_and_query: &str) -> Option<(u16, String)> {
    http_request(addr, "GET", path_and_query)
}

fn http_request(addr: SocketAddr, method: &str, path_and_query: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "{method} {path_and_query} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let code = answer.split(' ').nth(1)?.parse().ok()?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer.as_str(), ""));
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.to_ascii_lowercase().contains("chunked")
    });
    Some((code, if chunked { dechunk(body) } else { body.to_string() }))
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_answers_and_dies_with_its_guard() {
        let envoy = EnvoyProcess::start(
            |ports| {
                serde_json::json!({
                    "admin": { "address": { "socket_address": { "address": "127.0.0.1", "port_value": ports.admin.port() } } },
                    "static_resources": { "listeners": [ {
                        "name": "l",
                        "address": { "socket_address": { "address": "127.0.0.1", "port_value": ports.listener.port() } },
                        "filter_chains": [ { "filters": [ {
                            "name": "envoy.filters.network.http_connection_manager",
                            "typed_config": {
                                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                                "stat_prefix": "t",
                                "route_config": { "virtual_hosts": [ { "name": "all", "domains": ["*"], "routes": [ {
                                    "match": { "prefix": "/" }, "direct_response": { "status": 418 }
                                } ] } ] },
                                "http_filters": [ { "name": "envoy.filters.http.router", "typed_config": {
                                    "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" } } ]
                            }
                        } ] } ]
                    } ] }
                })
            },
            &[],
        );
        assert_eq!(http_get(envoy.listener_addr(), "/").map(|(c, _)| c), Some(418));
        let admin = envoy.ports().admin;
        drop(envoy);
        // Another test may have bound the freed port since: what must not answer is an Envoy.
        if let Some((_, body)) = http_get(admin, "/server_info") {
            assert!(!body.contains("\"state\""), "Envoy should be gone: {body}");
        }
    }
}
