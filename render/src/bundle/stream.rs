//! `bundle.json` read as a stream (docs/design.md#bundle-format-and-hash): each file's string is
//! unescaped straight into a writer the caller chooses (a temp file beside its target) while it
//! is hashed and, for a `.json` file, re-serialised to check its canonical form. Neither the
//! document nor any file is ever held whole, so reading a 50k-route bundle costs buffers, not
//! copies of it. The checks and their order are `Bundle::parse` then `Bundle::verify`, except:
//!
//! - `entries` is only checked to be a JSON list (it is not part of the hash and delivery does
//!   not read it);
//! - the files must come in strictly increasing name order, as the canonical writer puts them
//!   (the hash is taken over them in that order as they arrive);
//! - a `.json` file whose object keys are out of order is refused as not canonical, without the
//!   hash a `Value` (which sorts them) would have given it.
//!
//! The outer document is read by the small scanner below rather than serde_json, which holds
//! every string it reads whole; each file's own JSON goes through serde_json's reader, token by
//! token (`transcode::stream_top_level`).

use super::BundleError;
use crate::contract::{BUNDLE_FORMAT, CLUSTERS_FILE, RATE_LIMIT_FILE, ROUTES_FILE};
use crate::hash::{is_json, FilesHasher};
use crate::transcode::stream_top_level;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{self, BufRead, BufReader, Read, Write};

/// serde_json's nesting limit, kept for the values skipped here.
const MAX_DEPTH: usize = 128;

/// How much of a file is handled at a time: read out of its string, and gathered before it is
/// hashed. A file's string arrives with an escape every few bytes (each quote and newline of the
/// JSON inside it); taken piece by piece, every step between the reader and the digests would
/// run per escape.
const PIECE: usize = 64 * 1024;

/// A bundle read by [`read_bundle`]: every check passed, and the caller's writers hold the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedBundle {
    /// The stated hash, which the files were found to have.
    pub hash: String,
    /// The files' names, in order.
    pub files: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The bytes are not a bundle this build delivers.
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

/// Reads `bundle.json` from `reader`. Each file's content goes to the writer `create(name)`
/// returns (`None`: the file is checked and dropped). Only the returned `Ok` means the files
/// written are the bundle's and verified; on an error the caller discards what it was given.
pub fn read_bundle<R: BufRead, W: Write>(
    reader: R,
    create: impl FnMut(&str) -> io::Result<Option<W>>,
) -> Result<StreamedBundle, StreamError> {
    let mut found = Found::default();
    let mut scanner = Scanner { r: reader, pos: 0 };
    scanner
        .document(&mut found, create)
        .map_err(|fail| fail.into_error())?;
    found.verdict()
}

/// Everything the document said, judged once it has been read to its end.
#[derive(Default)]
struct Found {
    format: Option<Result<(), String>>,
    hash: Option<String>,
    entries: bool,
    files_seen: bool,
    /// The first way the document is not a format-1 bundle (after the format is checked).
    structure: Option<String>,
    files: Vec<FileFound>,
    hasher: Option<FilesHasher>,
}

struct FileFound {
    name: String,
    /// Why its content is refused (not JSON, not an object, keys out of order), if it is.
    refused: Option<BundleError>,
    canonical: bool,
    version_info: Option<String>,
}

impl Found {
    fn structure(&mut self, why: String) {
        self.structure.get_or_insert(why);
    }

