//! Proxy reports (`PROXIES` / `PROXY#{proxy-id}`): each delivering sidecar says which bundle its
//! Envoy serves and since when (docs/design.md#proxy-reports). One partition for all of them, so
//! a reader lists the fleet with one Query instead of scanning the registry; the sidecar's role
//! may write only that partition. A row carries `expires_at` (the table's TTL attribute):
//! readers drop rows past it themselves, since DynamoDB deletes expired rows only eventually.
//!
//! Rows are judged on read, not trusted: any sidecar's role can write any row of the partition.
//! A proxy id outside [`check_proxy_id`]'s alphabet, a row without a report's attributes, or a
//! `reported_at` further ahead than [`MAX_CLOCK_SKEW_SECONDS`] is ignored (and said so), and no
//! row counts for longer than [`MAX_REPORT_TTL_SECONDS`] after its `reported_at`, whatever its
//! `expires_at` claims.

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
/// Longest proxy id accepted (a task ARN's id is 32 hex digits; a Linux host name is at most 64
/// characters).
pub const MAX_PROXY_ID_LEN: usize = 128;
/// Longest `--report-ttl` a sidecar accepts, so the longest a report counts for: a reader caps a
/// row's `expires_at` at `reported_at` plus this. A report that counted for hours would keep a
/// dead (or forged) proxy in every "live on N of M" and hold up `waitFor: serving` deploys.
pub const MAX_REPORT_TTL_SECONDS: u64 = 3600;
/// How far ahead of the reader's clock a report's `reported_at` may be. AWS refuses a request
/// signed more than 5 minutes off its own clock, so neither a sidecar nor a reader that can reach
/// the table is further off than that.
pub const MAX_CLOCK_SKEW_SECONDS: u64 = 300;

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

    /// The report as it counts at `now`: `Ok(None)` once it has aged out, its `expires_at` at most
    /// [`MAX_REPORT_TTL_SECONDS`] after `reported_at`; `Err(why)` when it cannot be a report
    /// (an id outside the alphabet, written in the future).
    fn judged(mut self, now: u64) -> Result<Option<ProxyReport>, String> {
        check_proxy_id(&self.proxy_id)
            .map_err(|why| format!("proxy id {:?} {why}", self.proxy_id))?;
        if self.reported_at > now.saturating_add(MAX_CLOCK_SKEW_SECONDS) {
            return Err(format!(
                "reported_at {} is {} s ahead of this clock; at most {MAX_CLOCK_SKEW_SECONDS} s",
                self.reported_at,
                self.reported_at - now
            ));
        }
        self.expires_at = self
            .expires_at
            .min(self.reported_at.saturating_add(MAX_REPORT_TTL_SECONDS));
        Ok(self.is_current(now).then_some(self))
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

/// A proxy id is the sort key's tail, printed by every reader: 1 to [`MAX_PROXY_ID_LEN`] of
/// `A-Z a-z 0-9 . _ : -` (task ids, host names), so it can carry no control character, space or
/// quote into an operator's terminal or a deploy's status reason.
pub fn check_proxy_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("is empty".into());
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')))
    {
        return Err(format!(
            "contains {c:?}; only letters, digits, '.', '_', ':' and '-'"
        ));
    }
    if id.len() > MAX_PROXY_ID_LEN {
        return Err(format!(
            "is {} characters; at most {MAX_PROXY_ID_LEN}",
            id.len()
        ));
    }
    Ok(())
}

/// What a read of the proxy rows found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyRows {
    /// The reports that count now, sorted by proxy id, each `expires_at` capped.
    pub current: Vec<ProxyReport>,
    /// Rows that are not reports, to warn about (aged-out reports are left out silently).
    pub ignored: Vec<IgnoredRow>,
}

/// A row of the `PROXIES` partition that does not count, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredRow {
    /// The row's sort key as stored: untrusted text; escape it before printing it.
    pub sort_key: String,
    /// Why it does not count; any stored text in it is quoted with escapes.
    pub why: String,
}

impl ProxyRows {
    /// Judges the rows of the partition at `now`.
    pub fn from_items(items: &[Item], now: u64) -> ProxyRows {
        let mut rows = ProxyRows::default();
        for item in items {
            let sort_key = get_s(item, keys::SK).unwrap_or_default().to_string();
            let judged = ProxyReport::from_item(item)
                .ok_or_else(|| "not a proxy report: an attribute a report has is missing or malformed".to_string())
                .and_then(|r| r.judged(now));
            match judged {
                Ok(Some(report)) => rows.current.push(report),
                Ok(None) => {}
                Err(why) => rows.ignored.push(IgnoredRow { sort_key, why }),
            }
        }
        rows.current.sort_by(|a, b| a.proxy_id.cmp(&b.proxy_id));
        rows
    }
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

    /// Every row of the partition judged at `now` ([`ProxyRows::from_items`]): the reports that
    /// count, and the rows ignored. Rows past `expires_at` are dropped here even while DynamoDB
    /// still holds them.
    pub async fn read(&self, now: u64) -> Result<ProxyRows, RegistryError> {
        let items = query_partition(
            &self.client,
            &self.table,
            PROXIES_PK,
            Some(PROXY_PREFIX),
            &format!("reading proxy reports from table {}", self.table),
        )
        .await?;
        Ok(ProxyRows::from_items(&items, now))
    }

