//! Per-service traffic from Envoy's per-cluster stats: requests, 4xx, 5xx, connect failures and
//! the upstream latency histogram of each `team.service` cluster. Envoy's counters only grow, so
//! what happened between two readings is their difference (`delta`); the sidecar publishes those
//! differences and `gatewayctl top` divides them by the time between readings
//! (docs/design.md#request-metrics).

use crate::{AdminClient, AdminError};
use gateway_render::contract::RATE_LIMIT_CLUSTER;
use std::collections::BTreeMap;

/// Only the stats this module reads, of clusters named `team.service` and its other backend
/// clusters `team.service.canary` and `team.service.backend-HASH` (the rate-limit cluster and
/// Envoy's `external.`/`internal.` sub-stats do not match; a mirror's and the failover pairs'
/// do not either), and only the
/// ones in use. `histogram_buckets=detailed` gives the latency histogram's cumulative buckets,
/// so a window's percentiles come from the difference of two readings.
pub const TRAFFIC_STATS_PATH: &str = "/stats?format=json&usedonly&histogram_buckets=detailed&filter=%5E(cluster%5C.%5B%5E.%5D%2B%5C.%5B%5E.%5D%2B%5C.(candidate%5C.)%3F(canary%5C.%7Cbackend-%5B0-9a-f%5D%2B%5C.)%3F(upstream_rq_total%7Cupstream_rq_4xx%7Cupstream_rq_5xx%7Cupstream_cx_connect_fail%7Cupstream_rq_time%7Cratelimit%5C.over_limit)%7Cburst%5C.%5B%5E.%5D%2B%5C.%5B%5E.%5D%2B%5C.(candidate%5C.)%3Fhttp_local_rate_limit%5C.rate_limited)%24";

/// One cluster's counters since Envoy started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceCounters {
    pub requests: u64,
    pub responses_4xx: u64,
    pub responses_5xx: u64,
    pub connect_failures: u64,
    /// Requests the gateway's own limits answered 429: the rate-limit service's over-limit
    /// answers (`cluster.team.service.ratelimit.over_limit`) and the burst buckets'
    /// (`burst.team.service.http_local_rate_limit.rate_limited`). They never reach the backend.
    pub limited: u64,
    /// Upstream latency (ms): `(lower bound, width)` of each bucket and its cumulative count.
    pub latency: BTreeMap<(u64, u64), u64>,
}

/// A team and service, as the cluster `team.service` names them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Service {
    pub team: String,
    pub service: String,
}

/// One reading of every team cluster's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrafficSnapshot {
    /// Each service's clusters added up, a rollout's two revisions included.
    pub services: BTreeMap<Service, ServiceCounters>,
    /// A rolled-out service's candidate clusters (`team.service.candidate…`,
    /// docs/design.md#rollout) on their own; the stable revision is the rest.
    pub candidates: BTreeMap<Service, ServiceCounters>,
}

/// Which revision of a rolled-out service a delta counts.
pub const REVISIONS: [&str; 2] = ["stable", "candidate"];

/// What one service did between two readings.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceDelta {
    pub service: Service,
    /// `stable` or `candidate` for one revision of a rolled-out service; `None` for the whole
    /// service.
    pub revision: Option<&'static str>,
    pub requests: u64,
    pub responses_4xx: u64,
    pub responses_5xx: u64,
    pub connect_failures: u64,
    /// Requests the gateway's limits answered 429 (see [`ServiceCounters::limited`]).
    pub limited: u64,
    /// Upstream latency percentiles in ms over the window; `None` without a timed request.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    #[error(transparent)]
    Admin(#[from] AdminError),
    #[error("Envoy admin {endpoint}: /stats answered {status}")]
    Status { endpoint: String, status: u16 },
    #[error("Envoy admin {endpoint}: /stats: {reason}")]
    Parse { endpoint: String, reason: String },
}

