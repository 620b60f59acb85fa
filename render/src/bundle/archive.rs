//! Bundle format 2 as bytes (docs/design.md#bundle-format-and-hash): one tar whose members are
//! `manifest.json`, `signature.json` when signed, then each file as its own bytes in name order.
//! The manifest states the config hash and each file's size and SHA-256; the signature is over
//! the manifest's digest. A reader judges the signature before it writes a byte, then checks
//! each file's digest over exactly the bytes it writes.

use super::signature::{hex, Signature, Signer};
use super::BundleError;
use crate::canonical::to_json_bytes;
use crate::contract::{
    BUNDLE_FORMAT, CLUSTERS_FILE, JWT_FILE, MANIFEST_FILE, ROUTES_FILE, SIGNATURE_FILE,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};

/// The most a manifest or a signature may take; far above what either needs.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;
const MAX_SIGNATURE_BYTES: u64 = 1 << 10;
/// How much of a file is copied at a time.
const PIECE: usize = 64 * 1024;
const BLOCK: usize = 512;

/// `manifest.json`: fields in key order, so the derived `Serialize` writes them sorted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub files: Vec<ManifestFile>,
    pub format: u32,
    /// The config hash (`hash.rs`): each Envoy file's `version_info`, the `hash` metadata.
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    pub name: String,
    /// 64 lowercase hex digits over the file's bytes as they are in the archive.
    pub sha256: String,
    pub size: u64,
}

impl Manifest {
    /// Reads a manifest: a format this build does not know is refused before anything else, so
    /// an old reader never half-understands a newer bundle.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, BundleError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| BundleError::Json {
            what: MANIFEST_FILE.to_string(),
            reason: e.to_string(),
        })?;
        super::check_format(&value, BUNDLE_FORMAT)?;
        let manifest: Manifest =
            serde_json::from_value(value).map_err(|e| BundleError::Json {
                what: MANIFEST_FILE.to_string(),
                reason: e.to_string(),
            })?;
        for file in super::REQUIRED_FILES {
            if !manifest.files.iter().any(|f| f.name == file) {
                return Err(BundleError::MissingFile { file });
            }
        }
        for pair in manifest.files.windows(2) {
            if pair[0].name >= pair[1].name {
                return Err(BundleError::Manifest(format!(
                    "files must be listed once each in name order: {} then {}",
                    pair[0].name, pair[1].name
                )));
            }
        }
        for file in &manifest.files {
            if !super::REQUIRED_FILES.contains(&file.name.as_str())
                && !super::OPTIONAL_FILES.contains(&file.name.as_str())
            {
                return Err(BundleError::Manifest(format!(
                    "{}: not a file a bundle carries",
                    file.name
                )));
            }
        }
        Ok(manifest)
    }
}

/// A bundle ready to be put: its manifest (whose digest is what gets signed) and its files'
/// bytes, in archive order.
#[derive(Debug, Clone)]
pub struct Sealed {
    pub hash: String,
    pub manifest: Vec<u8>,
    files: Vec<(String, Vec<u8>)>,
}

impl Sealed {
    pub(super) fn new(hash: String, files: Vec<(String, Vec<u8>)>) -> Sealed {
        let manifest = Manifest {
            files: files
                .iter()
                .map(|(name, bytes)| ManifestFile {
                    name: name.clone(),
                    sha256: hex(&Sha256::digest(bytes)),
                    size: bytes.len() as u64,
                })
                .collect(),
            format: BUNDLE_FORMAT,
            hash: hash.clone(),
        };
        let manifest = serde_json::to_value(&manifest).expect("a manifest serialises");
        Sealed {
            hash,
            manifest: to_json_bytes(&manifest).into_bytes(),
            files,
        }
    }

    /// What KMS signs: the SHA-256 of the manifest.
    pub fn digest(&self) -> [u8; 32] {
        super::signature::manifest_digest(&self.manifest)
    }

    /// The archive's first members: the manifest and, when signed, the signature. With
    /// [`Sealed::tail`] after it, the whole archive; apart, so the files' (large) part can be
    /// compressed before the signature exists.
    pub fn head(&self, signature: Option<&Signature>) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 * BLOCK + self.manifest.len());
        member(&mut out, MANIFEST_FILE, &self.manifest);
        if let Some(signature) = signature {
            let value = serde_json::to_value(signature).expect("a signature serialises");
            member(&mut out, SIGNATURE_FILE, to_json_bytes(&value).as_bytes());
        }
        out
    }

    /// The files, then the end of the archive.
    pub fn tail(&self) -> Vec<u8> {
        let size: usize = self
            .files
            .iter()
            .map(|(_, b)| b.len() + 2 * BLOCK)
            .sum();
        let mut out = Vec::with_capacity(size + 2 * BLOCK);
        for (name, bytes) in &self.files {
            member(&mut out, name, bytes);
        }
        out.extend_from_slice(&[0u8; 2 * BLOCK]);
        out
    }

    /// The most bytes the archive takes decompressed: what `GATEWAY_MAX_BUNDLE_BYTES` bounds
    /// (a signature member counted at its largest).
    pub fn archive_len(&self) -> usize {
        let padded = |n: usize| BLOCK + n.div_ceil(BLOCK) * BLOCK;
        padded(self.manifest.len())
            + padded(MAX_SIGNATURE_BYTES as usize)
            + self.files.iter().map(|(_, b)| padded(b.len())).sum::<usize>()
            + 2 * BLOCK
    }

    /// The whole archive.
    pub fn archive(&self, signature: Option<&Signature>) -> Vec<u8> {
        let mut out = self.head(signature);
        out.extend_from_slice(&self.tail());
        out
    }
}

