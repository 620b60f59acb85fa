//! Atomic file replacement in a watched directory. Envoy reloads a path-config file only when a
//! file is moved into its watched directory, and must never see a half-written one: write a
//! temp name in the same directory (same file system, so the rename is atomic), fsync the file,
//! rename it over the target, fsync the directory so the rename survives a crash.

use crate::error::SidecarError;
use std::cell::Cell;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How much a writer into a temp file buffers between writes.
pub const WRITE_BUFFER: usize = 64 * 1024;

/// Replaces `dir/name` with `bytes` atomically.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), SidecarError> {
    let temp = TempFile::create(dir, name)?;
    let mut file = temp.writer()?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| SidecarError::file(&temp.path, "writing", e))?;
    drop(file);
    temp.put_in_place(dir, name)
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

/// Whether the files at `a` and `b` hold the same bytes (`false` when `b` does not exist),
/// compared piece by piece.
pub fn same_content(a: &Path, b: &Path) -> Result<bool, SidecarError> {
    let open = |path: &Path| match File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SidecarError::file(path, "opening", e)),
    };
    let (Some(fa), Some(fb)) = (open(a)?, open(b)?) else {
        return Ok(false);
    };
    let len = |file: &File, path: &Path| {
        file.metadata()
            .map(|m| m.len())
            .map_err(|e| SidecarError::file(path, "reading the size", e))
    };
    if len(&fa, a)? != len(&fb, b)? {
        return Ok(false);
    }
    let (mut ra, mut rb) = (BufReader::new(fa), BufReader::new(fb));
    let (mut piece, mut other) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let n = ra
            .read(&mut piece)
            .map_err(|e| SidecarError::file(a, "reading", e))?;
        if n == 0 {
            return Ok(true);
        }
        rb.read_exact(&mut other[..n])
            .map_err(|e| SidecarError::file(b, "reading", e))?;
        if piece[..n] != other[..n] {
            return Ok(false);
        }
    }
}

/// A temp file in the directory its content is meant for, removed unless it was renamed into
/// place, so a failed or abandoned write leaves nothing behind in the watched directory.
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    file: File,
    kept: Cell<bool>,
}

impl TempFile {
    /// An empty temp file in `dir` for `name` (a name of this build's, never one from a bundle).
    pub fn create(dir: &Path, name: &str) -> Result<TempFile, SidecarError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        // Created here, not moved in: Envoy's watch reacts to moves only.
        let path = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| SidecarError::file(&path, "creating the temp file", e))?;
        Ok(TempFile {
            path,
            file,
            kept: Cell::new(false),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A buffered writer into the file (flush it before `put_in_place`).
    pub fn writer(&self) -> Result<BufWriter<File>, SidecarError> {
        Ok(BufWriter::with_capacity(WRITE_BUFFER, self.handle()?))
    }

    /// Another handle on the file, for a writer of the caller's own.
    pub fn handle(&self) -> Result<File, SidecarError> {
        self.file
            .try_clone()
            .map_err(|e| SidecarError::file(&self.path, "opening the temp file", e))
    }

    /// Starts the file's fsync on a blocking thread and returns: `put_in_place`'s own fsync
    /// then finds little left to write. Its errors are left to that fsync, which reports them.
    pub fn sync_in_background(&self) {
        if let Ok(file) = self.file.try_clone() {
            tokio::task::spawn_blocking(move || {
                let _ = file.sync_data();
            });
        }
    }

    /// fsyncs the file, renames it over `dir/name` and fsyncs the directory, so the rename
    /// survives a crash.
    pub fn put_in_place(&self, dir: &Path, name: &str) -> Result<(), SidecarError> {
        self.file
            .sync_all()
            .map_err(|e| SidecarError::file(&self.path, "fsync", e))?;
        let target = dir.join(name);
        fs::rename(&self.path, &target)
            .map_err(|e| SidecarError::file(&target, "renaming the temp file into place", e))?;
        self.kept.set(true);
        sync_dir(dir)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.kept.get() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The file in place before a replacement, held open so its bytes outlive the rename: a refused
/// replacement is undone by copying them back (rarely; nothing is read until then).
#[derive(Debug)]
pub struct Previous {
    dir: PathBuf,
    name: String,
    file: File,
}

impl Previous {
    /// `dir/name` as it is now; `None` when there is no such file.
    pub fn open(dir: &Path, name: &str) -> Result<Option<Previous>, SidecarError> {
        let path = dir.join(name);
        match File::open(&path) {
            Ok(file) => Ok(Some(Previous {
                dir: dir.to_path_buf(),
                name: name.to_string(),
                file,
            })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SidecarError::file(path, "opening", e)),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Puts the held bytes back at `dir/name`, atomically, as any write.
    pub fn restore(&self) -> Result<(), SidecarError> {
        let temp = TempFile::create(&self.dir, &self.name)?;
        let mut out = temp.writer()?;
        let mut file = &self.file;
        file.seek(SeekFrom::Start(0))
            .and_then(|_| io::copy(&mut file, &mut out))
            .and_then(|_| out.flush())
            .map_err(|e| SidecarError::file(&temp.path, "writing", e))?;
        drop(out);
        temp.put_in_place(&self.dir, &self.name)
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
        assert_eq!(
            read(dir.path(), "a.json").expect("read"),
            Some(b"two".to_vec())
        );
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
        assert_eq!(
            read(dir.path(), "a.json").expect("read"),
            Some(b"old".to_vec())
        );
        let temps = fs::read_dir(dir.path())
            .expect("list")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .count();
        assert_eq!(temps, 0);
    }

    #[test]
    fn a_previous_file_comes_back_after_a_replacement() {
        let dir = tempfile::tempdir().expect("temp dir");
        write_atomic(dir.path(), "a.json", b"old").expect("write");
        let previous = Previous::open(dir.path(), "a.json")
            .expect("open")
            .expect("exists");
        write_atomic(dir.path(), "a.json", b"new!").expect("replace");
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        write_atomic(dir.path(), "b.json", b"new!").expect("write");
        assert!(same_content(&a, &b).expect("compare"));
        previous.restore().expect("restore");
        assert_eq!(
            read(dir.path(), "a.json").expect("read"),
            Some(b"old".to_vec())
        );
        assert!(!same_content(&a, &b).expect("compare"));
        assert!(!same_content(&a, &dir.path().join("none")).expect("compare"));
        assert!(Previous::open(dir.path(), "none").expect("open").is_none());
    }

    #[test]
    fn missing_file_reads_as_none() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(read(dir.path(), "nope").expect("read"), None);
        assert!(!exists(dir.path(), "nope"));
    }
}
