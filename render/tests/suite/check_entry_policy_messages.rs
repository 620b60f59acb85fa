//! The exact messages of the entry-level traffic fields (`protocol`, `canary`, `health_check`)
//! for every bad corpus file about them, held in `corpus/entry-policy-messages.json`: a change
//! of any message's bytes fails here. Regenerate deliberately with `UPDATE_GOLDEN=1` and review
//! the diff.

use gateway_render::check::{check_entry_bytes, Policy};
use std::collections::BTreeMap;
use std::path::Path;

const PREFIXES: [&str; 3] = ["protocol", "canary", "health_check"];

#[test]
fn entry_policy_messages_are_the_recorded_ones() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<String> = std::fs::read_dir(corpus.join("bad"))
        .expect("bad corpus")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|f| PREFIXES.iter().any(|p| f.starts_with(&p.replace('_', "-"))))
        .collect();
    files.sort();
    assert!(files.len() >= 30, "only {} entry-policy cases", files.len());
    let policy = Policy::new("api.example.com", false);
    let mut actual: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in files {
        let bytes = std::fs::read(corpus.join("bad").join(&file)).expect("read");
        let rejection = check_entry_bytes(&bytes, &policy).expect_err(&file);
        let lines: Vec<String> = rejection
            .problems
            .iter()
            .filter(|p| PREFIXES.iter().any(|f| p.field.starts_with(f)))
            .map(ToString::to_string)
            .collect();
        assert!(!lines.is_empty(), "{file}: no entry-policy problem in {rejection}");
        actual.insert(file, lines);
    }
    let path = corpus.join("entry-policy-messages.json");
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&actual).expect("serialise")
    );
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(&path, &text).expect("write");
        return;
    }
    let recorded = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        recorded == text,
        "entry-policy messages changed; if intended, run with UPDATE_GOLDEN=1 and review the diff:\n{text}"
    );
}
