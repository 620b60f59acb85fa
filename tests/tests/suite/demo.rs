//! `gatewayctl demo --check`, the README's first command, end to end: the real binaries
//! (gatewayctl, gateway-sidecar, the pinned Envoy, moto's server) on free loopback ports and a
//! temporary run directory, so it runs beside other tests. Each run is bounded and killed on
//! timeout; after it exits, every port it used must be closed again (nothing left behind).

use gateway_testkit::{envoy_bin, free_port, repo_root};
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// The workspace's `gatewayctl`, built next to this test's own directory (`target/debug`), which
/// `cargo test --workspace` builds before running tests. The sidecar must sit beside it.
fn gatewayctl() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("locating the test binary: {e}"));
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{} has no target directory", exe.display()));
    for bin in ["gatewayctl", "gateway-sidecar", "gateway-ratelimit"] {
        if !dir.join(bin).is_file() {
            panic!(
                "{} is missing: build it with `cargo build -p gatewayctl -p gateway-sidecar -p gateway-ratelimit` (or run `cargo test --workspace`, which builds it)",
                dir.join(bin).display()
            );
        }
    }
    dir.join("gatewayctl")
}

/// Free loopback ports for everything the demo binds.
struct Ports {
    listen: u16,
    admin: u16,
    sidecar: u16,
    ratelimit: u16,
    ratelimit_sidecar: u16,
    moto: u16,
    backends: [u16; 2],
}

impl Ports {
    fn free() -> Ports {
        Ports {
            listen: free_port(),
            admin: free_port(),
            sidecar: free_port(),
            ratelimit: free_port(),
            ratelimit_sidecar: free_port(),
            moto: free_port(),
            backends: [free_port(), free_port()],
        }
    }

    fn all(&self) -> Vec<u16> {
        let mut all = vec![
            self.listen,
            self.admin,
            self.sidecar,
            self.ratelimit,
            self.ratelimit_sidecar,
            self.moto,
        ];
        all.extend(self.backends);
        all
    }

    fn args(&self, run_dir: &Path) -> Vec<String> {
        let addr = |p: u16| format!("127.0.0.1:{p}");
        vec![
            "demo".into(),
            "--check".into(),
            "--listen".into(),
            addr(self.listen),
            "--admin".into(),
            addr(self.admin),
            "--sidecar-listen".into(),
            addr(self.sidecar),
            "--ratelimit-listen".into(),
            addr(self.ratelimit),
            "--ratelimit-sidecar-listen".into(),
            addr(self.ratelimit_sidecar),
            "--moto-port".into(),
            self.moto.to_string(),
            "--backend-ports".into(),
            format!("{},{}", self.backends[0], self.backends[1]),
            "--run-dir".into(),
            run_dir.display().to_string(),
            "--repo".into(),
            repo_root().display().to_string(),
            "--domain".into(),
            "api.example.com".into(),
        ]
    }
}

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Finished {
    fn output(&self) -> String {
        format!(
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs gatewayctl with `args` and `--envoy-bin envoy`, bounded; kills it on timeout.
fn run(args: &[String], envoy: &Path) -> Finished {
    let out = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("stdout file: {e}"));
    let err = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("stderr file: {e}"));
    let reopen = |f: &tempfile::NamedTempFile| {
        f.reopen()
            .unwrap_or_else(|e| panic!("reopening {}: {e}", f.path().display()))
    };
    let mut child = Command::new(gatewayctl())
        .args(args)
        .arg("--envoy-bin")
        .arg(envoy)
        .stdin(Stdio::null())
        .stdout(reopen(&out))
        .stderr(reopen(&err))
        .spawn()
        .unwrap_or_else(|e| panic!("spawning gatewayctl: {e}"));
    let deadline = Instant::now() + RUN_TIMEOUT;
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "gatewayctl demo did not exit within {RUN_TIMEOUT:?}; killed it\n{}",
                    Finished {
                        code: None,
                        stdout: read(out.path()),
                        stderr: read(err.path())
                    }
                    .output()
                );
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => panic!("waiting for gatewayctl: {e}"),
        }
    };
    Finished {
        code,
        stdout: read(out.path()),
        stderr: read(err.path()),
    }
}

fn read(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    text
}

/// Ports on which something still accepts connections.
fn still_open(ports: &[u16]) -> Vec<u16> {
    ports
        .iter()
        .copied()
        .filter(|p| {
            TcpStream::connect_timeout(
                &SocketAddr::from((Ipv4Addr::LOCALHOST, *p)),
                Duration::from_millis(300),
            )
            .is_ok()
        })
        .collect()
}

/// Nothing accepts connections on the demo's ports any more, `after` what; `output` is the
/// demo's, for the failure message.
fn assert_all_closed(ports: &Ports, after: &str, output: &str) {
    let open = still_open(&ports.all());
    assert!(
        open.is_empty(),
        "ports {open:?} still accept connections after {after}\n{output}"
    );
}

