//! `gatewayctl deregister TEAM/SERVICE`: an entry removed and its guards released.

use super::common::{DomainArg, TableArg};
use super::registry::{failed, is_id, open};
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::registry::DeregisterOutcome;
use gateway_render::Policy;

/// Remove an entry and release its guards
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The entry's id
    #[arg(value_name = "TEAM/SERVICE")]
    pub id: String,
    /// Exit 0 when the entry is not registered (default: exit 1, so a typo is not a success)
    #[arg(long)]
    pub missing_ok: bool,
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub domain: DomainArg,
}

pub fn run(args: Args) -> CmdResult {
    if !is_id(&args.id) {
        return Err(CmdError::usage(format!(
            "{:?} is not a TEAM/SERVICE id",
            args.id
        )));
    }
    block_on(async {
        let registry = open(&args.table, Policy::new(args.domain.get()?, false)).await?;
        match registry.deregister(&args.id).await.map_err(failed)? {
            DeregisterOutcome::Deleted => println!("deleted {}", args.id),
            DeregisterOutcome::NotFound if args.missing_ok => {
                println!("{} was not registered", args.id)
            }
            DeregisterOutcome::NotFound => {
                return Err(CmdError::failed(format!("{} is not registered", args.id)))
            }
        }
        Ok(())
    })
}
