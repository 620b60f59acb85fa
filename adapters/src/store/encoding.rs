//! How `bundle.json` travels (docs/design.md#bundle-format-and-hash): published gzip-compressed
//! (`Content-Encoding: gzip`), read either way. Versions written before compression are plain
//! JSON and a restore copies a version as it is, so a reader tells them apart by the bytes
//! themselves: gzip starts with `1f 8b`, canonical JSON with `{`.

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::{Read, Write};

/// The object's `Content-Encoding`.
pub const CONTENT_ENCODING: &str = "gzip";

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
}
