//! The table's keys and attribute names (docs/design.md#registry-table), and typed reads of items.

use super::RegistryError;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

pub type Item = HashMap<String, AttributeValue>;

pub const PK: &str = "pk";
pub const SK: &str = "sk";

pub const ENTRY_PREFIX: &str = "ENTRY#";
pub const ENTRY_SK: &str = "ENTRY";
pub const HOST_PREFIX: &str = "HOST#";
pub const HOST_SK: &str = "HOST";
pub const PATH_PREFIX: &str = "PATH#";
/// Grant: `GRANT#{team}` / `ACCOUNT#{account}`, which AWS account may act for which team.
/// The reconciler reads only `ENTRY#` rows, so grants never reach a render.
pub const GRANT_PREFIX: &str = "GRANT#";
pub const ACCOUNT_PREFIX: &str = "ACCOUNT#";
/// Backend claim: `BACKEND#{host:port}` / `BACKEND`, which team holds a backend authority
/// (docs/design.md#ownership-and-conflicts). The reconciler never reads it.
pub const BACKEND_PREFIX: &str = "BACKEND#";
pub const BACKEND_SK: &str = "BACKEND";
pub const STATE_PK: &str = "STATE";
pub const STATE_SK: &str = "PUBLISHED";

/// Entry item: the entry JSON, its revision and when it was last written (unix seconds).
pub const ATTR_ENTRY: &str = "entry";
pub const ATTR_REVISION: &str = "revision";
pub const ATTR_UPDATED_AT: &str = "updated_at";
/// Entry item: who owns it (`registry::Owner`'s stored form). A reserved word in expressions.
pub const ATTR_OWNER: &str = "owner";
/// Grant item: who granted it and when (unix seconds).
pub const ATTR_GRANTED_BY: &str = "granted_by";
pub const ATTR_GRANTED_AT: &str = "granted_at";
/// Host guard: owning team (absent once released) and the version every change of ownership
/// bumps; also `under`, the held hosts inside it (see `host.rs` on hosts inside hosts), and the
/// claim counters (`host::claim_counters`).
pub const ATTR_TEAM: &str = "team";
pub const ATTR_VERSION: &str = "version";
/// Path guard: owning `team/service`.
pub const ATTR_SERVICE: &str = "service";
/// Backend claim: the `team/service` ids using the authority (a string set; absent when none
/// does), and the teams operators shared it with (a string set). Its holder is `team`.
pub const ATTR_USERS: &str = "users";
pub const ATTR_SHARED_WITH: &str = "shared_with";
/// Reconciler state.
pub const ATTR_VERSION_ID: &str = "version_id";
pub const ATTR_HASH: &str = "hash";
pub const ATTR_PUBLISHED_AT: &str = "published_at";

pub fn entry_pk(id: &str) -> String {
    format!("{ENTRY_PREFIX}{id}")
}

pub fn grant_key(team: &str, account: &str) -> Item {
    key(
        format!("{GRANT_PREFIX}{team}"),
        &format!("{ACCOUNT_PREFIX}{account}"),
    )
}

pub fn host_pk(fqdn: &str) -> String {
    format!("{HOST_PREFIX}{fqdn}")
}

pub fn backend_key(authority: &str) -> Item {
    key(format!("{BACKEND_PREFIX}{authority}"), BACKEND_SK)
}

pub fn path_sk(prefix: &str) -> String {
    format!("{PATH_PREFIX}{prefix}")
}

pub fn key(pk: String, sk: &str) -> Item {
    HashMap::from([(PK.to_string(), s(pk)), (SK.to_string(), s(sk))])
}

pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub fn get_s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

pub fn get_n(item: &Item, name: &str) -> Option<u64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
}

/// A string attribute the row cannot be without.
pub fn need_s<'a>(item: &'a Item, name: &str) -> Result<&'a str, RegistryError> {
    get_s(item, name).ok_or_else(|| corrupt(item, &format!("missing string attribute {name}")))
}

/// A non-negative integer attribute the row cannot be without.
pub fn need_n(item: &Item, name: &str) -> Result<u64, RegistryError> {
    get_n(item, name).ok_or_else(|| {
        corrupt(
            item,
            &format!("missing or non-integer number attribute {name}"),
        )
    })
}

fn corrupt(item: &Item, why: &str) -> RegistryError {
    let pk = get_s(item, PK).unwrap_or("?");
    let sk = get_s(item, SK).unwrap_or("?");
    RegistryError::Corrupt(format!("{pk} / {sk}: {why}"))
}

/// Expression attribute names for every attribute an expression touches: several of them
/// (`hash`, `version`, `service`...) are or may become DynamoDB reserved words.
pub fn names(attrs: &[&str]) -> HashMap<String, String> {
    attrs
        .iter()
        .map(|a| (format!("#{a}"), a.to_string()))
        .collect()
}
