//! `gatewayctl check ENTRY.json`: the registration checks, offline.

use super::common::PolicyArgs;
use super::{CmdError, CmdResult};
use gateway_adapters::resolve::BackendLookup;
use gateway_render::check::check_entry_bytes;
use std::io::Read;
use std::path::PathBuf;

/// Run the registration checks on one entry, offline
///
/// Exit 0 and print `accepted TEAM/SERVICE`, or exit 1 with every problem on stderr, one per
/// line, each naming its field. The backend's name is resolved here and every address it leads
/// to is judged (a name that does not resolve passes unless --require-resolvable-backends). Conflicts with other teams' entries need the registry and are
/// checked by `register`, not here.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The entry document (JSON), or `-` for stdin
    #[arg(value_name = "ENTRY.json")]
    pub entry: PathBuf,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

pub fn run(args: Args) -> CmdResult {
    let policy = args.policy.policy()?;
    let entry = read_checked_entry(&args.entry, &policy)?;
    // The backend is judged by where its name leads too, as registration does.
    let name = if args.entry.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        args.entry.display().to_string()
    };
    let resolved = super::block_on(async {
        let problems = BackendLookup::default()
            .problems(std::slice::from_ref(&entry), &policy)
            .await;
        if problems.is_empty() {
            return Ok(());
        }
        Err(CmdError::failed(
            problems
                .iter()
                .map(|(_, p)| format!("{name}: {p}"))
                .collect::<Vec<_>>()
                .join("\n"),
        ))
    });
    resolved?;
    println!(
        "accepted {} ({})",
        entry.id(),
        entry.fqdn(&policy.base_domain)
    );
    Ok(())
}

/// Reads an entry file (or stdin for `-`) and runs the registration checks; a rejection lists
/// every problem, one per line, each prefixed with the file's name.
pub fn read_checked_entry(
    path: &std::path::Path,
    policy: &gateway_render::Policy,
) -> Result<gateway_render::Entry, CmdError> {
    let (name, bytes) = read_input(path)?;
    check_entry_bytes(&bytes, policy).map_err(|rejection| {
        CmdError::failed(
            rejection
                .problems
                .iter()
                .map(|p| format!("{name}: {p}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })
}

/// Reads a file, or stdin for `-`. Returns the name to show in messages and the bytes. Reads at
/// most one byte past the entry size limit, so `/dev/zero` or a huge file is rejected by the
/// checks' size rule instead of filling memory.
pub fn read_input(path: &std::path::Path) -> Result<(String, Vec<u8>), CmdError> {
    let limit = gateway_render::check::MAX_ENTRY_BYTES as u64 + 1;
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .take(limit)
            .read_to_end(&mut bytes)
            .map_err(|e| CmdError::failed(format!("<stdin>: cannot read: {e}")))?;
        return Ok(("<stdin>".to_string(), bytes));
    }
    let name = path.display().to_string();
    std::fs::File::open(path)
        .and_then(|f| f.take(limit).read_to_end(&mut bytes))
        .map_err(|e| CmdError::failed(format!("{name}: cannot read: {e}")))?;
    if bytes.len() as u64 == limit {
        return Err(CmdError::failed(format!(
            "{name}: entry: larger than {} bytes, the most an entry may be",
            limit - 1
        )));
    }
    Ok((name, bytes))
}