#[test]
fn check_reaches_each_sample_backend_through_envoy_and_stops_everything() {
    let run_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("run dir: {e}"));
    let ports = Ports::free();
    let done = run(&ports.args(run_dir.path()), &envoy_bin());
    let output = done.output();
    assert_eq!(done.code, Some(0), "{output}");
    assert!(
        done.stdout
            .contains("GET http://invoices.api.example.com/invoices via 127.0.0.1:")
            && done.stdout.contains("→ 200 from sample-backend-1"),
        "{output}"
    );
    assert!(
        done.stdout
            .contains("GET http://catalog.api.example.com/products via 127.0.0.1:")
            && done.stdout.contains("→ 200 from sample-backend-2"),
        "{output}"
    );
    // The backend's own answer, relayed by Envoy, names it.
    assert!(
        done.stdout.contains(r#""backend":"sample-backend-1""#)
            && done.stdout.contains(r#""backend":"sample-backend-2""#),
        "{output}"
    );
    assert!(
        done.stdout.contains("reconciler: published version"),
        "{output}"
    );
    assert!(done.stdout.contains("check passed"), "{output}");
    // The registered per-client limit (examples/demo: 5 GETs a minute on /invoices/export),
    // counted by gateway-ratelimit through Envoy.
    assert!(
        done.stdout.contains("GET http://invoices.api.example.com/invoices/export × ")
            && done.stdout.contains("200 200 200 200 200")
            && done.stdout.contains("429 (429 from the rate-limit service)"),
        "{output}"
    );
    // From an address of its own, so the banner's curl from 127.0.0.1 starts with a quota.
    assert!(done.stdout.contains("counted for client 127.0.0.2"), "{output}");
    // Envoy's x-ratelimit headers, written from the service's statuses (as in production).
    assert!(
        done.stdout.contains(
            "Envoy's headers on it: x-ratelimit-limit: 5, 5;w=60, x-ratelimit-remaining: 0, x-ratelimit-reset: "
        ),
        "{output}"
    );
    for step in 1..=13 {
        assert!(
            done.stdout.contains(&format!("[{step}/13] ")),
            "step {step} missing\n{output}"
        );
    }
    assert!(
        run_dir.path().join("envoy.json").is_file(),
        "the bootstrap is written in the run directory"
    );
    assert_all_closed(&ports, "the demo exited", &output);
}

#[test]
fn a_missing_envoy_binary_exits_1_naming_it() {
    let run_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("run dir: {e}"));
    let ports = Ports::free();
    let missing = run_dir.path().join("no-such-envoy");
    let done = run(&ports.args(run_dir.path()), &missing);
    let output = done.output();
    assert_eq!(done.code, Some(1), "{output}");
    assert!(done.stderr.contains("failed at [1/13]"), "{output}");
    assert!(
        done.stderr.contains(&missing.display().to_string()),
        "{output}"
    );
    assert!(done.stderr.contains("does not exist"), "{output}");
    assert!(!done.stdout.contains("check passed"), "{output}");
}

/// An Envoy that reports the pinned version but refuses every config: the seed's validation
/// fails after moto's server and the backends started, and all of them must be stopped.
#[test]
fn a_failing_step_exits_1_with_the_reason_and_stops_what_it_started() {
    let run_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("run dir: {e}"));
    let fake = run_dir.path().join("refusing-envoy");
    let version = gateway_bootstrap::envoy_version();
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo \"envoy  version: 0000/{version}/Clean/RELEASE/BoringSSL\"; exit 0; fi\necho 'refused: this Envoy accepts nothing' >&2\nexit 1\n"
        ),
    )
    .unwrap_or_else(|e| panic!("writing {}: {e}", fake.display()));
    make_executable(&fake);
    let ports = Ports::free();
    let done = run(&ports.args(run_dir.path()), &fake);
    let output = done.output();
    assert_eq!(done.code, Some(1), "{output}");
    assert!(done.stderr.contains("failed at [6/13] seeding"), "{output}");
    assert!(done.stdout.contains("stopped"), "{output}");
    assert!(done.stdout.contains("moto's server"), "{output}");
    assert_all_closed(&ports, "the failure", &output);
}

#[test]
fn taken_ports_exit_1_naming_every_one_and_its_flag() {
    let run_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("run dir: {e}"));
    let take = || TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap_or_else(|e| panic!("bind: {e}"));
    let port = |l: &TcpListener| l.local_addr().unwrap_or_else(|e| panic!("address: {e}")).port();
    let (taken, taken_admin) = (take(), take());
    let mut ports = Ports::free();
    ports.listen = port(&taken);
    ports.admin = port(&taken_admin);
    let done = run(&ports.args(run_dir.path()), &envoy_bin());
    let output = done.output();
    assert_eq!(done.code, Some(1), "{output}");
    assert!(done.stderr.contains("failed at [2/13]"), "{output}");
    assert!(
        done.stderr.contains(&format!(
            "127.0.0.1:{} (Envoy's listener) is not available",
            ports.listen
        )) && done.stderr.contains("pass --listen"),
        "{output}"
    );
    assert!(
        done.stderr.contains(&format!(
            "127.0.0.1:{} (Envoy's admin endpoint) is not available",
            ports.admin
        )) && done.stderr.contains("pass --admin"),
        "both at once: {output}"
    );
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}
