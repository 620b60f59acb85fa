//! What the commands on the live config share (`seed`, `reconcile`, `preview`, `status`,
//! `history`, `diff`, `kill-switch`, `restore`, `resume`): clients for the table and bucket, the
//! reconcile configuration, error hints, JSON and time output. Thin over
//! `gateway_control::{reconcile, operator}`.

use super::common::{ConfigLocation, EnvoyArg, PolicyArgs};
use super::{CmdError, CmdResult};
use gateway_adapters::aws::{caller_identity, dynamodb_client, sdk_config};
use gateway_adapters::metrics::CloudWatchMetrics;
use gateway_adapters::registry::{DynamoRegistry, RegistryReader, StateRow};
use gateway_adapters::store::{s3_client, S3Store};
use gateway_control::operator::OperatorError;
use gateway_control::reconcile::ReconcileConfig;
use gateway_render::Policy;
use gateway_validator::{EnvoyOptions, ValidateOptions};
use serde_json::Value;

pub struct Clients {
    pub registry: DynamoRegistry,
    pub store: S3Store,
    pub metrics: CloudWatchMetrics,
}

/// What the read-only commands use: the registry without a policy and no way to write.
pub struct Readers {
    pub registry: RegistryReader,
    pub store: S3Store,
}

pub async fn readers(target: &ConfigLocation) -> Result<Readers, CmdError> {
    let bucket = target.bucket.get()?.to_string();
    let conf = sdk_config().await;
    Ok(Readers {
        registry: RegistryReader::new(dynamodb_client(&conf), target.table.get()?),
        store: store(&conf, bucket, false).await,
    })
}

/// What `restore` and `resume` use: the reconciler's state row (no policy, no entries) and the
/// bucket; `writes` as for [`clients`].
pub struct StateClients {
    pub state: StateRow,
    pub store: S3Store,
}

pub async fn state_clients(
    target: &ConfigLocation,
    writes: bool,
) -> Result<StateClients, CmdError> {
    let bucket = target.bucket.get()?.to_string();
    let conf = sdk_config().await;
    Ok(StateClients {
        state: StateRow::new(dynamodb_client(&conf), target.table.get()?),
        store: store(&conf, bucket, writes).await,
    })
}

/// Clients for `target`. Commands that write a bundle version (`writes`) look up the caller's
/// principal once, so the version records who wrote it.
pub async fn clients(
    target: &ConfigLocation,
    policy: Policy,
    writes: bool,
) -> Result<Clients, CmdError> {
    let bucket = target.bucket.get()?.to_string();
    let conf = sdk_config().await;
    let base_domain = policy.base_domain.clone();
    Ok(Clients {
        registry: DynamoRegistry::new(
            dynamodb_client(&conf),
            target.table.get()?,
            base_domain,
        )
        .with_policy(policy),
        store: store(&conf, bucket, writes).await,
        metrics: CloudWatchMetrics::from_conf(&conf),
    })
}

pub async fn store(conf: &aws_config::SdkConfig, bucket: String, writes: bool) -> S3Store {
    // A bad GATEWAY_MAX_BUNDLE_BYTES is refused by the commands that render; reading, the
    // default bound applies.
    let max = gateway_adapters::settings::bounds()
        .map(|b| b.max_bundle_bytes)
        .unwrap_or(gateway_render::bounds::DEFAULT_MAX_BUNDLE_BYTES);
    // Every command signs with, or judges versions against, GATEWAY_SIGNING_KEY.
    let store = S3Store::new(s3_client(conf), bucket)
        .with_max_bundle_bytes(max)
        .with_signer(gateway_adapters::signing::KmsSigner::from_settings(conf));
    if writes {
        store.with_identity(caller_identity(conf).await)
    } else {
        store
    }
}

/// The flags of the commands that run the reconcile function's code against the live config
/// (`seed`, `reconcile`, `preview`): where it is, the base domain, loopback backends, Envoy.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: ConfigLocation,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub envoy: EnvoyArg,
}

impl RunArgs {
    /// The policy these flags ask for and the reconcile configuration built on it.
    pub fn config(&self) -> Result<(Policy, ReconcileConfig), CmdError> {
        let policy = self.policy.policy()?;
        let cfg = reconcile_config(&policy.base_domain, policy.clone(), &self.envoy)?;
        Ok((policy, cfg))
    }

    /// The reconcile configuration, then clients for the live config it runs against (`writes`:
    /// see [`clients`]).
    pub async fn open(&self, writes: bool) -> Result<(Clients, ReconcileConfig), CmdError> {
        let (policy, cfg) = self.config()?;
        Ok((clients(&self.target, policy, writes).await?, cfg))
    }
}

fn reconcile_config(
    domain: &str,
    policy: Policy,
    envoy: &EnvoyArg,
) -> Result<ReconcileConfig, CmdError> {
    let bounds =
        gateway_adapters::settings::bounds().map_err(|e| CmdError::usage(e.to_string()))?;
    Ok(ReconcileConfig {
        render: gateway_adapters::settings::render_config(domain)
            .map_err(|e| CmdError::usage(e.to_string()))?,
        policy,
        validate: ValidateOptions {
            envoy: EnvoyOptions::new(envoy.bin()),
            skip_envoy: false,
        },
        backends: Default::default(),
        bounds,
        quarantine: gateway_control::reconcile::QuarantineLimits::from_env()
            .map_err(|e| CmdError::usage(e.to_string()))?,
        build: gateway_control::reconcile::BuildIdentity::running(),
        rollout: gateway_control::reconcile::RolloutSettings::from_env().map_err(CmdError::usage)?,
    })
}

pub fn op_failed(err: OperatorError) -> CmdError {
    let hint = match &err {
        OperatorError::Store(gateway_adapters::store::StoreError::NotFound(_)) => {
            "\nlist the versions with `gatewayctl history`"
        }
        OperatorError::BadBundle { .. } => {
            "\nthe sidecars would refuse it too; pick another version (`gatewayctl history`)"
        }
        _ => "",
    };
    CmdError::failed(format!("{err}{hint}"))
}

pub fn print_json(doc: &Value) -> CmdResult {
    println!(
        "{}",
        serde_json::to_string_pretty(doc).map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?
    );
    Ok(())
}

pub fn when(epoch: Option<i64>) -> String {
    epoch
        .map(super::time::format_utc)
        .unwrap_or_else(|| "-".into())
}
