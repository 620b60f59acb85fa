//! Golden files: the exact bytes the sample registry (examples/entries) and the kill switch
//! render to. Any byte change fails here; regenerate deliberately with `UPDATE_GOLDEN=1` and
//! review the diff.

use gateway_render::{render_kill_switch, Bundle};
use crate::support::{check_golden, config, example_entries, expected_files, golden_dir, render_examples};
use std::collections::BTreeMap;

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
