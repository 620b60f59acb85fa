//! Operator commands against moto's server and the real Envoy: seed, reconcile, status, history,
//! diff, kill switch (both levels), restore, resume — outputs, JSON and exit codes.

use gateway_bootstrap::{gateway_bootstrap, BootstrapParams};
use gateway_render::contract::{CLUSTERS_FILE, ROUTES_FILE};
use gateway_render::{render, RenderConfig};
use gateway_testkit::envoy::EnvoyProcess;
use gateway_testkit::{envoy_bin, free_port, http, unique_name, MotoServer};
use serde_json::Value;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;

use common::{finish, Run};

struct Gateway {
    moto: MotoServer,
    table: String,
    bucket: String,
    dir: tempfile::TempDir,
}

impl Gateway {
    fn new() -> Gateway {
        let g = Gateway {
            moto: MotoServer::start(),
            table: unique_name("ops"),
            bucket: unique_name("ops"),
            dir: tempfile::tempdir().expect("tempdir"),
        };
        let run = g.ctl(&["init"]);
        assert_eq!(run.code, 0, "init: {}", run.stderr);
        assert!(run.stdout.contains("created bucket"), "{}", run.stdout);
        assert!(
            run.stdout.contains("created signing key alias/gateway-bundles (ECC_NIST_P256"),
            "{}",
            run.stdout
        );
        let again = g.ctl(&["init"]);
        assert!(again.stdout.contains("signing key alias/gateway-bundles already exists"), "{}", again.stdout);
        g
    }

    fn ctl(&self, args: &[&str]) -> Run {
        self.ctl_with(args, &[])
    }

    /// `ctl` with more environment (a service's endpoint pointed elsewhere).
    fn ctl_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        finish(
            Command::new(env!("CARGO_BIN_EXE_gatewayctl"))
                .env_clear()
                .args(args)
                .envs(self.moto.aws_env())
                .env("GATEWAY_TABLE", &self.table)
                .env("GATEWAY_BUCKET", &self.bucket)
                .env("GATEWAY_DOMAIN", "api.example.com")
                .env("GATEWAY_ALLOW_LOOPBACK_BACKENDS", "true")
                .env("ENVOY_BIN", envoy_bin())
                .envs(env.iter().copied())
                .stdin(Stdio::null())
                .output()
                .expect("gatewayctl runs"),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let run = self.ctl(args);
        assert_eq!(
            run.code, 0,
            "gatewayctl {args:?}: stdout {} stderr {}",
            run.stdout, run.stderr
        );
        run.stdout
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("gatewayctl {args:?} --json: {e}: {out}"))
    }

    /// The live bundle's version id and hash, as `status --json` shows them.
    fn live(&self) -> (String, String) {
        let live = self.json(&["status", "--json"])["live"].clone();
        (
            live["version_id"].as_str().expect("version").to_string(),
            live["hash"].as_str().expect("hash").to_string(),
        )
    }

    fn entry(&self, team: &str, service: &str, paths: &[&str]) -> String {
        let routes: Vec<Value> = paths
            .iter()
            .map(|p| serde_json::json!({ "path": p }))
            .collect();
        let doc = serde_json::json!({
            "team": team, "service": service, "host": team,
            "backend": gateway_testkit::closed_backend(team), "routes": routes
        });
        let file = self
            .dir
            .path()
            .join(format!("{team}-{service}-{}.json", paths.len()));
        std::fs::write(&file, doc.to_string()).expect("write entry");
        file.display().to_string()
    }
}

