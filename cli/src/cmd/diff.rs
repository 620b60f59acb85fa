//! `gatewayctl diff [FROM [TO]]`: what changed between two bundle versions.

use super::common::LiveConfigArgs;
use super::live::{op_failed, print_json, readers};
use super::terminal::one_line;
use super::{block_on, CmdError, CmdResult};
use gateway_control::operator::{diff_bundles, load_bundle};
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
    pub live: LiveConfigArgs,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let c = readers(&args.live.target).await?;
        let last_publish = async {
            let state = c.registry.read_state().await;
            state.map(|s| s.map(|s| s.version_id))
        };
        let from = version_or(
            args.from,
            last_publish,
            "the reconciler has recorded no publish yet; name two versions",
        )
        .await?;
        let live = async { c.store.head_live().await.map(|l| l.map(|l| l.version_id)) };
        let to = version_or(args.to, live, "there is no live bundle.json").await?;
        let a = load_bundle(&c.store, &from).await.map_err(op_failed)?;
        let b = load_bundle(&c.store, &to).await.map_err(op_failed)?;
        let d = diff_bundles(&a, &b);
        if args.live.json() {
            let mut doc = d.to_json();
            doc["from_version"] = json!(from);
            doc["to_version"] = json!(to);
            return print_json(&doc);
        }
        println!(
            "{} ({}) -> {} ({})",
            one_line(&from),
            one_line(&d.from_hash),
            one_line(&to),
            one_line(&d.to_hash)
        );
        if d.changes.is_empty() {
            if d.from_hash == d.to_hash {
                println!("no changes");
            } else {
                println!("no entry changes (the rendered files differ: a kill-switch bundle or a renderer change)");
            }
        }
        for change in &d.changes {
            println!("{}", one_line(&change.to_string()));
        }
        Ok(())
    })
}

/// `given`, else the version `lookup` finds (read only when needed); `none` says why there is
/// none.
async fn version_or<E: std::error::Error>(
    given: Option<String>,
    lookup: impl std::future::Future<Output = Result<Option<String>, E>>,
    none: &str,
) -> Result<String, CmdError> {
    if let Some(version) = given {
        return Ok(version);
    }
    lookup
        .await
        .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?
        .ok_or_else(|| CmdError::failed(none))
}
