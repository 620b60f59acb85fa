//! `gatewayctl preview ENTRY.json`: what the next reconcile would publish with one candidate
//! entry in place. Writes nothing.

use super::common::JsonArg;
use super::live::{clients, print_json, RunArgs};
use super::terminal::{lines, one_line};
use super::{block_on, CmdError, CmdResult};
use gateway_control::operator::diff_bundles;
use gateway_control::reconcile;
use serde_json::json;

/// What the next reconcile would publish with ENTRY.json in place: checks, conflicts, render,
/// all validation layers with the pinned Envoy, the would-be hash and the per-route diff against
/// the live bundle. Writes nothing
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The candidate entry (JSON), or `-` for stdin
    #[arg(value_name = "ENTRY.json")]
    pub entry: std::path::PathBuf,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub json: JsonArg,
}

/// `gatewayctl preview` (docs/design.md#preview). Exit 1 when the candidate would be
/// quarantined or the run would reject.
pub fn run(args: Args) -> CmdResult {
    let (policy, cfg) = args.run.config()?;
    // The file must parse as an entry; its rule problems are the preview's verdict below.
    let (name, bytes) = super::check::read_input(&args.entry)?;
    let candidate: gateway_render::Entry = serde_json::from_slice(&bytes)
        .map_err(|e| CmdError::failed(format!("{name}: not an entry: {e}")))?;
    block_on(async {
        let c = clients(&args.run.target, policy, false).await?;
        let p = reconcile::preview(&c.registry, &c.store, &cfg, &candidate)
            .await
            .map_err(|e| CmdError::failed(format!("failed: {}", gateway_adapters::error_chain(&e))))?;
        let id = candidate.id();
        let verdict = p.report.quarantined.iter().find(|q| q.id == id);
        let hash = match (&p.report.outcome, &p.would_publish) {
            (_, Some(b)) => Some(b.hash.clone()),
            (reconcile::Outcome::Unchanged { hash }, None) => Some(hash.clone()),
            _ => None,
        };
        let diff = match (&p.live, &p.would_publish) {
            (Some(live), Some(next)) => Some(diff_bundles(live, next)),
            _ => None,
        };
        if args.json.json {
            print_json(&json!({
                "entry": id,
                "outcome": p.report.outcome.to_json(),
                "candidate": match verdict {
                    Some(q) => q.to_json(),
                    None => json!({"id": id, "state": "would publish"}),
                },
                "quarantined": p.report.quarantined.iter().map(|q| q.to_json()).collect::<Vec<_>>(),
                "hash": hash,
                "validations": p.report.validations,
                "diff": diff.as_ref().map(|d| d.to_json()),
            }))?;
        } else {
            match verdict {
                Some(q) => println!(
                    "{id}: would be QUARANTINED at {} ({}): {}",
                    q.stage,
                    if q.kept == reconcile::Kept::Previous {
                        "its live version stays"
                    } else {
                        "left out"
                    },
                    lines(&q.reason)
                ),
                None => println!("{id}: would publish"),
            }
            println!("run:  {}", p.report.outcome);
            for q in p.report.quarantined.iter().filter(|q| q.id != id) {
                println!("also quarantined: {} ({})", one_line(&q.id), q.stage);
            }
            match &hash {
                Some(h) => println!("hash: {h}"),
                None => println!("hash: none (nothing would be published)"),
            }
            if let Some(d) = &diff {
                for change in &d.changes {
                    println!("{}", one_line(&change.to_string()));
                }
            }
        }
        if verdict.is_some() {
            return Err(CmdError::failed(format!("{id} would be quarantined")));
        }
        match p.report.outcome {
            reconcile::Outcome::Rejected { reason, .. } => Err(CmdError::failed(reason)),
            _ => Ok(()),
        }
    })
}
