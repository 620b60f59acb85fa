//! The real Envoy for tests: started with a bootstrap the test builds for free loopback ports,
//! `--disable-hot-restart` (with hot restart an Envoy launched from a process that exits dies
//! with it), and killed when its guard drops.

use crate::{block_on, envoy_bin, free_port};
use gateway_envoy_admin::{AdminClient, AdminEndpoint};
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Envoy with a few hundred routes initialises in well under a second; a busy machine is slower.
const ENVOY_START_TIMEOUT: Duration = Duration::from_secs(30);
/// A busy machine answers a large `/stats` slowly; a test's admin call waits this long.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// Set when the admin endpoint is a Unix socket (`ports.admin` is then unused).
    admin_socket: Option<PathBuf>,
    log: tempfile::NamedTempFile,
    access_log: tempfile::NamedTempFile,
    _bootstrap: tempfile::NamedTempFile,
}

impl EnvoyProcess {
    /// Starts Envoy with the bootstrap `bootstrap(ports)` builds for free ports, and waits
    /// (bounded) until its admin `/ready` answers 200, i.e. it initialised from its config.
    /// `extra_args` go after `-c FILE --disable-hot-restart`. Retries with other ports when one
    /// was taken in between.
    pub fn start(
        bootstrap: impl Fn(EnvoyPorts) -> serde_json::Value,
        extra_args: &[&str],
    ) -> EnvoyProcess {
        EnvoyProcess::start_with_args(bootstrap, |file| default_args(file, extra_args))
    }

