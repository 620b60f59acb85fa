//! Metrics to CloudWatch namespace `Gateway`. Alarms watch `ValidationFailed` and
//! `ConfigDrift`; the rest show what the pipeline is doing.

use aws_sdk_cloudwatch::types::{MetricDatum, StandardUnit};
use std::future::Future;

pub const NAMESPACE: &str = "Gateway";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    ValidationFailed,
    ConfigDrift,
    Published,
    ReconcileFailed,
    RoutesRendered,
    ProxyConfigRejected,
    RateLimiterErrors,
    /// Entries a reconcile run set aside, per team (docs/design.md#quarantine).
    EntryQuarantined,
    /// Percent of the memory envelope the registry fills (docs/design.md#memory-envelope);
    /// alarmed at 80.
    CapacityUsed,
    /// A sidecar's delivery time minus the delivered bundle's publish time (S3 LastModified),
    /// in seconds, one datum per delivery (docs/design.md#proxy-reports).
    DeliveryLagSeconds,
}

impl Metric {
    pub fn unit(self) -> StandardUnit {
        match self {
            Metric::CapacityUsed => StandardUnit::Percent,
            Metric::DeliveryLagSeconds => StandardUnit::Seconds,
            _ => StandardUnit::Count,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::ValidationFailed => "ValidationFailed",
            Metric::ConfigDrift => "ConfigDrift",
            Metric::Published => "Published",
            Metric::ReconcileFailed => "ReconcileFailed",
            Metric::RoutesRendered => "RoutesRendered",
            Metric::ProxyConfigRejected => "ProxyConfigRejected",
            Metric::RateLimiterErrors => "RateLimiterErrors",
            Metric::EntryQuarantined => "EntryQuarantined",
            Metric::CapacityUsed => "CapacityUsed",
            Metric::DeliveryLagSeconds => "DeliveryLagSeconds",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// PutMetricData failed; the message is the SDK error's, the source the error itself.
    #[error("CloudWatch: {message}")]
    Call {
        message: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// No answer in time.
    #[error("CloudWatch: no answer within {within:?}")]
    NoAnswer { within: std::time::Duration },
}

/// Where metrics go: CloudWatch in production, a fault-injecting or recording wrapper in tests.
pub trait MetricsSink {
    fn emit(&self, data: &[(Metric, f64)])
        -> impl Future<Output = Result<(), MetricsError>> + Send;

    /// One datum per team, with dimension `Team`.
    fn emit_per_team(
        &self,
        metric: Metric,
        per_team: &[(String, f64)],
    ) -> impl Future<Output = Result<(), MetricsError>> + Send;

    /// What the proxies published of a rolled-out service's two revisions between `start` and
    /// `end` (unix seconds): the figures a step is judged on (docs/design.md#rollout). `None`
    /// where figures cannot be read at all (a sink that only writes).
    fn rollout_figures(
        &self,
        team: &str,
        service: &str,
        start: u64,
        end: u64,
    ) -> impl Future<Output = Result<Option<RolloutFigures>, MetricsError>> + Send {
        let _ = (team, service, start, end);
        async { Ok(None) }
    }
}

/// One revision's requests, 5xx answers and worst p99 latency (the largest any proxy published)
/// over a window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RevisionFigures {
    pub requests: f64,
    pub responses_5xx: f64,
    pub p99_ms: Option<f64>,
}

impl RevisionFigures {
    /// 5xx answers over requests; 0 without requests.
    pub fn error_share(&self) -> f64 {
        if self.requests > 0.0 {
            self.responses_5xx / self.requests
        } else {
            0.0
        }
    }
}

/// A rolled-out service's two revisions over one window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RolloutFigures {
    pub stable: RevisionFigures,
    pub candidate: RevisionFigures,
}

#[derive(Debug, Clone)]
pub struct CloudWatchMetrics {
    client: aws_sdk_cloudwatch::Client,
}

impl CloudWatchMetrics {
    /// One PutMetricData call in the gateway's namespace (at most 1000 datums), for data
    /// beyond [`Metric`], such as the sidecar's per-service request metrics.
    /// One PutMetricData, bounded by [`crate::aws::SIDE_CALL_BUDGET`] whatever the SDK does.
    pub async fn put(&self, datums: Vec<MetricDatum>) -> Result<(), MetricsError> {
        let call = self
            .client
            .put_metric_data()
            .namespace(NAMESPACE)
            .set_metric_data(Some(datums))
            .send();
        bounded(call).await.map(|_| ())
    }

    pub fn new(client: aws_sdk_cloudwatch::Client) -> Self {
        Self { client }
    }

