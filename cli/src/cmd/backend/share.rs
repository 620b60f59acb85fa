//! `gatewayctl backend share AUTHORITY TEAM [--holder TEAM]`: another team's services may use a
//! backend (a shared platform service).

use super::{authority, open};
use crate::cmd::common::TableArg;
use crate::cmd::{block_on, CmdError, CmdResult};

/// Let TEAM's services use a backend another team holds (a shared platform service)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The backend: host:port, or its URL (https://host is host:443)
    #[arg(value_name = "AUTHORITY")]
    pub authority: String,
    /// The team that may use it too
    #[arg(value_name = "TEAM")]
    pub team: String,
    /// Claim it for this team first, when no team holds it or none uses it (how operators
    /// resolve a conflict `backend migrate` reported)
    #[arg(long, value_name = "HOLDER")]
    pub holder: Option<String>,
    #[command(flatten)]
    pub table: TableArg,
}

pub fn run(args: Args) -> CmdResult {
    let authority = authority(&args.authority)?;
    block_on(async {
        let claims = open(&args.table).await?;
        let shared = claims
            .share(&authority, &args.team, args.holder.as_deref())
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
        println!(
            "backend {} (held by team {}) {} team {}",
            shared.authority,
            shared.holder,
            if shared.already {
                "was already shared with"
            } else {
                "is shared with"
            },
            shared.team
        );
        Ok(())
    })
}