    /// The reports that count at `now`, sorted by proxy id; the rows [`read`](Self::read) would
    /// warn about are left out.
    pub async fn current(&self, now: u64) -> Result<Vec<ProxyReport>, RegistryError> {
        Ok(self.read(now).await?.current)
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
    fn proxy_ids_are_from_a_safe_alphabet_and_bounded() {
        for ok in [
            "3f2a9c0e4b6d4e1f8a7b6c5d4e3f2a1b",
            "ip-10-0-1-23.ec2.internal",
            "task_1:envoy",
            "a",
        ] {
            assert_eq!(check_proxy_id(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_proxy_id(&"x".repeat(128)), Ok(()));
        assert_eq!(check_proxy_id(""), Err("is empty".into()));
        for (bad, shown) in [
            ("a b", "' '"),
            ("task\u{1b}[2J", "'\\u{1b}'"),
            ("task\nforged", "'\\n'"),
            ("task\r", "'\\r'"),
            ("task\t1", "'\\t'"),
            ("task/1", "'/'"),
            ("task\"1", "'\"'"),
            ("task#1", "'#'"),
            ("t\u{e9}sk", "'\u{e9}'"),
            ("task\u{202e}1", "'\\u{202e}'"),
        ] {
            let err = check_proxy_id(bad).expect_err(bad);
            assert!(err.starts_with(&format!("contains {shown};")), "{bad:?}: {err}");
            assert!(err.ends_with("only letters, digits, '.', '_', ':' and '-'"), "{err}");
        }
        assert_eq!(
            check_proxy_id(&"x".repeat(129)),
            Err("is 129 characters; at most 128".into())
        );
    }

    #[test]
    fn forged_ids_are_ignored_with_the_reason() {
        let now = 150;
        let mut rows = vec![report().to_item()];
        for id in ["evil\u{1b}[31m", "line\nbreak", "", &"x".repeat(129)] {
            let mut r = report();
            r.proxy_id = id.to_string();
            rows.push(r.to_item());
        }
        let read = ProxyRows::from_items(&rows, now);
        assert_eq!(read.current, vec![report()]);
        let why: Vec<&str> = read.ignored.iter().map(|i| i.why.as_str()).collect();
        assert_eq!(
            why,
            [
                "proxy id \"evil\\u{1b}[31m\" contains '\\u{1b}'; only letters, digits, '.', '_', ':' and '-'",
                "proxy id \"line\\nbreak\" contains '\\n'; only letters, digits, '.', '_', ':' and '-'",
                "proxy id \"\" is empty",
                &format!("proxy id \"{}\" is 129 characters; at most 128", "x".repeat(129)),
            ]
        );
        assert_eq!(read.ignored[0].sort_key, "PROXY#evil\u{1b}[31m", "kept as stored");
        assert!(read.ignored.iter().all(|i| !i.why.contains(['\u{1b}', '\n'])));
    }

    #[test]
    fn a_claimed_expiry_is_capped_at_the_report_ttl() {
        let mut forever = report();
        forever.reported_at = 1_000;
        forever.expires_at = u64::MAX;
        let read = ProxyRows::from_items(&[forever.to_item()], 1_000);
        assert_eq!(read.current[0].expires_at, 1_000 + MAX_REPORT_TTL_SECONDS);
        assert!(read.ignored.is_empty());
        // Counted until reported_at + TTL, then gone, whatever the row says.
        let at = |now| ProxyRows::from_items(&[forever.to_item()], now);
        assert_eq!(at(1_000 + MAX_REPORT_TTL_SECONDS - 1).current.len(), 1);
        assert!(at(1_000 + MAX_REPORT_TTL_SECONDS).current.is_empty());
        assert!(at(u64::MAX).current.is_empty());
        // A shorter expiry (the sidecar's own --report-ttl) stands.
        assert_eq!(ProxyRows::from_items(&[report().to_item()], 150).current[0].expires_at, 200);
    }

    #[test]
    fn a_report_older_than_the_ttl_or_from_the_future_does_not_count() {
        let now = 1_000_000;
        let mut old = report();
        old.reported_at = now - MAX_REPORT_TTL_SECONDS;
        old.expires_at = now + 60;
        let mut ahead = report();
        ahead.proxy_id = "ahead".into();
        ahead.reported_at = now + MAX_CLOCK_SKEW_SECONDS + 1;
        ahead.expires_at = now + MAX_CLOCK_SKEW_SECONDS + 100;
        let mut skewed = report();
        skewed.proxy_id = "skewed".into();
        skewed.reported_at = now + MAX_CLOCK_SKEW_SECONDS;
        skewed.expires_at = now + MAX_CLOCK_SKEW_SECONDS + 120;
        let read = ProxyRows::from_items(&[old.to_item(), ahead.to_item(), skewed.to_item()], now);
        let ids: Vec<&str> = read.current.iter().map(|r| r.proxy_id.as_str()).collect();
        assert_eq!(ids, ["skewed"], "within the clock skew it counts");
        assert_eq!(
            read.ignored,
            vec![IgnoredRow {
                sort_key: "PROXY#ahead".into(),
                why: "reported_at 1000301 is 301 s ahead of this clock; at most 300 s".into(),
            }]
        );
    }

    #[test]
    fn a_row_that_is_not_a_report_is_ignored_and_said_so() {
        let mut item = report().to_item();
        item.insert("reported_at".into(), keys::s("soon"));
        let read = ProxyRows::from_items(&[item], 150);
        assert!(read.current.is_empty());
        assert_eq!(read.ignored.len(), 1);
        assert!(read.ignored[0].why.starts_with("not a proxy report"), "{:?}", read.ignored);
    }
}
