//! `gatewayctl sync DIR [--prune] [--dry-run]` and `gatewayctl dump DIR`, against moto's server:
//! the plan before the writes, a directory synced twice, a file removed and pruned, other teams
//! and stacks' entries left alone, duplicates refused, dump and sync round-tripping.

use crate::common::on_moto::{gatewayctl, gatewayctl_ok, list_json, new_table};
use serde_json::{json, Value};
use std::path::Path;

const STACK: &str =
    "arn:aws:cloudformation:us-east-1:222222222222:stack/orders/5b8a9f40-1111-11ef-9f3c-0a1b2c3d4e5f";

fn entry(team: &str, service: &str, path: &str) -> Value {
    json!({"team": team, "service": service, "host": team,
           "backend": format!("https://{service}.{team}.internal.example:8443"),
           "routes": [{"path": path, "methods": ["GET"]}]})
}

fn put(dir: &Path, name: &str, doc: &Value) {
    std::fs::write(dir.join(name), doc.to_string()).expect("write");
}

fn ids(table: &str) -> Vec<String> {
    list_json(table)["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["id"].as_str().map(String::from))
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

#[test]
fn a_directory_synced_twice_then_pruned_changes_only_its_teams_operator_entries() {
    let table = new_table("sync");
    let desired = tempfile::tempdir().expect("tempdir");
    let d = desired.path();
    put(d, "a.json", &entry("billing", "invoices", "/invoices"));
    put(d, "b.json", &entry("billing", "receipts", "/receipts"));
    // Another team's entry, registered on its own: outside the directory's scope.
    let other = tempfile::tempdir().expect("tempdir");
    put(other.path(), "c.json", &entry("catalog", "products", "/products"));
    gatewayctl_ok(&table, &["register", s(&other.path().join("c.json"))]);

    let dry = gatewayctl_ok(&table, &["sync", s(d), "--dry-run"]);
    assert!(dry.contains("+ create billing/invoices (a.json)"), "{dry}");
    assert!(dry.contains("+ create billing/receipts (b.json)"), "{dry}");
    assert!(dry.contains("dry run: nothing written"), "{dry}");
    assert_eq!(ids(&table), ["catalog/products"], "a dry run writes nothing");

    let first = gatewayctl_ok(&table, &["sync", s(d)]);
    assert!(first.starts_with("plan:\n+ create"), "the plan comes first: {first}");
    assert!(first.contains("sync: 2 created, 0 updated, 0 unchanged, 0 deleted, 0 failed"), "{first}");
    let again = gatewayctl_ok(&table, &["sync", s(d)]);
    assert!(again.contains("= unchanged billing/invoices"), "{again}");
    assert!(again.contains("sync: 0 created, 0 updated, 2 unchanged, 0 deleted, 0 failed"), "{again}");

    // One field changed: the plan names it.
    let mut changed = entry("billing", "invoices", "/invoices");
    changed["routes"][0]["timeout"] = json!("5s");
    put(d, "a.json", &changed);
    std::fs::remove_file(d.join("b.json")).expect("remove");
    let kept = gatewayctl_ok(&table, &["sync", s(d)]);
    assert!(kept.contains("~ update billing/invoices (a.json)"), "{kept}");
    assert!(kept.contains("route GET /invoices timeout none -> 5s"), "{kept}");
    assert!(kept.contains("kept billing/receipts (not in DIR; --prune deletes it)"), "{kept}");
    assert!(ids(&table).contains(&"billing/receipts".to_string()), "no prune, no delete");

    let pruned = gatewayctl_ok(&table, &["sync", s(d), "--prune"]);
    assert!(pruned.contains("- delete billing/receipts"), "{pruned}");
    assert!(pruned.contains("deleted billing/receipts"), "{pruned}");
    assert!(pruned.contains("1 deleted, 0 failed"), "{pruned}");
    assert_eq!(ids(&table), ["billing/invoices", "catalog/products"], "other teams untouched");

    // A team's last entry goes only when the team is named.
    let empty = tempfile::tempdir().expect("tempdir");
    let refused = gatewayctl(&table, &["sync", s(empty.path()), "--prune"]);
    assert_eq!(refused.code, 1, "an empty directory is no desired state: {}", refused.stdout);
    assert!(refused.stderr.contains("no *.json entry files"), "{}", refused.stderr);
    let last = gatewayctl_ok(&table, &["sync", s(empty.path()), "--team", "billing", "--prune"]);
    assert!(last.contains("deleted billing/invoices"), "{last}");
    assert_eq!(ids(&table), ["catalog/products"]);
    // A file of a team --team leaves out of scope is a usage error.
    let narrow = gatewayctl(&table, &["sync", s(d), "--team", "catalog"]);
    assert_eq!(narrow.code, 2, "{}", narrow.stderr);
    assert!(narrow.stderr.contains("--team does not name billing"), "{}", narrow.stderr);
}

#[test]
fn duplicates_and_bad_files_stop_the_sync_before_any_write_and_stacks_entries_are_left_alone() {
    let table = new_table("sync");
    let desired = tempfile::tempdir().expect("tempdir");
    let d = desired.path();
    put(d, "a.json", &entry("billing", "invoices", "/invoices"));
    put(d, "z.json", &entry("billing", "invoices", "/invoices/v2"));
    let twice = gatewayctl(&table, &["sync", s(d), "--prune"]);
    assert_eq!(twice.code, 1);
    assert!(
        twice.stderr.contains("billing/invoices is declared by both a.json and z.json"),
        "{}",
        twice.stderr
    );
    std::fs::remove_file(d.join("z.json")).expect("remove");
    put(d, "bad.json", &json!({"team": "billing", "service": "x", "host": "billing",
        "backend": "http://169.254.169.254", "routes": [{"path": "/x"}]}));
    let bad = gatewayctl(&table, &["sync", s(d)]);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("bad.json") && bad.stderr.contains("backend"), "{}", bad.stderr);
    assert!(ids(&table).is_empty(), "nothing written");
    std::fs::remove_file(d.join("bad.json")).expect("remove");

    // An entry a stack owns: sync refuses to change it and never prunes it.
    let stack_dir = tempfile::tempdir().expect("tempdir");
    put(stack_dir.path(), "o.json", &entry("billing", "orders", "/orders"));
    gatewayctl_ok(&table, &["register", s(&stack_dir.path().join("o.json"))]);
    gatewayctl_ok(&table, &["adopt", "billing/orders", "--stack", STACK]);
    let mut theirs = entry("billing", "orders", "/orders");
    theirs["routes"][0]["timeout"] = json!("5s");
    put(d, "o.json", &theirs);
    let run = gatewayctl(&table, &["sync", s(d), "--prune"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("! refused billing/orders (o.json): owned by stack:"), "{}", run.stdout);
    assert!(run.stdout.contains("created billing/invoices"), "the rest applies: {}", run.stdout);
    std::fs::remove_file(d.join("o.json")).expect("remove");
    let pruned = gatewayctl_ok(&table, &["sync", s(d), "--prune"]);
    assert!(!pruned.contains("delete billing/orders"), "{pruned}");
    assert_eq!(ids(&table), ["billing/invoices", "billing/orders"]);
}

#[test]
fn dump_then_sync_changes_nothing() {
    let table = new_table("dump");
    let source = tempfile::tempdir().expect("tempdir");
    let mut rich = entry("billing", "invoices", "/invoices");
    rich["routes"][0]["retries"] = json!({"attempts": 2, "on": ["reset", "5xx"]});
    rich["routes"][0]["timeout"] = json!("10s");
    put(source.path(), "a.json", &rich);
    put(source.path(), "b.json", &entry("catalog", "products", "/products"));
    gatewayctl_ok(&table, &["sync", s(source.path())]);

    let out = tempfile::tempdir().expect("tempdir");
    let dumped = out.path().join("state");
    let said = gatewayctl_ok(&table, &["dump", s(&dumped)]);
    assert!(said.contains("wrote 2 entry files"), "{said}");
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(dumped.join("billing_invoices.json")).expect("dumped file"),
    )
    .expect("json");
    assert_eq!(written["routes"][0]["retries"]["on"], json!(["5xx", "reset"]), "canonical");
    let back = gatewayctl_ok(&table, &["sync", s(&dumped), "--prune", "--dry-run"]);
    assert!(!back.contains("+ ") && !back.contains("~ ") && !back.contains("- "), "{back}");
    assert_eq!(back.matches("= unchanged").count(), 2, "{back}");

    // Into a directory that already holds entry files: refused, nothing overwritten.
    let again = gatewayctl(&table, &["dump", s(&dumped)]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("already holds 2 *.json files"), "{}", again.stderr);
    let only = out.path().join("billing");
    gatewayctl_ok(&table, &["dump", s(&only), "--team", "billing"]);
    assert_eq!(std::fs::read_dir(&only).expect("dir").count(), 1);
}
