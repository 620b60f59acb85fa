//! `gatewayctl dump DIR [--team TEAM]…`: the operators' entries as entry files, the directory
//! `sync` takes back.

use super::common::TableArg;
use super::registry::failed;
use super::terminal::one_line;
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::aws::{dynamodb_client, sdk_config};
use gateway_adapters::registry::{Owner, RegistryReader};
use std::path::PathBuf;

/// Write the operators' entries to DIR, one `TEAM_SERVICE.json` each
///
/// Each file is the entry as registered (canonical, pretty JSON), so `gatewayctl sync DIR`
/// right after changes nothing. Entries a stack owns are listed and left out (their stack is
/// their desired state). DIR is created if missing and must hold no `*.json` file yet, so a
/// stale file can never become desired state.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The directory to write
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Only these teams' entries (repeatable; default: every team)
    #[arg(long = "team", value_name = "TEAM")]
    pub teams: Vec<String>,
    #[command(flatten)]
    pub table: TableArg,
}

pub fn run(args: Args) -> CmdResult {
    let shown = args.dir.display().to_string();
    if args.dir.exists() {
        let existing = super::desired::entry_files(&args.dir)?;
        if !existing.is_empty() {
            return Err(CmdError::failed(format!(
                "{shown} already holds {} *.json files; dump into an empty or new directory",
                existing.len()
            )));
        }
    } else {
        std::fs::create_dir_all(&args.dir)
            .map_err(|e| CmdError::failed(format!("{shown}: cannot create: {e}")))?;
    }
    block_on(async {
        let table = args.table.get()?;
        let reader = RegistryReader::new(dynamodb_client(&sdk_config().await), table);
        let snapshot = reader.list().await.map_err(failed)?;
        let (mut written, mut skipped) = (0, Vec::new());
        for stored in &snapshot.entries {
            // As registered: a rollout's stable revision is the registry's, not the team's.
            let e = &stored.entry.registered();
            if !args.teams.is_empty() && !args.teams.contains(&e.team) {
                continue;
            }
            if let Some(owner @ Owner::Stack { .. }) = &stored.owner {
                skipped.push(format!("{} (owned by {})", e.id(), owner.encode()));
                continue;
            }
            let file = args.dir.join(format!("{}_{}.json", e.team, e.service));
            let mut text = serde_json::to_string_pretty(e).map_err(|err| {
                CmdError::failed(format!("{}: cannot serialise: {err}", e.id()))
            })?;
            text.push('\n');
            std::fs::write(&file, text)
                .map_err(|err| CmdError::failed(format!("{}: cannot write: {err}", file.display())))?;
            written += 1;
        }
        for s in &skipped {
            println!("skipped {}", one_line(s));
        }
        println!("wrote {written} entry files to {shown}");
        if !snapshot.unreadable.is_empty() {
            return Err(CmdError::failed(format!(
                "{} rows could not be read and were not written: {}",
                snapshot.unreadable.len(),
                snapshot
                    .unreadable
                    .iter()
                    .map(|(k, why)| one_line(&format!("{k}: {why}")).into_owned())
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
        Ok(())
    })
}
