//! `gatewayctl resume`: the live bundle accepted as the reconciler's own (clears drift).

use super::common::LiveConfigArgs;
use super::live::{op_failed, print_json, state_clients};
use super::terminal::one_line;
use super::{block_on, CmdResult};
use gateway_control::operator;
use serde_json::json;

/// Accept the live bundle as the reconciler's own: clears drift; the next run publishes the registry again
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub live: LiveConfigArgs,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let c = state_clients(&args.live.target, false).await?;
        let state = operator::resume(&c.state, &c.store)
            .await
            .map_err(op_failed)?;
        if args.live.json() {
            return print_json(&json!({"version_id": state.version_id, "hash": state.hash}));
        }
        println!(
            "accepted version {} ({}) as the reconciler's; the next run publishes the registry's render if it differs",
            one_line(&state.version_id),
            one_line(&state.hash)
        );
        Ok(())
    })
}
