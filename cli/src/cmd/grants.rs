//! `gatewayctl grants`: every grant, as a table or one JSON document.

use super::common::ListingArgs;
use super::live::print_json;
use super::terminal::one_line;
use super::tenancy::open;
use super::{block_on, CmdError, CmdResult};

/// List the grants
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub listing: ListingArgs,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let registry = open(&args.listing.table).await?;
        let grants = registry
            .grants()
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
        if args.listing.json.json {
            return print_json(&serde_json::json!({ "grants": grants }));
        }
        let team_w = grants
            .iter()
            .map(|g| one_line(&g.team).len())
            .max()
            .unwrap_or(0)
            .max(4);
        println!("{:<team_w$}  {:<12}  GRANTED BY", "TEAM", "ACCOUNT");
        for g in &grants {
            println!(
                "{:<team_w$}  {:<12}  {}",
                one_line(&g.team),
                one_line(&g.account),
                one_line(&g.granted_by)
            );
        }
        Ok(())
    })
}
