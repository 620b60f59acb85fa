//! `gatewayctl check ENTRY.json`: the registration checks, offline.

use super::common::{policy, DomainArg, LoopbackArg};
use super::{CmdError, CmdResult};
use gateway_render::check::check_entry_bytes;
use std::io::Read;
use std::path::PathBuf;

/// Run the registration checks on one entry, offline
///
/// Exit 0 and print `accepted TEAM/SERVICE`, or exit 1 with every problem on stderr, one per
/// line, each naming its field. Conflicts with other teams' entries need the registry and are
/// checked by `register`, not here.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The entry document (JSON), or `-` for stdin
    #[arg(value_name = "ENTRY.json")]
    pub entry: PathBuf,
    #[command(flatten)]
    pub domain: DomainArg,
    #[command(flatten)]
    pub loopback: LoopbackArg,
}

pub fn run(args: Args) -> CmdResult {
    let policy = policy(&args.domain, &args.loopback)?;
    let (name, bytes) = read_input(&args.entry)?;
    match check_entry_bytes(&bytes, &policy) {
        Ok(entry) => {
            println!(
                "accepted {} ({})",
                entry.id(),
                entry.fqdn(&policy.base_domain)
            );
            Ok(())
        }
        Err(rejection) => Err(CmdError::failed(
            rejection
                .problems
                .iter()
                .map(|p| format!("{name}: {p}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )),
    }
}

/// Reads a file, or stdin for `-`. Returns the name to show in messages and the bytes.
pub fn read_input(path: &std::path::Path) -> Result<(String, Vec<u8>), CmdError> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| CmdError::failed(format!("<stdin>: cannot read: {e}")))?;
        return Ok(("<stdin>".to_string(), bytes));
    }
    let name = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| CmdError::failed(format!("{name}: cannot read: {e}")))?;
    Ok((name, bytes))
}