    /// `Bundle::parse`'s and `Bundle::verify`'s refusals, in their order.
    fn verdict(self) -> Result<StreamedBundle, StreamError> {
        match self.format {
            Some(Ok(())) => {}
            Some(Err(found)) => return Err(BundleError::UnknownFormat { found }.into()),
            None => {
                return Err(BundleError::UnknownFormat {
                    found: "missing".into(),
                }
                .into())
            }
        }
        let missing_field = [
            (!self.entries, "entries"),
            (!self.files_seen, "files"),
            (self.hash.is_none(), "hash"),
        ]
        .into_iter()
        .find_map(|(missing, field)| missing.then(|| format!("missing field `{field}`")));
        if let Some(why) = self.structure.or(missing_field) {
            return Err(bundle_json(why).into());
        }
        let hash = self.hash.unwrap_or_default();
        for file in [CLUSTERS_FILE, ROUTES_FILE, RATE_LIMIT_FILE] {
            if !self.files.iter().any(|f| f.name == file) {
                return Err(BundleError::MissingFile { file }.into());
            }
        }
        let mut files = self.files;
        if let Some(refused) = files.iter_mut().find_map(|f| f.refused.take()) {
            return Err(refused.into());
        }
        let computed = self.hasher.unwrap_or_else(FilesHasher::new).finish();
        if computed != hash {
            return Err(BundleError::HashMismatch {
                stated: hash,
                computed,
            }
            .into());
        }
        for file in files.iter().filter(|f| is_json(&f.name)) {
            // The hash ignores formatting; this makes any changed byte an error all the same.
            if !file.canonical {
                return Err(BundleError::NotCanonical {
                    file: file.name.clone(),
                }
                .into());
            }
            if file.version_info.as_deref() != Some(hash.as_str()) {
                return Err(BundleError::VersionInfo {
                    file: file.name.clone(),
                    found: file.version_info.clone(),
                    expected: hash,
                }
                .into());
            }
        }
        Ok(StreamedBundle {
            hash,
            files: files.into_iter().map(|f| f.name).collect(),
        })
    }
}

fn bundle_json(reason: String) -> BundleError {
    BundleError::Json {
        what: "bundle".into(),
        reason,
    }
}

/// Why reading stopped before the end of the document.
enum Fail {
    /// Not JSON: the message and the byte offset (of the decompressed document).
    Syntax(String),
    Read(io::Error),
    Write {
        file: String,
        source: io::Error,
    },
}

impl Fail {
    fn into_error(self) -> StreamError {
        match self {
            Fail::Syntax(reason) => bundle_json(reason).into(),
            Fail::Read(e) => StreamError::Read(e),
            Fail::Write { file, source } => StreamError::Write { file, source },
        }
    }

    /// A failure that came up through a `Read` (a file's string being read by serde_json).
    fn from_io(e: io::Error, file: &str) -> Fail {
        if e.get_ref().is_some_and(|inner| inner.is::<Syntax>()) {
            let syntax = e
                .into_inner()
                .and_then(|inner| inner.downcast::<Syntax>().ok());
            return Fail::Syntax(syntax.map(|s| s.0).unwrap_or_default());
        }
        if e.get_ref().is_some_and(|inner| inner.is::<WriteFailed>()) {
            let source = e
                .into_inner()
                .and_then(|inner| inner.downcast::<WriteFailed>().ok())
                .map(|w| w.0)
                .unwrap_or_else(|| io::Error::other("write failed"));
            return Fail::Write {
                file: file.to_string(),
                source,
            };
        }
        Fail::Read(e)
    }
}

/// A syntax error met inside a string, carried through `io::Read`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Syntax(String);

/// A writer's error, carried through `io::Read`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct WriteFailed(io::Error);

/// The outer document, byte by byte from a buffered reader.
struct Scanner<R> {
    r: R,
    /// Bytes consumed so far: where an error is.
    pos: u64,
}

impl<R: BufRead> Scanner<R> {
    fn syntax(&self, what: impl std::fmt::Display) -> Fail {
        Fail::Syntax(format!("{what} at byte {}", self.pos))
    }

    fn peek(&mut self) -> Result<Option<u8>, Fail> {
        Ok(self.r.fill_buf().map_err(Fail::Read)?.first().copied())
    }

    fn bump(&mut self) {
        self.r.consume(1);
        self.pos += 1;
    }

