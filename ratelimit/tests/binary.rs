//! The `gateway-ratelimit` binary as it runs beside a local gateway: served on a Unix socket
//! (Envoy's rate-limit cluster pointing at it with a `pipe` address), counting requests through
//! the real Envoy, reloading `ratelimit.yaml` when it is replaced (one log line per reload),
//! keeping its rules when a replaced file is refused, and leaving on SIGTERM.

use gateway_bootstrap::{gateway_bootstrap, BootstrapParams};
use gateway_render::contract::{CLUSTERS_FILE, RATE_LIMIT_CLUSTER, RATE_LIMIT_FILE, ROUTES_FILE};
use gateway_render::{render, Entry, Limit, Per, RenderConfig, Route, Unit};
use gateway_testkit::backend::Backend;
use gateway_testkit::envoy::{EnvoyPorts, EnvoyProcess};
use gateway_testkit::free_addr;
use gateway_testkit::http::status;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const DOMAIN: &str = "api.example.com";

fn entries(backend: &Backend, requests: u32) -> Vec<Entry> {
    vec![Entry {
        rollout: None,
        serving: None,
        team: "billing".into(),
        service: "invoices".into(),
        host: "billing".into(),
        backend: backend.url(),
        protocol: Default::default(),
        canary: None,
        health_check: None,
        preserve_host: false,
        jwt: Default::default(),
        backends: vec![],
        routes: vec![
            Route {
                path: "/limited".into(),
                methods: None,
                limits: vec![Limit::Global {
                    per: Per::Route,
                    header: None,
                    requests,
                    every: Unit::Minute,
                }],
                timeout: None,
                ..Default::default()
            },
            Route {
                path: "/open".into(),
                methods: None,
                limits: Vec::new(),
                timeout: None,
                ..Default::default()
            },
        ],
    }]
}

/// Writes `text` to `dir/name` the way the sidecar does: a temp file renamed into place.
fn replace(dir: &Path, name: &str, text: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).unwrap_or_else(|e| panic!("writing {}: {e}", tmp.display()));
    std::fs::rename(&tmp, dir.join(name)).unwrap_or_else(|e| panic!("renaming {name}: {e}"));
}

struct Service {
    child: Child,
    log: PathBuf,
}

impl Service {
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (bounded) until `needle` appears `times` times in the log.
    fn wait_log(&self, needle: &str, times: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.log_text().matches(needle).count() < times {
            assert!(
                Instant::now() < deadline,
                "{needle:?} not logged {times} times; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn clear_of_minute_boundary(need: u64) {
    let secs = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    };
    while secs() % 60 + need >= 60 {
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn serves_on_a_unix_socket_reloads_replaced_rules_and_keeps_them_when_refused() {
    let backend = Backend::start("billing");
    let dir = tempfile::tempdir().expect("temp dir");
    let [cds, rds, rules] = ["cds", "rds", "ratelimit"].map(|d| {
        let p = dir.path().join(d);
        std::fs::create_dir_all(&p).expect("mkdir");
        p
    });
    let config = RenderConfig::new(DOMAIN);
    let first = render(&entries(&backend, 2), &config).expect("render");
    replace(&cds, CLUSTERS_FILE, &first.files[CLUSTERS_FILE]);
    replace(&rds, ROUTES_FILE, &first.files[ROUTES_FILE]);
    let jwt = gateway_render::jwt::jwt_path(&rds);
    std::fs::create_dir_all(jwt.parent().expect("jwt dir")).expect("mkdir");
    std::fs::write(jwt, first.jwt_file()).expect("jwt");
    replace(&rules, RATE_LIMIT_FILE, &first.files[RATE_LIMIT_FILE]);

    let socket = dir.path().join("ratelimit.sock");
    let log = dir.path().join("ratelimit.log");
    let child = Command::new(env!("CARGO_BIN_EXE_gateway-ratelimit"))
        .arg("--config-dir")
        .arg(&rules)
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()))
        .args(["--reload-ms", "50"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("spawning gateway-ratelimit");
    let mut service = Service { child, log };
    service.wait_log("loaded rate-limit rules", 1);
    assert!(socket.exists(), "no socket at {}", socket.display());

    let envoy = EnvoyProcess::start_on(
        EnvoyPorts::free(),
        |ports| {
            let params = BootstrapParams::local(
                (&cds, &rds),
                (ports.listener, ports.admin.into()),
                free_addr(),
                0,
            );
            let mut bootstrap = gateway_bootstrap(&params).expect("bootstrap");
            let cluster = bootstrap["static_resources"]["clusters"]
                .as_array_mut()
                .and_then(|cs| cs.iter_mut().find(|c| c["name"] == RATE_LIMIT_CLUSTER))
                .expect("the rate-limit cluster");
            cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"] =
                serde_json::json!({ "pipe": { "path": socket.display().to_string() } });
            bootstrap
        },
        &["--reject-unknown-dynamic-fields"],
    );
    let host = format!("billing.{DOMAIN}");
    let get = || status(envoy.listener_addr(), "GET", &host, "/limited");
    let deadline = Instant::now() + Duration::from_secs(20);
    while status(envoy.listener_addr(), "GET", &host, "/open") != Some(200) {
        assert!(Instant::now() < deadline, "the routes never came up");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Minute windows: keep the rest of the test inside one window.
    clear_of_minute_boundary(15);
    let seq: Vec<_> = (0..3).map(|_| get()).collect();
    assert_eq!(seq, [Some(200), Some(200), Some(429)]);

    // Replaced with a limit of 4: the count carries on in the window (3 so far).
    let second = render(&entries(&backend, 4), &config).expect("render");
    replace(&rules, RATE_LIMIT_FILE, &second.files[RATE_LIMIT_FILE]);
    service.wait_log("loaded rate-limit rules", 2);
    assert_eq!([get(), get()], [Some(200), Some(429)]);

    // A file the service's loader refuses: logged with the reason, old rules kept (a loaded
    // file without billing's rule would let every request through).
    replace(
        &rules,
        RATE_LIMIT_FILE,
        "domain: gateway\ndescriptors:\n- key: team\n  rate_limit: {unit: fortnight, requests_per_unit: 1}\n",
    );
    service.wait_log("not reloaded", 1);
    assert!(
        service.log_text().contains("fortnight"),
        "{}",
        service.log_text()
    );
    assert_eq!(get(), Some(429), "the previous rules are still counting");

    // SIGTERM: exits 0 and removes its socket.
    let pid = service.child.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Ok(Some(status)) = service.child.try_wait() {
            break status.code();
        }
        assert!(Instant::now() < deadline, "still running after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(0), "{}", service.log_text());
    assert!(!socket.exists(), "socket left behind");
}

#[test]
fn usage_errors_name_the_listen_address() {
    let out = Command::new(env!("CARGO_BIN_EXE_gateway-ratelimit"))
        .args(["--config-dir", "/nonexistent", "--listen", "localhost-ish"])
        .output()
        .expect("running gateway-ratelimit");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("neither HOST:PORT"), "{stderr}");
}