/// One regular-file member, byte-stable: ustar, mode 0644, owner 0, time 0.
fn member(out: &mut Vec<u8>, name: &str, bytes: &[u8]) {
    let mut header = tar::Header::new_ustar();
    header
        .set_path(name)
        .expect("bundle member names are short ASCII");
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(bytes);
    let pad = (BLOCK - bytes.len() % BLOCK) % BLOCK;
    out.extend_from_slice(&vec![0u8; pad]);
}

/// The end of each Envoy file: its `version_info`, the config hash, as the canonical writer puts
/// the last top-level member. Checked on the bytes as they pass, without parsing the file.
pub(super) fn version_info_trailer(hash: &str) -> String {
    format!("\n  \"version_info\": \"{hash}\"\n}}\n")
}

/// A bundle read by [`read_bundle`]: every check passed, and the caller's writers hold the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBundle {
    pub hash: String,
    pub signer: Signer,
    pub signature: Option<Signature>,
    pub manifest: Manifest,
}

#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The bytes are not a bundle this reader delivers.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The reader failed (its own error, as it gave it: a broken download, a bound passed).
    #[error("reading bundle.json")]
    Read(#[source] io::Error),
    /// A caller's writer failed.
    #[error("writing {file}")]
    Write {
        file: String,
        #[source]
        source: io::Error,
    },
}

/// Reads a format-2 bundle from `reader`. `judge` decides on the signature (given the manifest's
/// bytes) before any file is read; each file then goes to the writer `create(name)` returns
/// (`None`: checked and dropped). Only `Ok` means the files written are the bundle's, whole and
/// as signed; on an error the caller discards what it was given.
pub fn read_bundle<R: Read, W: Write>(
    reader: R,
    judge: impl FnOnce(&[u8], Option<&Signature>) -> Result<Signer, BundleError>,
    mut create: impl FnMut(&str) -> io::Result<Option<W>>,
) -> Result<ReadBundle, StreamError> {
    let failed = std::cell::Cell::new(false);
    let mut reader = Watched {
        inner: reader,
        failed: &failed,
    };
    // A format-1 bundle (JSON) is told apart by its first byte before tar sees it.
    let mut first = [0u8; 1];
    let n = reader.read(&mut first).map_err(StreamError::Read)?;
    if n == 0 {
        return Err(BundleError::NotAnArchive("it is empty".into()).into());
    }
    if first[0] == b'{' {
        return Err(BundleError::Format1.into());
    }
    let mut archive = tar::Archive::new(io::Cursor::new(first).chain(reader));
    let tar_error = |e: io::Error| {
        if failed.get() {
            StreamError::Read(e)
        } else {
            StreamError::Bundle(BundleError::NotAnArchive(e.to_string()))
        }
    };
    let mut entries = archive.entries().map_err(tar_error)?;
    let mut next = |expected: &str| -> Result<Option<tar::Entry<'_, _>>, StreamError> {
        match entries.next() {
            None => Ok(None),
            Some(Err(e)) => Err(tar_error(e)),
            Some(Ok(entry)) => {
                if entry.header().entry_type() != tar::EntryType::Regular {
                    return Err(BundleError::Member {
                        expected: expected.to_string(),
                        found: format!("a {:?} entry", entry.header().entry_type()),
                    }
                    .into());
                }
                Ok(Some(entry))
            }
        }
    };
    let name_of = |entry: &tar::Entry<'_, _>| String::from_utf8_lossy(&entry.path_bytes()).into_owned();

    let Some(mut entry) = next(MANIFEST_FILE)? else {
        return Err(BundleError::NotAnArchive("it has no members".into()).into());
    };
    if name_of(&entry) != MANIFEST_FILE {
        return Err(BundleError::Member {
            expected: MANIFEST_FILE.into(),
            found: name_of(&entry),
        }
        .into());
    }
    let manifest_bytes = read_small(&mut entry, MANIFEST_FILE, MAX_MANIFEST_BYTES).map_err(&tar_error)?;
    drop(entry);
    let manifest_bytes = manifest_bytes?;
    let manifest = Manifest::parse(&manifest_bytes)?;
    let first_file = &manifest.files[0].name;
    let mut entry = next(first_file)?;
    let mut signature = None;
    if let Some(e) = entry.as_mut().filter(|e| name_of(e) == SIGNATURE_FILE) {
        let bytes = read_small(e, SIGNATURE_FILE, MAX_SIGNATURE_BYTES).map_err(&tar_error)??;
        signature = Some(
            serde_json::from_slice::<Signature>(&bytes).map_err(|e| BundleError::Json {
                what: SIGNATURE_FILE.to_string(),
                reason: e.to_string(),
            })?,
        );
        drop(entry.take());
        entry = next(first_file)?;
    }
    let signer = judge(&manifest_bytes, signature.as_ref())?;

    let trailer = version_info_trailer(&manifest.hash);
    for (i, file) in manifest.files.iter().enumerate() {
        let mut e = match entry.take() {
            Some(e) => e,
            None => {
                return Err(BundleError::Member {
                    expected: file.name.clone(),
                    found: "the end of the archive".into(),
                }
                .into())
            }
        };
        if name_of(&e) != file.name {
            return Err(BundleError::Member {
                expected: file.name.clone(),
                found: name_of(&e),
            }
            .into());
        }
        if e.size() != file.size {
            return Err(BundleError::FileSize {
                file: file.name.clone(),
                stated: file.size,
                found: e.size(),
            }
            .into());
        }
        let writer = create(&file.name).map_err(|source| StreamError::Write {
            file: file.name.clone(),
            source,
        })?;
        let expect_trailer = [CLUSTERS_FILE, JWT_FILE, ROUTES_FILE]
            .contains(&file.name.as_str())
            .then_some(trailer.as_bytes());
        copy_checked(&mut e, writer, file, expect_trailer, &manifest.hash, &tar_error)?;
        drop(e);
        let following = manifest.files.get(i + 1).map_or("the end of the archive", |f| f.name.as_str());
        entry = next(following)?;
    }
    if let Some(extra) = entry {
        return Err(BundleError::Member {
            expected: "the end of the archive".into(),
            found: name_of(&extra),
        }
        .into());
    }
    Ok(ReadBundle {
        hash: manifest.hash.clone(),
        signer,
        signature,
        manifest,
    })
}