    pub fn from_conf(conf: &aws_config::SdkConfig) -> Self {
        Self::new(aws_sdk_cloudwatch::Client::from_conf(
            aws_sdk_cloudwatch::config::Builder::from(conf)
                .timeout_config(crate::aws::side_call_timeouts())
                .build(),
        ))
    }
}

/// One CloudWatch call within [`crate::aws::SIDE_CALL_BUDGET`], whatever the SDK does.
async fn bounded<T, E: std::error::Error + Send + Sync + 'static>(
    call: impl Future<Output = Result<T, E>>,
) -> Result<T, MetricsError> {
    let budget = crate::aws::SIDE_CALL_BUDGET;
    tokio::time::timeout(budget, call)
        .await
        .map_err(|_| MetricsError::NoAnswer { within: budget })?
        .map_err(|e| MetricsError::Call { message: crate::error_chain(&e), source: Box::new(e) })
}

impl MetricsSink for CloudWatchMetrics {
    /// `Requests` and `Responses5xx` (Sum) and `LatencyP99` (Maximum) of each revision, one
    /// GetMetricData call, bounded like every side call.
    async fn rollout_figures(
        &self,
        team: &str,
        service: &str,
        start: u64,
        end: u64,
    ) -> Result<Option<RolloutFigures>, MetricsError> {
        use aws_sdk_cloudwatch::primitives::DateTime;
        use aws_sdk_cloudwatch::types::{Dimension, Metric as CwMetric, MetricDataQuery, MetricStat};
        let mut queries = Vec::new();
        for revision in ["stable", "candidate"] {
            for (metric, stat) in [("Requests", "Sum"), ("Responses5xx", "Sum"), ("LatencyP99", "Maximum")] {
                let dims = [("Team", team), ("Service", service), ("Revision", revision)]
                    .map(|(n, v)| Dimension::builder().name(n).value(v).build());
                let stat = MetricStat::builder()
                    .metric(
                        CwMetric::builder()
                            .namespace(NAMESPACE)
                            .metric_name(metric)
                            .set_dimensions(Some(dims.to_vec()))
                            .build(),
                    )
                    .period(60)
                    .stat(stat)
                    .build();
                queries.push(
                    MetricDataQuery::builder()
                        .id(format!("{}_{}", revision, metric.to_ascii_lowercase()))
                        .metric_stat(stat)
                        .return_data(true)
                        .build(),
                );
            }
        }
        let call = self
            .client
            .get_metric_data()
            .set_metric_data_queries(Some(queries))
            .start_time(DateTime::from_secs(start as i64))
            .end_time(DateTime::from_secs(end.max(start + 1) as i64))
            .send();
        let out = bounded(call).await?;
        let mut figures = RolloutFigures::default();
        for result in out.metric_data_results() {
            let Some((revision, metric)) = result.id().and_then(|id| id.split_once('_')) else {
                continue;
            };
            let slot = match revision {
                "stable" => &mut figures.stable,
                "candidate" => &mut figures.candidate,
                _ => continue,
            };
            let values = result.values();
            match metric {
                "requests" => slot.requests = values.iter().fold(0.0, |a, b| a + b),
                "responses5xx" => slot.responses_5xx = values.iter().fold(0.0, |a, b| a + b),
                "latencyp99" => slot.p99_ms = values.iter().copied().reduce(f64::max),
                _ => {}
            }
        }
        Ok(Some(figures))
    }

    async fn emit(&self, data: &[(Metric, f64)]) -> Result<(), MetricsError> {
        if data.is_empty() {
            return Ok(());
        }
        let datums = data
            .iter()
            .map(|(metric, value)| datum(*metric, *value).build())
            .collect();
        self.put(datums).await
    }

    async fn emit_per_team(
        &self,
        metric: Metric,
        per_team: &[(String, f64)],
    ) -> Result<(), MetricsError> {
        if per_team.is_empty() {
            return Ok(());
        }
        let datums = per_team
            .iter()
            .map(|(team, value)| {
                datum(metric, *value)
                    .dimensions(
                        aws_sdk_cloudwatch::types::Dimension::builder()
                            .name("Team")
                            .value(team)
                            .build(),
                    )
                    .build()
            })
            .collect();
        self.put(datums).await
    }
}

/// One value of `metric`, in its unit.
fn datum(metric: Metric, value: f64) -> aws_sdk_cloudwatch::types::builders::MetricDatumBuilder {
    MetricDatum::builder()
        .metric_name(metric.name())
        .value(value)
        .unit(metric.unit())
}
