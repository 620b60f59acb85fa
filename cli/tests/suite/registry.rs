//! `gatewayctl init | register | deregister | list` against moto's server: outputs and exit codes.

use crate::common;

use common::on_moto::{
    assert_register_refused, assert_registers, gatewayctl, gatewayctl_ok, list_json,
};

fn entry_file(
    dir: &tempfile::TempDir,
    name: &str,
    team: &str,
    service: &str,
    path: &str,
) -> String {
    let file = dir.path().join(name);
    let doc = serde_json::json!({
        "team": team, "service": service, "host": "invoices",
        "backend": "https://invoices.internal.example:8443",
        "routes": [ { "path": path, "methods": ["GET"],
                      "limits": [ { "per": "client-ip", "requests": 100, "every": "minute" } ] } ]
    });
    std::fs::write(&file, doc.to_string()).expect("write entry");
    file.display().to_string()
}

fn new_table() -> String {
    common::on_moto::new_table("cli")
}

#[test]
fn init_is_idempotent() {
    let table = new_table();
    let run = gatewayctl(&table, &["init"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("already exists"), "{}", run.stdout);
}

#[test]
fn register_list_deregister() {
    let table = new_table();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = entry_file(&dir, "a.json", "billing", "invoices-api", "/invoices");

    let created = gatewayctl_ok(&table, &["register", &file]);
    assert_eq!(
        created.trim(),
        "created billing/invoices-api on invoices.api.example.com (revision 1)"
    );
    let unchanged = gatewayctl_ok(&table, &["register", &file]);
    assert!(
        unchanged.starts_with("unchanged billing/invoices-api"),
        "{unchanged}"
    );

    let list = gatewayctl_ok(&table, &["list"]);
    let lines: Vec<_> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(lines[0].starts_with("ID") && lines[0].contains("REVISION"));
    assert!(
        lines[1].contains("billing/invoices-api") && lines[1].contains("invoices.api.example.com")
    );
    assert!(
        lines[0].trim_end().ends_with("OWNER") && lines[1].contains("/invoices GET"),
        "{list}"
    );
    let cells: Vec<&str> = lines[1]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(cells.len(), 5, "{cells:?}");
    assert_eq!(cells[3], "1", "revision: {cells:?}");
    assert!(
        cells[4].starts_with("operator arn:aws:"),
        "owned by the operator who ran it: {cells:?}"
    );

    let doc = list_json(&table);
    assert_eq!(doc["entries"][0]["id"], "billing/invoices-api");
    assert_eq!(doc["entries"][0]["revision"], 1);
    assert_eq!(doc["entries"][0]["owner"]["kind"], "operator");
    assert!(
        doc["entries"][0]["owner"]["principal"]
            .as_str()
            .is_some_and(|p| p.starts_with("arn:aws:")),
        "the operator's principal from GetCallerIdentity: {}",
        doc["entries"][0]["owner"]
    );
    assert_eq!(
        doc["entries"][0]["entry"]["routes"][0]["limits"][0]["requests"],
        100
    );

    let run = gatewayctl(&table, &["deregister", "billing/invoices-api"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "deleted billing/invoices-api");
    let run = gatewayctl(&table, &["deregister", "billing/invoices-api"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("is not registered"), "{}", run.stderr);
    let run = gatewayctl(
        &table,
        &["deregister", "--missing-ok", "billing/invoices-api"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);

    assert_eq!(list_json(&table)["entries"], serde_json::json!([]));
}

#[test]
fn conflicts_and_rejections_exit_1_with_the_reason() {
    let table = new_table();
    let dir = tempfile::tempdir().expect("tempdir");
    let held = entry_file(&dir, "held.json", "billing", "invoices-api", "/invoices");
    assert_registers(&table, &held);

    // (file, team, service, path, the whole refusal)
    let refused = [
        (
            "other.json",
            "payments",
            "pay",
            "/pay",
            "host invoices.api.example.com is held by billing",
        ),
        (
            "same.json",
            "billing",
            "invoices-v2",
            "/invoices",
            "path /invoices on invoices.api.example.com is held by billing/invoices-api",
        ),
    ];
    for (name, team, service, path, reason) in refused {
        assert_register_refused(&table, &entry_file(&dir, name, team, service, path), reason);
    }

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"team":"billing","service":"x","host":"invoices","backend":"https://x.example","routes":[{"path":"nope"}]}"#)
        .expect("write");
    let run = gatewayctl(&table, &["register", &bad.display().to_string()]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("routes[0].path"), "{}", run.stderr);

    let doc = list_json(&table);
    assert_eq!(
        doc["entries"].as_array().map(Vec::len),
        Some(1),
        "nothing rejected was written"
    );
}

#[test]
fn usage_errors_exit_2() {
    let run = gatewayctl("", &["list"]);
    assert_eq!(run.code, 2, "missing --table: {}", run.stderr);
    assert!(run.stderr.contains("--table"), "{}", run.stderr);
    let run = gatewayctl("some-table", &["deregister", "not-an-id"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = gatewayctl("some-table", &["register"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn register_a_directory_reports_each_file_and_never_stops_at_a_bad_one() {
    let table = new_table();
    let dir = tempfile::tempdir().expect("tempdir");
    // Written out of order: registration goes by name.
    entry_file(&dir, "c.json", "billing", "credit-notes", "/credit-notes");
    entry_file(&dir, "a.json", "billing", "invoices-api", "/invoices");
    // Rejected by the checks: the path does not start with "/".
    entry_file(&dir, "b.json", "billing", "broken", "invoices");
    // A conflict: a.json's service already holds the same prefix (a nested one would be fine).
    entry_file(&dir, "d.json", "billing", "exports", "/invoices/");
    entry_file(&dir, "e.json", "billing", "payments", "/payments");
    std::fs::write(dir.path().join("notes.txt"), "not an entry").expect("write");
    let path = dir.path().display().to_string();

    let run = gatewayctl(&table, &["register", &path]);
    assert_eq!(run.code, 1, "a failed file fails the run: {}", run.stdout);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", run.stdout);
    assert_eq!(
        lines[0],
        "[1/5] billing/invoices-api: registered (created, revision 1)"
    );
    assert!(
        lines[1].starts_with("[2/5] b.json: rejected: ") && lines[1].contains("must start with"),
        "{}",
        lines[1]
    );
    assert_eq!(
        lines[2],
        "[3/5] billing/credit-notes: registered (created, revision 1)"
    );
    assert_eq!(
        lines[3],
        "[4/5] billing/exports (d.json): path /invoices on invoices.api.example.com (the same prefix as /invoices/) is held by billing/invoices-api"
    );
    assert_eq!(
        lines[4],
        "[5/5] billing/payments: registered (created, revision 1)"
    );
    assert_eq!(
        lines[5],
        "5 entry files: 3 registered (3 created), 2 failed"
    );
    assert!(
        run.stderr
            .contains("2 of 5 entry files failed: b.json, d.json"),
        "{}",
        run.stderr
    );
    let list = gatewayctl(&table, &["list", "--json"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    for id in [
        "billing/credit-notes",
        "billing/invoices-api",
        "billing/payments",
    ] {
        assert!(list.stdout.contains(id), "{id} missing: {}", list.stdout);
    }
    assert!(!list.stdout.contains("billing/exports"), "{}", list.stdout);

    // Again, after fixing nothing but removing the bad files: everything is unchanged, exit 0.
    std::fs::remove_file(dir.path().join("b.json")).expect("rm");
    std::fs::remove_file(dir.path().join("d.json")).expect("rm");
    let run = gatewayctl(&table, &["register", &path]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.lines().last(),
        Some("3 entry files: 3 registered (3 unchanged), 0 failed")
    );
}

#[test]
fn register_a_directory_without_entry_files_fails() {
    let table = new_table();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().display().to_string();
    let run = gatewayctl(&table, &["register", &path]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("no *.json entry files"),
        "{}",
        run.stderr
    );
}

/// Before `gatewayctl init`, or with a misspelt name, the error says what is missing and what to
/// run, with no SDK dump.
#[test]
fn a_missing_table_or_bucket_is_named_with_the_next_step() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = common::write(
        dir.path(),
        "e.json",
        r#"{"team": "billing", "service": "svc", "host": "svc", "backend": "http://10.1.2.3:8080", "routes": [{"path": "/svc"}]}"#,
    );
    let table = gateway_testkit::unique_name("never-created");
    let run = common::on_moto::gatewayctl(&table, &["register", common::s(&file)]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("the table does not exist") && run.stderr.contains("`gatewayctl init`"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("ServiceError {"), "no Debug dump: {}", run.stderr);

    let table = common::on_moto::new_table("bucketless");
    let bucket = gateway_testkit::unique_name("misspelt");
    let run = common::on_moto::gatewayctl(&table, &["status", "--bucket", &bucket]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(&format!("bucket {bucket} does not exist")) && run.stderr.contains("gatewayctl init --bucket"),
        "{}",
        run.stderr
    );
}

/// A wrong endpoint, no credentials, a missing table variable: each says what was tried, what it
/// means and the next step; the SDK's cause chain only with `-v`.
#[test]
fn aws_failures_say_what_was_tried_and_the_next_step() {
    let run_with = |args: &[&str], env: &[(&str, String)]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gatewayctl"))
            .env_clear()
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("GATEWAY_DOMAIN", "api.example.com")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .args(args)
            .output()
            .expect("gatewayctl runs");
        common::finish(out)
    };
    let closed = format!("http://127.0.0.1:{}", gateway_testkit::free_port());
    let creds = [
        ("AWS_REGION", "us-east-1".to_string()),
        ("AWS_ACCESS_KEY_ID", "x".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "x".to_string()),
        ("GATEWAY_TABLE", "gw".to_string()),
    ];
    let mut env = creds.to_vec();
    env.push(("AWS_ENDPOINT_URL", closed.clone()));
    let run = run_with(&["list"], &env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for needle in [
        format!("nothing answers at the endpoint {closed} (AWS_ENDPOINT_URL)"),
        "tried: table gw, region us-east-1".to_string(),
        "credentials from AWS_ACCESS_KEY_ID".to_string(),
        "next: start it".to_string(),
    ] {
        assert!(run.stderr.contains(&needle), "{needle}: {}", run.stderr);
    }
    assert!(!run.stderr.contains("dispatch failure"), "the chain only with -v: {}", run.stderr);
    let verbose = run_with(&["list", "-v"], &env);
    assert!(verbose.stderr.contains("cause: ") && verbose.stderr.contains("dispatch failure"), "{}", verbose.stderr);

    // No credentials anywhere (instance metadata off): said as such, against moto's address.
    let moto = common::on_moto::moto().aws_env();
    let endpoint = moto.iter().find(|(k, _)| k == "AWS_ENDPOINT_URL").map(|(_, v)| v.clone());
    let bare = [
        ("AWS_REGION", "us-east-1".to_string()),
        ("GATEWAY_TABLE", "gw".to_string()),
        ("AWS_ENDPOINT_URL", endpoint.expect("moto's endpoint")),
        ("HOME", "/nonexistent".to_string()),
    ];
    let run = run_with(&["list"], &bare);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no AWS credentials were found"), "{}", run.stderr);
    assert!(run.stderr.contains("next: set AWS_PROFILE"), "{}", run.stderr);

    // No table named: the variable and the next step, a usage error.
    let mut untabled = creds[..3].to_vec();
    untabled.push(("AWS_ENDPOINT_URL", closed));
    let run = run_with(&["list"], &untabled);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("GATEWAY_TABLE") && run.stderr.contains("gatewayctl init"), "{}", run.stderr);
    for out in [&run.stderr, &verbose.stderr] {
        assert!(!out.contains("ServiceError {") && !out.contains("raw: Response"), "{out}");
    }
}

/// `gatewayctl rollout status|promote|abort` (docs/design.md#rollout): a registration with
/// `rollout` stands beside the stored revision; promote and abort are the operators' word on the
/// registered revision, refused with the reason when nothing is rolled out.
#[test]
fn rollout_status_promote_and_abort() {
    let table = new_table();
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, rewrite: &str, rollout: Option<serde_json::Value>| {
        let file = dir.path().join(name);
        let mut doc = serde_json::json!({
            "team": "billing", "service": "invoices", "host": "invoices",
            "backend": "https://invoices.internal.example:8443",
            "routes": [ { "path": "/api", "rewrite": rewrite } ]
        });
        if let Some(r) = rollout {
            doc["rollout"] = r;
        }
        std::fs::write(&file, doc.to_string()).expect("write entry");
        file.display().to_string()
    };
    gatewayctl_ok(&table, &["register", &write("v1.json", "/v1", None)]);
    let none = gatewayctl_ok(&table, &["rollout", "status", "billing/invoices"]);
    assert_eq!(none.trim(), "billing/invoices: revision 1 serves every request (no rollout)");
    let refused = gatewayctl(&table, &["rollout", "promote", "billing/invoices"]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(refused.stderr.contains("is not being rolled out"), "{}", refused.stderr);

    gatewayctl_ok(&table, &["register", &write("v2.json", "/v2", Some(serde_json::json!({ "percent": 20 })))]);
    let rolling = gatewayctl_ok(&table, &["rollout", "status", "billing/invoices"]);
    assert!(
        rolling.starts_with("billing/invoices: rolling out revision 2 to 20% of requests beside stable revision 1 (cohort cookie gw-ro-"),
        "{rolling}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&gatewayctl_ok(&table, &["rollout", "status", "billing/invoices", "--json"])).expect("json");
    assert_eq!((json["state"].as_str(), json["percent"].as_u64(), json["stable_revision"].as_u64()), (Some("rolling-out"), Some(20), Some(1)));

    let promoted = gatewayctl_ok(&table, &["rollout", "promote", "billing/invoices"]);
    assert!(promoted.contains("promote of revision 2 recorded"), "{promoted}");
    let status = gatewayctl_ok(&table, &["rollout", "status", "billing/invoices"]);
    assert!(status.contains("revision 2 promoted by an operator"), "{status}");

    // The next rollout stands beside the promoted revision; abort serves it again.
    gatewayctl_ok(&table, &["register", &write("v3.json", "/v3", Some(serde_json::json!({ "percent": 50 })))]);
    gatewayctl_ok(&table, &["rollout", "abort", "billing/invoices"]);
    let json: serde_json::Value =
        serde_json::from_str(&gatewayctl_ok(&table, &["rollout", "status", "billing/invoices", "--json"])).expect("json");
    assert_eq!((json["state"].as_str(), json["percent"].as_u64(), json["stable_revision"].as_u64()), (Some("aborted"), Some(0), Some(2)));

    // A rollout may not move the host: refused naming the field.
    let file = dir.path().join("moved.json");
    std::fs::write(&file, serde_json::json!({
        "team": "billing", "service": "invoices", "host": "elsewhere",
        "backend": "https://invoices.internal.example:8443",
        "routes": [ { "path": "/api" } ], "rollout": { "percent": 10 }
    }).to_string()).expect("write");
    let moved = gatewayctl(&table, &["register", &file.display().to_string()]);
    assert_eq!(moved.code, 1, "{}", moved.stdout);
    assert!(moved.stderr.contains("host: a rollout cannot move the service"), "{}", moved.stderr);
}
