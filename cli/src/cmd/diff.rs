//! `gatewayctl diff [FROM [TO]]`: what changed between two bundle versions.

use super::common::{ConfigLocation, JsonArg};
use super::live::{op_failed, print_json, readers};
use super::{block_on, CmdError, CmdResult};
use gateway_functions::operator::{diff_bundles, load_bundle};
use gateway_adapters::store::ConfigStore;
use serde_json::json;

/// What changed between two bundle versions, per team and route
///
/// With no versions: the reconciler's last publish → the live bundle. With one: that version →
/// the live bundle.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// From this version (default: the reconciler's last publish)
    pub from: Option<String>,
    /// To this version (default: the live bundle)
    pub to: Option<String>,
    #[command(flatten)]
    pub target: ConfigLocation,
    #[command(flatten)]
    pub json: JsonArg,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let c = readers(&args.target).await?;
        let from = match args.from {
            Some(v) => v,
            None => c.registry.read_state()
                .await
                .map_err(|e| CmdError::failed(e.to_string()))?
                .map(|s| s.version_id)
                .ok_or_else(|| {
                    CmdError::failed(
                        "the reconciler has recorded no publish yet; name two versions",
                    )
                })?,
        };
        let to = match args.to {
            Some(v) => v,
            None => c
                .store
                .head_live()
                .await
                .map_err(|e| CmdError::failed(e.to_string()))?
                .map(|l| l.version_id)
                .ok_or_else(|| CmdError::failed("there is no live bundle.json"))?,
        };
        let a = load_bundle(&c.store, &from).await.map_err(op_failed)?;
        let b = load_bundle(&c.store, &to).await.map_err(op_failed)?;
        let d = diff_bundles(&a, &b);
        if args.json.json {
            let mut doc = d.to_json();
            doc["from_version"] = json!(from);
            doc["to_version"] = json!(to);
            return print_json(&doc);
        }
        println!("{from} ({}) -> {to} ({})", d.from_hash, d.to_hash);
        if d.changes.is_empty() {
            if d.from_hash == d.to_hash {
                println!("no changes");
            } else {
                println!("no entry changes (the rendered files differ: a kill-switch bundle or a renderer change)");
            }
        }
        for change in &d.changes {
            println!("{change}");
        }
        Ok(())
    })
}