#[test]
fn the_operator_loop_from_seed_to_kill_switch_and_back() {
    let g = Gateway::new();
    let seeded = g.ok(&["seed"]);
    assert!(seeded.starts_with("seeded version "), "{seeded}");
    assert!(
        g.ok(&["seed"]).starts_with("already seeded"),
        "a second seed never overwrites"
    );

    g.ok(&["register", &g.entry("billing", "invoices", &["/invoices"])]);
    g.ok(&["register", &g.entry("catalog", "products", &["/products"])]);
    let published = g.ok(&["reconcile"]);
    assert!(published.starts_with("published version "), "{published}");
    assert!(published.contains("2 routes"), "{published}");
    assert!(
        g.ok(&["reconcile"]).starts_with("unchanged"),
        "an unchanged registry publishes nothing"
    );

    let status = g.json(&["status", "--json"]);
    assert_eq!(status["drift"], false, "{status}");
    assert_eq!(status["entries"], 2);
    assert_eq!(status["routes"], 2);
    assert_eq!(status["reconcilers_last_publish"], true);
    assert_eq!(status["live"]["writer"], "reconciler");
    let text = g.ok(&["status"]);
    assert!(
        text.contains("drift:     no") && text.contains("that is the live bundle"),
        "{text}"
    );

    g.ok(&[
        "register",
        &g.entry("billing", "invoices", &["/invoices", "/receipts"]),
    ]);
    let before = status["live"]["version_id"]
        .as_str()
        .expect("version")
        .to_string();
    let pending = g.json(&["status", "billing/invoices", "--json"]);
    assert_eq!(pending["state"], "pending", "registered, not yet published: {pending}");
    assert_eq!(pending["revision_registered"], 2);
    assert_eq!(pending["revision_published"], 1);
    g.ok(&["reconcile"]);
    let one = g.json(&["status", "billing/invoices", "--json"]);
    assert_eq!(one["state"], "published", "{one}");
    assert_eq!(one["revision_published"], 2);
    let live_hash = g.json(&["status", "--json"])["live"]["hash"].clone();
    assert_eq!(one["hash"], live_hash, "first published in the live bundle");
    let text = g.ok(&["status", "billing/invoices"]);
    assert!(text.contains("state:      published"), "{text}");
    assert!(g.ok(&["status"]).contains("quarantined: none"));
    let missing = g.ctl(&["status", "nobody/nothing"]);
    assert_ne!(missing.code, 0);
    assert!(missing.stderr.contains("nobody/nothing is not registered"), "{}", missing.stderr);
    let diff = g.ok(&["diff", &before]);
    assert!(
        diff.contains("+ billing/invoices: route * /receipts"),
        "{diff}"
    );
    assert_eq!(diff.lines().count(), 2, "only the one change: {diff}");

    let history = g.json(&["history", "--json"]);
    let items = history.as_array().expect("array");
    assert_eq!(items.len(), 3, "seed + two publishes: {history}");
    assert_eq!(items[0]["live"], true);
    assert_eq!(items[0]["reconcilers_last"], true);
    assert_eq!(items[2]["writer"], "seed");
    let text = g.ok(&["history"]);
    assert!(text.contains("reconciler's last publish"), "{text}");

    // Without a terminal and without --yes the kill switch refuses (usage error), publishing nothing.
    let refused = g.ctl(&["kill-switch"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);

    let ks = g.ok(&["kill-switch", "--yes"]);
    assert!(ks.contains("kill switch (level 2) published"), "{ks}");
    let status = g.json(&["status", "--json"]);
    assert_eq!(status["drift"], true, "{status}");
    assert_eq!(status["live"]["writer"], "kill-switch");
    // Who wrote it: the caller's principal from GetCallerIdentity (moto's test user here).
    let by = status["live"]["written_by"]
        .as_str()
        .expect("written_by recorded");
    assert!(by.starts_with("arn:aws:"), "{status}");
    assert!(g
        .ok(&["status"])
        .contains(&format!("by kill-switch ({by})")));
    assert!(g.ok(&["status"]).contains("drift:     YES"));

    // A team's deploy does not undo it, and register says its change is held.
    let registered = g.ctl(&[
        "register",
        &g.entry("catalog", "products", &["/products", "/late"]),
    ]);
    assert_eq!(registered.code, 0, "{}", registered.stderr);
    assert!(
        registered
            .stderr
            .contains("warning: registered, but not published yet: the kill switch (level 2) is live"),
        "{}",
        registered.stderr
    );
    let held = g.ok(&["reconcile"]);
    assert!(held.starts_with("held: drift"), "{held}");
    // The team's status and the gateway's say what holds its change, and what lifts it.
    let entry = g.ok(&["status", "catalog/products"]);
    assert!(
        entry.contains("held:       the kill switch (level 2) is live") && entry.contains("gatewayctl restore"),
        "{entry}"
    );
    let doc = g.json(&["status", "catalog/products", "--json"]);
    assert!(doc["held"].as_str().is_some_and(|h| h.contains("kill switch")), "{doc}");
    let overall = g.json(&["status", "--json"]);
    assert!(overall["held"].as_str().is_some_and(|h| h.contains("kill switch")), "{overall}");
    let diff = g.ok(&["diff"]);
    assert!(
        diff.contains("- billing/invoices: entry removed"),
        "the kill-switch bundle has no entries: {diff}"
    );

    let restored = g.ok(&["restore"]);
    assert!(restored.starts_with("restored sha256:"), "{restored}");
    assert_eq!(g.json(&["status", "--json"])["drift"], false);
    let after = g.ok(&["reconcile"]);
    assert!(
        after.starts_with("published version "),
        "the pending change publishes after restore: {after}"
    );

    g.ok(&["kill-switch", "--yes"]);
    assert!(g.ok(&["reconcile"]).starts_with("held: drift"));
    let resumed = g.json(&["resume", "--json"]);
    assert!(
        resumed["hash"]
            .as_str()
            .is_some_and(|h| h.starts_with("sha256:")),
        "{resumed}"
    );
    assert!(
        g.ok(&["reconcile"]).starts_with("published version "),
        "resume hands control back to the registry"
    );
    assert_eq!(g.json(&["status", "--json"])["drift"], false);
}

#[test]
fn errors_say_what_to_do_next() {
    let g = Gateway::new();
    let status = g.ok(&["status"]);
    assert!(status.contains("run `gatewayctl seed`"), "{status}");

    g.ctl(&["restore"])
        .assert_exit_naming(1, &["gatewayctl history"]);

    g.ok(&["seed"]);
    g.ctl(&["restore", "no-such-version"])
        .assert_exit_naming(1, &["gatewayctl history"]);

    let reconciled = g.ok(&["reconcile"]);
    assert!(
        reconciled.starts_with("kept live config"),
        "zero entries keep the live config: {reconciled}"
    );

    let run = g.ctl(&["kill-switch", "--off"]);
    assert_eq!(run.code, 2, "--off needs --runtime: {}", run.stderr);
}

fn wait_status(addr: SocketAddr, want: u16) -> Option<u16> {
    http::wait_for_status(
        addr,
        "GET",
        "nobody.api.example.com",
        "/anything",
        want,
        Duration::from_secs(10),
    )
}

/// CDS and RDS watched directories under `dir` holding the bundle of an empty registry (the
/// catch-all's 404 for every host).
fn empty_watched_dirs(dir: &Path) -> (PathBuf, PathBuf) {
    let (cds, rds) = (dir.join("cds"), dir.join("rds"));
    std::fs::create_dir_all(&cds).expect("cds dir");
    std::fs::create_dir_all(&rds).expect("rds dir");
    let rendered = render(&[], &RenderConfig::new("api.example.com")).expect("render");
    std::fs::write(cds.join(CLUSTERS_FILE), &rendered.files[CLUSTERS_FILE]).expect("clusters");
    let jwt = gateway_render::jwt::jwt_path(&rds);
    std::fs::create_dir_all(jwt.parent().expect("jwt dir")).expect("jwt dir");
    std::fs::write(jwt, rendered.jwt_file()).expect("jwt");
    std::fs::write(rds.join(ROUTES_FILE), &rendered.files[ROUTES_FILE]).expect("routes");
    (cds, rds)
}

/// `gatewayctl ARGS` with an empty environment (the runtime kill switch needs no AWS).
fn bare_ctl(args: &[&str]) -> Run {
    finish(
        Command::new(env!("CARGO_BIN_EXE_gatewayctl"))
            .env_clear()
            .args(args)
            .output()
            .expect("gatewayctl runs"),
    )
}

/// The runtime kill switch through `admin`: on, every request to `addr` fails fast; off, the
/// catch-all's 404 is back. The run that turned it on.
fn kill_switch_on_and_off(admin: &str, addr: SocketAddr) -> Run {
    let on = bare_ctl(&["kill-switch", "--runtime", "--admin", admin]);
    assert_eq!(on.code, 0, "{}", on.stderr);
    assert_eq!(
        wait_status(addr, 503),
        Some(503),
        "every request fails fast"
    );
    let off = bare_ctl(&["kill-switch", "--runtime", "--admin", admin, "--off"]);
    assert_eq!(off.code, 0, "{}", off.stderr);
    assert_eq!(wait_status(addr, 404), Some(404), "traffic is back");
    on
}

#[test]
fn runtime_kill_switch_flips_a_running_envoy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cds, rds) = empty_watched_dirs(dir.path());
    let ratelimit = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let envoy = EnvoyProcess::start(
        |ports| {
            let params = BootstrapParams::local(
                (&cds, &rds),
                (ports.listener, ports.admin.into()),
                ratelimit,
                2,
            );
            gateway_bootstrap(&params).expect("bootstrap")
        },
        &[],
    );
    let addr = envoy.listener_addr();
    assert_eq!(
        wait_status(addr, 404),
        Some(404),
        "the catch-all answers before the switch"
    );

    let on = kill_switch_on_and_off(&envoy.admin_url(), addr);
    assert!(on.stdout.contains("ON"), "{}", on.stdout);

    let nowhere = bare_ctl(&[
        "kill-switch",
        "--runtime",
        "--admin",
        &format!("http://127.0.0.1:{}", free_port()),
    ]);
    assert_eq!(nowhere.code, 1);
    assert!(nowhere.stderr.contains("is Envoy's admin listening there?"));
}

