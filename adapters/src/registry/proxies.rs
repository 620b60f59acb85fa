//! Proxy reports (`PROXIES` / `PROXY#{proxy-id}`): each delivering sidecar says which bundle its
//! Envoy serves and since when (docs/design.md#proxy-reports). One partition for all of them, so
//! a reader lists the fleet with one Query instead of scanning the registry; the sidecar's role
//! may write only that partition. A row carries `expires_at` (the table's TTL attribute):
//! readers drop rows past it themselves, since DynamoDB deletes expired rows only eventually.

use super::error::from_sdk;
use super::keys::{self, get_n, get_s, Item};
use super::pages::query_partition;
use super::RegistryError;
use std::time::{SystemTime, UNIX_EPOCH};

/// Partition key of every proxy report.
pub const PROXIES_PK: &str = "PROXIES";
/// Sort key prefix: `PROXY#{proxy-id}`.
pub const PROXY_PREFIX: &str = "PROXY#";
/// The table's TTL attribute (unix seconds).
pub const ATTR_EXPIRES_AT: &str = "expires_at";
/// Longest proxy id accepted (a task ARN's id is 32 hex digits; hostnames are at most 253).
pub const MAX_PROXY_ID_BYTES: usize = 256;

/// One proxy's report: the bundle its sidecar last delivered and Envoy applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyReport {
    pub proxy_id: String,
    /// The delivered bundle's hash and its object version id.
    pub hash: String,
    pub version_id: String,
    /// When Envoy had applied it (unix seconds).
    pub delivered_at: u64,
    /// Delivery time minus the bundle object's LastModified, when the sidecar knew the latter.
    pub lag_seconds: Option<u64>,
    /// When this row was written (unix seconds); every report and heartbeat rewrites it.
    pub reported_at: u64,
    /// After this (unix seconds) the proxy counts as gone.
    pub expires_at: u64,
}

impl ProxyReport {
    /// Whether the proxy still counts at `now`: not past `expires_at`.
    pub fn is_current(&self, now: u64) -> bool {
        self.expires_at > now
    }

    pub fn to_json(&self, now: u64) -> serde_json::Value {
        serde_json::json!({
            "proxy": self.proxy_id,
            "hash": self.hash,
            "version_id": self.version_id,
            "delivered_at": self.delivered_at,
            "lag_seconds": self.lag_seconds,
            "reported_at": self.reported_at,
            "age_seconds": now.saturating_sub(self.reported_at),
            "expires_at": self.expires_at,
        })
    }

    fn to_item(&self) -> Item {
        let mut item = keys::key(
            PROXIES_PK.to_string(),
            &format!("{PROXY_PREFIX}{}", self.proxy_id),
        );
        item.insert(keys::ATTR_HASH.into(), keys::s(self.hash.as_str()));
        item.insert(
            keys::ATTR_VERSION_ID.into(),
            keys::s(self.version_id.as_str()),
        );
        item.insert("delivered_at".into(), keys::n(self.delivered_at));
        if let Some(lag) = self.lag_seconds {
            item.insert("lag_seconds".into(), keys::n(lag));
        }
        item.insert("reported_at".into(), keys::n(self.reported_at));
        item.insert(ATTR_EXPIRES_AT.into(), keys::n(self.expires_at));
        item
    }

    /// `None` for a row missing what a report must have (written by something else).
    fn from_item(item: &Item) -> Option<ProxyReport> {
        let proxy_id = get_s(item, keys::SK)?
            .strip_prefix(PROXY_PREFIX)?
            .to_string();
        Some(ProxyReport {
            proxy_id,
            hash: get_s(item, keys::ATTR_HASH)?.to_string(),
            version_id: get_s(item, keys::ATTR_VERSION_ID)?.to_string(),
            delivered_at: get_n(item, "delivered_at")?,
            lag_seconds: get_n(item, "lag_seconds"),
            reported_at: get_n(item, "reported_at")?,
            expires_at: get_n(item, ATTR_EXPIRES_AT)?,
        })
    }
}

/// A proxy id is the sort key's tail: printable, no spaces, bounded.
pub fn check_proxy_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("is empty".into());
    }
    if id.len() > MAX_PROXY_ID_BYTES {
        return Err(format!(
            "is {} bytes; at most {MAX_PROXY_ID_BYTES}",
            id.len()
        ));
    }
    if let Some(c) = id.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "contains {c:?}; only printable ASCII without spaces"
        ));
    }
    Ok(())
}

/// The proxy rows of the registry table.
#[derive(Debug, Clone)]
pub struct ProxyTable {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl ProxyTable {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        ProxyTable {
            client,
            table: table.into(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Writes (replaces) the proxy's row.
    pub async fn put(&self, report: &ProxyReport) -> Result<(), RegistryError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(report.to_item()))
            .send()
            .await
            .map_err(|e| {
                from_sdk(
                    &format!(
                        "writing proxy report {} to table {}",
                        report.proxy_id, self.table
                    ),
                    e,
                )
            })?;
        Ok(())
    }

    /// Every proxy whose row has not expired at `now`, sorted by proxy id. Rows past
    /// `expires_at` are dropped here even while DynamoDB still holds them.
    pub async fn current(&self, now: u64) -> Result<Vec<ProxyReport>, RegistryError> {
        let items = query_partition(
            &self.client,
            &self.table,
            PROXIES_PK,
            Some(PROXY_PREFIX),
            &format!("reading proxy reports from table {}", self.table),
        )
        .await?;
        let mut out: Vec<ProxyReport> = items
            .iter()
            .filter_map(ProxyReport::from_item)
            .filter(|r| r.is_current(now))
            .collect();
        out.sort_by(|a, b| a.proxy_id.cmp(&b.proxy_id));
        Ok(out)
    }
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> ProxyReport {
        ProxyReport {
            proxy_id: "task-1".into(),
            hash: "sha256:ab".into(),
            version_id: "v1".into(),
            delivered_at: 100,
            lag_seconds: Some(3),
            reported_at: 110,
            expires_at: 200,
        }
    }

    #[test]
    fn a_row_reads_back_as_written() {
        let r = report();
        assert_eq!(ProxyReport::from_item(&r.to_item()), Some(r.clone()));
        let mut no_lag = r;
        no_lag.lag_seconds = None;
        assert_eq!(ProxyReport::from_item(&no_lag.to_item()), Some(no_lag));
    }

    #[test]
    fn a_report_ages_out_at_expires_at() {
        let r = report();
        assert!(r.is_current(199));
        assert!(!r.is_current(200));
        assert!(!r.is_current(10_000));
    }

    #[test]
    fn a_row_without_a_hash_is_not_a_report() {
        let mut item = report().to_item();
        item.remove(keys::ATTR_HASH);
        assert_eq!(ProxyReport::from_item(&item), None);
    }

    #[test]
    fn proxy_ids_are_printable_and_bounded() {
        assert!(check_proxy_id("3f2a9c0e4b6d4e1f8a7b6c5d4e3f2a1b").is_ok());
        assert!(check_proxy_id("ip-10-0-1-23.ec2.internal").is_ok());
        assert!(check_proxy_id("").is_err());
        assert!(check_proxy_id("a b").unwrap_err().contains("' '"));
        assert!(check_proxy_id(&"x".repeat(257)).is_err());
    }
}
