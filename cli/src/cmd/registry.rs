//! `gatewayctl init | register | deregister | list`: the register function's logic against the
//! registry table, from a terminal. AWS endpoints come from the standard SDK configuration
//! (`AWS_ENDPOINT_URL`, region, profile), so the same commands work against AWS or moto.

use super::check::read_checked_entry;
use super::common::{policy, BucketArg, DomainArg, LoopbackArg, TableArg};
use super::{block_on, CmdError, CmdResult};
use gateway_functions::aws::{dynamodb_client, sdk_config};
use gateway_functions::registry::{
    DeregisterOutcome, DynamoRegistry, Owner, RegistryError, StoredEntry,
};
use gateway_render::Policy;
use serde_json::json;
use std::path::PathBuf;

/// Create the registry table (with its stream) and the versioned bucket if absent
///
/// For local use; in AWS the gateway stack owns them. With a bucket (`--bucket` or
/// `GATEWAY_BUCKET`), also creates the versioned config bucket.
#[derive(clap::Args, Debug)]
#[command(mut_arg("bucket", |a| a.help("The versioned config bucket to create (with versioning on) if absent")))]
pub struct InitArgs {
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub bucket: BucketArg,
}

/// Check an entry and register it (create or replace) in the registry
///
/// Exit 0 with `created|updated|unchanged TEAM/SERVICE`, or 1 with every rejection reason, or
/// the conflict naming its holder, on stderr.
///
/// Given a directory, registers every `*.json` file in it, in name order (onboarding): one
/// progress line per file (`[3/40] billing/invoices-api: registered (created, revision 1)` or
/// why it was not), never stopping at a bad file, then a summary; exit 1 if any file failed or
/// the directory holds no `*.json` file.
#[derive(clap::Args, Debug)]
pub struct RegisterArgs {
    /// The entry document (JSON), `-` for stdin, or a directory of entry documents
    #[arg(value_name = "ENTRY.json|DIR")]
    pub entry: PathBuf,
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub domain: DomainArg,
    #[command(flatten)]
    pub loopback: LoopbackArg,
}

/// Remove an entry and release its guards
#[derive(clap::Args, Debug)]
pub struct DeregisterArgs {
    /// The entry's id
    #[arg(value_name = "TEAM/SERVICE")]
    pub id: String,
    /// Exit 0 when the entry is not registered (default: exit 1, so a typo is not a success)
    #[arg(long)]
    pub missing_ok: bool,
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub domain: DomainArg,
}

/// List the registered entries
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// One JSON document instead of a table
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub domain: DomainArg,
}

pub fn init(args: InitArgs) -> CmdResult {
    block_on(async {
        // The base domain plays no part in creating the table.
        let registry = open(&args.table, Policy::new("", false)).await;
        match registry.create_table_if_absent().await.map_err(failed)? {
            true => println!(
                "created table {} (stream NEW_AND_OLD_IMAGES)",
                registry.table()
            ),
            false => println!("table {} already exists", registry.table()),
        }
        if let Some(bucket) = &args.bucket.bucket {
            let conf = sdk_config().await;
            let store = gateway_functions::store::S3Store::new(
                gateway_functions::store::s3_client(&conf),
                bucket.clone(),
            );
            match store
                .create_bucket_if_absent()
                .await
                .map_err(|e| CmdError::failed(e.to_string()))?
            {
                true => println!("created bucket {bucket} (versioning on)"),
                false => println!("bucket {bucket} already exists (versioning on)"),
            }
        }
        Ok(())
    })
}

pub fn register(args: RegisterArgs) -> CmdResult {
    let policy = policy(&args.domain, &args.loopback)?;
    if args.entry.is_dir() {
        return register_dir(&args, policy);
    }
    let entry = read_checked_entry(&args.entry, &policy)?;
    block_on(async {
        let registry = open(&args.table, policy).await;
        let outcome = registry.register(&entry).await.map_err(failed)?;
        println!(
            "{} {} on {} (revision {})",
            outcome.as_str(),
            entry.id(),
            entry.fqdn(registry.base_domain()),
            outcome.revision()
        );
        Ok(())
    })
}

