//! Atomic file replacement in a watched directory. Envoy reloads a path-config file only when a
//! file is moved into its watched directory, and must never see a half-written one: write a
//! temp name in the same directory (same file system, so the rename is atomic), fsync the file,
//! rename it over the target, fsync the directory so the rename survives a crash.

use crate::error::SidecarError;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Replaces `dir/name` with `bytes` atomically.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), SidecarError> {
    let target = dir.join(name);
    let temp = TempFile::create(dir, name)?;
    {
        let mut file = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&temp.path)
            .map_err(|e| SidecarError::file(&temp.path, "opening the temp file", e))?;
        file.write_all(bytes)
            .map_err(|e| SidecarError::file(&temp.path, "writing", e))?;
        file.sync_all()
            .map_err(|e| SidecarError::file(&temp.path, "fsync", e))?;
    }
    fs::rename(&temp.path, &target).map_err(|e| SidecarError::file(&target, "renaming the temp file into place", e))?;
    temp.persisted();
    sync_dir(dir)
}

/// The current bytes of `dir/name`, `None` if there is no such file.
pub fn read(dir: &Path, name: &str) -> Result<Option<Vec<u8>>, SidecarError> {
    let path = dir.join(name);
    match fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SidecarError::file(path, "reading", e)),
    }
}

pub fn exists(dir: &Path, name: &str) -> bool {
    dir.join(name).is_file()
}

fn sync_dir(dir: &Path) -> Result<(), SidecarError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| SidecarError::file(dir, "fsync of the directory", e))
}

/// A temp file that is removed unless it was renamed into place, so a failed or abandoned write
/// leaves nothing behind in the watched directory.
struct TempFile {
    path: PathBuf,
    keep: bool,
}

impl TempFile {
    fn create(dir: &Path, name: &str) -> Result<TempFile, SidecarError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        // Created here, not moved in: Envoy's watch reacts to moves only.
        let path = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| SidecarError::file(&path, "creating the temp file", e))?;
        Ok(TempFile { path, keep: false })
    }

    fn persisted(mut self) {
        self.keep = true;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temp_behind() {
        let dir = tempfile::tempdir().expect("temp dir");
        write_atomic(dir.path(), "a.json", b"one").expect("first write");
        write_atomic(dir.path(), "a.json", b"two").expect("second write");
        assert_eq!(read(dir.path(), "a.json").expect("read"), Some(b"two".to_vec()));
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temp() {
        let dir = tempfile::tempdir().expect("temp dir");
        write_atomic(dir.path(), "a.json", b"old").expect("write");
        // The target is a non-empty directory: the rename fails after the temp was written.
        fs::create_dir(dir.path().join("b.json")).expect("mkdir");
        fs::write(dir.path().join("b.json").join("x"), b"x").expect("fill");
        assert!(write_atomic(dir.path(), "b.json", b"new").is_err());
        assert_eq!(read(dir.path(), "a.json").expect("read"), Some(b"old".to_vec()));
        let temps = fs::read_dir(dir.path())
            .expect("list")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .count();
        assert_eq!(temps, 0);
    }

    #[test]
    fn missing_file_reads_as_none() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(read(dir.path(), "nope").expect("read"), None);
        assert!(!exists(dir.path(), "nope"));
    }
}
