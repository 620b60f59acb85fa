//! `gatewayctl backend unshare AUTHORITY TEAM`: a share withdrawn. The team's services already
//! using the backend keep it, like a revoked grant's entries, until they change their backend
//! or are deregistered.

use super::{authority, names, open};
use crate::cmd::common::TableArg;
use crate::cmd::{block_on, CmdError, CmdResult};

/// Stop sharing a backend with TEAM (its services using it now keep it until they move off it)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The backend: host:port, or its URL (https://host is host:443)
    #[arg(value_name = "AUTHORITY")]
    pub authority: String,
    /// The team it was shared with
    #[arg(value_name = "TEAM")]
    pub team: String,
    #[command(flatten)]
    pub table: TableArg,
}

pub fn run(args: Args) -> CmdResult {
    let authority = authority(&args.authority)?;
    block_on(async {
        let claims = open(&args.table).await?;
        let Some(claim) = claims
            .unshare(&authority, &args.team)
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?
        else {
            return Err(CmdError::failed(format!(
                "backend {authority} was not shared with team {}",
                args.team
            )));
        };
        println!(
            "backend {authority} (held by team {}) is no longer shared with team {}",
            claim.team, args.team
        );
        let prefix = format!("{}/", args.team);
        let still: Vec<&String> = claim
            .users
            .iter()
            .filter(|u| u.starts_with(&prefix))
            .collect();
        if !still.is_empty() {
            println!(
                "still using it until they change their backend or are deregistered: {}",
                names(still)
            );
        }
        Ok(())
    })
}
