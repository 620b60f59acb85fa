//! Proxy reports (docs/design.md#proxy-reports): the bundle this proxy's Envoy serves, written as
//! this proxy's row in the registry table after each delivery and as a heartbeat.
//!
//! Reporting runs in a task of its own and only reads the shared status, so a slow, throttled or
//! unreachable table never delays a delivery: each write is bounded by [`REPORT_TIMEOUT`], and
//! a failure is logged and counted in `/status`, then tried again a little later.

use crate::state::{now, Event, LiveState, ReportStatus, SharedStatus};
use gateway_adapters::registry::{ProxyReport, ProxyTable};
use std::time::Duration;
use tokio::time::Instant;

/// One row write, whatever the SDK's own retries would do (shorter than one SDK attempt's 5 s,
/// so a hung connection always ends here).
pub const REPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// How often the task looks for a new delivery to report, besides being woken by one.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// After a failed write, wait at least this long before the next try.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// Where and how often this proxy reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportConfig {
    pub table: String,
    pub proxy_id: String,
    /// Heartbeat: a row is rewritten at least this often while nothing new is delivered.
    pub interval: Duration,
    /// A row counts for this long after it was written (`expires_at`).
    pub ttl: Duration,
}

/// The row for what `live` says was delivered, written at `at`.
pub fn report_for(config: &ReportConfig, live: &LiveState, at: u64) -> ProxyReport {
    ProxyReport {
        proxy_id: config.proxy_id.clone(),
        hash: live.hash.clone(),
        version_id: live.version_id.clone(),
        delivered_at: live.delivered_at,
        lag_seconds: live.lag_seconds,
        reported_at: at,
        expires_at: at + config.ttl.as_secs(),
    }
}

/// Reports until aborted: as soon as a delivery is live (woken by the delivery; looked at every
/// second too), and every `config.interval` meanwhile. Nothing is reported before the first delivery.
pub async fn report_loop(table: ProxyTable, status: SharedStatus, config: ReportConfig) {
    status.lock().report = Some(ReportStatus {
        proxy_id: config.proxy_id.clone(),
        table: config.table.clone(),
        ..ReportStatus::default()
    });
    // (version id, delivered at) of the last delivery reported; when the heartbeat is due; and,
    // after a failed write, when to try again (a failing table is not tried every second).
    let mut reported: Option<(String, u64)> = None;
    let mut heartbeat_at = Instant::now();
    let mut retry_at = Instant::now();
    loop {
        let live = status.lock().live.clone();
        if let Some(live) = live {
            let delivery = (live.version_id.clone(), live.delivered_at);
            let at = Instant::now();
            let due =
                at >= retry_at && (reported.as_ref() != Some(&delivery) || at >= heartbeat_at);
            if due {
                let row = report_for(&config, &live, now());
                match write(&table, &row).await {
                    Ok(()) => {
                        tracing::debug!(proxy = %row.proxy_id, hash = %row.hash, "proxy report written");
                        reported = Some(delivery);
                        heartbeat_at = Instant::now() + config.interval;
                        if let Some(r) = status.lock().report.as_mut() {
                            r.last_reported_at = Some(row.reported_at);
                            r.last_reported_hash = Some(row.hash.clone());
                        }
                    }
                    Err(message) => {
                        tracing::warn!(proxy = %row.proxy_id, table = %config.table, error = %message,
                            "proxy report not written; delivery goes on");
                        retry_at = Instant::now() + RETRY_AFTER.min(config.interval);
                        if let Some(r) = status.lock().report.as_mut() {
                            r.failures += 1;
                            r.last_error = Some(Event {
                                at: now(),
                                version_id: Some(row.version_id.clone()),
                                message,
                            });
                        }
                    }
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(LOOK_EVERY) => {}
            _ = status.wait_delivered() => {}
        }
    }
}

async fn write(table: &ProxyTable, row: &ProxyReport) -> Result<(), String> {
    match tokio::time::timeout(REPORT_TIMEOUT, table.put(row)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "writing to table {} timed out after {}s",
            table.table(),
            REPORT_TIMEOUT.as_secs()
        )),
    }
}

/// The proxy id when none is given: the ECS task id (from the task metadata endpoint's URL,
/// whose last path segment starts with it), else the host name.
pub fn default_proxy_id() -> Option<String> {
    if let Ok(uri) = std::env::var("ECS_CONTAINER_METADATA_URI_V4") {
        if let Some(id) = ecs_task_id(&uri) {
            return Some(id);
        }
    }
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
}

/// `http://169.254.170.2/v4/{task id}-{container number}` → the task id (32 hex digits).
fn ecs_task_id(uri: &str) -> Option<String> {
    let last = uri.trim_end_matches('/').rsplit('/').next()?;
    let id = last.split('-').next()?;
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_id_comes_from_the_metadata_uri() {
        assert_eq!(
            ecs_task_id("http://169.254.170.2/v4/a8f3c1d2e4b5467890abcdef12345678-3518451893"),
            Some("a8f3c1d2e4b5467890abcdef12345678".into())
        );
        assert_eq!(ecs_task_id("http://169.254.170.2/v4/not-a-task"), None);
    }

    #[test]
    fn a_row_expires_one_ttl_after_it_is_written() {
        let config = ReportConfig {
            table: "t".into(),
            proxy_id: "p".into(),
            interval: Duration::from_secs(30),
            ttl: Duration::from_secs(120),
        };
        let live = LiveState {
            version_id: "v".into(),
            etag: "e".into(),
            hash: "sha256:h".into(),
            delivered_at: 90,
            lag_seconds: Some(4),
            signer: None,
        };
        let row = report_for(&config, &live, 100);
        assert_eq!(row.expires_at, 220);
        assert_eq!(row.delivered_at, 90);
        assert_eq!(row.lag_seconds, Some(4));
        assert_eq!(row.hash, "sha256:h");
    }
}