/// Production shape: admin on a Unix socket; `--admin unix:PATH` reaches it (operators run it
/// through ECS Exec in the Envoy container).
#[test]
fn runtime_kill_switch_over_the_admin_unix_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cds, rds) = empty_watched_dirs(dir.path());
    let socket = dir.path().join("admin.sock");
    let ratelimit = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let envoy = EnvoyProcess::start_with_admin_socket(
        &socket,
        |ports| {
            let mut params = BootstrapParams::production();
            params.clusters_dir = cds.clone();
            params.routes_dir = rds.clone();
            params.listen = ports.listener;
            params.admin = gateway_bootstrap::AdminAddress::Unix(socket.clone());
            params.ratelimit = ratelimit;
            gateway_bootstrap(&params).expect("bootstrap")
        },
        |file| gateway_bootstrap::proxy_args(file, true),
    );
    let addr = envoy.listener_addr();
    assert_eq!(wait_status(addr, 404), Some(404));
    kill_switch_on_and_off(&format!("unix:{}", socket.display()), addr);
    let relative = bare_ctl(&["kill-switch", "--runtime", "--admin", "unix:admin.sock"]);
    assert_eq!(relative.code, 2);
    assert!(relative.stderr.contains("absolute"));
}

#[test]
fn preview_matches_the_next_publish_byte_for_byte_and_writes_nothing() {
    let g = Gateway::new();
    g.ok(&["seed"]);
    g.ok(&["register", &g.entry("billing", "invoices", &["/invoices"])]);
    g.ok(&["register", &g.entry("catalog", "products", &["/products"])]);
    g.ok(&["reconcile"]);
    let versions = g.json(&["history", "--json"]).as_array().expect("array").len();

    let candidate = g.entry("billing", "invoices", &["/invoices", "/receipts"]);
    let p = g.json(&["preview", &candidate, "--json"]);
    assert_eq!(p["candidate"]["state"], "would publish", "{p}");
    assert_eq!(p["outcome"]["outcome"], "published", "{p}");
    let hash = p["hash"].as_str().expect("hash").to_string();
    let diff = p["diff"].to_string();
    assert!(diff.contains("/receipts"), "{p}");
    let text = g.ok(&["preview", &candidate]);
    assert!(text.contains("billing/invoices: would publish") && text.contains(&hash), "{text}");
    assert!(text.contains("billing/invoices: register: would be updated (revision 2)"), "{text}");

    // Nothing was written: no version, no registration, no status change.
    assert_eq!(g.json(&["history", "--json"]).as_array().expect("array").len(), versions);
    assert_eq!(g.json(&["status", "billing/invoices", "--json"])["revision_registered"], 1);

    // The reconciler then publishes exactly that hash.
    g.ok(&["register", &candidate]);
    let published = g.json(&["reconcile", "--json"]);
    assert_eq!(published["hash"], hash.as_str(), "{published}");

    // Conflicts: preview refuses exactly as register does (same message, exit 1), runs
    // nothing past the refusal and writes nothing.
    let write = |name: &str, doc: Value| {
        let file = g.dir.path().join(name);
        std::fs::write(&file, doc.to_string()).expect("write");
        file.to_str().expect("utf-8").to_string()
    };
    let thief = write(
        "thief.json",
        serde_json::json!({"team": "thief", "service": "x", "host": "billing",
            "backend": "http://127.0.0.1:9", "routes": [{"path": "/steal"}]}),
    );
    let overlap = write(
        "overlap.json",
        serde_json::json!({"team": "billing", "service": "receipts", "host": "billing",
            "backend": "http://127.0.0.1:9", "routes": [{"path": "/invoices/"}]}),
    );
    for conflict in [&thief, &overlap] {
        let previewed = g.ctl(&["preview", conflict]);
        let registered = g.ctl(&["register", conflict]);
        assert_eq!(registered.code, 1, "{}", registered.stderr);
        assert_eq!(previewed.code, 1, "{} {}", previewed.stdout, previewed.stderr);
        assert_eq!(previewed.stderr, registered.stderr, "the same verdict");
        assert!(previewed.stdout.contains("register: refused"), "{}", previewed.stdout);
        let doc: Value =
            serde_json::from_str(&g.ctl(&["preview", conflict, "--json"]).stdout).expect("json");
        assert_eq!(doc["entries"][0]["register"]["verdict"], "refused", "{doc}");
        assert_eq!(doc["outcome"], Value::Null, "{doc}");
    }
    assert!(
        g.ctl(&["preview", &overlap]).stderr.contains("billing/invoices"),
        "the holder is named"
    );
    assert_eq!(g.json(&["history", "--json"]).as_array().expect("array").len(), versions + 1);

    // A directory: every file judged as register would, the run with all of them in place.
    let dir = g.dir.path().join("desired");
    std::fs::create_dir(&dir).expect("dir");
    for (name, service, path) in [("a.json", "receipts", "/receipts2"), ("b.json", "refunds", "/refunds")] {
        std::fs::write(
            dir.join(name),
            serde_json::json!({"team": "billing", "service": service, "host": "billing",
                "backend": "http://127.0.0.1:9", "routes": [{"path": path}]})
            .to_string(),
        )
        .expect("write");
    }
    let p = g.json(&["preview", dir.to_str().expect("utf-8"), "--json"]);
    assert_eq!(p["entries"].as_array().map(Vec::len), Some(2), "{p}");
    assert_eq!(p["entries"][1]["register"]["verdict"], "would be created", "{p}");
    assert_eq!(p["entries"][1]["publish"]["state"], "would publish", "{p}");
    let added: Vec<&str> = p["diff"]["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|c| c["kind"] == "entry-added")
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(added, ["billing/receipts", "billing/refunds"], "{p}");
    // The same service twice in one directory: refused naming both files.
    std::fs::copy(dir.join("a.json"), dir.join("c.json")).expect("copy");
    let twice = g.ctl(&["preview", dir.to_str().expect("utf-8")]);
    assert_eq!(twice.code, 1);
    assert!(
        twice.stderr.contains("billing/receipts is declared by both a.json and c.json"),
        "{}",
        twice.stderr
    );
}

#[test]
fn preview_without_envoy_says_it_cannot_judge_and_a_reordered_set_is_no_change() {
    let g = Gateway::new();
    g.ok(&["seed"]);
    let doc = |on: &[&str]| {
        serde_json::json!({"team": "billing", "service": "invoices", "host": "billing",
            "backend": "http://127.0.0.1:9", "routes": [{"path": "/invoices", "methods": ["GET"], "timeout": "10s",
            "retries": {"attempts": 2, "on": on}}]})
        .to_string()
    };
    let file = g.dir.path().join("invoices.json");
    std::fs::write(&file, doc(&["5xx", "reset"])).expect("write");
    let file = file.to_str().expect("utf-8");
    g.ok(&["register", file]);
    g.ok(&["reconcile"]);
    std::fs::write(g.dir.path().join("invoices.json"), doc(&["reset", "5xx"])).expect("write");
    let p = g.json(&["preview", file, "--json"]);
    assert_eq!(p["diff"]["changes"], serde_json::json!([]), "{p}");
    assert_eq!(p["entries"][0]["register"]["verdict"], "would be unchanged", "{p}");

    let missing = g.ctl_with(&["preview", file], &[("ENVOY_BIN", "/nonexistent/envoy")]);
    assert_eq!(missing.code, 1);
    assert!(missing.stdout.is_empty(), "no verdict without Envoy: {}", missing.stdout);
    assert!(
        missing.stderr.contains("cannot judge") && missing.stderr.contains("/nonexistent/envoy"),
        "{}",
        missing.stderr
    );
    assert!(!missing.stderr.contains("failed/"), "{}", missing.stderr);
}

/// Writes a proxy's report as its sidecar would (docs/design.md#proxy-reports).
fn report_proxy(g: &Gateway, id: &str, hash: &str, version_id: &str, reported_at: u64, ttl: u64) {
    use gateway_adapters::registry::{ProxyReport, ProxyTable};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let conf = g.moto.sdk_config().await;
        let table = ProxyTable::new(gateway_adapters::aws::dynamodb_client(&conf), &g.table);
        table
            .put(&ProxyReport {
                proxy_id: id.into(),
                hash: hash.into(),
                version_id: version_id.into(),
                delivered_at: reported_at,
                lag_seconds: Some(2),
                reported_at,
                expires_at: reported_at + ttl,
            })
            .await
            .expect("report written");
    });
}

