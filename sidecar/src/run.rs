//! The two ways the sidecar runs: a loop until SIGTERM/SIGINT, or `--once`.

use crate::admin::EnvoyAdmin;
use crate::args::{Config, Mode};
use crate::deliver::{EnvoyTarget, Target};
use crate::error::SidecarError;
use crate::health;
use crate::poll::{PollOutcome, Sidecar};
use crate::source::BundleSource;
use crate::state::{SharedStatus, Status};
use crate::traffic::TrafficSink;
use gateway_adapters::metrics::{CloudWatchMetrics, MetricsSink};
use gateway_adapters::registry::ProxyTable;
use gateway_adapters::signing::{kms_client, KmsSigner};
use gateway_adapters::store::s3_client;
use gateway_render::bundle::{Trust, TrustedKey};
use gateway_render::check::Policy;
use std::future::Future;
use std::path::Path;

/// The keys `config` trusts: each `--trust-key` file, and each `--trust-kms-key`'s public key
/// fetched from KMS (a key that cannot be read stops the start, named).
pub async fn trust(config: &Config, sdk: &aws_config::SdkConfig) -> Result<Trust, SidecarError> {
    let mut keys = Vec::new();
    for path in &config.trust_keys {
        let pem = std::fs::read_to_string(path)
            .map_err(|e| SidecarError::file(path, "reading the trusted key", e))?;
        keys.push(
            TrustedKey::from_pem(path.display().to_string(), &pem)
                .map_err(|e| SidecarError::Usage(format!("--trust-key {e}")))?,
        );
    }
    for key in &config.trust_kms_keys {
        let signer = KmsSigner::new(kms_client(sdk), key.clone());
        keys.push(
            signer
                .public_key()
                .await
                .map_err(|e| SidecarError::Usage(format!("--trust-kms-key: {e}")))?,
        );
    }
    for key in &keys {
        tracing::info!(key = %key.name, fingerprint = %key.fingerprint, "trusting bundles signed by");
    }
    if config.allow_unsigned {
        tracing::warn!("unsigned bundles are allowed (--allow-unsigned)");
    }
    Ok(Trust {
        keys,
        allow_unsigned: config.allow_unsigned,
    })
}

/// The delivery policy of `config` (docs/design.md#delivery-policy).
pub fn delivery_policy(config: &Config) -> Policy {
    let mut policy = Policy::new("", config.allow_loopback_backends);
    policy.backend_cidrs = config.backend_cidrs.clone();
    policy
}

/// The sidecar for `config`, on the AWS clients of `sdk`, delivering what `trust` verifies.
pub fn build(
    config: &Config,
    sdk: &aws_config::SdkConfig,
    trust: Trust,
) -> Result<Sidecar<CloudWatchMetrics>, SidecarError> {
    let source = BundleSource::new(
        s3_client(sdk),
        config.bucket.clone(),
        trust,
        delivery_policy(config),
    )
    .with_max_bytes(config.max_bundle_bytes);
    let (target, mode) = match &config.mode {
        Mode::Envoy {
            clusters_dir,
            routes_dir,
            admin,
        } => {
            let admin = EnvoyAdmin::new(admin)?;
            if let Err(e) = admin.prepare_socket_dir() {
                // Envoy may still manage (the directory may already be writable for it).
                tracing::warn!(error = %e, "could not prepare Envoy's admin socket directory");
            }
            let envoy = EnvoyTarget {
                clusters_dir: clusters_dir.clone(),
                routes_dir: routes_dir.clone(),
                admin,
                apply_timeout: config.apply_timeout,
            };
            envoy.prepare_jwt_dir()?;
            (Target::Envoy(envoy), "envoy")
        }
        Mode::RateLimit { dir, staging } => {
            let staging = match staging {
                Some(staging) => {
                    prepare_staging(dir, staging)?;
                    staging.clone()
                }
                None => dir.clone(),
            };
            (
                Target::RateLimit {
                    dir: dir.clone(),
                    staging,
                },
                "ratelimit",
            )
        }
    };
    let status = SharedStatus::new(Status {
        mode,
        bucket: config.bucket.clone(),
        ..Status::default()
    });
    Ok(Sidecar::new(
        source,
        target,
        config.state_file.clone(),
        status,
        CloudWatchMetrics::from_conf(sdk),
    ))
}