/// A member read whole, refused past `max` bytes.
fn read_small(
    entry: &mut impl Read,
    name: &str,
    max: u64,
) -> io::Result<Result<Vec<u8>, BundleError>> {
    let mut bytes = Vec::new();
    entry.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Ok(Err(BundleError::Manifest(format!(
            "{name} is larger than {max} bytes"
        ))));
    }
    Ok(Ok(bytes))
}

/// Copies one file into `writer` (if any), digesting exactly the bytes written, and checks its
/// digest and, for an Envoy file, that it ends with its `version_info` of the config hash.
fn copy_checked<W: Write>(
    entry: &mut impl Read,
    mut writer: Option<W>,
    file: &ManifestFile,
    trailer: Option<&[u8]>,
    hash: &str,
    tar_error: &impl Fn(io::Error) -> StreamError,
) -> Result<(), StreamError> {
    let write_error = |source| StreamError::Write {
        file: file.name.clone(),
        source,
    };
    let mut digest = Sha256::new();
    let keep = trailer.map_or(0, <[u8]>::len);
    let mut tail: Vec<u8> = Vec::with_capacity(keep + PIECE);
    let mut buf = vec![0u8; PIECE];
    loop {
        let n = entry.read(&mut buf).map_err(tar_error)?;
        if n == 0 {
            break;
        }
        let piece = &buf[..n];
        digest.update(piece);
        if let Some(w) = writer.as_mut() {
            w.write_all(piece).map_err(write_error)?;
        }
        if keep > 0 {
            tail.extend_from_slice(piece);
            if tail.len() > keep {
                tail.drain(..tail.len() - keep);
            }
        }
    }
    if let Some(w) = writer.as_mut() {
        w.flush().map_err(write_error)?;
    }
    let computed = hex(&digest.finalize());
    if computed != file.sha256 {
        return Err(BundleError::FileDigest {
            file: file.name.clone(),
            stated: file.sha256.clone(),
            computed,
        }
        .into());
    }
    if let Some(trailer) = trailer {
        if tail != trailer {
            return Err(BundleError::VersionInfo {
                file: file.name.clone(),
                found: None,
                expected: hash.to_string(),
            }
            .into());
        }
    }
    Ok(())
}

/// The reader under tar, marking whether an error was its own (a broken download, a bound
/// passed) rather than the archive's.
struct Watched<'a, R> {
    inner: R,
    failed: &'a std::cell::Cell<bool>,
}

impl<R: Read> Read for Watched<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|_| self.failed.set(true))
    }
}
