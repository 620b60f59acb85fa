//! What `register DIR`, `preview` and `sync` share: entry files read from one file or a
//! directory, each checked, and the ids two files both declare.

use super::check::read_checked_entry;
use super::CmdError;
use gateway_render::{Entry, Policy};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One entry file: its name as shown, and the checked entry or why it was refused (every
/// problem on its own line, each prefixed with the file's path).
pub struct EntryFile {
    pub shown: String,
    pub entry: Result<Entry, String>,
}

/// The `*.json` files directly in `dir`, sorted by name.
pub fn entry_files(dir: &Path) -> Result<Vec<PathBuf>, CmdError> {
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

/// ENTRY.json (or `-`) as one file, or every `*.json` in DIR; a directory without one is an
/// error naming it.
pub fn read_entries(path: &Path, policy: &Policy) -> Result<Vec<EntryFile>, CmdError> {
    let paths = if path.is_dir() {
        let files = entry_files(path)?;
        if files.is_empty() {
            return Err(CmdError::failed(format!(
                "{}: no *.json entry files",
                path.display()
            )));
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    Ok(paths
        .iter()
        .map(|p| EntryFile {
            shown: shown(p),
            entry: read_checked_entry(p, policy).map_err(|e| e.message),
        })
        .collect())
}

/// The file's name inside its directory (the whole path for a lone file argument).
fn shown(path: &Path) -> String {
    if path.as_os_str() == "-" {
        return "<stdin>".into();
    }
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// One line per `team/service` two or more files declare: `billing/invoices is declared by
/// both a.json and b.json`. A directory is one desired state, so it may say each entry once.
pub fn duplicates(files: &[EntryFile]) -> Vec<String> {
    let mut by_id: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for f in files {
        if let Ok(e) = &f.entry {
            by_id.entry(e.id()).or_default().push(&f.shown);
        }
    }
    by_id
        .into_iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|(id, names)| {
            let (last, rest) = names.split_last().expect("two or more");
            format!(
                "{id} is declared by both {} and {last}; a directory may declare each entry once",
                rest.join(", ")
            )
        })
        .collect()
}

/// A multi-line message (one rejection reason per line) on one progress line.
pub fn one_line(message: &str) -> String {
    message.lines().collect::<Vec<_>>().join("; ")
}
