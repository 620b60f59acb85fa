//! How `bundle.json` travels (docs/design.md#bundle-format-and-hash): published gzip-compressed
//! (`Content-Encoding: gzip`), as one or more gzip members read back as one stream, and read
//! either way. Versions written before compression are plain JSON and a restore copies a
//! version as it is, so a reader tells them apart by the bytes themselves: gzip starts with
//! `1f 8b`.

use flate2::read::MultiGzDecoder as GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::{self, Read, Write};

/// The object's `Content-Encoding` and `Content-Type` (a format-2 bundle is a tar).
pub const CONTENT_ENCODING: &str = "gzip";
pub const CONTENT_TYPE: &str = "application/x-tar";

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Decompressing would pass the bound: a bomb, or a bundle beyond `GATEWAY_MAX_BUNDLE_BYTES`.
    #[error("bundle.json decompresses to more than {max} bytes; at most {max} (GATEWAY_MAX_BUNDLE_BYTES)")]
    TooLarge { max: usize },
    #[error("bundle.json is not valid gzip")]
    Corrupt(#[source] std::io::Error),
}

/// The canonical bytes, gzip-compressed for the wire.
pub fn compress(canonical: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(canonical);
    encoder.finish().unwrap_or_default()
}

/// Whether `bytes` are gzip (a new version) rather than plain JSON (an old one).
pub fn is_compressed(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// The canonical bytes of an object as stored, compressed or not, never more than `max` of
/// them: decompression stops one byte past the bound, so a small gzip bomb costs at most `max`.
pub fn decode(stored: Vec<u8>, max: usize) -> Result<Vec<u8>, DecodeError> {
    if !is_compressed(&stored) {
        return Ok(stored);
    }
    let mut out = Vec::new();
    GzDecoder::new(stored.as_slice())
        .take((max as u64).saturating_add(1))
        .read_to_end(&mut out)
        .map_err(DecodeError::Corrupt)?;
    if out.len() > max {
        return Err(DecodeError::TooLarge { max });
    }
    Ok(out)
}

/// [`decode`] for a stream: the canonical bytes of an object as stored, read as they arrive and
/// never more than `max` of them decompressed. The reader's own errors come through as they
/// were; decoding's are `io::Error`s that carry a [`DecodeError`] (see [`decode_error`]).
pub fn decoder<R: Read + Send + 'static>(mut stored: R, max: usize) -> io::Result<Decoder> {
    // The first two bytes tell gzip from plain JSON, however the body is cut into pieces.
    let mut magic = Vec::with_capacity(GZIP_MAGIC.len());
    while magic.len() < GZIP_MAGIC.len() {
        let mut byte = [0u8];
        if stored.read(&mut byte)? == 0 {
            break;
        }
        magic.push(byte[0]);
    }
    let whole = io::Cursor::new(magic.clone()).chain(Marked(stored));
    Ok(if is_compressed(&magic) {
        Decoder::Gzip {
            gz: Box::new(GzDecoder::new(whole)),
            read: 0,
            max,
        }
    } else {
        Decoder::Plain(Box::new(whole))
    })
}

/// What [`decoder`] gives.
pub enum Decoder {
    Plain(Box<dyn Read + Send>),
    Gzip {
        gz: Box<dyn Read + Send>,
        /// Decompressed bytes so far.
        read: u64,
        max: usize,
    },
}

impl Read for Decoder {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoder::Plain(plain) => plain
                .read(buf)
                .map_err(|e| stored_error(e).unwrap_or_else(|other| other)),
            Decoder::Gzip { gz, read, max } => {
                let n = gz.read(buf).map_err(|e| match stored_error(e) {
                    Ok(stored) => stored,
                    Err(corrupt) => io::Error::other(DecodeError::Corrupt(corrupt)),
                })?;
                *read += n as u64;
                if *read > *max as u64 {
                    return Err(io::Error::other(DecodeError::TooLarge { max: *max }));
                }
                Ok(n)
            }
        }
    }
}

