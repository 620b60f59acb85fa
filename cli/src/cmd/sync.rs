//! `gatewayctl sync DIR [--prune] [--dry-run] [--team TEAM]…`: a directory of entry files as the
//! desired state of the operators' entries of its teams. The plan comes first, then the writes.

use super::common::{BucketArg, PolicyArgs, TableArg};
use super::desired::{duplicates, one_line, read_entries};
use super::registry::{failed, open};
use super::terminal;
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::registry::{DeregisterOutcome, Owner, RegistryError, StoredEntry};
use gateway_control::operator::diff_entries;
use gateway_render::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Make the registry match DIR: create, update, and with --prune delete
///
/// DIR's `*.json` files are the desired state of the entries operators own (those `gatewayctl`
/// writes) in scope: the teams DIR declares, or exactly the teams given with `--team`. An entry
/// a stack owns is never changed or deleted here, nor is a team outside the scope. The plan is
/// printed first, one line per entry (`+ create`, `~ update` with each changed field, `=
/// unchanged`, `- delete`, `! refused`); `--dry-run` stops there. Then every create and update,
/// then with `--prune` every delete, one line each, then a summary. Two files declaring the same
/// entry, or a file the checks refuse, stop the sync before anything is written. An empty DIR
/// is a desired state only with `--team` (prune a team's last entries). Exit 1 if anything
/// failed.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The directory of entry files: the desired state
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Also deregister the operators' entries in scope that DIR does not declare
    #[arg(long)]
    pub prune: bool,
    /// Print the plan and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// The teams whose entries DIR is the whole truth for (repeatable; default: the teams DIR
    /// declares). Name a team to prune its last entry
    #[arg(long = "team", value_name = "TEAM")]
    pub teams: Vec<String>,
    #[command(flatten)]
    pub table: TableArg,
    /// With a bucket (`--bucket` or `GATEWAY_BUCKET`), sync warns when every publish is held
    #[command(flatten)]
    pub bucket: BucketArg,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// One step of the plan.
