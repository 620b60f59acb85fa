//! The corpus of good and bad entries: every good one is accepted, every bad one is rejected
//! with a problem at the field `corpus/expectations.json` names, and no message can be forged
//! into extra lines by what the entry contains.

use gateway_render::check::{check_entry, check_entry_bytes, Policy, Rejection, MAX_ENTRY_BYTES};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn policy() -> Policy {
    Policy::new("api.example.com", false)
}

fn files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(corpus().join(dir))
        .unwrap_or_else(|e| panic!("reading corpus/{dir}: {e}"))
        .map(|e| {
            e.map(|e| e.path())
                .unwrap_or_else(|e| panic!("listing corpus/{dir}: {e}"))
        })
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn expectations() -> BTreeMap<String, Vec<String>> {
    let path = corpus().join("expectations.json");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A rejection prints one `field: reason` per line, so no field or reason may hold a line break.
fn assert_one_line_each(file: &str, r: &Rejection) {
    assert!(
        !r.problems.is_empty(),
        "{file}: a rejection without problems"
    );
    for p in &r.problems {
        for part in [&p.field, &p.reason] {
            assert!(
                !part.contains(['\n', '\r', '\u{2028}', '\u{2029}']),
                "{file}: line break in {p:?}"
            );
            assert!(!part.is_empty(), "{file}: empty field or reason in {p:?}");
        }
    }
    assert_eq!(
        r.to_string().lines().count(),
        r.problems.len(),
        "{file}: {r}"
    );
}

#[test]
fn every_good_entry_is_accepted_and_survives_a_round_trip() {
    let good = files("good");
    assert!(good.len() >= 15, "only {} good entries", good.len());
    for path in good {
        let file = name(&path);
        let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let entry = check_entry_bytes(&bytes, &policy())
            .unwrap_or_else(|r| panic!("{file} rejected:\n{r}"));
        assert_eq!(
            check_entry(&entry, &policy()),
            Ok(()),
            "{file}: typed re-check"
        );
        // What the registry stores reads back as the same checked entry.
        let stored = serde_json::to_vec(&entry).unwrap_or_else(|e| panic!("{file}: {e}"));
        let again = check_entry_bytes(&stored, &policy())
            .unwrap_or_else(|r| panic!("{file} stored form rejected:\n{r}"));
        assert_eq!(again, entry, "{file}: not stable through its stored form");
        for route in &entry.routes {
            if let Some(methods) = &route.methods {
                assert!(
                    methods.windows(2).all(|w| w[0] < w[1]),
                    "{file}: methods not canonical: {methods:?}"
                );
            }
        }
    }
}

#[test]
fn every_bad_entry_is_rejected_naming_its_field() {
    let expected = expectations();
    let bad = files("bad");
    assert!(bad.len() >= 60, "only {} bad entries", bad.len());
    let names: Vec<String> = bad.iter().map(|p| name(p)).collect();
    for file in expected.keys() {
        assert!(
            names.contains(file),
            "expectations.json names {file}, which is not in corpus/bad"
        );
    }
    for path in bad {
        let file = name(&path);
        let fields = expected
            .get(&file)
            .unwrap_or_else(|| panic!("{file} has no entry in expectations.json"));
        assert!(!fields.is_empty(), "{file}: no expected field");
        let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let rejection = match check_entry_bytes(&bytes, &policy()) {
            Ok(entry) => panic!("{file} was accepted: {entry:?}"),
            Err(r) => r,
        };
        assert_one_line_each(&file, &rejection);
        let got: Vec<&str> = rejection
            .problems
            .iter()
            .map(|p| p.field.as_str())
            .collect();
        for field in fields {
            assert!(
                got.contains(&field.as_str()),
                "{file}: expected a problem at {field}, got:\n{rejection}"
            );
        }
    }
}

#[test]
fn bad_backends_that_are_loopback_only_pass_where_loopback_is_allowed() {
    // The same corpus files, judged by a local-run policy: loopback and unspecified backends are
    // let through, link-local and metadata never are.
    let local = Policy::new("api.example.com", true);
    for (file, allowed) in [
        ("backend-loopback.json", true),
        ("backend-localhost.json", true),
        ("backend-ipv6-loopback.json", true),
        ("backend-mapped-loopback.json", true),
        ("backend-unspecified.json", true),
        ("backend-metadata.json", false),
        ("backend-ipv6-metadata.json", false),
        ("backend-mapped-metadata.json", false),
        ("backend-link-local.json", false),
        ("backend-google-metadata.json", false),
        ("backend-self.json", false),
    ] {
        let bytes =
            fs::read(corpus().join("bad").join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(check_entry_bytes(&bytes, &local).is_ok(), allowed, "{file}");
    }
}

#[test]
fn an_oversized_entry_is_rejected_before_it_is_parsed() {
    let design =
        fs::read(corpus().join("good/design-example.json")).unwrap_or_else(|e| panic!("{e}"));
    // Valid JSON padded with whitespace just past the limit: only the size can be the problem.
    let mut big = design.clone();
    big.resize(MAX_ENTRY_BYTES + 1, b' ');
    let r = check_entry_bytes(&big, &policy()).expect_err("oversized");
    assert_eq!(r.problems.len(), 1);
    assert_eq!(r.problems[0].field, "entry");
    assert!(r.problems[0].reason.contains("at most 65536"), "{r}");
    // Exactly at the limit it is accepted.
    big.truncate(MAX_ENTRY_BYTES);
    assert!(check_entry_bytes(&big, &policy()).is_ok());
    // Megabytes of garbage are refused just as fast.
    assert!(check_entry_bytes(&vec![b'['; 10 << 20], &policy()).is_err());
}

#[test]
fn the_documented_messages_read_as_promised() {
    let read =
        |f: &str| fs::read(corpus().join("bad").join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let message = |f: &str| {
        check_entry_bytes(&read(f), &policy())
            .expect_err(f)
            .to_string()
    };
    assert_eq!(
        message("unit-fortnight.json"),
        "routes[1].limits[0].every: unknown unit \"fortnight\"; expected second, minute, hour or day"
    );
    assert_eq!(
        message("host-uppercase.json"),
        "host: label \"Invoices\" must be lowercase a-z, 0-9 or \"-\""
    );
    assert_eq!(
        message("backend-metadata.json"),
        "backend: 169.254.169.254 is a link-local/metadata address; the gateway never routes to it"
    );
    assert_eq!(
        message("requests-string.json"),
        "routes[0].limits[0].requests: expected a positive integer, got string"
    );
    assert!(message("route-unknown-field.json")
        .starts_with("routes[0].limitz: unknown field; expected path, exact, headers, query, methods, limits, timeout, retries, rewrite, request_headers, response_headers, cors, websocket, host_rewrite, redirect, mirror, clients or auth"));
    assert!(message("backend-self.json").contains("loop"));
    assert!(
        !message("backend-userinfo.json").contains("secret"),
        "credentials echoed back"
    );
}

#[test]
fn one_entry_with_many_problems_reports_them_all_at_once() {
    let bytes = fs::read(corpus().join("bad/many-problems.json")).unwrap_or_else(|e| panic!("{e}"));
    let r = check_entry_bytes(&bytes, &policy()).expect_err("many problems");
    let fields: Vec<&str> = r.problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "team",
            "host",
            "backend",
            "routes[0].limitz",
            "routes[1].limits[0].every"
        ],
        "\n{r}"
    );
}
