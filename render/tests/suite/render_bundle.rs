//! The bundle: round trip, hash, and verify() catching any changed byte or a wrong version_info.

use gateway_render::contract::{CLUSTERS_FILE, RATE_LIMIT_FILE, ROUTES_FILE};
use gateway_render::{compute_hash, render_kill_switch, Bundle, BundleError};
use crate::support::{config, example_entries, render_examples};
use serde_json::Value;

fn sample_bundle() -> Bundle {
    let mut entries = example_entries();
    entries.reverse();
    Bundle::new(&render_examples(), &entries)
}

#[test]
fn bundle_round_trips_through_its_bytes() {
    let bundle = sample_bundle();
    let bytes = bundle.seal().archive(None);
    let read = Bundle::read(&bytes).expect("bundle parses");
    assert_eq!(read.format, 2);
    let parsed = read.bundle;
    assert_eq!(parsed, bundle);
    assert_eq!(parsed.seal().archive(None), bytes, "same bundle, same bytes");
    let ids: Vec<String> = parsed.entries.iter().map(|e| e.id()).collect();
    assert_eq!(
        ids,
        [
            "billing/invoices-api",
            "billing/payments-api",
            "catalog/products-api"
        ],
        "entries sorted by id"
    );
    parsed.verify().expect("a fresh bundle verifies");
    let names: Vec<String> = tar::Archive::new(bytes.as_slice())
        .entries()
        .expect("a tar")
        .map(|e| e.expect("entry").path().expect("path").display().to_string())
        .collect();
    assert_eq!(
        names,
        ["manifest.json", "clusters.json", "entries.json", "ratelimit.yaml", "routes.json"],
        "the files as their own bytes, after the manifest"
    );
}

#[test]
fn compute_hash_of_the_files_equals_the_render_hash() {
    let rendered = render_examples();
    assert!(rendered.hash.starts_with("sha256:") && rendered.hash.len() == 71);
    assert_eq!(compute_hash(&rendered.files).unwrap(), rendered.hash);
    let parsed = Bundle::parse(
        &Bundle::new(&rendered, &example_entries())
            .seal()
            .archive(None),
    )
    .unwrap();
    assert_eq!(compute_hash(&parsed.files).unwrap(), rendered.hash);
    for name in [CLUSTERS_FILE, ROUTES_FILE] {
        let v: Value = serde_json::from_str(&rendered.files[name]).unwrap();
        assert_eq!(
            v["version_info"],
            rendered.hash.as_str(),
            "{name} carries the hash"
        );
    }
    let kill = render_kill_switch(&config());
    assert_eq!(compute_hash(&kill.files).unwrap(), kill.hash);
    assert_ne!(kill.hash, rendered.hash);
}

/// Replaces one ASCII byte at `at` with another ASCII byte.
fn change_byte(text: &str, at: usize) -> Option<String> {
    let mut bytes = text.as_bytes().to_vec();
    let b = *bytes.get(at)?;
    if !b.is_ascii() {
        return None;
    }
    bytes[at] = if b == b'a' { b'b' } else { b'a' };
    String::from_utf8(bytes).ok()
}

#[test]
fn verify_detects_a_one_byte_change_anywhere_in_any_file() {
    let bundle = sample_bundle();
    for (name, text) in &bundle.files {
        // Every byte of the small rules file; an even spread plus both ends of the JSON files.
        let step = if text.len() < 4000 {
            1
        } else {
            text.len() / 400
        };
        let mut positions: Vec<usize> = (0..text.len()).step_by(step).collect();
        positions.extend([text.len() - 1, text.len() - 2]);
        if let Some(i) = text.find("sha256:") {
            positions.push(i + 20);
        }
        for at in positions {
            let Some(changed) = change_byte(text, at) else {
                continue;
            };
            let mut tampered = bundle.clone();
            tampered.files.insert(name.clone(), changed);
            assert!(
                tampered.verify().is_err(),
                "{name}: change at byte {at} ({:?}) went unnoticed",
                &text[at.saturating_sub(10)..(at + 10).min(text.len())]
            );
        }
    }
}

#[test]
fn verify_names_the_file_with_a_wrong_version_info() {
    let bundle = sample_bundle();
    let mut tampered = bundle.clone();
    let mut routes: Value = serde_json::from_str(&bundle.files[ROUTES_FILE]).unwrap();
    let other = format!("sha256:{}", "0".repeat(64));
    routes["version_info"] = Value::String(other.clone());
    tampered.files.insert(
        ROUTES_FILE.into(),
        gateway_render::bundle::to_json_bytes(&routes),
    );
    // The hash ignores version_info, so only the version check can catch this.
    assert_eq!(compute_hash(&tampered.files).unwrap(), bundle.hash);
    match tampered.verify() {
        Err(BundleError::VersionInfo {
            file,
            found,
            expected,
        }) => {
            assert_eq!(file, ROUTES_FILE);
            assert_eq!(found.as_deref(), Some(other.as_str()));
            assert_eq!(expected, bundle.hash);
        }
        other => panic!("expected a version_info error, got {other:?}"),
    }
}

#[test]
fn verify_refuses_a_wrong_hash_and_a_missing_file() {
    let mut wrong = sample_bundle();
    wrong.hash = format!("sha256:{}", "f".repeat(64));
    assert!(matches!(
        wrong.verify(),
        Err(BundleError::HashMismatch { .. })
    ));
    let mut missing = sample_bundle();
    missing.files.remove(RATE_LIMIT_FILE);
    assert!(matches!(
        missing.verify(),
        Err(BundleError::MissingFile {
            file: RATE_LIMIT_FILE
        })
    ));
}

#[test]
fn kill_switch_render_answers_503_everywhere_with_no_clusters() {
    let kill = render_kill_switch(&config());
    assert!(kill.clusters.is_empty());
    assert_eq!(kill.route_count, 0);
    let vhosts = kill.route_config["virtual_hosts"].as_array().unwrap();
    assert_eq!(vhosts.len(), 1);
    assert_eq!(vhosts[0]["domains"], serde_json::json!(["*"]));
    let routes = vhosts[0]["routes"].as_array().unwrap();
    // The load balancer's health check first (200 under the kill switch), then 503 for the rest.
    assert_eq!(routes.len(), 2);
    assert_eq!(routes[0]["match"]["path"], "/healthz");
    assert_eq!(routes[0]["direct_response"]["status"], 200);
    assert_eq!(routes[1]["match"]["prefix"], "/");
    assert_eq!(routes[1]["direct_response"]["status"], 503);
    let body: Value = serde_json::from_str(
        routes[1]["direct_response"]["body"]["inline_string"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(body["error"], "gateway kill switch engaged");
    let clusters: Value = serde_json::from_str(&kill.files[CLUSTERS_FILE]).unwrap();
    assert_eq!(clusters["resources"], serde_json::json!([]));
    assert_eq!(kill.ratelimit.domain, "gateway");
    assert!(kill.ratelimit.descriptors.is_empty());
    assert_eq!(
        kill.files[RATE_LIMIT_FILE],
        "domain: gateway\ndescriptors: []\n"
    );
    Bundle::new(&kill, &[])
        .verify()
        .expect("kill-switch bundle verifies");
}
