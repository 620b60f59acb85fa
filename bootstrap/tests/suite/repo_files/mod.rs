//! The repository's own files, as the checks over the whole repository read them (the Envoy
//! pins, the document citations): everything but build output, version control and installed
//! dependencies.

use std::path::{Path, PathBuf};

/// Directories that hold none of the repository's own files.
const SKIP_DIRS: &[&str] = &["target", ".git", ".venv", "node_modules", "cdk.out"];

/// The workspace root.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
}

/// Every file under `dir`, in path order, outside the skipped directories.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    files
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !SKIP_DIRS.iter().any(|s| entry.file_name() == *s) {
                walk(&path, files);
            }
        } else if kind.is_file() {
            files.push(path);
        }
    }
}
