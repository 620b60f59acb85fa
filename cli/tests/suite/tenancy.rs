//! `gatewayctl grant | revoke | grants | adopt` and hosts inside hosts, against moto's server:
//! outputs, exit codes, and races between gatewayctl processes.

use crate::common;

use common::on_moto::{
    assert_register_refused, assert_registers, command, gatewayctl, gatewayctl_ok, list_json,
};
use std::process::Stdio;

fn new_table() -> String {
    common::on_moto::new_table("tenancy")
}

fn entry_file(
    dir: &tempfile::TempDir,
    team: &str,
    service: &str,
    host: &str,
    path: &str,
) -> String {
    let file = dir.path().join(format!(
        "{team}-{service}-{host}-{}.json",
        path.trim_start_matches('/')
    ));
    let doc = serde_json::json!({
        "team": team, "service": service, "host": host,
        // The service's own backend: backends belong to teams.
        "backend": format!("https://{service}.{team}.internal.example:8443"),
        "routes": [ { "path": path } ]
    });
    std::fs::write(&file, doc.to_string()).expect("write entry");
    file.display().to_string()
}

const STACK: &str = "arn:aws:cloudformation:us-east-1:222222222222:stack/invoices/5b8a9f40-1111-11ef-9f3c-0a1b2c3d4e5f";

