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
                Some(s) if s.entry.registered() == **entry => Step::Unchanged(entry),
                Some(s) => {
                    let changes = diff_entries(
                        std::slice::from_ref(&s.entry.registered()),
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

/// What the writes came to: a count per outcome and the ids that failed.
#[derive(Default)]
struct Tally {
    counts: BTreeMap<&'static str, usize>,
    failures: Vec<String>,
}

impl Tally {
    fn count(&mut self, outcome: &'static str) {
        *self.counts.entry(outcome).or_default() += 1;
    }

    fn fail(&mut self, id: String, file: Option<&str>, why: &str) {
        match file {
            Some(file) => println!("failed {id} ({file}): {why}"),
            None => println!("failed {id}: {why}"),
        }
        self.failures.push(id);
    }

    fn get(&self, outcome: &str) -> usize {
        self.counts.get(outcome).copied().unwrap_or(0)
    }
}

/// Registers `e`; a conflict is handed back (`Err`) when `defer_conflict`, for another try.
async fn upsert<'e>(
    registry: &gateway_adapters::registry::DynamoRegistry,
    (e, file): (&'e Entry, &'e str),
    defer_conflict: bool,
    tally: &mut Tally,
) -> Result<(), (&'e Entry, &'e str)> {
    match registry.register(e).await {
        Ok(outcome) => {
            tally.count(outcome.as_str());
            println!("{} {} (revision {})", outcome.as_str(), e.id(), outcome.revision());
        }
        Err(RegistryError::Conflict { .. }) if defer_conflict => return Err((e, file)),
        Err(err) => tally.fail(e.id(), Some(file), &one_line(&failed(err).message)),
    }
    Ok(())
}

async fn apply(
    args: &Args,
    registry: &gateway_adapters::registry::DynamoRegistry,
    plan: &[Step<'_>],
) -> CmdResult {
    let mut tally = Tally::default();
    // Upserts first (a moved path may need its old holder deleted: those are tried again after
    // the deletes), then deletes.
    let mut again: Vec<(&Entry, &str)> = Vec::new();
    for step in plan {
        match step {
            Step::Create(e, file) | Step::Update(e, file, _) => {
                if let Err(deferred) = upsert(registry, (e, file), args.prune, &mut tally).await {
                    again.push(deferred);
                }
            }
            Step::Unchanged(_) => tally.count("unchanged"),
            Step::Refused(e, file, why) => tally.fail(e.id(), Some(file), why),
            Step::Delete(_) => {}
        }
    }
    for step in plan {
        if let Step::Delete(s) = step {
            let id = s.entry.id();
            match registry.deregister(&id).await {
                Ok(DeregisterOutcome::Deleted) => {
                    tally.count("deleted");
                    println!("deleted {id}");
                }
                // Gone since the plan was read: the desired state holds.
                Ok(DeregisterOutcome::NotFound) => {
                    tally.count("deleted");
                    println!("deleted {id} (already gone)");
                }
                Err(err) => tally.fail(id, None, &one_line(&failed(err).message)),
            }
        }
    }
    for deferred in again {
        // Conflicts are final now: `upsert` reports them and hands nothing back.
        let _ = upsert(registry, deferred, false, &mut tally).await;
    }
    let summary: Vec<String> = ["created", "updated", "unchanged", "deleted"]
        .iter()
        .map(|k| format!("{} {k}", tally.get(k)))
        .collect();
    println!("sync: {}, {} failed", summary.join(", "), tally.failures.len());
    if ["created", "updated", "deleted"].iter().any(|k| tally.get(k) > 0) {
        super::register::warn_if_held(&args.table, &args.bucket).await;
    }
    if tally.failures.is_empty() {
        Ok(())
    } else {
        Err(CmdError::failed(format!(
            "{} of the plan's entries failed: {}",
            tally.failures.len(),
            tally.failures.join(", ")
        )))
    }
}
