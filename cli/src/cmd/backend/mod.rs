//! `gatewayctl backend share|unshare|list|migrate`: which team holds a backend authority and
//! which other teams may use it (docs/design.md#ownership-and-conflicts). Operators only: like
//! grants, these commands write the registry table with the gateway account's own credentials;
//! the register function only claims and releases.

mod list;
mod migrate;
mod share;
mod unshare;

use super::common::TableArg;
use super::{CmdError, CmdResult};
use gateway_adapters::aws::{dynamodb_client, sdk_config};
use gateway_adapters::registry::{parse_authority, BackendClaims};

/// Backends belong to the team that first registered them: share one with another team, list
/// the claims, or claim the backends of entries registered before claims
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    Share(share::Args),
    Unshare(unshare::Args),
    List(list::Args),
    Migrate(migrate::Args),
}

pub fn run(args: Args) -> CmdResult {
    match args.command {
        Command::Share(args) => share::run(args),
        Command::Unshare(args) => unshare::run(args),
        Command::List(args) => list::run(args),
        Command::Migrate(args) => migrate::run(args),
    }
}

/// The backend claims in the table: no base domain, no policy (neither involves them).
async fn open(table: &TableArg) -> Result<BackendClaims, CmdError> {
    let name = table.get()?;
    Ok(BackendClaims::new(dynamodb_client(&sdk_config().await), name))
}

/// AUTHORITY as the table keys it, or a usage error saying how to write it.
fn authority(arg: &str) -> Result<String, CmdError> {
    parse_authority(arg).map_err(|why| CmdError::usage(format!("backend {why}")))
}

/// `a, b` for a set of names, `-` for none.
fn names<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    let joined: Vec<&str> = items.into_iter().map(String::as_str).collect();
    if joined.is_empty() {
        "-".to_string()
    } else {
        joined.join(", ")
    }
}
