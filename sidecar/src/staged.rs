//! A bundle's files while it is read and verified (docs/design.md#delivery): each file the target
//! delivers goes into a temp file in the directory it will be renamed into, the others are only
//! checked. Nothing is renamed here; a bundle that fails a check leaves no file behind (the temp
//! files are removed when dropped).

use crate::error::SidecarError;
use crate::files::{TempFile, WRITE_BUFFER};
use crate::timing::{Spent, Timed};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::PathBuf;

#[derive(Debug)]
pub struct Staged {
    /// The files the target delivers, and the directory each goes into.
    places: Vec<(&'static str, PathBuf)>,
    files: BTreeMap<&'static str, TempFile>,
    /// Time spent in the files' writes (docs/benchmarks.md: the steps of a delivery).
    writes: Spent,
}

impl Staged {
    pub fn new(places: Vec<(&'static str, PathBuf)>) -> Staged {
        Staged {
            places,
            files: BTreeMap::new(),
            writes: Spent::default(),
        }
    }

    /// Where file `name` of the bundle being read goes: a new temp file when the target
    /// delivers it (replacing one of the same name), `None` for a file that is only checked.
    /// An error carries the `SidecarError` that names the file ([`Staged::error`]).
    pub fn create(&mut self, name: &str) -> io::Result<Option<BufWriter<Timed<File>>>> {
        let Some((name, dir)) = self.places.iter().find(|(n, _)| *n == name) else {
            return Ok(None);
        };
        let temp = TempFile::create(dir, name).map_err(io::Error::other)?;
        let file = temp.handle().map_err(io::Error::other)?;
        let writer = BufWriter::with_capacity(WRITE_BUFFER, self.writes.writer(file));
        self.files.insert(name, temp);
        Ok(Some(writer))
    }

    /// The staged file `name` opened again for reading (the delivery policy reads what was
    /// written); `None` when the bundle had none or the target does not deliver it.
    pub fn reopen(&self, name: &str) -> Option<Result<File, SidecarError>> {
        self.files.get(name).map(|temp| {
            File::open(temp.path()).map_err(|e| SidecarError::file(temp.path(), "reading the staged file", e))
        })
    }

    /// Time spent so far writing the staged files.
    pub fn write_time(&self) -> std::time::Duration {
        self.writes.total()
    }

    /// The staged file `name`, to be put in place; `None` when the bundle had none.
    pub fn take(&mut self, name: &'static str) -> Option<TempFile> {
        self.files.remove(name)
    }

    /// A writer's error for `file` as the sidecar names it.
    pub fn error(file: &str, e: io::Error) -> SidecarError {
        match e.downcast::<SidecarError>() {
            Ok(named) => named,
            Err(e) => SidecarError::file(file, "writing the staged file", e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("listing")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The rate-limit service reads every file of its directory: while the rules file is
    /// written, and if the write is abandoned, the directory holds nothing but the live file.
    #[test]
    fn a_file_staged_outside_its_directory_appears_there_only_when_renamed_in() {
        let root = tempfile::tempdir().expect("temp dir");
        let (dir, staging) = (root.path().join("config"), root.path().join("staging"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::create_dir_all(&staging).expect("mkdir");
        std::fs::write(dir.join("ratelimit.yaml"), "old").expect("live file");

        let mut staged = Staged::new(vec![("ratelimit.yaml", staging.clone())]);
        let mut writer = staged
            .create("ratelimit.yaml")
            .expect("create")
            .expect("delivered");
        writer.write_all(b"domain: gateway\n").expect("write");
        writer.flush().expect("flush");
        assert_eq!(names(&dir), ["ratelimit.yaml"], "mid-write");
        assert_eq!(names(&staging).len(), 1);
        drop(writer);

        let temp = staged.take("ratelimit.yaml").expect("staged");
        temp.put_in_place(&dir, "ratelimit.yaml")
            .expect("renamed in");
        assert_eq!(names(&dir), ["ratelimit.yaml"]);
        assert!(names(&staging).is_empty());
        assert_eq!(
            std::fs::read_to_string(dir.join("ratelimit.yaml")).expect("read"),
            "domain: gateway\n"
        );

        // An abandoned write leaves nothing in either directory.
        let mut staged = Staged::new(vec![("ratelimit.yaml", staging.clone())]);
        drop(staged.create("ratelimit.yaml").expect("create"));
        drop(staged);
        assert!(names(&staging).is_empty());
        assert_eq!(names(&dir), ["ratelimit.yaml"]);
    }
}