/// Reads the per-service counters from Envoy's admin.
pub async fn read_traffic(admin: &AdminClient) -> Result<TrafficSnapshot, TrafficError> {
    let response = admin.get(TRAFFIC_STATS_PATH).await?;
    let endpoint = admin.endpoint().to_string();
    if !response.is_success() {
        return Err(TrafficError::Status {
            endpoint,
            status: response.status,
        });
    }
    TrafficSnapshot::parse(&response.body)
        .map_err(|reason| TrafficError::Parse { endpoint, reason })
}

impl TrafficSnapshot {
    /// Envoy's `{"stats":[{"name":…,"value":…},…,{"histograms":{"details":[…]}}]}`.
    pub fn parse(body: &[u8]) -> Result<TrafficSnapshot, String> {
        let doc: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
        let stats = doc
            .get("stats")
            .and_then(|s| s.as_array())
            .ok_or("no \"stats\" list")?;
        let mut snapshot = TrafficSnapshot::default();
        for stat in stats {
            if let Some(details) = stat
                .get("histograms")
                .and_then(|h| h.get("details"))
                .and_then(|d| d.as_array())
            {
                for histogram in details {
                    let Some((service, "upstream_rq_time", candidate)) = histogram
                        .get("name")
                        .and_then(|n| n.as_str())
                        .and_then(split_stat)
                    else {
                        continue;
                    };
                    for bucket in histogram
                        .get("totals")
                        .and_then(|t| t.as_array())
                        .into_iter()
                        .flatten()
                    {
                        let lower = bucket.get("lower_bound").and_then(|v| v.as_f64());
                        let width = bucket.get("width").and_then(|v| v.as_f64());
                        let count = bucket.get("count").and_then(|v| v.as_u64());
                        if let (Some(lower), Some(width), Some(count)) = (lower, width, count) {
                            for counters in snapshot.counters(&service, candidate) {
                                *counters
                                    .latency
                                    .entry((lower.to_bits(), width.to_bits()))
                                    .or_insert(0) += count;
                            }
                        }
                    }
                }
                continue;
            }
            let (Some(name), Some(value)) = (
                stat.get("name").and_then(|n| n.as_str()),
                stat.get("value").and_then(|v| v.as_u64()),
            ) else {
                continue;
            };
            let Some((service, leaf, candidate)) = split_stat(name) else {
                continue;
            };
            for counters in snapshot.counters(&service, candidate) {
                match leaf {
                    // Summed: a service's share of backends (`backends`, a canary) is one cluster
                    // each.
                    "upstream_rq_total" => counters.requests += value,
                    "upstream_rq_4xx" => counters.responses_4xx += value,
                    "upstream_rq_5xx" => counters.responses_5xx += value,
                    "upstream_cx_connect_fail" => counters.connect_failures += value,
                    "ratelimit.over_limit" | "http_local_rate_limit.rate_limited" => {
                        counters.limited += value
                    }
                    _ => {}
                }
            }
        }
        Ok(snapshot)
    }

    /// Where a stat of `service` adds up: its total, and a candidate cluster's also its own.
    fn counters(&mut self, service: &Service, candidate: bool) -> Vec<&mut ServiceCounters> {
        let total = self.services.entry(service.clone()).or_default();
        if candidate {
            vec![total, self.candidates.entry(service.clone()).or_default()]
        } else {
            vec![total]
        }
    }
}

/// `cluster.team.service[.canary|.backend-HASH].leaf` or `burst.team.service.leaf` →
/// (team/service, leaf). Team and
/// service names never hold a dot (docs/design.md#registration-entry), so the cluster is exactly
/// two labels; the leaf is one label, or the limits' two. The rate-limit service's own cluster
/// (one label, `ratelimit`) is not a team's: its `internal.` request counters would otherwise
/// read as a service `ratelimit/internal`.
fn split_stat(name: &str) -> Option<(Service, &str, bool)> {
    let (rest, burst) = match name.strip_prefix("cluster.") {
        Some(rest) => (rest, false),
        None => (name.strip_prefix("burst.")?, true),
    };
    let mut parts = rest.splitn(3, '.');
    let team = parts.next()?;
    let service = parts.next()?;
    let mut leaf = parts.next()?;
    // A rollout's candidate revision: `team.service.candidate…` (docs/design.md#rollout).
    let candidate = match leaf.strip_prefix("candidate.") {
        Some(rest) => {
            leaf = rest;
            true
        }
        None => false,
    };
    // The service's other backend clusters (`.canary`, `.backend-HASH`) count for it; a mirror's
    // copies and the failover pairs (which route to those clusters) do not.
    if !burst {
        if let Some((label, rest)) = leaf.split_once('.') {
            if label == "canary" || label.starts_with("backend-") {
                leaf = rest;
            }
        }
    }
    let allowed = if burst {
        leaf == "http_local_rate_limit.rate_limited"
    } else {
        !leaf.contains('.') || leaf == "ratelimit.over_limit"
    };
    if !allowed || (team == RATE_LIMIT_CLUSTER && matches!(service, "internal" | "external")) {
        return None;
    }
    Some((
        Service {
            team: team.to_string(),
            service: service.to_string(),
        },
        leaf,
        candidate,
    ))
}

