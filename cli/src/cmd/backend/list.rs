//! `gatewayctl backend list`: every backend claim, as a table or one JSON document.

use super::{names, open};
use crate::cmd::common::ListingArgs;
use crate::cmd::live::print_json;
use crate::cmd::{block_on, CmdError, CmdResult};

/// List the backend claims: which team holds each backend, which services use it, whom it is
/// shared with
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub listing: ListingArgs,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let claims = open(&args.listing.table)
            .await?
            .claims()
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
        if args.listing.json.json {
            return print_json(&serde_json::json!({ "backends": claims }));
        }
        let width = |f: &dyn Fn(&gateway_adapters::registry::BackendClaim) -> usize, min| {
            claims.iter().map(f).max().unwrap_or(0).max(min)
        };
        let auth_w = width(&|c| c.authority.len(), 7);
        let team_w = width(&|c| c.team.len(), 4);
        let users_w = width(&|c| names(&c.users).len(), 5);
        println!(
            "{:<auth_w$}  {:<team_w$}  {:<users_w$}  SHARED WITH",
            "BACKEND", "TEAM", "USERS"
        );
        for c in &claims {
            println!(
                "{:<auth_w$}  {:<team_w$}  {:<users_w$}  {}",
                c.authority,
                c.team,
                names(&c.users),
                names(&c.shared_with)
            );
        }
        Ok(())
    })
}
