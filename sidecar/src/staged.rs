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
