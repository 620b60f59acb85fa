//! What the checks accept, the rest of the pipeline can carry: every good corpus entry renders,
//! and the real Envoy accepts the render (paths with `:`, `'`, `;`, `%XX`, trailing slashes,
//! IPv6 backends, every method and unit).

mod render_support;

use gateway_render::check::{check_entry_bytes, Policy};
use gateway_render::{render, RenderConfig};
use render_support::envoy::{envoy_bin, gateway_bootstrap, ProcessGuard};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn every_good_corpus_entry_renders_and_envoy_accepts_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/good");
    let mut paths: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 15, "only {} good entries", paths.len());
    let policy = Policy::new("api.example.com", false);
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    for path in paths {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let entry = check_entry_bytes(&bytes, &policy).unwrap_or_else(|r| panic!("{file}:\n{r}"));
        // One entry per render: the corpus entries are independent and may share a host.
        let rendered = render(&[entry], &RenderConfig::new("api.example.com"))
            .unwrap_or_else(|e| panic!("{file} does not render: {e}"));
        assert!(rendered.route_count > 0, "{file}: no routes rendered");
        let bootstrap = tmp.path().join(format!("{file}.bootstrap.json"));
        let text = serde_json::to_string(&gateway_bootstrap(&rendered, 0, 0))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        fs::write(&bootstrap, text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let (ok, output) = envoy_validate(&bootstrap, tmp.path());
        assert!(ok, "{file}: Envoy rejected the render:\n{output}");
    }
}

fn envoy_validate(bootstrap: &Path, dir: &Path) -> (bool, String) {
    let log_path = dir.join("envoy.log");
    let log = fs::File::create(&log_path).unwrap_or_else(|e| panic!("envoy log: {e}"));
    let stderr = log.try_clone().unwrap_or_else(|e| panic!("envoy log: {e}"));
    let child = Command::new(envoy_bin())
        .args([
            "--mode",
            "validate",
            "--disable-hot-restart",
            "--log-level",
            "warn",
            "-c",
        ])
        .arg(bootstrap)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("starting Envoy ({}): {e}", envoy_bin().display()));
    let mut guard = ProcessGuard(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = guard
            .0
            .try_wait()
            .unwrap_or_else(|e| panic!("waiting for Envoy: {e}"))
        {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "envoy --mode validate did not finish in 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.success(),
        fs::read_to_string(&log_path).unwrap_or_default(),
    )
}
