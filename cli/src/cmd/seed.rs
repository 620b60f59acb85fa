//! `gatewayctl seed`: the first bundle, published with a conditional put.

use super::live::RunArgs;
use super::{block_on, CmdError, CmdResult};
use gateway_control::reconcile;

/// Create the first bundle with a conditional put (never overwrites a published config)
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let (c, cfg) = args.run.open(true).await?;
        let outcome = reconcile::seed(&c.registry, &c.store, &cfg)
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
        println!("{outcome}");
        Ok(())
    })
}