    /// The next byte that is not whitespace, not consumed.
    fn peek_token(&mut self) -> Result<Option<u8>, Fail> {
        loop {
            match self.peek()? {
                Some(b' ' | b'\n' | b'\r' | b'\t') => self.bump(),
                other => return Ok(other),
            }
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), Fail> {
        match self.peek_token()? {
            Some(b) if b == byte => {
                self.bump();
                Ok(())
            }
            Some(b) => Err(self.syntax(format!(
                "expected `{}`, found `{}`",
                byte as char,
                (b as char).escape_default()
            ))),
            None => Err(self.syntax(format!("EOF while expecting `{}`", byte as char))),
        }
    }

    /// After a member or an item: whether another follows (`,`) or the container ends.
    fn more(&mut self, close: u8) -> Result<bool, Fail> {
        match self.peek_token()? {
            Some(b',') => {
                self.bump();
                Ok(true)
            }
            Some(b) if b == close => {
                self.bump();
                Ok(false)
            }
            _ => Err(self.syntax(format!("expected `,` or `{}`", close as char))),
        }
    }

    fn document<W: Write>(
        &mut self,
        found: &mut Found,
        mut create: impl FnMut(&str) -> io::Result<Option<W>>,
    ) -> Result<(), Fail> {
        if self.peek_token()? != Some(b'{') {
            // JSON, but no bundle of any format: `format` is missing.
            self.skip_value(0)?;
        } else {
            self.bump();
            if self.peek_token()? == Some(b'}') {
                self.bump();
            } else {
                loop {
                    let key = self.key()?;
                    self.member(&key, found, &mut create)?;
                    if !self.more(b'}')? {
                        break;
                    }
                }
            }
        }
        match self.peek_token()? {
            None => Ok(()),
            Some(_) => Err(self.syntax("trailing characters")),
        }
    }

    /// A member's key and its colon.
    fn key(&mut self) -> Result<String, Fail> {
        self.expect(b'"')?;
        let mut key = Vec::new();
        StrReader::new(self)
            .read_to_end(&mut key)
            .map_err(|e| Fail::from_io(e, ""))?;
        self.expect(b':')?;
        // The string reader lets only UTF-8 through.
        Ok(String::from_utf8(key).unwrap_or_default())
    }

    fn member<W: Write>(
        &mut self,
        key: &str,
        found: &mut Found,
        create: &mut impl FnMut(&str) -> io::Result<Option<W>>,
    ) -> Result<(), Fail> {
        let next = self.peek_token()?;
        let seen = match key {
            "entries" => std::mem::replace(&mut found.entries, true),
            "files" => std::mem::replace(&mut found.files_seen, true),
            "format" => found.format.is_some(),
            "hash" => found.hash.is_some(),
            other => {
                found.structure(format!(
                    "unknown field `{other}`, expected one of `entries`, `files`, `format`, `hash`"
                ));
                return self.skip_value(0);
            }
        };
        if seen {
            found.structure(format!("duplicate field `{key}`"));
        }
        match (key, next) {
            ("entries", Some(b'[')) => self.skip_value(0),
            ("files", Some(b'{')) => self.files(found, create),
            ("format", _) => {
                found.format = Some(self.format()?);
                Ok(())
            }
            ("hash", Some(b'"')) => {
                self.bump();
                let mut hash = Vec::new();
                StrReader::new(self)
                    .read_to_end(&mut hash)
                    .map_err(|e| Fail::from_io(e, ""))?;
                found.hash = Some(String::from_utf8(hash).unwrap_or_default());
                Ok(())
            }
            (field, _) => {
                let expected = match field {
                    "entries" => "a list",
                    "files" => "a map of file names to strings",
                    _ => "a string",
                };
                found.structure(format!("invalid type for `{field}`, expected {expected}"));
                self.skip_value(0)
            }
        }
    }

    /// `format`: `Ok` when it is the number this build reads, else the value found (as
    /// `Bundle::parse` names it).
    fn format(&mut self) -> Result<Result<(), String>, Fail> {
        let found = match self.peek_token()? {
            Some(b'-' | b'0'..=b'9') => {
                let text = self.number()?;
                let number: Value = serde_json::from_str(&text).map_err(|e| {
                    Fail::Syntax(format!("{e} in `format` before byte {}", self.pos))
                })?;
                if number.as_u64() == Some(u64::from(BUNDLE_FORMAT)) {
                    return Ok(Ok(()));
                }
                number.to_string()
            }
            Some(b'"') => {
                self.bump();
                let mut text = Vec::new();
                StrReader::new(self)
                    .read_to_end(&mut text)
                    .map_err(|e| Fail::from_io(e, ""))?;
                Value::String(String::from_utf8(text).unwrap_or_default()).to_string()
            }
            Some(b'[') => {
                self.skip_value(0)?;
                "a list".into()
            }
            Some(b'{') => {
                self.skip_value(0)?;
                "an object".into()
            }
            _ => {
                let start = self.pos;
                self.skip_value(0)?;
                format!("the literal at byte {start}")
            }
        };
        Ok(Err(found))
    }

    /// The `files` object: each file's string through its checks into its writer.
    fn files<W: Write>(
        &mut self,
        found: &mut Found,
        create: &mut impl FnMut(&str) -> io::Result<Option<W>>,
    ) -> Result<(), Fail> {
        self.expect(b'{')?;
        if self.peek_token()? == Some(b'}') {
            self.bump();
            return Ok(());
        }
        let hasher = found.hasher.get_or_insert_with(FilesHasher::new);
        let mut last: Option<String> = None;
        let mut structure = None;
        loop {
            let name = self.key()?;
            if last.as_ref().is_some_and(|last| *last >= name) {
                structure.get_or_insert(format!(
                    "files are not in name order at `{name}` (each name once, sorted, as a \
                     bundle is written)"
                ));
            }
            if self.peek_token()? == Some(b'"') {
                self.bump();
                let file = self.file(&name, hasher, create)?;
                found.files.push(file);
            } else {
                structure
                    .get_or_insert(format!("invalid type for file `{name}`, expected a string"));
                self.skip_value(0)?;
            }
            last = Some(name);
            if !self.more(b'}')? {
                break;
            }
        }
        if let Some(why) = structure {
            found.structure(why);
        }
        Ok(())
    }

    /// One file's string (its opening quote read): unescaped into its writer, hashed, and for a
    /// `.json` file re-serialised and compared with its bytes by digest.
    fn file<W: Write>(
        &mut self,
        name: &str,
        hasher: &mut FilesHasher,
        create: &mut impl FnMut(&str) -> io::Result<Option<W>>,
    ) -> Result<FileFound, Fail> {
        let write_failed = |source| Fail::Write {
            file: name.to_string(),
            source,
        };
        let out = create(name).map_err(write_failed)?;
        let mut raw = Tee {
            src: StrReader::new(self),
            out,
            digest: Sha256::new(),
        };
        let mut found = FileFound {
            name: name.to_string(),
            refused: None,
            canonical: true,
            version_info: None,
        };
        hasher.begin(name);
        if is_json(name) {
            let mut whole = Gathered::new(Sha256::new());
            let mut hashed = Gathered::new(&mut *hasher);
            // By value: serde_json reads byte by byte, which std makes cheap for a `BufReader`
            // (not for a reference to one).
            let streamed = stream_top_level(
                BufReader::with_capacity(PIECE, &mut raw),
                &mut |b: &[u8]| whole.put(b),
                &mut |b: &[u8]| hashed.put(b),
            );
            hashed.flush();
            match streamed {
                Ok(streamed) if !streamed.is_object => {
                    found.refused = Some(BundleError::NotAnObject {
                        file: name.to_string(),
                    })
                }
                Ok(streamed) if !streamed.keys_in_order => {
                    found.refused = Some(BundleError::NotCanonical {
                        file: name.to_string(),
                    })
                }
                Ok(streamed) => found.version_info = streamed.version_info,
                Err(e) if e.is_io() => return Err(Fail::from_io(e.into(), name)),
                Err(e) => {
                    found.refused = Some(BundleError::Json {
                        what: name.to_string(),
                        reason: e.to_string(),
                    })
                }
            }
            // What serde_json left unread (after an error) still goes to the writer, so the
            // document can be read on.
            io::copy(&mut raw, &mut io::sink()).map_err(|e| Fail::from_io(e, name))?;
            whole.flush();
            found.canonical = whole.sink.finalize() == raw.digest.clone().finalize();
        } else {
            let mut buf = vec![0u8; PIECE];
            loop {
                let n = raw.read(&mut buf).map_err(|e| Fail::from_io(e, name))?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
        }
        hasher.end();
        if let Some(out) = raw.out.as_mut() {
            out.flush().map_err(write_failed)?;
        }
        Ok(found)
    }

    /// Any JSON value, checked and thrown away.
    fn skip_value(&mut self, depth: usize) -> Result<(), Fail> {
        if depth > MAX_DEPTH {
            return Err(self.syntax("recursion limit exceeded"));
        }
        match self.peek_token()? {
            Some(b'{') => {
                self.bump();
                if self.peek_token()? == Some(b'}') {
                    self.bump();
                    return Ok(());
                }
                loop {
                    self.key()?;
                    self.skip_value(depth + 1)?;
                    if !self.more(b'}')? {
                        return Ok(());
                    }
                }
            }
            Some(b'[') => {
                self.bump();
                if self.peek_token()? == Some(b']') {
                    self.bump();
                    return Ok(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    if !self.more(b']')? {
                        return Ok(());
                    }
                }
            }
            Some(b'"') => {
                self.bump();
                io::copy(&mut StrReader::new(self), &mut io::sink())
                    .map_err(|e| Fail::from_io(e, ""))?;
                Ok(())
            }
            Some(b'-' | b'0'..=b'9') => self.number().map(drop),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(_) => Err(self.syntax("expected a value")),
            None => Err(self.syntax("EOF while parsing a value")),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Fail> {
        for &expected in word {
            if self.peek()? != Some(expected) {
                return Err(self.syntax("expected a value"));
            }
            self.bump();
        }
        Ok(())
    }

    /// A number's text, checked against JSON's grammar:
    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Result<String, Fail> {
        let mut text = String::new();
        if self.peek()? == Some(b'-') {
            self.take(&mut text);
        }
        match self.peek()? {
            Some(b'0') => self.take(&mut text),
            Some(b'1'..=b'9') => self.digits(&mut text)?,
            _ => return Err(self.syntax("invalid number")),
        }
        if self.peek()? == Some(b'.') {
            self.take(&mut text);
            if !matches!(self.peek()?, Some(b'0'..=b'9')) {
                return Err(self.syntax("invalid number"));
            }
            self.digits(&mut text)?;
        }
        if matches!(self.peek()?, Some(b'e' | b'E')) {
            self.take(&mut text);
            if matches!(self.peek()?, Some(b'+' | b'-')) {
                self.take(&mut text);
            }
            if !matches!(self.peek()?, Some(b'0'..=b'9')) {
                return Err(self.syntax("invalid number"));
            }
            self.digits(&mut text)?;
        }
        Ok(text)
    }

    /// The byte just peeked, onto `text`.
    fn take(&mut self, text: &mut String) {
        if let Ok(Some(b)) = self.peek() {
            text.push(b as char);
            self.bump();
        }
    }

    fn digits(&mut self, text: &mut String) -> Result<(), Fail> {
        while let Some(b @ b'0'..=b'9') = self.peek()? {
            text.push(b as char);
            self.bump();
        }
        Ok(())
    }
}

/// A JSON string's content (its opening quote already read), unescaped, as a reader: it ends at
/// the closing quote. Lets through only what serde_json would: UTF-8, no raw control
/// characters, valid escapes and surrogate pairs.
struct StrReader<'s, R> {
    sc: &'s mut Scanner<R>,
    done: bool,
    /// An escape's UTF-8 bytes not yet handed out.
    pending: [u8; 4],
    pending_at: usize,
    pending_len: usize,
    utf8: Utf8Check,
}

impl<'s, R: BufRead> StrReader<'s, R> {
    fn new(sc: &'s mut Scanner<R>) -> Self {
        StrReader {
            sc,
            done: false,
            pending: [0; 4],
            pending_at: 0,
            pending_len: 0,
            utf8: Utf8Check::default(),
        }
    }

    fn syntax(&self, what: &str) -> io::Error {
        io::Error::other(Syntax(format!(
            "{what} while parsing a string at byte {}",
            self.sc.pos
        )))
    }

    fn next_byte(&mut self) -> io::Result<u8> {
        let byte = self.sc.r.fill_buf()?.first().copied();
        match byte {
            Some(b) => {
                self.sc.bump();
                Ok(b)
            }
            None => Err(self.syntax("EOF")),
        }
    }

    fn hex4(&mut self) -> io::Result<u32> {
        let mut n = 0;
        for _ in 0..4 {
            let digit = (self.next_byte()? as char)
                .to_digit(16)
                .ok_or_else(|| self.syntax("invalid escape"))?;
            n = n * 16 + digit;
        }
        Ok(n)
    }

    /// The escape after a backslash, into `pending`.
    fn escape(&mut self) -> io::Result<()> {
        let c = match self.next_byte()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            _ => return Err(self.syntax("invalid escape")),
        };
        self.pending_len = c.encode_utf8(&mut self.pending).len();
        self.pending_at = 0;
        Ok(())
    }

    fn unicode_escape(&mut self) -> io::Result<char> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if self.next_byte()? != b'\\' || self.next_byte()? != b'u' {
                    return Err(self.syntax("lone leading surrogate in hex escape"));
                }
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.syntax("lone leading surrogate in hex escape"));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.syntax("lone trailing surrogate in hex escape")),
            code => code,
        };
        char::from_u32(code).ok_or_else(|| self.syntax("invalid unicode code point"))
    }
}

