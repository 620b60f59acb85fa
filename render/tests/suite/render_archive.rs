//! Bundle format 2 read as a stream: the signature judged before any file is written, each
//! file's digest over exactly the bytes written, and every kind of forged archive refused with
//! its reason.

use crate::support::{example_entries, render_examples};
use gateway_render::bundle::{
    read_bundle, ReadBundle, Sealed, Signature, SignatureError, Signer, StreamError, Trust,
    TrustedKey,
};
use gateway_render::contract::{CLUSTERS_FILE, ROUTES_FILE};
use gateway_render::{Bundle, BundleError};
use p256::ecdsa::signature::hazmat::PrehashSigner;
use p256::ecdsa::{Signature as Ecdsa, SigningKey};
use p256::pkcs8::EncodePublicKey;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_slice(&[seed; 32]).expect("scalar")
}

fn sign(key: &SigningKey, sealed: &Sealed) -> Signature {
    let sig: Ecdsa = key.sign_prehash(&sealed.digest()).expect("signs");
    Signature::new("arn:aws:kms:eu-west-1:111122223333:key/test", sig.to_der().as_bytes())
}

fn trust(key: &SigningKey) -> Trust {
    let pem = key
        .verifying_key()
        .to_public_key_pem(p256::pkcs8::LineEnding::LF)
        .expect("pem");
    Trust {
        keys: vec![TrustedKey::from_pem("trusted.pem", &pem).expect("key")],
        allow_unsigned: false,
    }
}

fn sealed() -> Sealed {
    Bundle::new(&render_examples(), &example_entries()).seal()
}

type Written = Rc<RefCell<Vec<(String, Vec<u8>)>>>;

/// Reads `bytes` as the sidecar does, recording every call in order: `judge` first, then each
/// file created (and what it was given).
fn read(bytes: &[u8], trust: &Trust) -> (Result<ReadBundle, StreamError>, Vec<String>, Written) {
    let calls = RefCell::new(Vec::new());
    let written: Written = Rc::default();
    let result = read_bundle(
        bytes,
        |manifest, signature| {
            calls.borrow_mut().push("judge".to_string());
            Ok(trust.judge(manifest, signature)?)
        },
        |name| {
            calls.borrow_mut().push(format!("create {name}"));
            written.borrow_mut().push((name.to_string(), Vec::new()));
            Ok(Some(Sink(written.clone())))
        },
    );
    let calls = calls.into_inner();
    (result, calls, written)
}

struct Sink(Written);
impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().last_mut().expect("created").1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn bundle_error(result: Result<ReadBundle, StreamError>) -> BundleError {
    match result {
        Err(StreamError::Bundle(e)) => e,
        other => panic!("expected a bundle error, got {other:?}"),
    }
}

#[test]
fn a_signed_bundle_is_judged_before_any_file_and_delivered_byte_for_byte() {
    let (k, sealed) = (key(7), sealed());
    let bytes = sealed.archive(Some(&sign(&k, &sealed)));
    let (result, calls, written) = read(&bytes, &trust(&k));
    let read = result.expect("verifies");
    assert_eq!(calls[0], "judge", "{calls:?}");
    assert!(matches!(read.signer, Signer::Key { ref name, .. } if name == "trusted.pem"));
    assert_eq!(read.hash, sealed.hash);
    let bundle = Bundle::parse(&bytes).expect("parses");
    for (name, bytes) in written.borrow().iter() {
        if let Some(text) = bundle.files.get(name) {
            assert_eq!(bytes, text.as_bytes(), "{name} as rendered");
        }
    }
    // Every rendered Envoy file ends with its version_info, which the reader checks unparsed.
    for name in [CLUSTERS_FILE, ROUTES_FILE] {
        let tail = format!("\n  \"version_info\": \"{}\"\n}}\n", sealed.hash);
        assert!(bundle.files[name].ends_with(&tail), "{name}");
    }
}

#[test]
fn unsigned_wrongly_signed_and_old_format_bundles_are_refused_before_any_file_is_written() {
    let (k, other, sealed) = (key(7), key(8), sealed());
    let cases: Vec<(&str, Vec<u8>, Box<dyn Fn(&BundleError) -> bool>)> = vec![
        (
            "unsigned",
            sealed.archive(None),
            Box::new(|e| matches!(e, BundleError::Signature(SignatureError::Unsigned))),
        ),
        (
            "signed by another key",
            sealed.archive(Some(&sign(&other, &sealed))),
            Box::new(|e| matches!(e, BundleError::Signature(SignatureError::NoTrustedKey { .. }))),
        ),
        (
            "format 1",
            br#"{"entries":[],"files":{},"format":1,"hash":"sha256:0"}"#.to_vec(),
            Box::new(|e| matches!(e, BundleError::Format1)),
        ),
    ];
    for (what, bytes, expected) in cases {
        let (result, calls, _) = read(&bytes, &trust(&k));
        let err = bundle_error(result);
        assert!(expected(&err), "{what}: {err}");
        assert!(!calls.iter().any(|c| c.starts_with("create")), "{what}: {calls:?}");
    }
}

