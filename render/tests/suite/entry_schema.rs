//! The committed JSON Schema (`schema/entry.schema.json`, read by `ExposeOnGateway` at synth and
//! by editors) is the one the entry types give now: a change to `render/src/entry.rs` or to a
//! bound it names fails here until the file is regenerated.

use gateway_render::schema::{entry_schema, entry_schema_text, SCHEMA_FILE, SCHEMA_ID};
use std::path::PathBuf;

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(SCHEMA_FILE)
}

#[test]
fn the_committed_schema_is_the_one_the_entry_types_give() {
    let path = committed_path();
    let text = entry_schema_text();
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().expect("schema/")).expect("create schema/");
        std::fs::write(&path, &text).expect("write the schema");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == text {
        return;
    }
    let line = committed
        .lines()
        .zip(text.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(committed.lines().count().min(text.lines().count()));
    panic!(
        "{SCHEMA_FILE} differs from what render/src/entry.rs gives, first at line {}:\n  \
         committed: {:?}\n  generated: {:?}\n\
         If the change is intended, run `UPDATE_GOLDEN=1 cargo test -p gateway-render --test \
         suite entry_schema`, review the diff and commit the file (ExposeOnGateway validates \
         entries with it at synth).",
        line + 1,
        committed.lines().nth(line).unwrap_or("<end of file>"),
        text.lines().nth(line).unwrap_or("<end of file>"),
    );
}

#[test]
fn the_schema_names_itself_and_its_draft() {
    let schema = entry_schema();
    assert_eq!(schema["$id"], SCHEMA_ID);
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["required"],
        serde_json::json!(["team", "service", "host", "routes"])
    );
    // And `backend` or `backends`, exactly one.
    let one_of: Vec<&serde_json::Value> = schema["oneOf"]
        .as_array()
        .expect("oneOf")
        .iter()
        .map(|o| &o["required"])
        .collect();
    assert_eq!(one_of, [&serde_json::json!(["backend"]), &serde_json::json!(["backends"])]);
}
