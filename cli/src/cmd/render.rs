//! `gatewayctl render`: entries in, the three files and the bundle out, offline.

use super::common::PolicyArgs;
use super::{CmdError, CmdResult};
use gateway_render::check::check_entry_bytes;
use gateway_render::contract::BUNDLE_OBJECT;
use gateway_render::{render, Bundle, Entry, Policy, RenderConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Render entries into clusters.json, routes.json, ratelimit.yaml and bundle.json
///
/// PATH is one entry file, a file holding a JSON array of entries, or a directory whose *.json
/// files (sorted by name, not recursive) are each one of those. Every entry passes the
/// registration checks first; a rejection names the file and the field. Prints the bundle hash.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Entry file, file of an entry array, or directory of such files
    #[arg(long, value_name = "PATH")]
    pub entries: PathBuf,
    /// Directory to write the rendered files into (created if absent)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

pub fn run(args: Args) -> CmdResult {
    let policy = args.policy.policy()?;
    let entries = load_entries(&args.entries, &policy)?;
    let rendered = render(&entries, &RenderConfig::new(policy.base_domain.clone()))
        .map_err(|e| CmdError::failed(format!("render: {e}")))?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CmdError::failed(format!("{}: cannot create: {e}", args.out.display())))?;
    // The bundle as a publish archives it, unsigned (a publish signs it).
    let bundle = Bundle::new(&rendered, &entries).seal().archive(None);
    for (name, text) in rendered
        .files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_bytes()))
        .chain([(BUNDLE_OBJECT, bundle.as_slice())])
    {
        let path = args.out.join(name);
        std::fs::write(&path, text)
            .map_err(|e| CmdError::failed(format!("{}: cannot write: {e}", path.display())))?;
    }
    eprintln!(
        "rendered {} entries, {} routes into {}",
        entries.len(),
        rendered.route_count,
        args.out.display()
    );
    println!("{}", rendered.hash);
    Ok(())
}

/// Every entry under `path`, checked. All rejections of all files are reported together.
pub fn load_entries(path: &Path, policy: &Policy) -> Result<Vec<Entry>, CmdError> {
    let files = entry_files(path)?;
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    for file in &files {
        let name = file.display().to_string();
        let bytes = std::fs::read(file)
            .map_err(|e| CmdError::failed(format!("{name}: cannot read: {e}")))?;
        let documents = match serde_json::from_slice::<Value>(&bytes) {
            // An array holds several entries; each is checked as the document it would be alone.
            Ok(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    (
                        format!("{name}[{i}]"),
                        serde_json::to_vec(item).unwrap_or_default(),
                    )
                })
                .collect(),
            _ => vec![(name, bytes)],
        };
        for (label, doc) in documents {
            match check_entry_bytes(&doc, policy) {
                Ok(entry) => entries.push(entry),
                Err(rejection) => {
                    problems.extend(rejection.problems.iter().map(|p| format!("{label}: {p}")))
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(CmdError::failed(problems.join("\n")));
    }
    if entries.is_empty() {
        return Err(CmdError::failed(format!(
            "{}: no entries; an empty route table would be an outage, so nothing is rendered",
            path.display()
        )));
    }
    Ok(entries)
}

fn entry_files(path: &Path) -> Result<Vec<PathBuf>, CmdError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| CmdError::failed(format!("{}: {e}", path.display())))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let read = std::fs::read_dir(path)
        .map_err(|e| CmdError::failed(format!("{}: cannot list: {e}", path.display())))?;
    let mut files: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}
