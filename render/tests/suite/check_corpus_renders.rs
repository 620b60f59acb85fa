//! What the checks accept, the rest of the pipeline can carry: every good corpus entry renders,
//! and the real Envoy accepts the render (paths with `:`, `'`, `;`, `%XX`, trailing slashes,
//! IPv6 backends, every method and unit).

use gateway_render::check::{check_entry_bytes, Policy};
use gateway_render::{render, RenderConfig};
use gateway_testkit::validate::validate_bootstrap;
use crate::support::envoy::gateway_bootstrap;
use std::fs;
use std::path::Path;

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
        let (ok, output) = validate_bootstrap(&gateway_bootstrap(&rendered, 0, 0));
        assert!(ok, "{file}: Envoy rejected the render:\n{output}");
    }
}
