//! `gatewayctl reconcile`: one reconcile run, the Lambda's code, from a terminal.

use super::common::JsonArg;
use super::live::{print_json, RunArgs};
use super::{block_on, CmdError, CmdResult};
use gateway_control::reconcile;

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
        let report = reconcile::reconcile_report(&c.registry, &c.store, &c.metrics, &cfg)
            .await
            .map_err(|e| CmdError::failed(format!("failed: {}", gateway_adapters::error_chain(&e))))?;
        // The decision stands either way; a CloudWatch outage is said, not swallowed.
        for why in &report.metrics_errors {
            eprintln!("warning: the run's metrics were not emitted: {}", super::terminal::lines(why));
        }
        let outcome = report.outcome;
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
