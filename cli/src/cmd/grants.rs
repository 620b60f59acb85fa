//! `gatewayctl grants`: every grant, as a table or one JSON document.

use super::common::{JsonArg, TableArg};
use super::tenancy::open;
use super::{block_on, CmdError, CmdResult};

/// List the grants
#[derive(clap::Args, Debug)]
#[command(mut_arg("json", |a| a.help("One JSON document instead of a table")))]
pub struct Args {
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub table: TableArg,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let registry = open(&args.table).await;
        let grants = registry
            .grants()
            .await
            .map_err(|e| CmdError::failed(e.to_string()))?;
        if args.json.json {
            let doc = serde_json::json!({ "grants": grants });
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).map_err(|e| CmdError::failed(e.to_string()))?
            );
            return Ok(());
        }
        let team_w = grants
            .iter()
            .map(|g| g.team.len())
            .max()
            .unwrap_or(0)
            .max(4);
        println!("{:<team_w$}  {:<12}  GRANTED BY", "TEAM", "ACCOUNT");
        for g in &grants {
            println!("{:<team_w$}  {:<12}  {}", g.team, g.account, g.granted_by);
        }
        Ok(())
    })
}
