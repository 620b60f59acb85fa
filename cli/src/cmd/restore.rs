//! `gatewayctl restore [VERSION]`: an earlier bundle version made live again.

use super::common::LiveConfigArgs;
use super::live::{op_failed, print_json, state_clients};
use super::terminal::one_line;
use super::{block_on, CmdResult};
use gateway_control::operator;
use serde_json::json;

/// Make an earlier bundle version live again (default: the reconciler's last good publish)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The version to restore (see `gatewayctl history`)
    #[arg(value_name = "VERSION")]
    pub version_id: Option<String>,
    #[command(flatten)]
    pub live: LiveConfigArgs,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let c = state_clients(&args.live.target, true).await?;
        let restored = operator::restore(&c.state, &c.store, args.version_id.as_deref())
            .await
            .map_err(op_failed)?;
        if args.live.json() {
            return print_json(&json!({
                "version_id": restored.version_id,
                "hash": restored.hash,
                "resigned": restored.resigned,
            }));
        }
        let how = if restored.resigned {
            "published again as format 2, signed with this gateway's key (the version was unsigned, format 1, or signed by another key)"
        } else {
            "copied with its signature"
        };
        println!(
            "restored {} as version {} ({how}); the sidecars deliver it within one poll",
            one_line(&restored.hash),
            one_line(&restored.version_id)
        );
        Ok(())
    })
}