impl<R: BufRead> Read for StrReader<'_, R> {
    /// Fills `buf` across escapes, up to the end of the string.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.piece(&mut buf[filled..])? {
                0 => break,
                n => filled += n,
            }
        }
        Ok(filled)
    }
}

impl<R: BufRead> StrReader<'_, R> {
    /// The next run of plain bytes, or an escape's bytes; 0 at the end of the string. An error
    /// ends the read: whatever `read` had gathered before it belongs to a document refused.
    fn piece(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.pending_at < self.pending_len {
                let n = (self.pending_len - self.pending_at).min(buf.len());
                buf[..n].copy_from_slice(&self.pending[self.pending_at..self.pending_at + n]);
                self.pending_at += n;
                return Ok(n);
            }
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            let avail = self.sc.r.fill_buf()?;
            if avail.is_empty() {
                return Err(self.syntax("EOF"));
            }
            let plain = avail
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(avail.len());
            if plain > 0 {
                let n = plain.min(buf.len());
                buf[..n].copy_from_slice(&avail[..n]);
                self.sc.r.consume(n);
                self.sc.pos += n as u64;
                if !self.utf8.feed(&buf[..n]) {
                    return Err(self.syntax("invalid UTF-8"));
                }
                return Ok(n);
            }
            let special = avail[0];
            // An escape or the end: a multi-byte character must be complete before either.
            if !self.utf8.is_complete() {
                return Err(self.syntax("invalid UTF-8"));
            }
            match special {
                b'"' => {
                    self.sc.bump();
                    self.done = true;
                }
                b'\\' => {
                    self.sc.bump();
                    self.escape()?;
                }
                _ => return Err(self.syntax("control character (\\u0000-\\u001F) found")),
            }
        }
    }
}

