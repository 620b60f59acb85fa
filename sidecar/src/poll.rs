//! One round of the sidecar: HEAD → (new version) GET exact version → verify → deliver →
//! remember; then read the global rate limiter's failure counters. Every decision is logged and
//! reflected in `/status`.

use crate::deliver::{Delivered, Target};
use crate::error::SidecarError;
use crate::source::BundleSource;
use crate::state::{now, Event, LiveState, SharedStatus};
use crate::timing;
use gateway_adapters::metrics::{Metric, MetricsSink};
use gateway_adapters::store::LiveHead;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A metrics call must not hold up delivery; CloudWatch answers in well under this.
const METRICS_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollOutcome {
    /// The live bundle is the one delivered last.
    Unchanged,
    /// Nothing published yet.
    NoBundle,
    /// The live version is one Envoy refused; it is not retried until a newer one appears.
    StillRejected { version_id: String },
    Delivered {
        version_id: String,
        hash: String,
        first: bool,
    },
}

pub struct Sidecar<M> {
    source: BundleSource,
    target: Target,
    state_file: Option<PathBuf>,
    status: SharedStatus,
    metrics: M,
    /// `If-None-Match` for the next HEAD: the etag of the last version handled.
    etag: Option<String>,
    /// `ratelimit.error` at the last reading; `None` until the first one.
    limiter_seen: Option<u64>,
    /// `--once`: deliver and confirm even a version the state file says is live.
    confirm: bool,
    /// When this sidecar started (unix seconds): a bundle published before it is delivered at
    /// start-up, which says nothing about delivery lag.
    started_at: u64,
}

