//! Shared by the render tests: the sample entries and a render of them.
#![allow(dead_code)]

use gateway_render::{render, Entry, RenderConfig, Rendered};
use std::path::PathBuf;

pub const BASE_DOMAIN: &str = "api.example.com";

pub fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/entries")
}

/// The sample entries in `examples/entries`, in file-name order.
pub fn example_entries() -> Vec<Entry> {
    let dir = examples_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|d| d.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 3,
        "expected the sample entries in {}",
        dir.display()
    );
    paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p)
                .unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        })
        .collect()
}

pub fn config() -> RenderConfig {
    RenderConfig::new(BASE_DOMAIN)
}

pub fn render_examples() -> Rendered {
    render(&example_entries(), &config()).expect("the sample entries render")
}