#[test]
fn grants_are_added_listed_and_revoked() {
    let table = new_table();
    let granted = gatewayctl_ok(&table, &["grant", "billing", "--account", "222222222222"]);
    assert_eq!(
        granted.trim(),
        "granted team billing to account 222222222222"
    );
    let run = gatewayctl(&table, &["grant", "billing", "--account", "222222222222"]);
    assert_eq!(
        run.stdout.trim(),
        "already granted team billing to account 222222222222"
    );
    assert_eq!(
        gatewayctl(&table, &["grant", "payments", "--account", "444444444444"]).code,
        0
    );

    gatewayctl(&table, &["grant", "billing", "--account", "2222"])
        .assert_exit_naming(2, &["--account \"2222\" is not an AWS account id"]);
    // The rejection names the field.
    gatewayctl(&table, &["grant", "Billing!", "--account", "222222222222"])
        .assert_exit_naming(1, &["team"]);

    let grants = gatewayctl_ok(&table, &["grants"]);
    let lines: Vec<&str> = grants.lines().collect();
    assert_eq!(lines.len(), 3, "{grants}");
    assert!(lines[0].starts_with("TEAM") && lines[0].contains("ACCOUNT"));
    assert!(
        lines[1].starts_with("billing") && lines[1].contains("222222222222"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("payments") && lines[2].contains("444444444444"),
        "{}",
        lines[2]
    );

    let run = gatewayctl(&table, &["grants", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("grants --json is JSON");
    assert_eq!(doc["grants"][0]["team"], "billing");
    assert_eq!(doc["grants"][0]["account"], "222222222222");
    assert!(
        doc["grants"][0]["granted_by"]
            .as_str()
            .is_some_and(|p| p.starts_with("arn:aws:")),
        "who granted it: {doc}"
    );

    let revoked = gatewayctl_ok(&table, &["revoke", "billing", "--account", "222222222222"]);
    assert_eq!(
        revoked.trim(),
        "revoked team billing from account 222222222222"
    );
    let run = gatewayctl(&table, &["revoke", "billing", "--account", "222222222222"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr.trim(),
        "account 222222222222 was not granted team billing"
    );
    let run = gatewayctl(&table, &["grants", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["grants"].as_array().map(Vec::len), Some(1));

    // Grants never reach the entries (the reconciler reads only entries).
    let run = gatewayctl(&table, &["list", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["entries"], serde_json::json!([]));
    assert_eq!(doc["unreadable"], serde_json::json!([]));
}

#[test]
fn adopt_hands_an_entry_to_a_stack_and_back() {
    let table = new_table();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = entry_file(&dir, "billing", "invoices-api", "invoices", "/invoices");
    assert_registers(&table, &file);

    let run = gatewayctl(
        &table,
        &[
            "adopt",
            "billing/invoices-api",
            "--stack",
            STACK,
            "--resource",
            "Expose",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with(&format!(
            "billing/invoices-api now owned by stack {STACK} (resource Expose) (was operators"
        )),
        "{}",
        run.stdout
    );
    let doc = list_json(&table);
    assert_eq!(
        doc["entries"][0]["owner"],
        serde_json::json!({ "kind": "stack", "stack": STACK, "resource": "Expose" })
    );
    let run = gatewayctl(&table, &["list"]);
    assert!(
        run.stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.trim_end().ends_with(&format!("{STACK} Expose"))),
        "{}",
        run.stdout
    );

    // Now the stack owns it: an operator's register or deregister is refused, saying how to take it back.
    let changed = entry_file(&dir, "billing", "invoices-api", "invoices", "/bills");
    assert_register_refused(
        &table,
        &changed,
        &format!("entry billing/invoices-api is held by stack {STACK} (resource Expose); to change it from here, first take it over: gatewayctl adopt billing/invoices-api --operator"),
    );
    assert_eq!(
        gatewayctl(&table, &["deregister", "billing/invoices-api"]).code,
        1
    );

    let adopted = gatewayctl_ok(&table, &["adopt", "billing/invoices-api", "--operator"]);
    assert!(adopted.contains("now owned by operators"), "{adopted}");
    gatewayctl_ok(&table, &["deregister", "billing/invoices-api"]);

    gatewayctl(&table, &["adopt", "billing/invoices-api", "--stack", STACK])
        .assert_exit_naming(1, &["billing/invoices-api is not registered"]);
    let not_an_arn = ["adopt", "billing/invoices-api", "--stack", "my-stack"];
    gatewayctl(&table, &not_an_arn).assert_exit_naming(2, &["not a CloudFormation stack ARN"]);
    let run = gatewayctl(&table, &["adopt", "billing/invoices-api"]);
    assert_eq!(
        run.code, 2,
        "--stack or --operator is required: {}",
        run.stderr
    );
}

#[test]
fn a_host_inside_or_around_another_teams_host_is_refused_naming_the_holder() {
    let table = new_table();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |team, service, host, path| entry_file(&dir, team, service, host, path);
    assert_registers(
        &table,
        &file("billing", "invoices-api", "invoices", "/invoices"),
    );
    assert_register_refused(
        &table,
        &file("payments", "pay", "x.invoices", "/pay"),
        "host invoices.api.example.com (enclosing x.invoices.api.example.com) is held by billing",
    );

    assert_registers(&table, &file("search", "query", "a.b.c", "/q"));
    let around = file("payments", "pay", "c", "/pay");
    assert_register_refused(
        &table,
        &around,
        "host a.b.c.api.example.com (inside c.api.example.com) is held by search",
    );
    // The same team nests freely, and once search leaves, c is free.
    assert_registers(&table, &file("search", "suggest", "b.c", "/s"));
    assert_eq!(
        gatewayctl(&table, &["deregister", "search/suggest"]).code,
        0
    );
    assert_eq!(gatewayctl(&table, &["deregister", "search/query"]).code, 0);
    assert_registers(&table, &around);
}

/// Twenty gatewayctl processes race: ten teams for `a.x`, ten for `x`. Exactly one wins, and
/// every loser names the winning team.
#[test]
fn twenty_processes_race_for_a_host_and_its_subdomain_and_one_team_wins() {
    let table = new_table();
    let dir = tempfile::tempdir().expect("tempdir");
    let files: Vec<(String, String)> = (0..20)
        .map(|i| {
            let team = format!("team{i}");
            let host = if i % 2 == 0 { "a.x" } else { "x" };
            let file = entry_file(&dir, &team, "api", host, "/api");
            (team, file)
        })
        .collect();
    let children: Vec<_> = files
        .iter()
        .map(|(team, file)| {
            let child = command(&table, &["register", file])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn gatewayctl");
            (team.clone(), child)
        })
        .collect();
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for (team, child) in children {
        let out = child.wait_with_output().expect("gatewayctl finishes");
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        match out.status.code() {
            Some(0) => winners.push(team),
            Some(1) => losers.push((team, stderr)),
            other => panic!("{team}: exit {other:?}: {stderr}"),
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "exactly one winner: {winners:?} {losers:?}"
    );
    let winner = &winners[0];
    for (team, stderr) in &losers {
        assert!(
            stderr.ends_with(&format!("is held by {winner}")),
            "{team} names the winner {winner}: {stderr}"
        );
    }
    let doc = list_json(&table);
    let ids: Vec<&str> = doc["entries"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, [format!("{winner}/api")]);
}

/// `revoke --help` says what revoke does, not grant's words.
#[test]
fn revoke_has_a_help_of_its_own() {
    let grant = common::run(&["grant", "--help"]);
    let revoke = common::run(&["revoke", "--help"]);
    assert_eq!((grant.code, revoke.code), (0, 0));
    let first = |text: &str| text.lines().next().unwrap_or_default().to_string();
    assert!(first(&grant.stdout).starts_with("Let an AWS account"), "{}", grant.stdout);
    assert!(first(&revoke.stdout).starts_with("Stop letting an AWS account"), "{}", revoke.stdout);
}