/// UTF-8 checked across the pieces a string arrives in.
#[derive(Default)]
struct Utf8Check {
    /// The start of a character cut by the end of the last piece.
    carry: [u8; 4],
    len: usize,
}

impl Utf8Check {
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        while self.len > 0 {
            let Some((&b, rest)) = bytes.split_first() else {
                return true;
            };
            self.carry[self.len] = b;
            self.len += 1;
            bytes = rest;
            match std::str::from_utf8(&self.carry[..self.len]) {
                Ok(_) => self.len = 0,
                Err(e) if e.error_len().is_some() || self.len == 4 => return false,
                Err(_) => {}
            }
        }
        match std::str::from_utf8(bytes) {
            Ok(_) => true,
            Err(e) if e.error_len().is_some() => false,
            Err(e) => {
                let rest = &bytes[e.valid_up_to()..];
                self.carry[..rest.len()].copy_from_slice(rest);
                self.len = rest.len();
                true
            }
        }
    }

    fn is_complete(&self) -> bool {
        self.len == 0
    }
}

/// Pieces of canonical output gathered before they go to a digest: one call per [`PIECE`], not
/// one per token.
struct Gathered<S> {
    sink: S,
    buf: Vec<u8>,
}

/// What [`Gathered`] feeds.
trait Digests {
    fn digest(&mut self, bytes: &[u8]);
}

