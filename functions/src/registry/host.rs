//! One host's guard rows, read together: the host guard and every path guard under `HOST#{fqdn}`.

use super::keys::{self, Item};
use super::{error::from_sdk, RegistryError};
use std::collections::BTreeMap;

/// The host guard: which team holds the host (none once released) and its version. The row
/// outlives its team: a released host keeps its version, so a registration that read the host
/// before a release and a re-claim can never match the version again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostGuard {
    pub team: Option<String>,
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostView {
    pub fqdn: String,
    pub guard: Option<HostGuard>,
    /// prefix → owning `team/service`
    pub paths: BTreeMap<String, String>,
}

impl HostView {
    /// Prefixes on this host held by `id`.
    pub fn held_by<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        self.paths
            .iter()
            .filter(move |(_, holder)| holder.as_str() == id)
            .map(|(p, _)| p)
    }

    /// Whether any service other than `id` still holds a path here. Every entry has at least
    /// one route, hence one path guard, so this is "is `id` the last service on the host".
    pub fn others_remain(&self, id: &str) -> bool {
        self.paths.values().any(|holder| holder != id)
    }

    pub fn version(&self) -> Option<u64> {
        self.guard.as_ref().map(|g| g.version)
    }
}

/// A strongly consistent Query of the host's partition, all pages.
pub(crate) async fn read_host(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    fqdn: &str,
) -> Result<HostView, RegistryError> {
    let mut view = HostView {
        fqdn: fqdn.to_string(),
        guard: None,
        paths: BTreeMap::new(),
    };
    let mut start: Option<Item> = None;
    loop {
        let page = client
            .query()
            .table_name(table)
            .consistent_read(true)
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_values(":pk", keys::s(keys::host_pk(fqdn)))
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(|e| from_sdk(&format!("reading the guards of host {fqdn}"), e))?;
        for item in page.items() {
            let sk = keys::need_s(item, keys::SK)?;
            if sk == keys::HOST_SK {
                view.guard = Some(HostGuard {
                    team: keys::get_s(item, keys::ATTR_TEAM).map(str::to_string),
                    version: keys::need_n(item, keys::ATTR_VERSION)?,
                });
            } else if let Some(prefix) = sk.strip_prefix(keys::PATH_PREFIX) {
                let holder = keys::need_s(item, keys::ATTR_SERVICE)?;
                view.paths.insert(prefix.to_string(), holder.to_string());
            }
        }
        match page.last_evaluated_key() {
            Some(k) if !k.is_empty() => start = Some(k.clone()),
            _ => return Ok(view),
        }
    }
}