/// The archive's byte offset of `name`'s data, and its length.
fn data_of(bytes: &[u8], name: &str) -> (usize, usize) {
    let mut archive = tar::Archive::new(bytes);
    for entry in archive.entries().expect("tar") {
        let entry = entry.expect("entry");
        if entry.path().expect("path").to_str() == Some(name) {
            return (entry.raw_file_position() as usize, entry.size() as usize);
        }
    }
    panic!("no {name}");
}

#[test]
fn a_byte_changed_after_signing_is_refused_naming_the_file() {
    let (k, sealed) = (key(7), sealed());
    let bytes = sealed.archive(Some(&sign(&k, &sealed)));
    for name in ["clusters.json", "entries.json", "ratelimit.yaml", "routes.json"] {
        let (at, len) = data_of(&bytes, name);
        for offset in [0, len / 2, len - 1] {
            let mut tampered = bytes.clone();
            tampered[at + offset] ^= 0x01;
            let err = bundle_error(read(&tampered, &trust(&k)).0);
            assert!(
                matches!(&err, BundleError::FileDigest { file, .. } if file == name),
                "{name} byte {offset}: {err}"
            );
        }
    }
    // The manifest itself: the signature no longer verifies (or the manifest no longer parses).
    let (at, len) = data_of(&bytes, "manifest.json");
    let mut tampered = bytes.clone();
    let hex_at = at + len - 20;
    tampered[hex_at] = if tampered[hex_at] == b'0' { b'1' } else { b'0' };
    let err = bundle_error(read(&tampered, &trust(&k)).0);
    assert!(matches!(err, BundleError::Signature(_)), "{err}");
}

/// An archive of arbitrary members, as a forger would write it.
fn forged(members: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, kind, data) in members {
        let mut header = tar::Header::new_ustar();
        header.set_path(name).expect("path");
        header.set_size(data.len() as u64);
        header.set_entry_type(*kind);
        if *kind == tar::EntryType::Symlink {
            header.set_link_name("/etc/passwd").expect("link");
        }
        header.set_mode(0o644);
        header.set_cksum();
        builder.append(&header, *data).expect("append");
    }
    builder.into_inner().expect("tar")
}

#[test]
fn members_out_of_place_extra_or_not_regular_files_are_refused() {
    let sealed = sealed();
    let mut lenient = trust(&key(7));
    lenient.allow_unsigned = true;
    let bytes = sealed.archive(None);
    let files: BTreeMap<String, Vec<u8>> = tar::Archive::new(bytes.as_slice())
        .entries()
        .expect("tar")
        .map(|e| {
            let mut e = e.expect("entry");
            let name = e.path().expect("path").display().to_string();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut data).expect("read");
            (name, data)
        })
        .collect();
    let f = |n: &str| files[n].as_slice();
    let regular = tar::EntryType::Regular;
    let order = ["manifest.json", "clusters.json", "entries.json", "ratelimit.yaml", "routes.json"];
    // The honest order reads.
    let honest: Vec<_> = order.iter().map(|n| (*n, regular, f(n))).collect();
    read(&forged(&honest), &lenient).0.expect("the same members, written by another tar writer");

    let swapped: Vec<_> = ["manifest.json", "entries.json", "clusters.json", "ratelimit.yaml", "routes.json"]
        .iter()
        .map(|n| (*n, regular, f(n)))
        .collect();
    let mut extra = honest.clone();
    extra.push(("routes.json.d", regular, b"x".as_slice()));
    let mut link = honest.clone();
    link[1] = ("clusters.json", tar::EntryType::Symlink, b"".as_slice());
    let mut missing = honest.clone();
    missing.pop();
    let manifest_late: Vec<_> = order[1..]
        .iter()
        .chain(&order[..1])
        .map(|n| (*n, regular, f(n)))
        .collect();
    for (what, members) in [
        ("swapped", swapped),
        ("extra member", extra),
        ("symlink", link),
        ("missing file", missing),
        ("manifest not first", manifest_late),
    ] {
        let err = bundle_error(read(&forged(&members), &lenient).0);
        assert!(matches!(err, BundleError::Member { .. }), "{what}: {err}");
    }
    let truncated = &bytes[..bytes.len() / 2];
    let err = bundle_error(read(truncated, &lenient).0);
    assert!(
        matches!(err, BundleError::NotAnArchive(_) | BundleError::FileDigest { .. }),
        "{err}"
    );
}