impl<M: MetricsSink + Clone + Send + Sync + 'static> Sidecar<M> {
    /// A sidecar that resumes from the state file when the watched files still hold the bundle
    /// it names.
    pub fn new(
        source: BundleSource,
        target: Target,
        state_file: Option<PathBuf>,
        status: SharedStatus,
        metrics: M,
    ) -> Self {
        let resumed = state_file
            .as_deref()
            .and_then(LiveState::load)
            .filter(|s| target.holds(&s.hash));
        if let Some(state) = &resumed {
            tracing::info!(version_id = %state.version_id, hash = %state.hash, "resuming from the state file");
        }
        let etag = resumed.as_ref().map(|s| s.etag.clone());
        status.lock().live = resumed;
        Sidecar {
            source,
            target,
            state_file,
            status,
            metrics,
            etag,
            limiter_seen: None,
            confirm: false,
            started_at: now(),
        }
    }

    /// Makes every round download and deliver the live version, so the waits confirm Envoy
    /// runs it even when the state file says it was delivered before (`--once`).
    pub fn confirming(mut self) -> Self {
        self.confirm = true;
        self.etag = None;
        self
    }

    pub fn status(&self) -> &SharedStatus {
        &self.status
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// One poll: a round, then the rate limiter's counters. Errors land in `/status` and the log.
    pub async fn poll(&mut self) -> Result<PollOutcome, SidecarError> {
        let result = self.round().await;
        {
            let mut status = self.status.lock();
            status.last_poll = Some(now());
            if result.is_ok() {
                status.last_success = status.last_poll;
            }
            if let Err(e) = &result {
                status.last_error = Some(Event {
                    at: now(),
                    version_id: None,
                    message: gateway_adapters::error_chain(e),
                });
            }
        }
        match &result {
            Ok(PollOutcome::Unchanged) => tracing::debug!("bundle unchanged"),
            Ok(PollOutcome::NoBundle) => {
                tracing::warn!(bucket = %self.source.bucket(), "no bundle published yet")
            }
            Ok(PollOutcome::StillRejected { version_id }) => {
                tracing::debug!(%version_id, "live bundle is the one Envoy refused")
            }
            Ok(PollOutcome::Delivered {
                version_id,
                hash,
                first,
            }) => tracing::info!(%version_id, %hash, first, "bundle delivered"),
            Err(e) => {
                tracing::error!(error = %gateway_adapters::error_chain(e), "round failed; the last good files stay in place")
            }
        }
        self.check_rate_limiter().await;
        result
    }

    /// HEAD, and on a new version: download, verify, deliver, remember.
    pub async fn round(&mut self) -> Result<PollOutcome, SidecarError> {
        let started = Instant::now();
        let head = self.source.head(self.etag.as_deref()).await?;
        let live = match head {
            LiveHead::Unchanged => return Ok(PollOutcome::Unchanged),
            LiveHead::Absent => return Ok(PollOutcome::NoBundle),
            LiveHead::Live(live) => live,
        };
        let (delivered_version, rejected_version) = {
            let status = self.status.lock();
            (
                status.live.as_ref().map(|s| s.version_id.clone()),
                status.rejected_version.clone(),
            )
        };
        if !self.confirm
            && delivered_version.as_deref() == Some(live.version_id.as_str())
            && self.target.files_present()
        {
            self.etag = Some(live.etag);
            return Ok(PollOutcome::Unchanged);
        }
        if rejected_version.as_deref() == Some(live.version_id.as_str()) {
            self.etag = Some(live.etag);
            return Ok(PollOutcome::StillRejected {
                version_id: live.version_id,
            });
        }
        tracing::info!(version_id = %live.version_id, "new bundle version");
        timing::step_since("head", started);
        let mut verified = self.source.download(&live, self.target.staging()).await?;
        let hash = verified.hash.clone();
        match self.target.deliver(&mut verified.staged, &hash).await {
            Ok(delivered) => {
                let delivered_at = now();
                // Lag is measured for bundles published while this sidecar runs (a new task's
                // first delivery of an older bundle is not lag). S3's clock and ours differ by
                // little; a bundle that seems to come from the future counts as no lag.
                let lag_seconds = verified
                    .last_modified
                    .filter(|published| *published >= self.started_at)
                    .map(|published| delivered_at.saturating_sub(published));
                let state = LiveState {
                    version_id: verified.version_id.clone(),
                    etag: verified.etag.clone(),
                    hash: hash.clone(),
                    delivered_at,
                    lag_seconds,
                    signer: Some(verified.signer.to_string()),
                };
                if let Some(path) = &self.state_file {
                    // The files are live whether or not this write works; a missing state file
                    // only costs one download after a restart.
                    if let Err(e) = state.save(path) {
                        tracing::warn!(error = %e, "writing the state file");
                    }
                }
                {
                    let mut status = self.status.lock();
                    status.live = Some(state);
                    status.delivered += 1;
                    status.rejected_version = None;
                }
                self.status.delivered();
                self.etag = Some(verified.etag);
                if let Some(lag) = lag_seconds {
                    // In a task of its own: a slow CloudWatch never delays the next round.
                    let metrics = self.metrics.clone();
                    tokio::spawn(async move {
                        emit_to(&metrics, Metric::DeliveryLagSeconds, lag as f64).await
                    });
                }
                Ok(PollOutcome::Delivered {
                    version_id: verified.version_id,
                    hash,
                    first: delivered == Delivered::First,
                })
            }
            Err(e) if e.is_rejection() => {
                tracing::error!(version_id = %verified.version_id, error = %e, "Envoy refused the bundle");
                {
                    let mut status = self.status.lock();
                    status.rejected += 1;
                    status.rejected_version = Some(verified.version_id.clone());
                    status.last_rejection = Some(Event {
                        at: now(),
                        version_id: Some(verified.version_id.clone()),
                        message: e.to_string(),
                    });
                }
                self.etag = Some(verified.etag);
                self.emit(Metric::ProxyConfigRejected, 1.0).await;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Reports the increase of the global rate-limit filter's `ratelimit.error` counters: a
    /// limiter that is down means global limits are silently off (requests pass).
    pub async fn check_rate_limiter(&mut self) {
        let Target::Envoy(envoy) = &self.target else {
            return;
        };
        let stats = match envoy.admin.stats().await {
            Ok(stats) => stats,
            Err(e) => {
                tracing::debug!(error = %e, "rate limiter counters not read");
                return;
            }
        };
        let failures = stats.ratelimit_failures();
        self.status.lock().ratelimit = failures;
        let increase = match self.limiter_seen {
            // Counters start at zero when Envoy restarts.
            Some(seen) if failures.errors >= seen => failures.errors - seen,
            Some(_) => failures.errors,
            None => 0,
        };
        self.limiter_seen = Some(failures.errors);
        if increase > 0 {
            tracing::warn!(
                increase,
                failure_mode_allowed = failures.failure_mode_allowed,
                "global rate limiter failing open"
            );
            self.status.lock().ratelimit_errors_reported += increase;
            self.emit(Metric::RateLimiterErrors, increase as f64).await;
        }
    }

    async fn emit(&self, metric: Metric, value: f64) {
        emit_to(&self.metrics, metric, value).await
    }
}

/// One datum, bounded by [`METRICS_TIMEOUT`]; a failure is logged and never an error.
async fn emit_to<M: MetricsSink>(metrics: &M, metric: Metric, value: f64) {
    match tokio::time::timeout(METRICS_TIMEOUT, metrics.emit(&[(metric, value)])).await {
        Ok(Ok(())) => tracing::debug!(metric = metric.name(), value, "metric emitted"),
        Ok(Err(e)) => tracing::warn!(metric = metric.name(), error = %e, "metric not emitted"),
        Err(_) => tracing::warn!(
            metric = metric.name(),
            "metric not emitted: CloudWatch timed out"
        ),
    }
}