#[test]
fn status_lists_reporting_proxies_and_says_on_how_many_an_entry_is_live() {
    let g = Gateway::new();
    g.ok(&["seed"]);
    g.ok(&["register", &g.entry("billing", "invoices", &["/invoices"])]);
    g.ok(&["reconcile"]);
    let (v1, h1) = g.live();
    let none = g.json(&["status", "billing/invoices", "--json"]);
    assert_eq!(none["serving"]["reporting"], 0, "{none}");
    assert!(g.ok(&["status", "billing/invoices"]).contains("serving:    no proxy is reporting"));

    g.ok(&["register", &g.entry("billing", "invoices", &["/invoices", "/receipts"])]);
    g.ok(&["reconcile"]);
    let (v2, h2) = g.live();
    let now = gateway_adapters::registry::proxies::unix_now();
    report_proxy(&g, "task-new", &h2, &v2, now, 300);
    report_proxy(&g, "task-old", &h1, &v1, now, 300);
    // Reported long ago: aged out even though the row is still stored.
    report_proxy(&g, "task-gone", &h2, &v2, now - 1000, 300);

    let one = g.json(&["status", "billing/invoices", "--json"]);
    assert_eq!(one["serving"]["live"], 1, "{one}");
    assert_eq!(one["serving"]["reporting"], 2, "{one}");
    let text = g.ok(&["status", "billing/invoices"]);
    assert!(text.contains("serving:    revision 2 live on 1 of 2 proxies"), "{text}");
    assert!(
        text.contains("not on task-old: serves bundle") && text.contains("another version of billing/invoices"),
        "{text}"
    );
    assert!(!text.contains("task-gone"), "{text}");

    let all = g.json(&["status", "--json"]);
    let proxies = all["proxies"].as_array().expect("proxies");
    let ids: Vec<&str> = proxies.iter().filter_map(|p| p["proxy"].as_str()).collect();
    assert_eq!(ids, ["task-new", "task-old"], "{all}");
    assert_eq!(proxies[0]["hash"], h2.as_str());
    assert_eq!(proxies[0]["lag_seconds"], 2);
    let text = g.ok(&["status"]);
    assert!(text.contains("proxies:   2 reporting, 1 on the live bundle"), "{text}");
    assert!(text.contains("task-old") && text.contains("(not the live bundle)"), "{text}");

    // A row any sidecar's role could write: an id with an escape sequence and a line break, and
    // an expiry a day away. It is not counted, and the warning shows it escaped.
    report_proxy(&g, "task\u{1b}[2J\nproxies:   9 reporting", &h2, &v2, now, 86_400);
    let run = g.ctl(&["status"]);
    assert_eq!(run.code, 0, "{} {}", run.stdout, run.stderr);
    assert!(run.stdout.contains("proxies:   2 reporting, 1 on the live bundle"), "{}", run.stdout);
    assert!(!run.stdout.contains("9 reporting"), "{}", run.stdout);
    assert!(
        run.stderr.contains("warning: proxy report row PROXY#task\\u{1b}[2J\\u{a}proxies:   9 reporting ignored: proxy id \"task\\u{1b}[2J\\nproxies:   9 reporting\" contains '\\u{1b}'"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains('\u{1b}') && !run.stdout.contains('\u{1b}'), "{} {}", run.stdout, run.stderr);
    let entry = g.ctl(&["status", "billing/invoices"]);
    assert!(entry.stdout.contains("live on 1 of 2 proxies"), "{}", entry.stdout);
    assert!(entry.stderr.contains("warning: proxy report row PROXY#task\\u{1b}"), "{}", entry.stderr);
}

/// Restore across the change to signed bundles: a format-1 version (one JSON document, plain,
/// unsigned) is read, verified and published again as format 2, signed; history says which
/// version verifies.
#[test]
fn a_format_1_version_from_before_signing_restores_signed() {
    use gateway_adapters::store::encoding::decode;
    let g = Gateway::new();
    g.ok(&["seed"]);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (old_version, hash) = runtime.block_on(async {
        let conf = g.moto.sdk_config().await;
        let s3 = gateway_adapters::store::s3_client(&conf);
        let live = s3
            .get_object()
            .bucket(&g.bucket)
            .key("bundle.json")
            .send()
            .await
            .expect("get the seed");
        assert_eq!(live.content_encoding(), Some("gzip"), "published compressed");
        let hash = live
            .metadata()
            .and_then(|m| m.get("hash"))
            .cloned()
            .expect("hash metadata");
        let wire = live.body.collect().await.expect("body").into_bytes().to_vec();
        let read = gateway_render::Bundle::read(&decode(wire, 1 << 30).expect("gunzip"))
            .expect("format 2");
        assert!(read.signature.is_some(), "the seed is signed");
        let old = serde_json::json!({
            "entries": read.bundle.entries, "files": read.bundle.files,
            "format": 1, "hash": read.bundle.hash,
        });
        let put = s3
            .put_object()
            .bucket(&g.bucket)
            .key("bundle.json")
            .content_type("application/json")
            .metadata("hash", &hash)
            .metadata("writer", "reconciler")
            .body(serde_json::to_vec(&old).expect("json").into())
            .send()
            .await
            .expect("an old, format-1 version");
        (put.version_id().expect("versioned").to_string(), hash)
    });
    let status = g.json(&["status", "--json"]);
    assert_eq!(status["live"]["hash"], hash.as_str());
    assert_eq!(status["signature"], "unsigned (format 1)", "{status}");
    g.ok(&["kill-switch", "--yes"]);
    assert_ne!(g.json(&["status", "--json"])["live"]["hash"], hash.as_str());
    let restored = g.ok(&["restore", &old_version]);
    assert!(restored.starts_with(&format!("restored {hash}")), "{restored}");
    assert!(restored.contains("published again as format 2, signed"), "{restored}");
    let status = g.json(&["status", "--json"]);
    assert_eq!(status["live"]["hash"], hash.as_str());
    assert!(
        status["signature"]
            .as_str()
            .is_some_and(|s| s.starts_with("signed, verified with")),
        "{status}"
    );
    let history = g.json(&["history", "--json"]);
    assert_eq!(history.as_array().map(Vec::len), Some(4));
    let of = |v: &str| {
        history
            .as_array()
            .into_iter()
            .flatten()
            .find(|i| i["version_id"] == v)
            .map(|i| i["signature"].clone())
    };
    assert_eq!(of(&old_version), Some(serde_json::json!("unsigned (format 1)")));

    // The public key a sidecar trusts, as PEM.
    let pem = g.ok(&["public-key", "--out", "-"]);
    assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"), "{pem}");
    gateway_render::bundle::TrustedKey::from_pem("printed", &pem).expect("a P-256 key");
}

/// Replaces an entry row around the register function (boto3 from the checkout's venv, which
/// moto's server comes with), as a hand edit or an old writer would.
fn put_raw_entry_row(g: &Gateway, id: &str, entry_json: &str) {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let script = "import boto3, os, sys\n\
        c = boto3.client('dynamodb', endpoint_url=os.environ['AWS_ENDPOINT_URL'], region_name=os.environ['AWS_REGION'])\n\
        c.put_item(TableName=sys.argv[1], Item={'pk': {'S': 'ENTRY#' + sys.argv[2]}, 'sk': {'S': 'ENTRY'},\n\
            'entry': {'S': sys.argv[3]}, 'revision': {'N': '7'}, 'updated_at': {'N': '0'}})\n";
    let out = Command::new(python)
        .args(["-c", script, &g.table, id, entry_json])
        .envs(g.moto.aws_env())
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn status_shows_a_quarantined_row_that_no_longer_parses_naming_the_field() {
    let g = Gateway::new();
    g.ok(&["seed"]);
    g.ok(&["register", &g.entry("billing", "invoices", &["/invoices"])]);
    g.ok(&["register", &g.entry("catalog", "products", &["/products"])]);
    g.ok(&["reconcile"]);
    put_raw_entry_row(
        &g,
        "billing/invoices",
        r#"{"team":"billing","service":"invoices","host":"billing","backend":"http://127.0.0.1:9","routes":[{"path":"/invoices","timeout":5}]}"#,
    );
    g.ok(&["reconcile"]);
    let text = g.ok(&["status", "billing/invoices"]);
    assert!(text.contains("state:      quarantined"), "{text}");
    assert!(text.contains("routes[0].timeout"), "the field is named: {text}");
    assert!(text.contains("the previously published revision"), "{text}");
    let doc = g.json(&["status", "billing/invoices", "--json"]);
    assert_eq!(doc["state"], "quarantined", "{doc}");
    assert!(doc["unreadable"].as_str().is_some_and(|w| w.contains("routes[0].timeout")), "{doc}");
    assert!(doc["quarantine"]["reason"].as_str().is_some_and(|w| w.contains("routes[0].timeout")), "{doc}");
}

#[test]
fn a_cloudwatch_outage_during_reconcile_is_said_and_the_decision_stands() {
    let g = Gateway::new();
    g.ok(&["seed"]);
    g.ok(&["register", &g.entry("billing", "invoices", &["/invoices"])]);
    let closed = format!("http://127.0.0.1:{}", free_port());
    let run = g.ctl_with(&["reconcile"], &[("AWS_ENDPOINT_URL_CLOUDWATCH", &closed)]);
    assert_eq!(run.code, 0, "the decision stands: {}", run.stderr);
    assert!(run.stdout.starts_with("published version "), "{}", run.stdout);
    assert!(
        run.stderr.contains("warning: the run's metrics were not emitted"),
        "said: {}",
        run.stderr
    );
}

#[test]
fn status_says_a_rejected_run_holds_every_registration_until_a_run_passes() {
    let g = Gateway::new();
    g.ok(&["seed"]);
    g.ok(&["register", &g.entry("billing", "invoices", &["/invoices"])]);
    g.ok(&["register", &g.entry("catalog", "products", &["/products"])]);
    g.ok(&["reconcile"]);
    assert_eq!(g.json(&["status", "--json"])["held"], Value::Null);
    g.ok(&["register", &g.entry("billing", "invoices", &["/invoices", "/receipts"])]);
    // A reconciler that no longer allows loopback backends sets both teams aside: past a 10 %
    // share the valve rejects the whole run.
    let strict = [
        ("GATEWAY_ALLOW_LOOPBACK_BACKENDS", "false"),
        ("GATEWAY_QUARANTINE_MAX_SHARE", "0.1"),
    ];
    let rejected = g.ctl_with(&["reconcile"], &strict);
    assert_eq!(rejected.code, 1, "{} {}", rejected.stdout, rejected.stderr);
    let held = g.json(&["status", "--json"])["held"].clone();
    assert!(held.as_str().is_some_and(|h| h.contains("last reconcile run was rejected")), "{held}");
    let text = g.ok(&["status", "billing/invoices"]);
    assert!(text.contains("held:") && text.contains("was rejected at"), "{text}");
    // A run that passes lifts it.
    g.ok(&["reconcile"]);
    assert_eq!(g.json(&["status", "--json"])["held"], Value::Null);
}
