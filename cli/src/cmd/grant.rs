//! `gatewayctl grant TEAM --account ID`: an AWS account may register, change and delete the
//! team's entries (through its registration topic). `revoke` takes the same arguments.

use super::common::TableArg;
use super::tenancy::{check_account, open};
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::aws::sdk_config;

/// Let an AWS account register, change and delete TEAM's entries (through its registration topic)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The team
    #[arg(value_name = "TEAM")]
    pub team: String,
    /// The 12-digit AWS account id
    #[arg(long, value_name = "ACCOUNT_ID")]
    pub account: String,
    #[command(flatten)]
    pub table: TableArg,
}

pub fn run(args: Args) -> CmdResult {
    check_account(&args.account)?;
    block_on(async {
        let conf = sdk_config().await;
        let by = gateway_adapters::aws::caller_identity(&conf).await;
        let registry = open(&args.table).await?;
        let new = registry
            .grant(&args.team, &args.account, &by)
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
        println!(
            "{} team {} to account {}",
            if new { "granted" } else { "already granted" },
            args.team,
            args.account
        );
        Ok(())
    })
}