/// The `*.json` files directly in `dir`, sorted by name.
fn entry_files(dir: &std::path::Path) -> Result<Vec<PathBuf>, CmdError> {
    let name = dir.display();
    let listed = std::fs::read_dir(dir)
        .map_err(|e| CmdError::failed(format!("{name}: cannot list: {e}")))?;
    let mut files = Vec::new();
    for item in listed {
        let item = item.map_err(|e| CmdError::failed(format!("{name}: cannot list: {e}")))?;
        let path = item.path();
        if path.extension().is_some_and(|x| x == "json") && !path.is_dir() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn register_dir(args: &RegisterArgs, policy: Policy) -> CmdResult {
    let files = entry_files(&args.entry)?;
    if files.is_empty() {
        return Err(CmdError::failed(format!(
            "{}: no *.json entry files",
            args.entry.display()
        )));
    }
    let total = files.len();
    block_on(async {
        let registry = open(&args.table, policy.clone()).await;
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        let mut failed_files = Vec::new();
        for (i, file) in files.iter().enumerate() {
            let n = i + 1;
            let shown = file
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| file.display().to_string());
            let entry = match read_checked_entry(file, &policy) {
                Ok(entry) => entry,
                Err(e) => {
                    // The checks' messages already start with the file's path.
                    println!("[{n}/{total}] {shown}: rejected: {}", one_line(&e.message));
                    failed_files.push(shown);
                    continue;
                }
            };
            match registry.register(&entry).await {
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
                    failed_files.push(shown);
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

/// A multi-line message (one rejection reason per line) on one progress line.
fn one_line(message: &str) -> String {
    message.lines().collect::<Vec<_>>().join("; ")
}

pub fn deregister(args: DeregisterArgs) -> CmdResult {
    if !is_id(&args.id) {
        return Err(CmdError::usage(format!(
            "{:?} is not a TEAM/SERVICE id",
            args.id
        )));
    }
    block_on(async {
        let registry = open(&args.table, Policy::new(args.domain.get()?, false)).await;
        match registry.deregister(&args.id).await.map_err(failed)? {
            DeregisterOutcome::Deleted => println!("deleted {}", args.id),
            DeregisterOutcome::NotFound if args.missing_ok => {
                println!("{} was not registered", args.id)
            }
            DeregisterOutcome::NotFound => {
                return Err(CmdError::failed(format!("{} is not registered", args.id)))
            }
        }
        Ok(())
    })
}

pub fn list(args: ListArgs) -> CmdResult {
    block_on(async {
        let registry = open(&args.table, Policy::new(args.domain.get()?, false)).await;
        let snapshot = registry.list().await.map_err(failed)?;
        if args.json {
            let entries: Vec<_> = snapshot
                .entries
                .iter()
                .map(|s| {
                    json!({
                        "id": s.entry.id(),
                        "fqdn": s.entry.fqdn(registry.base_domain()),
                        "revision": s.revision,
                        "updated_at": s.updated_at,
                        "owner": owner_json(s.owner.as_ref()),
                        "entry": s.entry,
                    })
                })
                .collect();
            let unreadable: Vec<_> = snapshot
                .unreadable
                .iter()
                .map(|(key, why)| json!({ "key": key, "why": why }))
                .collect();
            let doc = json!({ "entries": entries, "unreadable": unreadable });
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).map_err(|e| CmdError::failed(e.to_string()))?
            );
        } else {
            print_table(&snapshot.entries, registry.base_domain());
            for (key, why) in &snapshot.unreadable {
                eprintln!("unreadable row {key}: {why}");
            }
        }
        Ok(())
    })
}

fn owner_json(owner: Option<&Owner>) -> serde_json::Value {
    match owner {
        Some(Owner::Stack {
            stack_id,
            logical_id,
        }) => json!({ "kind": "stack", "stack": stack_id, "resource": logical_id }),
        Some(Owner::Operator { principal }) => {
            json!({ "kind": "operator", "principal": principal })
        }
        None => serde_json::Value::Null,
    }
}

fn owner_cell(owner: Option<&Owner>) -> String {
    match owner {
        Some(Owner::Stack {
            stack_id,
            logical_id: Some(l),
        }) => format!("{stack_id} {l}"),
        Some(Owner::Stack {
            stack_id,
            logical_id: None,
        }) => stack_id.clone(),
        Some(Owner::Operator { principal }) => format!("operator {principal}"),
        None => "-".to_string(),
    }
}

fn print_table(entries: &[StoredEntry], base_domain: &str) {
    let rows: Vec<[String; 5]> = entries
        .iter()
        .map(|s| {
            let routes = s
                .entry
                .routes
                .iter()
                .map(|r| match &r.methods {
                    Some(m) => format!("{} {}", r.path, m.join(",")),
                    None => r.path.clone(),
                })
                .collect::<Vec<_>>()
                .join("; ");
            [
                s.entry.id(),
                s.entry.fqdn(base_domain),
                routes,
                s.revision.to_string(),
                owner_cell(s.owner.as_ref()),
            ]
        })
        .collect();
    let header = ["ID", "HOST", "ROUTES", "REVISION", "OWNER"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        println!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
    }
}

/// The registry, acting as the operator these credentials belong to (owner of what it writes).
async fn open(table: &TableArg, policy: Policy) -> DynamoRegistry {
    let conf = sdk_config().await;
    let base_domain = policy.base_domain.clone();
    DynamoRegistry::new(dynamodb_client(&conf), table.table.clone(), base_domain)
        .with_policy(policy)
        .with_operator(operator_principal().await)
}

/// The operator's principal (GetCallerIdentity's ARN), recorded as the owner of entries
/// `gatewayctl` writes.
pub async fn operator_principal() -> String {
    gateway_functions::aws::caller_identity(&sdk_config().await).await
}

fn failed(err: RegistryError) -> CmdError {
    // An entry a stack owns: say how operators take it over.
    if let RegistryError::Conflict { what, .. } = &err {
        if let Some(id) = what.strip_prefix("entry ") {
            return CmdError::failed(format!(
                "{err}; to change it from here, first take it over: gatewayctl adopt {id} --operator"
            ));
        }
    }
    CmdError::failed(err.to_string())
}

fn is_id(id: &str) -> bool {
    matches!(id.split_once('/'), Some((team, service)) if !team.is_empty() && !service.is_empty() && !service.contains('/'))
}
