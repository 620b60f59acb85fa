//! `gatewayctl reconcile`: one reconcile run, the Lambda's code, from a terminal.

use super::common::JsonArg;
use super::live::{print_json, RunArgs};
use super::{block_on, CmdError, CmdResult};
use gateway_functions::reconcile;

/// One reconcile run, the same code as the Lambda; prints what it decided in one line
///
/// Exit 0 when it published, found nothing to do, kept the live config or held on drift (the
/// line says which); 1 when the render was rejected or the run failed.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub json: JsonArg,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let (c, cfg) = args.run.open(true).await?;
        let outcome = reconcile::reconcile(&c.registry, &c.store, &c.metrics, &cfg)
            .await
            .map_err(|e| CmdError::failed(format!("failed: {e}")))?;
        if args.json.json {
            print_json(&outcome.to_json())?;
        } else {
            println!("{outcome}");
        }
        match outcome {
            reconcile::Outcome::Rejected { reason, .. } => Err(CmdError::failed(reason)),
            _ => Ok(()),
        }
    })
}