/// What happened between `before` and `after`, busiest first. A counter that went down means
/// Envoy restarted between the readings: `after` alone is then the window's count. A service
/// with nothing in the window is left out. Envoy merges histograms at its stats flush (every 5 s),
/// so latency can arrive one window after the requests it times.
pub fn delta(before: &TrafficSnapshot, after: &TrafficSnapshot) -> Vec<ServiceDelta> {
    deltas(&before.services, &after.services)
}

/// The two revisions of each service rolled out in `after` (docs/design.md#rollout): per
/// service, `("stable", delta)` and `("candidate", delta)`, each left out when nothing happened.
pub fn revision_delta(before: &TrafficSnapshot, after: &TrafficSnapshot) -> Vec<(&'static str, ServiceDelta)> {
    let stable = |s: &TrafficSnapshot| -> BTreeMap<Service, ServiceCounters> {
        s.candidates
            .iter()
            .filter(|(service, _)| after.candidates.contains_key(service))
            .map(|(service, c)| (service.clone(), minus(s.services.get(service).cloned().unwrap_or_default(), c)))
            .chain(
                after
                    .candidates
                    .keys()
                    .filter(|service| !s.candidates.contains_key(*service))
                    .map(|service| (service.clone(), s.services.get(service).cloned().unwrap_or_default())),
            )
            .collect()
    };
    let mut out: Vec<(&'static str, ServiceDelta)> = deltas(&stable(before), &stable(after))
        .into_iter()
        .map(|d| ("stable", d))
        .chain(deltas(&before.candidates, &after.candidates).into_iter().map(|d| ("candidate", d)))
        .map(|(r, d)| (r, ServiceDelta { revision: Some(r), ..d }))
        .collect();
    out.sort_by(|a, b| a.1.service.cmp(&b.1.service).then_with(|| a.0.cmp(b.0)));
    out
}

/// `total` without `part` (a service's stable revision: its clusters without the candidate's).
fn minus(mut total: ServiceCounters, part: &ServiceCounters) -> ServiceCounters {
    total.requests = total.requests.saturating_sub(part.requests);
    total.responses_4xx = total.responses_4xx.saturating_sub(part.responses_4xx);
    total.responses_5xx = total.responses_5xx.saturating_sub(part.responses_5xx);
    total.connect_failures = total.connect_failures.saturating_sub(part.connect_failures);
    total.limited = total.limited.saturating_sub(part.limited);
    for (bucket, count) in &part.latency {
        if let Some(c) = total.latency.get_mut(bucket) {
            *c = c.saturating_sub(*count);
        }
    }
    total
}

fn deltas(
    before: &BTreeMap<Service, ServiceCounters>,
    after: &BTreeMap<Service, ServiceCounters>,
) -> Vec<ServiceDelta> {
    let empty = ServiceCounters::default();
    let mut out: Vec<ServiceDelta> = after
        .iter()
        .map(|(service, now)| {
            let then = before.get(service).unwrap_or(&empty);
            let restarted = now.requests < then.requests;
            let then = if restarted { &empty } else { then };
            let diff = |a: u64, b: u64| a.saturating_sub(b);
            let buckets: Vec<(f64, f64, u64)> = now
                .latency
                .iter()
                .map(|((lower, width), count)| {
                    let was = then.latency.get(&(*lower, *width)).copied().unwrap_or(0);
                    (
                        f64::from_bits(*lower),
                        f64::from_bits(*width),
                        diff(*count, was),
                    )
                })
                .collect();
            ServiceDelta {
                service: service.clone(),
                revision: None,
                requests: diff(now.requests, then.requests),
                responses_4xx: diff(now.responses_4xx, then.responses_4xx),
                responses_5xx: diff(now.responses_5xx, then.responses_5xx),
                connect_failures: diff(now.connect_failures, then.connect_failures),
                limited: diff(now.limited, then.limited),
                latency_p50_ms: percentile(&buckets, 0.50),
                latency_p99_ms: percentile(&buckets, 0.99),
            }
        })
        .filter(|d| {
            d.requests > 0 || d.connect_failures > 0 || d.limited > 0 || d.latency_p50_ms.is_some()
        })
        .collect();
    out.sort_by(|a, b| {
        b.requests
            .cmp(&a.requests)
            .then_with(|| a.service.cmp(&b.service))
    });
    out
}

/// The `q` quantile of bucketed counts: the upper edge of the bucket holding it (an upper bound,
/// as Envoy's own percentiles are bucket-resolution).
fn percentile(buckets: &[(f64, f64, u64)], q: f64) -> Option<f64> {
    let total: u64 = buckets.iter().map(|b| b.2).sum();
    if total == 0 {
        return None;
    }
    let mut sorted = buckets.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (lower, width, count) in sorted {
        seen += count;
        if seen >= rank {
            return Some(lower + width);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(requests: u64, fivexx: u64, buckets: &[(f64, f64, u64)]) -> TrafficSnapshot {
        let totals: Vec<String> = buckets
            .iter()
            .map(|(l, w, c)| format!(r#"{{"lower_bound":{l},"width":{w},"count":{c}}}"#))
            .collect();
        let body = format!(
            r#"{{"stats":[
              {{"name":"cluster.billing.invoices.upstream_rq_total","value":{requests}}},
              {{"name":"cluster.billing.invoices.upstream_rq_5xx","value":{fivexx}}},
              {{"name":"cluster.billing.invoices.external.upstream_rq_5xx","value":999}},
              {{"name":"cluster.ratelimit.upstream_rq_total","value":999}},
              {{"name":"cluster.ratelimit.internal.upstream_rq_5xx","value":999}},
              {{"name":"cluster.ratelimit.internal.upstream_rq_total","value":999}},
              {{"name":"cluster.billing.invoices.ratelimit.over_limit","value":{fivexx}}},
              {{"name":"burst.billing.invoices.http_local_rate_limit.rate_limited","value":1}},
              {{"name":"burst.billing.invoices.http_local_rate_limit.enforced","value":999}},
              {{"histograms":{{"details":[{{"name":"cluster.billing.invoices.upstream_rq_time","totals":[{}]}}]}}}}
            ]}}"#,
            totals.join(",")
        );
        TrafficSnapshot::parse(body.as_bytes()).expect("parses")
    }

    #[test]
    fn reads_team_clusters_only() {
        let s = snapshot(10, 2, &[(0.0, 1.0, 10)]);
        assert_eq!(s.services.len(), 1, "{s:?}");
        let (service, counters) = s.services.iter().next().expect("one");
        assert_eq!(
            (service.team.as_str(), service.service.as_str()),
            ("billing", "invoices")
        );
        assert_eq!((counters.requests, counters.responses_5xx), (10, 2));
        assert_eq!(counters.limited, 3, "over-limit and burst 429s");
    }

    #[test]
    fn a_services_weighted_backends_and_canary_add_up_and_its_mirror_does_not() {
        let body = r#"{"stats":[
          {"name":"cluster.billing.split.backend-0a1b2c3d.upstream_rq_total","value":30},
          {"name":"cluster.billing.split.backend-4e5f6a7b.upstream_rq_total","value":10},
          {"name":"cluster.billing.split.backend-4e5f6a7b.upstream_rq_5xx","value":4},
          {"name":"cluster.billing.split.canary.upstream_rq_total","value":5},
          {"name":"cluster.billing.split.mirror-99999999.upstream_rq_total","value":45},
          {"name":"cluster.billing.split.canary-first.upstream_rq_total","value":5},
          {"histograms":{"details":[
            {"name":"cluster.billing.split.backend-0a1b2c3d.upstream_rq_time","totals":[{"lower_bound":1,"width":1,"count":30}]},
            {"name":"cluster.billing.split.backend-4e5f6a7b.upstream_rq_time","totals":[{"lower_bound":1,"width":1,"count":10}]}
          ]}}
        ]}"#;
        let s = TrafficSnapshot::parse(body.as_bytes()).expect("parses");
        assert_eq!(s.services.len(), 1, "{s:?}");
        let counters = s.services.values().next().expect("one");
        assert_eq!((counters.requests, counters.responses_5xx), (45, 4));
        assert_eq!(counters.latency.values().sum::<u64>(), 40);
    }

    #[test]
    fn delta_is_the_difference_and_percentiles_come_from_the_window() {
        let before = snapshot(10, 2, &[(0.0, 1.0, 10)]);
        let after = snapshot(
            110,
            7,
            &[(0.0, 1.0, 10), (100.0, 10.0, 99), (1000.0, 100.0, 1)],
        );
        let d = delta(&before, &after);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].requests, d[0].responses_5xx), (100, 5));
        assert_eq!(d[0].latency_p50_ms, Some(110.0));
        assert_eq!(d[0].latency_p99_ms, Some(110.0));
        let after_more = snapshot(
            112,
            7,
            &[(0.0, 1.0, 10), (100.0, 10.0, 99), (1000.0, 100.0, 3)],
        );
        assert_eq!(delta(&after, &after_more)[0].latency_p99_ms, Some(1100.0));
    }

    #[test]
    fn a_restart_counts_from_zero_and_an_idle_service_is_left_out() {
        let before = snapshot(500, 50, &[(0.0, 1.0, 500)]);
        let after = snapshot(3, 1, &[(0.0, 1.0, 3)]);
        let d = delta(&before, &after);
        assert_eq!((d[0].requests, d[0].responses_5xx), (3, 1));
        assert!(delta(&after, &after).is_empty());
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(TrafficSnapshot::parse(b"<html>").is_err());
        assert!(TrafficSnapshot::parse(b"{}").is_err());
    }

    #[test]
    fn a_rollouts_candidate_clusters_count_for_the_service_and_on_their_own() {
        let read = |stable: u64, stable_5xx: u64, candidate: u64, candidate_5xx: u64| {
            TrafficSnapshot::parse(format!(r#"{{"stats":[
              {{"name":"cluster.billing.invoices.upstream_rq_total","value":{stable}}},
              {{"name":"cluster.billing.invoices.upstream_rq_5xx","value":{stable_5xx}}},
              {{"name":"cluster.billing.invoices.candidate.upstream_rq_total","value":{candidate}}},
              {{"name":"cluster.billing.invoices.candidate.upstream_rq_5xx","value":{candidate_5xx}}},
              {{"name":"cluster.billing.invoices.candidate.canary-first.upstream_rq_total","value":99}},
              {{"name":"cluster.catalog.products.upstream_rq_total","value":7}}
            ]}}"#).as_bytes())
            .unwrap()
        };
        let (before, after) = (read(10, 0, 2, 0), read(90, 1, 22, 5));
        let total = delta(&before, &after);
        assert_eq!((total[0].service.service.as_str(), total[0].requests, total[0].responses_5xx), ("invoices", 100, 6));
        let by_revision = revision_delta(&before, &after);
        let figures: Vec<(&str, &str, u64, u64)> = by_revision
            .iter()
            .map(|(r, d)| (*r, d.service.service.as_str(), d.requests, d.responses_5xx))
            .collect();
        assert_eq!(figures, [("candidate", "invoices", 20, 5), ("stable", "invoices", 80, 1)], "catalog has no rollout");
    }
}