enum Step<'a> {
    Create(&'a Entry, &'a str),
    Update(&'a Entry, &'a str, Vec<String>),
    Unchanged(&'a Entry),
    /// In scope, owned by operators, missing from DIR.
    Delete(&'a StoredEntry),
    /// DIR declares an entry operators do not own: the holder is named.
    Refused(&'a Entry, &'a str, String),
}

fn owned_by_operators(stored: &StoredEntry) -> bool {
    matches!(stored.owner, None | Some(Owner::Operator { .. }))
}

fn owner_text(stored: &StoredEntry) -> String {
    stored
        .owner
        .as_ref()
        .map(Owner::encode)
        .unwrap_or_else(|| "operators".into())
}

pub fn run(args: Args) -> CmdResult {
    let policy = args.policy.policy()?;
    if !args.dir.is_dir() {
        return Err(CmdError::usage(format!(
            "{}: not a directory; sync takes a directory of entry files",
            args.dir.display()
        )));
    }
    // With the scope named, an empty directory is a desired state: none of those teams' entries.
    let files = if !args.teams.is_empty() && super::desired::entry_files(&args.dir)?.is_empty() {
        Vec::new()
    } else {
        read_entries(&args.dir, &policy)?
    };
    let mut problems: Vec<String> = files
        .iter()
        .filter_map(|f| f.entry.as_ref().err())
        .cloned()
        .collect();
    problems.extend(duplicates(&files));
    if !problems.is_empty() {
        return Err(CmdError::failed(format!(
            "{}: nothing synced:\n{}",
            args.dir.display(),
            problems.join("\n")
        )));
    }
    let desired: Vec<(&Entry, &str)> = files
        .iter()
        .filter_map(|f| f.entry.as_ref().ok().map(|e| (e, f.shown.as_str())))
        .collect();
    let scope: BTreeSet<String> = if args.teams.is_empty() {
        desired.iter().map(|(e, _)| e.team.clone()).collect()
    } else {
        args.teams.iter().cloned().collect()
    };
    if let Some((e, file)) = desired.iter().find(|(e, _)| !scope.contains(&e.team)) {
        return Err(CmdError::usage(format!(
            "{file} declares {} but --team does not name {}; name every team DIR declares",
            e.id(),
            e.team
        )));
    }
    block_on(async {
        let registry = open(&args.table, policy).await?;
        let snapshot = registry.list().await.map_err(failed)?;
        let stored: BTreeMap<String, &StoredEntry> =
            snapshot.entries.iter().map(|s| (s.entry.id(), s)).collect();
        let mut plan = Vec::new();
        for (entry, file) in &desired {
            plan.push(match stored.get(&entry.id()) {
                None => Step::Create(entry, file),
                Some(s) if !owned_by_operators(s) => Step::Refused(
                    entry,
                    file,
                    format!(
                        "owned by {}; take it over first: gatewayctl adopt {} --operator",
                        owner_text(s),
                        entry.id()
                    ),
                ),
                Some(s) if s.entry == **entry => Step::Unchanged(entry),
                Some(s) => {
                    let changes = diff_entries(
                        std::slice::from_ref(&s.entry),
                        std::slice::from_ref(*entry),
                    );
                    Step::Update(entry, file, changes.iter().map(|c| c.to_string()).collect())
                }
            });
        }
        let declared: BTreeSet<String> = desired.iter().map(|(e, _)| e.id()).collect();
        let missing: Vec<&StoredEntry> = snapshot
            .entries
            .iter()
            .filter(|s| scope.contains(&s.entry.team) && owned_by_operators(s))
            .filter(|s| !declared.contains(&s.entry.id()))
            .collect();
        if args.prune {
            plan.extend(missing.iter().map(|s| Step::Delete(s)));
        }
        print_plan(&plan, &missing, args.prune);
        if args.dry_run {
            println!("dry run: nothing written");
            return Ok(());
        }
        apply(&args, &registry, &plan).await
    })
}

fn print_plan(plan: &[Step], missing: &[&StoredEntry], prune: bool) {
    println!("plan:");
    for step in plan {
        match step {
            Step::Create(e, file) => println!("+ create {} ({file})", e.id()),
            Step::Update(e, file, changes) => {
                println!("~ update {} ({file})", e.id());
                for change in changes {
                    println!("    {}", terminal::one_line(change));
                }
            }
            Step::Unchanged(e) => println!("= unchanged {}", e.id()),
            Step::Delete(s) => println!("- delete {}", s.entry.id()),
            Step::Refused(e, file, why) => println!("! refused {} ({file}): {why}", e.id()),
        }
    }
    if !prune {
        for s in missing {
            println!(
                "  kept {} (not in DIR; --prune deletes it)",
                terminal::one_line(&s.entry.id())
            );
        }
    }
}

async fn apply(
    args: &Args,
    registry: &gateway_adapters::registry::DynamoRegistry,
    plan: &[Step<'_>],
) -> CmdResult {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    // Upserts first (a moved path may need its old holder deleted: those are tried again after
    // the deletes), then deletes.
    let mut again: Vec<(&Entry, &str)> = Vec::new();
    for step in plan {
        match step {
            Step::Create(e, file) | Step::Update(e, file, _) => {
                match registry.register(e).await {
                    Ok(outcome) => {
                        *counts.entry(outcome.as_str()).or_default() += 1;
                        println!(
                            "{} {} (revision {})",
                            outcome.as_str(),
                            e.id(),
                            outcome.revision()
                        );
                    }
                    Err(RegistryError::Conflict { .. }) if args.prune => again.push((e, file)),
                    Err(err) => {
                        let message = one_line(&failed(err).message);
                        println!("failed {} ({file}): {message}", e.id());
                        failures.push(e.id());
                    }
                }
            }
            Step::Unchanged(_) => *counts.entry("unchanged").or_default() += 1,
            Step::Refused(e, file, why) => {
                println!("failed {} ({file}): {why}", e.id());
                failures.push(e.id());
            }
            Step::Delete(_) => {}
        }
    }
    for step in plan {
        if let Step::Delete(s) = step {
            let id = s.entry.id();
            match registry.deregister(&id).await {
                Ok(DeregisterOutcome::Deleted) => {
                    *counts.entry("deleted").or_default() += 1;
                    println!("deleted {id}");
                }
                // Gone since the plan was read: the desired state holds.
                Ok(DeregisterOutcome::NotFound) => {
                    *counts.entry("deleted").or_default() += 1;
                    println!("deleted {id} (already gone)");
                }
                Err(err) => {
                    println!("failed {id}: {}", one_line(&failed(err).message));
                    failures.push(id);
                }
            }
        }
    }
    for (e, file) in again {
        match registry.register(e).await {
            Ok(outcome) => {
                *counts.entry(outcome.as_str()).or_default() += 1;
                println!(
                    "{} {} (revision {})",
                    outcome.as_str(),
                    e.id(),
                    outcome.revision()
                );
            }
            Err(err) => {
                println!("failed {} ({file}): {}", e.id(), one_line(&failed(err).message));
                failures.push(e.id());
            }
        }
    }
    let summary: Vec<String> = ["created", "updated", "unchanged", "deleted"]
        .iter()
        .map(|k| format!("{} {k}", counts.get(k).copied().unwrap_or(0)))
        .collect();
    println!("sync: {}, {} failed", summary.join(", "), failures.len());
    let wrote = ["created", "updated", "deleted"]
        .iter()
        .any(|k| counts.get(k).is_some_and(|n| *n > 0));
    if wrote {
        super::register::warn_if_held(&args.table, &args.bucket).await;
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(CmdError::failed(format!(
            "{} of the plan's entries failed: {}",
            failures.len(),
            failures.join(", ")
        )))
    }
}
