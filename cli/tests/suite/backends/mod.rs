//! `gatewayctl backend share | unshare | list | migrate` against moto's server: outputs and
//! exit codes, and a registration refused for another team's backend.


use aws_sdk_dynamodb::types::AttributeValue;
use crate::common::on_moto::{assert_register_refused, assert_registers, gatewayctl, gatewayctl_ok};

const AUTHORITY: &str = "invoices.internal.example:8443";

fn new_table() -> String {
    crate::common::on_moto::new_table("backends")
}

/// `team/service` on its own host (named after the team) with `backend`, as JSON.
fn entry_json(team: &str, service: &str, backend: &str) -> serde_json::Value {
    serde_json::json!({
        "team": team, "service": service, "host": team, "backend": backend,
        "routes": [ { "path": format!("/{service}") } ]
    })
}

fn entry_file(dir: &tempfile::TempDir, team: &str, service: &str, backend: &str) -> String {
    let file = dir.path().join(format!("{team}-{service}.json"));
    std::fs::write(&file, entry_json(team, service, backend).to_string()).expect("write entry");
    file.display().to_string()
}

#[test]
fn another_teams_backend_is_refused_until_operators_share_it() {
    let table = new_table();
    let dir = tempfile::tempdir().expect("tempdir");
    assert_registers(
        &table,
        &entry_file(
            &dir,
            "alpha",
            "invoices",
            "https://invoices.internal.example:8443",
        ),
    );
    let intruder = entry_file(
        &dir,
        "intruder",
        "api",
        "https://invoices.internal.example:8443/",
    );
    assert_register_refused(
        &table,
        &intruder,
        "backend invoices.internal.example:8443 is held by team alpha (operators can share it: gatewayctl backend share invoices.internal.example:8443 intruder)",
    );

    let shared = gatewayctl_ok(&table, &["backend", "share", AUTHORITY, "intruder"]);
    assert_eq!(
        shared.trim(),
        "backend invoices.internal.example:8443 (held by team alpha) is shared with team intruder"
    );
    let again = gatewayctl_ok(
        &table,
        &[
            "backend",
            "share",
            "https://invoices.internal.example:8443",
            "intruder",
        ],
    );
    assert_eq!(
        again.trim(),
        "backend invoices.internal.example:8443 (held by team alpha) was already shared with team intruder"
    );
    assert_registers(&table, &intruder);

    let list = gatewayctl_ok(&table, &["backend", "list"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(
        lines
            .iter()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>(),
        [
            "BACKEND TEAM USERS SHARED WITH",
            "invoices.internal.example:8443 alpha alpha/invoices, intruder/api intruder",
        ],
        "{list}"
    );
    let run = gatewayctl(&table, &["backend", "list", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("list --json is JSON");
    assert_eq!(
        doc,
        serde_json::json!({ "backends": [ {
            "authority": AUTHORITY, "team": "alpha",
            "users": ["alpha/invoices", "intruder/api"], "shared_with": ["intruder"]
        } ] })
    );

    let unshared = gatewayctl_ok(&table, &["backend", "unshare", AUTHORITY, "intruder"]);
    assert_eq!(
        unshared.lines().collect::<Vec<_>>(),
        [
            "backend invoices.internal.example:8443 (held by team alpha) is no longer shared with team intruder",
            "still using it until they change their backend or are deregistered: intruder/api",
        ]
    );
    let run = gatewayctl(&table, &["backend", "unshare", AUTHORITY, "intruder"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr.trim(),
        "backend invoices.internal.example:8443 was not shared with team intruder"
    );

    gatewayctl(
        &table,
        &["backend", "share", "invoices.internal.example", "intruder"],
    )
    .assert_exit_naming(2, &["has no port"]);
    gatewayctl(
        &table,
        &[
            "backend",
            "share",
            "unclaimed.internal.example:443",
            "intruder",
        ],
    )
    .assert_exit_naming(1, &["is not claimed by any team", "--holder HOLDER"]);
}

/// Entry rows as code from before claims wrote them: no backend claims.
fn put_pre_claim_entries(table: &str, entries: &[serde_json::Value]) {
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let conf = crate::common::on_moto::moto().sdk_config().await;
            let client = gateway_adapters::aws::dynamodb_client(&conf);
            for e in entries {
                let id = format!(
                    "{}/{}",
                    e["team"].as_str().expect("team"),
                    e["service"].as_str().expect("service")
                );
                client
                    .put_item()
                    .table_name(table)
                    .item("pk", AttributeValue::S(format!("ENTRY#{id}")))
                    .item("sk", AttributeValue::S("ENTRY".into()))
                    .item("entry", AttributeValue::S(e.to_string()))
                    .item("revision", AttributeValue::N("1".into()))
                    .item("updated_at", AttributeValue::N("1".into()))
                    .send()
                    .await
                    .expect("raw put");
            }
        });
}

#[test]
fn migrate_claims_one_teams_backends_and_exits_1_naming_a_shared_one() {
    let table = new_table();
    put_pre_claim_entries(
        &table,
        &[
            entry_json("alpha", "ledger", "https://ledger.internal.example"),
            entry_json("alpha", "search", "http://search.internal.example:8080"),
            entry_json("beta", "search", "http://search.internal.example:8080"),
        ],
    );
    let before = gatewayctl_ok(&table, &["list", "--json"]);
    let run = gatewayctl(&table, &["backend", "migrate"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        run.stdout.lines().collect::<Vec<_>>(),
        [
            "backend ledger.internal.example:443: claimed for team alpha (alpha/ledger)",
            "backend search.internal.example:8080: used by more than one team, nothing written: alpha (alpha/search), beta (beta/search). Either all but one team move off it, or operators name its holder and share it with the others, e.g. gatewayctl backend share search.internal.example:8080 beta --holder alpha",
            "2 backends in use: 1 written now, 0 already claimed, 1 left for operators",
        ]
    );
    assert_eq!(
        run.stderr.trim(),
        "1 not migrated (each is listed above): search.internal.example:8080"
    );
    assert_eq!(
        gatewayctl_ok(&table, &["list", "--json"]),
        before,
        "entries untouched"
    );

    let run = gatewayctl(&table, &["backend", "migrate"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout.lines().next(),
        Some("backend ledger.internal.example:443: already claimed by team alpha")
    );

    gatewayctl_ok(
        &table,
        &[
            "backend",
            "share",
            "search.internal.example:8080",
            "beta",
            "--holder",
            "alpha",
        ],
    );
    let run = gatewayctl(&table, &["backend", "migrate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout.lines().collect::<Vec<_>>(),
        [
            "backend ledger.internal.example:443: already claimed by team alpha",
            "backend search.internal.example:8080: held by team alpha; users added: alpha/search, beta/search",
            "2 backends in use: 1 written now, 1 already claimed, 0 left for operators",
        ]
    );
}
