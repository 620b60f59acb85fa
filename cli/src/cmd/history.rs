//! `gatewayctl history`: recent bundle versions, newest first.

use super::common::LiveConfigArgs;
use super::live::{op_failed, print_json, readers, when};
use super::terminal::one_line;
use super::{block_on, CmdResult};
use gateway_control::operator;
use serde_json::Value;

/// Recent bundle versions, newest first, and which was the reconciler's
#[derive(clap::Args, Debug)]
pub struct Args {
    /// How many versions
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    #[command(flatten)]
    pub live: LiveConfigArgs,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let c = readers(&args.live.target).await?;
        let items = operator::history(&c.registry, &c.store, args.limit)
            .await
            .map_err(op_failed)?;
        if args.live.json() {
            return print_json(&Value::Array(items.iter().map(|i| i.to_json()).collect()));
        }
        println!(
            "{:<34}  {:<20}  {:<12}  {:>6}  {:<19}  NOTE",
            "VERSION", "WRITTEN (UTC)", "BY", "ROUTES", "HASH"
        );
        for i in &items {
            let mut notes = Vec::new();
            if i.is_live {
                notes.push("live");
            }
            if i.is_reconcilers_last {
                notes.push("reconciler's last publish");
            }
            if i.deleted {
                notes.push("delete marker");
            }
            if let Some(signature) = &i.signature {
                notes.push(signature);
            }
            let hash = i
                .hash
                .as_deref()
                .map(|h| one_line(h).chars().take(19).collect::<String>())
                .unwrap_or_else(|| "-".into());
            println!(
                "{:<34}  {:<20}  {:<12}  {:>6}  {:<19}  {}",
                one_line(&i.version_id),
                when(i.last_modified),
                i.writer.as_str(),
                i.routes
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".into()),
                hash,
                notes.join(", ")
            );
        }
        Ok(())
    })
}
