//! A bundle's files while it is read and verified (docs/design.md#delivery): each file the target
//! delivers goes into a temp file in the directory it will be renamed into, the others are only
//! checked. Nothing is renamed here; a bundle that fails a check leaves no file behind (the temp
//! files are removed when dropped).

use crate::error::SidecarError;
use crate::files::TempFile;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::PathBuf;

#[derive(Debug)]
pub struct Staged {
    /// The files the target delivers, and the directory each goes into.
    places: Vec<(&'static str, PathBuf)>,
    files: BTreeMap<&'static str, TempFile>,
}

impl Staged {
    pub fn new(places: Vec<(&'static str, PathBuf)>) -> Staged {
        Staged {
            places,
            files: BTreeMap::new(),
        }
    }

    /// Where file `name` of the bundle being read goes: a new temp file when the target
    /// delivers it (replacing one of the same name), `None` for a file that is only checked.
    /// An error carries the `SidecarError` that names the file ([`Staged::error`]).
    pub fn create(&mut self, name: &str) -> io::Result<Option<BufWriter<File>>> {
        let Some((name, dir)) = self.places.iter().find(|(n, _)| *n == name) else {
            return Ok(None);
        };
        let temp = TempFile::create(dir, name).map_err(io::Error::other)?;
        let writer = temp.writer().map_err(io::Error::other)?;
        self.files.insert(name, temp);
        Ok(Some(writer))
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
