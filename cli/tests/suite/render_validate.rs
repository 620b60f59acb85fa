//! `gatewayctl render` and `validate` as the binary: a directory renders and passes all three
//! layers with the pinned Envoy; rejections name the file and the field; validation reports
//! Envoy's own message, rule violations by file and object, a missing Envoy by `ENVOY_BIN`, and a
//! directory without its bundle.
use crate::common;
use common::*;
use std::path::{Path, PathBuf};

fn render(entries: &Path, out: &Path) -> Run {
    run(&[
        "render",
        "--entries",
        s(entries),
        "--out",
        s(out),
        "--domain",
        "api.example.com",
        "--allow-loopback-backends",
    ])
}

/// `BILLING` written into `dir` and rendered into `dir/out`, which is returned.
fn rendered_billing(dir: &Path) -> PathBuf {
    let file = write(dir, "billing.json", BILLING);
    let out = dir.join("out");
    let r = render(&file, &out);
    assert_eq!(r.code, 0, "{}", r.stderr);
    out
}

/// Rewrites the rendered file `name` in `out` with `edit`, which must change it.
fn edit_rendered(out: &Path, name: &str, edit: impl FnOnce(&str) -> String) {
    let path = out.join(name);
    let text = std::fs::read_to_string(&path).expect("read");
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit finds what it changes in {name}");
    std::fs::write(&path, edited).expect("write");
}

#[test]
fn renders_a_directory_and_validates_it_with_envoy() {
    let dir = tempfile::tempdir().expect("temp dir");
    let entries = dir.path().join("entries");
    std::fs::create_dir(&entries).expect("mkdir");
    write(&entries, "billing.json", BILLING);
    write(&entries, "shipping.json", SHIPPING);
    write(&entries, "notes.txt", "not an entry");
    let out = dir.path().join("out");
    let r = render(&entries, &out);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let hash = r.stdout.trim();
    assert!(hash.starts_with("sha256:") && hash.len() == 71, "{hash}");
    for f in [
        "clusters.json",
        "routes.json",
        "ratelimit.yaml",
        "bundle.json",
    ] {
        assert!(out.join(f).is_file(), "{f} written");
    }
    let read = gateway_render::Bundle::read(&std::fs::read(out.join("bundle.json")).expect("read"))
        .expect("a format-2 bundle");
    assert_eq!(read.bundle.hash, hash);
    assert_eq!(read.bundle.entries.len(), 3);
    assert!(read.signature.is_none(), "an offline render is unsigned");

    // Same entries, same bytes: the hash is stable across runs.
    let again = render(&entries, &dir.path().join("again"));
    assert_eq!(again.stdout.trim(), hash);

    let v = run(&["validate", s(&out)]);
    assert_eq!(v.code, 0, "{}", v.stderr);
    assert!(
        v.stdout.contains("3 entries, 5 routes") && v.stdout.contains("envoy 1.40.0 accepted"),
        "{}",
        v.stdout
    );

    let v = run(&["validate", s(&out.join("bundle.json"))]);
    assert_eq!(v.code, 0, "a bundle file validates too: {}", v.stderr);
}

#[test]
fn rejections_name_the_file_and_the_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = r#"[{"team": "a", "service": "b", "host": "h", "backend": "http://x.internal", "routes": [{"path": "no-slash"}]}]"#;
    let file = write(dir.path(), "bad.json", bad);
    let r = render(&file, &dir.path().join("out"));
    r.assert_exit_naming(1, &["bad.json[0]: routes[0].path"]);
    assert!(
        !dir.path().join("out").exists(),
        "nothing is written for rejected entries"
    );
}

#[test]
fn validate_reports_envoys_message_for_a_broken_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = rendered_billing(dir.path());
    // Break a cluster in a way only Envoy knows about: the gateway rules pass it.
    edit_rendered(&out, "clusters.json", |text| {
        text.replacen("\"connect_timeout\": \"", "\"connect_timeout\": \"x", 1)
    });

    let r = run(&["validate", s(&out)]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("layer 3 (envoy --mode validate) failed"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("connect_timeout"),
        "Envoy's message names the field: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains("differs from the copy in bundle.json"),
        "{}",
        r.stderr
    );

    let r = run(&["validate", s(&out), "--skip-envoy"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("SKIPPED"), "{}", r.stdout);
}

#[test]
fn validate_reports_rule_violations_by_file_and_object() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = rendered_billing(dir.path());
    edit_rendered(&out, "ratelimit.yaml", |text| {
        text.replace("unit: hour", "unit: fortnight")
    });
    let r = run(&["validate", s(&out)]);
    r.assert_exit_naming(
        1,
        &[
            "layer 1 (gateway rules) failed",
            "ratelimit.yaml: gateway.team_billing",
            "invalid rate limit unit 'fortnight'",
        ],
    );
}

#[test]
fn validate_with_a_missing_envoy_fails_naming_envoy_bin() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = rendered_billing(dir.path());
    let r = run(&["validate", s(&out), "--envoy-bin", "/nonexistent/envoy"]);
    r.assert_exit_naming(1, &["ENVOY_BIN=/nonexistent/envoy"]);
}

#[test]
fn validate_without_a_bundle_explains_why_it_is_needed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let r = run(&["validate", s(dir.path())]);
    r.assert_exit_naming(1, &["bundle.json: missing"]);
}