impl Digests for Sha256 {
    fn digest(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

impl Digests for &mut FilesHasher {
    fn digest(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

impl<S: Digests> Gathered<S> {
    fn new(sink: S) -> Self {
        Gathered {
            sink,
            buf: Vec::with_capacity(PIECE),
        }
    }

    fn put(&mut self, bytes: &[u8]) {
        if self.buf.len() + bytes.len() > PIECE {
            self.flush();
        }
        if bytes.len() > PIECE {
            self.sink.digest(bytes);
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }

    fn flush(&mut self) {
        self.sink.digest(&self.buf);
        self.buf.clear();
    }
}

/// A file's bytes on their way: into the caller's writer and a digest of them.
struct Tee<'s, R, W> {
    src: StrReader<'s, R>,
    out: Option<W>,
    digest: Sha256,
}

impl<R: BufRead, W: Write> Read for Tee<'_, R, W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.src.read(buf)?;
        self.digest.update(&buf[..n]);
        if let Some(out) = self.out.as_mut() {
            out.write_all(&buf[..n])
                .map_err(|e| io::Error::other(WriteFailed(e)))?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::Bundle;
    use crate::canonical::to_json_bytes;
    use crate::hash::compute_hash;
    use serde_json::json;
    use std::collections::BTreeMap;

    /// A bundle that verifies: three files stamped with their hash.
    fn good() -> Bundle {
        let mut files = BTreeMap::new();
        let clusters = json!({ "resources": [{ "name": "a", "n": 1.5 }], "type_url": "t" });
        let routes = json!({ "resources": [{ "name": "r", "s": "é \" \\ \u{1} ✓ 😀" }] });
        files.insert(CLUSTERS_FILE.to_string(), to_json_bytes(&clusters));
        files.insert(ROUTES_FILE.to_string(), to_json_bytes(&routes));
        files.insert(RATE_LIMIT_FILE.to_string(), "domain: gateway\n".to_string());
        let hash = compute_hash(&files).expect("hashes");
        for (name, mut doc) in [(CLUSTERS_FILE, clusters), (ROUTES_FILE, routes)] {
            doc["version_info"] = Value::String(hash.clone());
            files.insert(name.to_string(), to_json_bytes(&doc));
        }
        let bundle = Bundle {
            entries: vec![],
            files,
            format: BUNDLE_FORMAT,
            hash,
        };
        bundle.verify().expect("verifies");
        bundle
    }

    /// Reads `text` a few bytes at a time (so every boundary is crossed), keeping every file.
    fn read(
        text: &[u8],
    ) -> (
        Result<StreamedBundle, StreamError>,
        BTreeMap<String, Vec<u8>>,
    ) {
        let kept = std::cell::RefCell::new(BTreeMap::new());
        let result = read_bundle(BufReader::with_capacity(7, text), |name| {
            kept.borrow_mut().insert(name.to_string(), Vec::new());
            Ok(Some(Keep(name.to_string(), &kept)))
        });
        (result, kept.into_inner())
    }

    struct Keep<'a>(String, &'a std::cell::RefCell<BTreeMap<String, Vec<u8>>>);

    impl Write for Keep<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut kept = self.1.borrow_mut();
            kept.entry(self.0.clone())
                .or_default()
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The old path's verdict on the same bytes.
    fn in_memory(text: &[u8]) -> Result<String, BundleError> {
        let bundle = Bundle::parse(text)?;
        bundle.verify()?;
        Ok(bundle.hash)
    }

    fn verdict(text: &[u8]) -> Result<String, String> {
        read(text).0.map(|b| b.hash).map_err(|e| match e {
            StreamError::Bundle(e) => variant(&e),
            other => format!("{other}"),
        })
    }

    fn variant(e: &BundleError) -> String {
        format!("{e:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn a_good_bundle_reads_to_its_files_compact_or_pretty() {
        let bundle = good();
        for text in [
            bundle.to_json(),
            serde_json::to_string(&bundle).expect("serialises"),
        ] {
            let (result, kept) = read(text.as_bytes());
            let streamed = result.expect("verifies");
            assert_eq!(streamed.hash, bundle.hash);
            assert_eq!(
                streamed.files,
                bundle.files.keys().cloned().collect::<Vec<_>>()
            );
            for (name, content) in &bundle.files {
                assert_eq!(kept[name], content.as_bytes(), "{name}");
            }
        }
    }

    /// Every way the in-memory path refuses a bundle, refused here as the same error.
    #[test]
    fn refuses_what_parse_and_verify_refuse() {
        let bundle = good();
        let edited = |edit: &dyn Fn(&mut Bundle)| {
            let mut b = bundle.clone();
            edit(&mut b);
            b.to_json()
        };
        let routes_text = bundle.files[ROUTES_FILE].clone();
        let cases: Vec<(&str, String)> = vec![
            (
                "tampered yaml",
                edited(&|b| {
                    b.files
                        .insert(RATE_LIMIT_FILE.into(), "domain: other\n".into());
                }),
            ),
            (
                "reformatted json",
                edited(&|b| {
                    let doc: Value = serde_json::from_str(&routes_text).expect("json");
                    b.files.insert(
                        ROUTES_FILE.into(),
                        serde_json::to_string(&doc).expect("json"),
                    );
                }),
            ),
            (
                "wrong version_info",
                edited(&|b| {
                    let text = routes_text.replace(&b.hash, "sha256:other");
                    b.files.insert(ROUTES_FILE.into(), text);
                }),
            ),
            (
                "missing file",
                edited(&|b| {
                    b.files.remove(RATE_LIMIT_FILE);
                }),
            ),
            (
                "not json",
                edited(&|b| {
                    b.files
                        .insert(CLUSTERS_FILE.into(), "{\"resources\": [".into());
                }),
            ),
            (
                "not an object",
                edited(&|b| {
                    b.files.insert(CLUSTERS_FILE.into(), "[1, 2]\n".into());
                }),
            ),
            ("unknown format", edited(&|b| b.format = 2)),
            (
                "truncated",
                bundle.to_json()[..bundle.to_json().len() / 2].to_string(),
            ),
            ("trailing", format!("{} x", bundle.to_json())),
            ("not an object at all", "[]".into()),
            (
                "no format",
                r#"{"entries":[],"files":{},"hash":"h"}"#.into(),
            ),
            (
                "format as text",
                r#"{"entries":[],"files":{},"format":"1","hash":"h"}"#.into(),
            ),
            (
                "format 1.0",
                r#"{"entries":[],"files":{},"format":1.0,"hash":"h"}"#.into(),
            ),
            ("no hash", r#"{"entries":[],"files":{},"format":1}"#.into()),
            (
                "unknown field",
                r#"{"entries":[],"extra":1,"files":{},"format":1,"hash":"h"}"#.into(),
            ),
            (
                "files not strings",
                r#"{"entries":[],"files":{"a":1},"format":1,"hash":"h"}"#.into(),
            ),
            (
                "bad escape",
                r#"{"entries":[],"files":{"a":"\q"},"format":1,"hash":"h"}"#.into(),
            ),
            (
                "lone surrogate",
                r#"{"entries":[],"files":{"a":"\ud800"},"format":1,"hash":"h"}"#.into(),
            ),
            (
                "control character",
                "{\"entries\":[],\"files\":{\"a\":\"\u{1}\"},\"format\":1,\"hash\":\"h\"}".into(),
            ),
        ];
        for (what, text) in &cases {
            let old = in_memory(text.as_bytes()).map_err(|e| variant(&e));
            assert!(old.is_err(), "{what}: the in-memory path refuses it");
            assert_eq!(verdict(text.as_bytes()), old, "{what}");
        }
        // Bytes that are not UTF-8 inside a file.
        let mut text = bundle.to_json().into_bytes();
        let at = text.windows(6).position(|w| w == b"domain").expect("yaml");
        text[at] = 0xff;
        assert_eq!(verdict(&text), Err("Json".into()));
        assert!(in_memory(&text).is_err());
    }

    #[test]
    fn out_of_order_files_and_keys_are_refused() {
        let bundle = good();
        let text = bundle.to_json();
        let clusters_at = text.find("\"clusters.json\"").expect("clusters");
        let rules_at = text.find("\"ratelimit.yaml\"").expect("rules");
        // Swap two file names (and so their order).
        let swapped = format!(
            "{}\"ratelimit.yaml\"{}\"clusters.json\"{}",
            &text[..clusters_at],
            &text[clusters_at + 15..rules_at],
            &text[rules_at + 16..]
        );
        assert_eq!(verdict(swapped.as_bytes()), Err("Json".into()));
        let mut unordered = bundle.clone();
        unordered.files.insert(
            CLUSTERS_FILE.into(),
            format!(
                "{{\"version_info\": \"{}\", \"resources\": []}}",
                bundle.hash
            ),
        );
        assert_eq!(
            verdict(unordered.to_json().as_bytes()),
            Err("NotCanonical".into())
        );
    }

    #[test]
    fn utf8_is_checked_across_pieces() {
        let text = "aé✓😀z".as_bytes();
        for split in 0..text.len() {
            let mut check = Utf8Check::default();
            assert!(
                check.feed(&text[..split]) && check.feed(&text[split..]),
                "{split}"
            );
            assert!(check.is_complete());
        }
        let mut check = Utf8Check::default();
        assert!(check.feed(&[0xe2, 0x9c]) && !check.is_complete());
        assert!(!check.feed(b"x"));
    }
}
