//! The reconcile Lambda: clients built once, then every event (a stream batch, a schedule tick
//! or a direct invocation, typed as a `ReconcileEvent`) runs one reconcile, or the seed.

use gateway_adapters::metrics::CloudWatchMetrics;
use gateway_adapters::registry::DynamoRegistry;
use gateway_adapters::store::{s3_client, S3Store};
use gateway_adapters::{aws, settings};
use gateway_control::reconcile::{BuildIdentity, QuarantineLimits, ReconcileConfig};
use gateway_functions::reconcile::{handle, ReconcileEvent};
use gateway_validator::{lookup_envoy, EnvoyOptions, ValidateOptions};
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() {
    gateway_functions::lambda_main("reconcile", run()).await
}

async fn run() -> Result<(), Error> {
    let table = settings::table()?;
    let bucket = settings::bucket()?;
    let domain = settings::domain()?;
    let conf = aws::sdk_config().await;
    let policy = settings::policy(&domain)?;
    let bounds = settings::bounds()?;
    let registry = DynamoRegistry::new(aws::dynamodb_client(&conf), table, domain.clone())
        .with_policy(policy.clone())
        .with_bounds(bounds);
    let store = S3Store::new(s3_client(&conf), bucket)
        .with_signer(gateway_adapters::signing::KmsSigner::from_settings(&conf))
        .with_identity(aws::caller_identity(&conf).await)
        .with_max_bundle_bytes(bounds.max_bundle_bytes);
    let metrics = CloudWatchMetrics::from_conf(&conf);
    let cfg = ReconcileConfig {
        render: settings::render_config(&domain)?,
        policy,
        validate: ValidateOptions {
            // `ENVOY_BIN`, default `envoy` on PATH.
            envoy: EnvoyOptions::new(lookup_envoy(None, None).path()),
            skip_envoy: false,
        },
        // One lookup for the container's life: warm runs reuse its answers.
        backends: gateway_adapters::resolve::BackendLookup::default()
            .with_caching(settings::resolve_caching()?),
        bounds,
        quarantine: QuarantineLimits::from_env()?,
        // Hashed here, at the cold start, rather than in the first run.
        build: BuildIdentity::running(),
        rollout: gateway_control::reconcile::RolloutSettings::from_env().map_err(Error::from)?,
    };
    let (registry, store, metrics, cfg) = (&registry, &store, &metrics, &cfg);
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<ReconcileEvent>| async move {
            handle(event.payload, registry, store, metrics, cfg)
                .await
                .map_err(|e| gateway_functions::diagnostic("Reconcile", e.kind(), &e))
        },
    ))
    .await
}
