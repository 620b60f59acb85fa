//! Per-service request metrics: every `--metrics-interval` the sidecar reads Envoy's per-cluster
//! stats and publishes what changed since the last reading to CloudWatch namespace `Gateway`,
//! dimensions `Team` and `Service`, and for a rolled-out service also `Team`, `Service` and
//! `Revision` (docs/design.md#request-metrics). Differences, not totals, so
//! each proxy's figures add up across the fleet. This runs in its own task with bounded calls:
//! a slow or failing CloudWatch never holds up delivery.

use aws_sdk_cloudwatch::types::{Dimension, MetricDatum, StandardUnit};
use gateway_adapters::metrics::{CloudWatchMetrics, MetricsError};
use gateway_envoy_admin::traffic::{delta, read_traffic, revision_delta, ServiceDelta, TrafficSnapshot};
use gateway_envoy_admin::AdminClient;
use std::future::Future;
use std::time::Duration;

/// One PutMetricData call; CloudWatch answers in well under this.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(10);
/// PutMetricData takes at most 1000 data points per call.
const DATUMS_PER_CALL: usize = 900;

/// Where per-service figures go: CloudWatch in production, a recorder in tests.
pub trait TrafficSink {
    fn publish(
        &self,
        deltas: &[ServiceDelta],
    ) -> impl Future<Output = Result<(), MetricsError>> + Send;
}

#[derive(Debug, Clone)]
pub struct CloudWatchTraffic {
    metrics: CloudWatchMetrics,
}

impl CloudWatchTraffic {
    pub fn from_conf(conf: &aws_config::SdkConfig) -> Self {
        CloudWatchTraffic {
            metrics: CloudWatchMetrics::from_conf(conf),
        }
    }
}

/// The data points of one window: counts always (a zero is information), latency only when a
/// request was timed.
pub fn datums(deltas: &[ServiceDelta]) -> Vec<MetricDatum> {
    let mut out = Vec::with_capacity(deltas.len() * 6);
    for d in deltas {
        let mut dims = vec![
            Dimension::builder()
                .name("Team")
                .value(&d.service.team)
                .build(),
            Dimension::builder()
                .name("Service")
                .value(&d.service.service)
                .build(),
        ];
        // A rollout's revisions also on their own (docs/design.md#rollout): bounded to two.
        if let Some(revision) = d.revision {
            dims.push(Dimension::builder().name("Revision").value(revision).build());
        }
        let mut push = |name: &str, value: f64, unit: StandardUnit| {
            out.push(
                MetricDatum::builder()
                    .metric_name(name)
                    .set_dimensions(Some(dims.clone()))
                    .value(value)
                    .unit(unit)
                    .build(),
            )
        };
        push("Requests", d.requests as f64, StandardUnit::Count);
        push("Responses4xx", d.responses_4xx as f64, StandardUnit::Count);
        push("Responses5xx", d.responses_5xx as f64, StandardUnit::Count);
        push(
            "UpstreamConnectFailures",
            d.connect_failures as f64,
            StandardUnit::Count,
        );
        if let Some(p50) = d.latency_p50_ms {
            push("LatencyP50", p50, StandardUnit::Milliseconds);
        }
        if let Some(p99) = d.latency_p99_ms {
            push("LatencyP99", p99, StandardUnit::Milliseconds);
        }
    }
    out
}

impl TrafficSink for CloudWatchTraffic {
    async fn publish(&self, deltas: &[ServiceDelta]) -> Result<(), MetricsError> {
        for chunk in datums(deltas).chunks(DATUMS_PER_CALL) {
            let call = self.metrics.put(chunk.to_vec());
            match tokio::time::timeout(PUBLISH_TIMEOUT, call).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(MetricsError::NoAnswer {
                        within: PUBLISH_TIMEOUT,
                    })
                }
            }
        }
        Ok(())
    }
}

/// Reads and publishes every `interval`, forever (the caller aborts the task). A first reading
/// of a running Envoy is the baseline (the sidecar restarted beside it: those counts were
/// published before). If Envoy cannot be read before the first reading, it starts after the
/// sidecar (as in the proxy task) and its counters start at zero, so the baseline is zero. When a
/// publish fails the baseline stays, so the next window carries the counts that did not get
/// through; when a reading fails the window simply grows.
pub async fn publish_loop<S: TrafficSink>(admin: AdminClient, sink: S, interval: Duration) {
    let mut baseline: Option<TrafficSnapshot> = None;
    loop {
        match read_traffic(&admin).await {
            Ok(now) => match &baseline {
                None => baseline = Some(now),
                Some(before) => {
                    let mut deltas = delta(before, &now);
                    deltas.extend(revision_delta(before, &now).into_iter().map(|(_, d)| d));
                    if deltas.is_empty() {
                        baseline = Some(now);
                    } else {
                        match sink.publish(&deltas).await {
                            Ok(()) => {
                                tracing::info!(
                                    services = deltas.len(),
                                    "request metrics published"
                                );
                                baseline = Some(now);
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "request metrics not published; kept for the next window")
                            }
                        }
                    }
                }
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot read Envoy's per-service stats");
                baseline.get_or_insert_with(TrafficSnapshot::default);
            }
        }
        tokio::time::sleep(interval).await;
    }
}