    /// Like `start`, with the whole command line from `args(bootstrap_file)` (e.g. the proxy's
    /// own `proxy_args`), so a test runs Envoy exactly as production does.
    pub fn start_with_args(
        bootstrap: impl Fn(EnvoyPorts) -> serde_json::Value,
        args: impl Fn(&Path) -> Vec<String>,
    ) -> EnvoyProcess {
        let mut last_failure = String::new();
        for _ in 0..3 {
            match EnvoyProcess::try_start(EnvoyPorts::free(), &bootstrap, &args) {
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
        EnvoyProcess::try_start(ports, &bootstrap, &|file| default_args(file, extra_args))
            .unwrap_or_else(|why| panic!("Envoy did not start: {why}"))
    }

    /// Like `start_with_args`, with Envoy's admin on the Unix socket `admin_socket` (the
    /// production shape): readiness and `admin_get`/`admin_post` go through the socket.
    pub fn start_with_admin_socket(
        admin_socket: &Path,
        bootstrap: impl Fn(EnvoyPorts) -> serde_json::Value,
        args: impl Fn(&Path) -> Vec<String>,
    ) -> EnvoyProcess {
        let mut last_failure = String::new();
        for _ in 0..3 {
            let _ = std::fs::remove_file(admin_socket);
            match EnvoyProcess::try_start_on(
                EnvoyPorts::free(),
                Some(admin_socket.to_path_buf()),
                &bootstrap,
                &args,
            ) {
                Ok(envoy) => return envoy,
                Err(why) => last_failure = why,
            }
        }
        panic!("Envoy did not start: {last_failure}");
    }

    fn try_start(
        ports: EnvoyPorts,
        bootstrap: &dyn Fn(EnvoyPorts) -> serde_json::Value,
        args: &dyn Fn(&Path) -> Vec<String>,
    ) -> Result<EnvoyProcess, String> {
        EnvoyProcess::try_start_on(ports, None, bootstrap, args)
    }

    fn try_start_on(
        ports: EnvoyPorts,
        admin_socket: Option<PathBuf>,
        bootstrap: &dyn Fn(EnvoyPorts) -> serde_json::Value,
        args: &dyn Fn(&Path) -> Vec<String>,
    ) -> Result<EnvoyProcess, String> {
        let bin = envoy_bin();
        // Envoy picks its parser by extension.
        let mut file = tempfile::Builder::new()
            .suffix(".json")
            .tempfile()
            .unwrap_or_else(|e| panic!("creating a bootstrap file: {e}"));
        file.write_all(bootstrap(ports).to_string().as_bytes())
            .unwrap_or_else(|e| panic!("writing the bootstrap file: {e}"));
        let log = tempfile::NamedTempFile::new()
            .unwrap_or_else(|e| panic!("creating Envoy's log file: {e}"));
        let access_log = tempfile::NamedTempFile::new()
            .unwrap_or_else(|e| panic!("creating Envoy's stdout file: {e}"));
        let child = Command::new(&bin)
            .args(args(file.path()))
            .stdin(Stdio::null())
            .stdout(
                access_log
                    .reopen()
                    .unwrap_or_else(|e| panic!("opening Envoy's stdout file: {e}")),
            )
            .stderr(
                log.reopen()
                    .unwrap_or_else(|e| panic!("opening Envoy's log file: {e}")),
            )
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {}: {e}", bin.display()));
        let mut envoy = EnvoyProcess {
            child,
            ports,
            admin_socket,
            log,
            access_log,
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
            let admin = self.admin();
            if block_on(gateway_proc_kit::envoy::is_ready(&admin)) {
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

    /// What Envoy wrote to stdout so far: the gateway bootstrap's access log, a JSON line per
    /// request.
    pub fn access_log_text(&self) -> String {
        std::fs::read_to_string(self.access_log.path()).unwrap_or_default()
    }

    pub fn log_path(&self) -> &Path {
        self.log.path()
    }

    /// One admin GET (`/stats?filter=…`, `/ready`, …): status code and body.
    pub fn admin_get(&self, path_and_query: &str) -> Option<(u16, String)> {
        self.admin_request("GET", path_and_query)
    }

    /// One admin POST (`/runtime_modify?key=value`, …): status code and body.
    pub fn admin_post(&self, path_and_query: &str) -> Option<(u16, String)> {
        self.admin_request("POST", path_and_query)
    }

    /// The admin client for this Envoy (the one `gateway-envoy-admin` client), over its Unix
    /// socket or loopback port.
    pub fn admin(&self) -> AdminClient {
        let endpoint = match &self.admin_socket {
            Some(socket) => AdminEndpoint::Unix(socket.clone()),
            None => AdminEndpoint::Tcp(self.ports.admin.to_string()),
        };
        AdminClient::new(endpoint).with_timeout(ADMIN_TIMEOUT)
    }

    fn admin_request(&self, method: &str, path_and_query: &str) -> Option<(u16, String)> {
        let admin = self.admin();
        let response = block_on(admin.request(method, path_and_query)).ok()?;
        Some((
            response.status,
            String::from_utf8_lossy(&response.body).into_owned(),
        ))
    }

    /// The TCP ports this process listens on (LISTEN sockets it holds, IPv4 and IPv6), read
    /// from `/proc`: its socket inodes matched against the kernel's TCP tables.
    pub fn listening_tcp_ports(&self) -> Vec<u16> {
        listening_tcp_ports(self.child.id())
    }
}

impl Drop for EnvoyProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn listening_tcp_ports(pid: u32) -> Vec<u16> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/fd: {e}"));
    let inodes: std::collections::BTreeSet<String> = fds
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let t = target.to_string_lossy().into_owned();
            Some(t.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // local_address is HEXIP:HEXPORT; st 0A is LISTEN; the inode is column 9.
            if cols.len() > 9 && cols[3] == "0A" && inodes.contains(cols[9]) {
                if let Some(port) = cols[1]
                    .rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
                {
                    ports.push(port);
                }
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// `-c FILE --disable-hot-restart EXTRA…`: hot restart would tie Envoy's life to the process
/// that launched it.
fn default_args(file: &Path, extra_args: &[&str]) -> Vec<String> {
    let mut args = vec![
        "-c".to_string(),
        file.display().to_string(),
        "--disable-hot-restart".to_string(),
    ];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    args
}

#[cfg(test)]
fn http_get(addr: SocketAddr, path_and_query: &str) -> Option<(u16, String)> {
    crate::http::request(addr, "GET", "127.0.0.1", path_and_query).map(|r| (r.status, r.body))
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
        assert_eq!(
            http_get(envoy.listener_addr(), "/").map(|(c, _)| c),
            Some(418)
        );
        let admin = envoy.admin();
        let info = block_on(admin.get("/server_info")).expect("admin answers");
        assert!(
            String::from_utf8_lossy(&info.body).contains("\"state\""),
            "server_info names Envoy's state"
        );
        drop(envoy);
        // Another test may have bound the freed port since: what must not answer is an Envoy.
        if let Ok(info) = block_on(admin.get("/server_info")) {
            let body = String::from_utf8_lossy(&info.body);
            assert!(!body.contains("\"state\""), "Envoy should be gone: {body}");
        }
    }
}
