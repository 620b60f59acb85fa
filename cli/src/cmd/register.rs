//! `gatewayctl register ENTRY.json|DIR`: the register function's checks and registry write,
//! from a terminal; a directory registers every entry file in it (onboarding).

use super::check::read_checked_entry;
use super::common::{BucketArg, PolicyArgs, TableArg};
use super::desired::{duplicates, one_line, read_entries};
use super::registry::{failed, open};
use super::{block_on, CmdError, CmdResult};
use gateway_render::Policy;
use std::path::PathBuf;

/// Check an entry and register it (create or replace) in the registry
///
/// Exit 0 with `created|updated|unchanged TEAM/SERVICE`, or 1 with every rejection reason, or
/// the conflict naming its holder, on stderr.
///
/// Given a directory, registers every `*.json` file in it, in name order (onboarding): one
/// progress line per file (`[3/40] billing/invoices-api: registered (created, revision 1)` or
/// why it was not), never stopping at a bad file, then a summary; exit 1 if any file failed or
/// the directory holds no `*.json` file. Two files declaring the same `TEAM/SERVICE` register
/// nothing: the error names both.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The entry document (JSON), `-` for stdin, or a directory of entry documents
    #[arg(value_name = "ENTRY.json|DIR")]
    pub entry: PathBuf,
    #[command(flatten)]
    pub table: TableArg,
    /// With a bucket (`--bucket` or `GATEWAY_BUCKET`), register warns when every publish is held
    #[command(flatten)]
    pub bucket: BucketArg,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

pub fn run(args: Args) -> CmdResult {
    let policy = args.policy.policy()?;
    if args.entry.is_dir() {
        return register_dir(&args, policy);
    }
    let entry = read_checked_entry(&args.entry, &policy)?;
    block_on(async {
        let registry = open(&args.table, policy).await?;
        let outcome = registry.register(&entry).await.map_err(failed)?;
        println!(
            "{} {} on {} (revision {})",
            outcome.as_str(),
            entry.id(),
            entry.fqdn(registry.base_domain()),
            outcome.revision()
        );
        warn_if_held(&args.table, &args.bucket).await;
        Ok(())
    })
}

/// On stderr, when drift holds every publish: the entry is registered but goes nowhere until an
/// operator acts (a team waiting on its deploy would otherwise just time out).
pub async fn warn_if_held(table: &TableArg, bucket: &BucketArg) {
    let (Some(bucket), Ok(table)) = (bucket.bucket.clone(), table.get()) else {
        return;
    };
    let conf = gateway_adapters::aws::sdk_config().await;
    let registry = gateway_adapters::registry::RegistryReader::new(
        gateway_adapters::aws::dynamodb_client(&conf),
        table,
    );
    let store = super::live::store(&conf, bucket, false).await;
    if let Some(held) = gateway_control::operator::status(&registry, &store)
        .await
        .ok()
        .and_then(|s| s.hold())
    {
        eprintln!(
            "warning: registered, but not published yet: {}",
            super::terminal::one_line(&held)
        );
    }
}

fn register_dir(args: &Args, policy: Policy) -> CmdResult {
    let files = read_entries(&args.entry, &policy)?;
    let twice = duplicates(&files);
    if !twice.is_empty() {
        return Err(CmdError::failed(format!(
            "{}: nothing registered:\n{}",
            args.entry.display(),
            twice.join("\n")
        )));
    }
    let total = files.len();
    block_on(async {
        let registry = open(&args.table, policy.clone()).await?;
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        let mut failed_files = Vec::new();
        for (i, file) in files.iter().enumerate() {
            let n = i + 1;
            let shown = &file.shown;
            let entry = match &file.entry {
                Ok(entry) => entry,
                Err(why) => {
                    // The checks' messages already start with the file's path.
                    println!("[{n}/{total}] {shown}: rejected: {}", one_line(why));
                    failed_files.push(shown.clone());
                    continue;
                }
            };
            match registry.register(entry).await {
                Ok(outcome) => {
                    *counts.entry(outcome.as_str()).or_default() += 1;
                    println!(
                        "[{n}/{total}] {}: registered ({}, revision {})",
                        entry.id(),
                        outcome.as_str(),
                        outcome.revision()
                    );
                }
                Err(e) => {
                    println!(
                        "[{n}/{total}] {} ({shown}): {}",
                        entry.id(),
                        one_line(&failed(e).message)
                    );
                    failed_files.push(shown.clone());
                }
            }
        }
        let registered = total - failed_files.len();
        let detail: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let detail = if detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", detail.join(", "))
        };
        println!(
            "{total} entry files: {registered} registered{detail}, {} failed",
            failed_files.len()
        );
        if registered > 0 {
            warn_if_held(&args.table, &args.bucket).await;
        }
        if failed_files.is_empty() {
            Ok(())
        } else {
            Err(CmdError::failed(format!(
                "{} of {total} entry files failed: {}",
                failed_files.len(),
                failed_files.join(", ")
            )))
        }
    })
}
