//! The Rust messages for the corpus's route-policy cases, recorded in
//! `corpus/route-policy-messages.json`: the TypeScript construct's copy of these checks
//! (infra/lib/route-policy-checks.ts) must produce the same bytes (infra/test/route-policy-checks.test.ts
//! reads the same file). Regenerate deliberately with `UPDATE_GOLDEN=1` and review the diff.

use gateway_render::check::{check_entry_bytes, Policy};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const PREFIXES: [&str; 6] = [
    "timeout-",
    "retries-",
    "rewrite-",
    "headers-",
    "cors-",
    "websocket-",
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

#[test]
fn route_policy_messages_are_recorded() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus().join("bad"))
        .expect("corpus/bad")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".json") && PREFIXES.iter().any(|x| n.starts_with(x)))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 40, "only {} route-policy cases", files.len());
    let policy = Policy::new("api.example.com", false);
    let mut messages: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in &files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let rejection = check_entry_bytes(&bytes, &policy).expect_err(&name);
        messages.insert(
            name,
            rejection.problems.iter().map(|p| p.to_string()).collect(),
        );
    }
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&messages).expect("json")
    );
    let recorded = corpus().join("route-policy-messages.json");
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(&recorded, &text).expect("write");
        return;
    }
    let old = std::fs::read_to_string(&recorded).unwrap_or_default();
    assert!(
        old == text,
        "{} differs from the checks' messages; if intended, run with UPDATE_GOLDEN=1 and review the diff",
        recorded.display()
    );
}