/// The registry table this proxy reports to, when `config` reports.
pub fn proxy_table(config: &Config, sdk: &aws_config::SdkConfig) -> Option<ProxyTable> {
    config.report.as_ref().map(|r| {
        ProxyTable::new(gateway_adapters::aws::dynamodb_client(sdk), r.table.clone())
    })
}

/// Polls every `config.interval` until `shutdown` resolves. A round in flight at shutdown is
/// abandoned: every file write is atomic, and every state between the steps of a delivery is
/// one Envoy can run (the next start resumes from the files). Plus (Envoy mode, given a sink) the request metrics in a task of their own, so a
/// slow CloudWatch never delays a delivery (docs/design.md#request-metrics); and, given the
/// table and `config.report`, the proxy reports in another (docs/design.md#proxy-reports).
pub async fn run_loop_with<M: MetricsSink + Clone + Send + Sync + 'static, T: TrafficSink + Send + 'static>(
    mut sidecar: Sidecar<M>,
    config: &Config,
    shutdown: impl Future<Output = ()>,
    traffic: Option<T>,
    reports: Option<ProxyTable>,
) -> Result<(), SidecarError> {
    let metrics_task = match (sidecar.target(), traffic) {
        (Target::Envoy(envoy), Some(sink)) => Some(tokio::spawn(crate::traffic::publish_loop(
            envoy.admin.client().clone(),
            sink,
            config.metrics_interval,
        ))),
        _ => None,
    };
    let report_task = config.report.clone().zip(reports).map(|(report, table)| {
        tracing::info!(proxy = %report.proxy_id, table = %report.table, "reporting what this proxy serves");
        tokio::spawn(crate::report::report_loop(table, sidecar.status().clone(), report))
    });
    let listener = health::bind(config.listen).await?;
    tracing::info!(listen = %config.listen, "health and status server listening");
    let server = tokio::spawn(health::serve(
        listener,
        sidecar.target().clone(),
        sidecar.status().clone(),
    ));
    {
        let mut status = sidecar.status().lock();
        status.started_at = crate::state::now();
        status.poll_interval = config.interval.as_secs();
    }
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            _ = sidecar.poll() => {}
        }
        tokio::select! {
            _ = &mut shutdown => break,
            _ = tokio::time::sleep(config.interval) => {}
        }
    }
    tracing::info!("shutting down");
    server.abort();
    if let Some(task) = metrics_task {
        task.abort();
    }
    if let Some(task) = report_task {
        task.abort();
    }
    Ok(())
}

/// `--once`: deliver the live bundle and wait for Envoy to apply it.
pub async fn run_once<M: MetricsSink + Clone + Send + Sync + 'static>(sidecar: Sidecar<M>) -> Result<PollOutcome, SidecarError> {
    let mut sidecar = sidecar.confirming();
    match sidecar.round().await? {
        PollOutcome::NoBundle => Err(SidecarError::NoBundle {
            bucket: sidecar.status().lock().bucket.clone(),
            object: gateway_render::contract::BUNDLE_OBJECT,
        }),
        outcome => Ok(outcome),
    }
}

/// SIGTERM (ECS stopping the task) or SIGINT.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM"),
                _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT"),
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; SIGINT only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Creates the rules directory and the staging directory when missing and makes sure a rename
/// from one into the other is atomic: both on one file system.
fn prepare_staging(dir: &Path, staging: &Path) -> Result<(), SidecarError> {
    use std::os::unix::fs::MetadataExt;
    let device = |path: &Path| {
        std::fs::create_dir_all(path)
            .and_then(|()| std::fs::metadata(path))
            .map(|m| m.dev())
            .map_err(|e| SidecarError::file(path, "preparing the directory", e))
    };
    if device(dir)? != device(staging)? {
        return Err(SidecarError::Usage(format!(
            "--staging-dir {} is on another file system than --ratelimit-dir {}: the rename into it would not be atomic",
            staging.display(),
            dir.display()
        )));
    }
    Ok(())
}
