//! Golden files: the exact bytes the sample registry (examples/entries) and the kill switch
//! render to. Any byte change fails here; regenerate deliberately with `UPDATE_GOLDEN=1` and
//! review the diff.

use gateway_render::{render_kill_switch, Bundle, Rendered};
use crate::support::{config, example_entries, render_examples};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn golden_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn expected_files(rendered: &Rendered) -> BTreeMap<String, String> {
    let mut files = rendered.files.clone();
    files.insert("hash.txt".into(), format!("{}\n", rendered.hash));
    files
}

fn check_golden(dir: &Path, actual: &BTreeMap<String, String>) {
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::create_dir_all(dir).expect("create golden dir");
        for (name, text) in actual {
            std::fs::write(dir.join(name), text).expect("write golden file");
        }
        return;
    }
    let mut failures = Vec::new();
    for (name, text) in actual {
        let path = dir.join(name);
        let expected = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{}: cannot read ({e})", path.display()));
                continue;
            }
        };
        if expected != *text {
            let line = expected
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(expected.lines().count().min(text.lines().count()));
            failures.push(format!(
                "{}: differs from the render, first at line {}:\n  golden: {:?}\n  render: {:?}",
                path.display(),
                line + 1,
                expected.lines().nth(line).unwrap_or("<end of file>"),
                text.lines().nth(line).unwrap_or("<end of file>"),
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "rendered bytes changed. If the change is intended, run with UPDATE_GOLDEN=1 and review the diff.\n{}",
        failures.join("\n")
    );
}

#[test]
fn sample_registry_renders_to_the_golden_bytes() {
    let rendered = render_examples();
    check_golden(&golden_dir("registry"), &expected_files(&rendered));
    golden_files_form_a_bundle_that_verifies();
}

#[test]
fn kill_switch_renders_to_the_golden_bytes() {
    check_golden(
        &golden_dir("kill-switch"),
        &expected_files(&render_kill_switch(&config())),
    );
}

fn golden_files_form_a_bundle_that_verifies() {
    // The checked-in bytes on their own (not a fresh render) must hash to the checked-in hash.
    let dir = golden_dir("registry");
    let mut files = BTreeMap::new();
    for name in ["clusters.json", "routes.json", "ratelimit.yaml"] {
        let text =
            std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        files.insert(name.to_string(), text);
    }
    let hash = std::fs::read_to_string(dir.join("hash.txt")).expect("hash.txt");
    let bundle = Bundle {
        hash: hash.trim().to_string(),
        files,
        entries: example_entries(),
    };
    bundle
        .verify()
        .expect("golden files verify against the golden hash");
}
