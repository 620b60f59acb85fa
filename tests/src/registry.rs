//! Shared by the registry tests here and the register tests in `functions/tests`: one moto
//! server per test binary, a fresh table per test, and entries that pass the registration checks.

use gateway_adapters::aws::dynamodb_client;
use gateway_adapters::registry::{DynamoRegistry, RegistryError, StoredEntry};
use gateway_render::check::Policy;
use gateway_render::{Entry, Route};
use crate::{unique_name, MotoServer};
use std::sync::OnceLock;

pub const DOMAIN: &str = "api.example.com";

/// One server per test binary; it exits with the process (its stdin closes).
pub fn moto() -> &'static MotoServer {
    static SERVER: OnceLock<MotoServer> = OnceLock::new();
    SERVER.get_or_init(MotoServer::start)
}

pub async fn client(server: &MotoServer) -> aws_sdk_dynamodb::Client {
    dynamodb_client(&server.sdk_config().await)
}

/// A registry on a new table of the shared server.
pub async fn registry() -> DynamoRegistry {
    let server = moto();
    let registry = DynamoRegistry::new(client(server).await, unique_name("registry"), DOMAIN)
        .with_policy(Policy::new(DOMAIN, true));
    let created = registry
        .create_table_if_absent()
        .await
        .unwrap_or_else(|e| panic!("creating the table: {e}"));
    assert!(created, "a fresh table name must be created");
    registry
}

/// A registry on a new table of the shared server, holding `first`.
pub async fn registry_holding(first: &Entry) -> DynamoRegistry {
    let registry = registry().await;
    registry
        .register(first)
        .await
        .unwrap_or_else(|e| panic!("registering {}: {e}", first.id()));
    registry
}

/// The stored entry `id`, which the test expects to be registered.
pub async fn stored_entry(registry: &DynamoRegistry, id: &str) -> StoredEntry {
    registry
        .get(id)
        .await
        .unwrap_or_else(|e| panic!("reading {id}: {e}"))
        .unwrap_or_else(|| panic!("{id} is not registered"))
}

/// An SDK call's output, or a panic saying what `doing` failed with (the SDK's whole context).
fn or_panic<T, E: std::error::Error>(result: Result<T, E>, doing: &str) -> T {
    result.unwrap_or_else(|e| {
        panic!(
            "{doing}: {}",
            aws_sdk_dynamodb::error::DisplayErrorContext(&e)
        )
    })
}

/// Billing's `invoices-api` on host `invoices` with the one path `/invoices`: the entry most
/// tests register first.
pub fn invoices_api() -> Entry {
    entry("billing", "invoices-api", "invoices", &["/invoices"])
}

/// A valid entry with one method-less route per path, on a backend of the service's own
/// (`https://{service}.{team}.internal.example:8443`): backends belong to teams, so two teams'
/// entries never share one unless a test says so.
pub fn entry(team: &str, service: &str, host: &str, paths: &[&str]) -> Entry {
    Entry {
        rollout: None,
        serving: None,
        team: team.into(),
        service: service.into(),
        host: host.into(),
        backend: backend_of(team, service),
        protocol: Default::default(),
        canary: None,
        health_check: None,
        preserve_host: false,
        jwt: Default::default(),
        backends: vec![],
        routes: paths
            .iter()
            .map(|p| Route {
                path: (*p).to_string(),
                methods: None,
                limits: Vec::new(),
                timeout: None,
                ..Default::default()
            })
            .collect(),
    }
}

/// The backend `entry` gives `team/service`.
pub fn backend_of(team: &str, service: &str) -> String {
    format!("https://{service}.{team}.internal.example:8443")
}

/// The conflict's holder, or a panic saying what came back instead.
pub fn holder(result: Result<impl std::fmt::Debug, RegistryError>) -> (String, String) {
    match result {
        Err(RegistryError::Conflict { what, holder }) => (what, holder),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// Every row of the registry's table as `(pk, sk)`, sorted: what a test expects the guards to be.
pub async fn rows(registry: &DynamoRegistry) -> Vec<(String, String)> {
    let client = client(moto()).await;
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let scan = client
            .scan()
            .table_name(registry.table())
            .consistent_read(true)
            .set_exclusive_start_key(start.take())
            .send()
            .await;
        let page = or_panic(scan, "scanning");
        for item in page.items() {
            let get = |k: &str| {
                item.get(k)
                    .and_then(|v| v.as_s().ok())
                    .cloned()
                    .unwrap_or_default()
            };
            out.push((get("pk"), get("sk")));
        }
        match page.last_evaluated_key() {
            Some(k) if !k.is_empty() => start = Some(k.clone()),
            _ => break,
        }
    }
    out.sort();
    out
}

/// One row's attributes, for asserting guard owners and versions.
pub async fn row(
    registry: &DynamoRegistry,
    pk: &str,
    sk: &str,
) -> Option<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
    use aws_sdk_dynamodb::types::AttributeValue;
    let read = client(moto())
        .await
        .get_item()
        .table_name(registry.table())
        .key("pk", AttributeValue::S(pk.into()))
        .key("sk", AttributeValue::S(sk.into()))
        .consistent_read(true)
        .send()
        .await;
    or_panic(read, &format!("reading {pk}/{sk}"))
        .item()
        .cloned()
}

pub fn pair(pk: &str, sk: &str) -> (String, String) {
    (pk.to_string(), sk.to_string())
}
