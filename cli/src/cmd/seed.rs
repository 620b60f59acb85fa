//! `gatewayctl seed`: the first bundle, published with a conditional put.

use super::common::{ConfigLocation, DomainArg, EnvoyArg, LoopbackArg};
use super::live::{clients, reconcile_config};
use super::{block_on, CmdError, CmdResult};
use gateway_functions::reconcile;

/// Create the first bundle with a conditional put (never overwrites a published config)
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: ConfigLocation,
    #[command(flatten)]
    pub domain: DomainArg,
    #[command(flatten)]
    pub loopback: LoopbackArg,
    #[command(flatten)]
    pub envoy: EnvoyArg,
}

pub fn run(args: Args) -> CmdResult {
    let domain = args.domain.get()?.to_string();
    let policy = args.loopback.policy(&domain)?;
    let cfg = reconcile_config(&domain, policy.clone(), &args.envoy)?;
    block_on(async {
        let c = clients(&args.target, policy, true).await?;
        let outcome = reconcile::seed(&c.registry, &c.store, &cfg)
            .await
            .map_err(|e| CmdError::failed(e.to_string()))?;
        println!("{outcome}");
        Ok(())
    })
}