/// The [`DecodeError`] an error of a [`Decoder`] carries, if it is one of decoding's.
pub fn decode_error(e: io::Error) -> Result<DecodeError, io::Error> {
    if e.get_ref().is_some_and(|inner| inner.is::<DecodeError>()) {
        if let Some(Ok(decode)) = e.into_inner().map(|inner| inner.downcast::<DecodeError>()) {
            return Ok(*decode);
        }
        unreachable!("checked to be a DecodeError");
    }
    Err(e)
}

/// The stored reader, its errors marked as its own: gzip passes an error of the reader under it
/// through, and those must not read as corrupt gzip.
struct Marked<R>(R);

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct StoredError(io::Error);

impl<R: Read> Read for Marked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0
            .read(buf)
            .map_err(|e| io::Error::new(e.kind(), StoredError(e)))
    }
}

/// The stored reader's error as it was, or `Err` with an error of gzip's own.
fn stored_error(e: io::Error) -> Result<io::Error, io::Error> {
    if !e.get_ref().is_some_and(|inner| inner.is::<StoredError>()) {
        return Err(e);
    }
    match e.into_inner().map(|inner| inner.downcast::<StoredError>()) {
        Some(Ok(stored)) => Ok(stored.0),
        _ => unreachable!("checked to be a StoredError"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_passes_plain_json_through() {
        let json = br#"{"entries":[],"format":1}"#.repeat(100);
        let wire = compress(&json);
        assert!(is_compressed(&wire) && wire.len() < json.len());
        assert_eq!(decode(wire, json.len()).expect("decode"), json);
        assert_eq!(
            decode(json.clone(), 1).expect("plain"),
            json,
            "old versions are read as they are"
        );
    }

    #[test]
    fn a_bomb_stops_at_the_bound() {
        let bomb = compress(&vec![b' '; 8 << 20]);
        assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
        let err = decode(bomb, 1 << 20).expect_err("bounded");
        assert!(
            matches!(err, DecodeError::TooLarge { max } if max == 1 << 20),
            "{err}"
        );
        let truncated = compress(b"{}")[..10].to_vec();
        assert!(matches!(
            decode(truncated, 100),
            Err(DecodeError::Corrupt(_))
        ));
    }

    /// A reader that hands out one byte at a time, then fails if told to.
    struct Trickle(Vec<u8>, usize, bool);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.get(self.1) {
                Some(&b) if !buf.is_empty() => {
                    buf[0] = b;
                    self.1 += 1;
                    Ok(1)
                }
                _ if self.2 => Err(io::Error::new(io::ErrorKind::ConnectionReset, "body broke")),
                _ => Ok(0),
            }
        }
    }

    fn stream(stored: Vec<u8>, max: usize, fails: bool) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        decoder(Trickle(stored, 0, fails), max)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn the_stream_decodes_as_decode_does_and_keeps_the_readers_errors() {
        let json = br#"{"entries":[],"format":1}"#.repeat(100);
        assert_eq!(
            stream(compress(&json), json.len(), false).expect("gzip"),
            json
        );
        assert_eq!(stream(json.clone(), 1, false).expect("plain"), json);
        let bomb = compress(&vec![b' '; 8 << 20]);
        let err = stream(bomb, 1 << 20, false).expect_err("bounded");
        assert!(matches!(decode_error(err), Ok(DecodeError::TooLarge { max }) if max == 1 << 20));
        let truncated = compress(b"{}")[..10].to_vec();
        let err = stream(truncated, 100, false).expect_err("truncated");
        assert!(matches!(decode_error(err), Ok(DecodeError::Corrupt(_))));
        for stored in [compress(&json), json.clone()] {
            let err = stream(stored[..40].to_vec(), 1 << 20, true).expect_err("broken");
            let err = decode_error(err).expect_err("the reader's own error");
            assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
            assert_eq!(err.to_string(), "body broke");
        }
    }
}
