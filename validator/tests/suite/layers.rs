//! All three layers, with the real Envoy deciding layer 3.

use crate::common;

use common::*;
use gateway_validator::{
    start_envoy_validation, validate_all, validate_all_beside, validate_with_envoy, ConfigView,
    EnvoyOptions, Layer, ParsedConfig, ValidateOptions, ValidationError,
};
use serde_json::{json, Value};

fn all(
    view: &ConfigView<'_>,
    entries: usize,
    routes: usize,
) -> Result<gateway_validator::Report, gateway_validator::ValidationFailure> {
    validate_all(
        view,
        entries,
        routes,
        &ValidateOptions {
            envoy: envoy_options(),
            skip_envoy: false,
        },
    )
}

/// The clusters and route configuration with no rate-limit rules.
/// An executable stand-in for Envoy in `dir`: a shell script with `body` after its first line.
fn stand_in(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let fake = dir.join("envoy");
    std::fs::write(&fake, format!("#!/bin/sh\n{body}")).expect("write");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    fake
}

/// The shell line a stand-in answers `--version` with: the pinned release.
fn pinned_version_line() -> String {
    format!(
        "if [ \"$1\" = --version ]; then echo 'envoy  version: 0000/{}/Clean/RELEASE/BoringSSL'; exit 0; fi\n",
        gateway_bootstrap::envoy_version()
    )
}

fn config_view<'a>(clusters: &'a [Value], route_config: &'a Value) -> ConfigView<'a> {
    ConfigView {
        clusters,
        route_config,
        ratelimit_yaml: EMPTY_RULES,
        jwt: None,
    }
}

fn rejected_by_envoy(view: &ConfigView<'_>) -> (String, String) {
    match validate_with_envoy(view, &envoy_options()) {
        Err(ValidationError::EnvoyRejected {
            summary, stderr, ..
        }) => (summary, stderr),
        other => panic!("expected Envoy to reject the config, got {other:?}"),
    }
}

#[test]
fn a_hand_built_config_passes_all_layers() {
    let clusters = vec![cluster("billing.invoices")];
    let rc = route_config(vec![vhost(
        "billing",
        "invoices.api.example.com",
        "billing.invoices",
    )]);
    let view = config_view(&clusters, &rc);
    let report = all(&view, 1, 1).expect("valid config");
    let verdict = report.envoy.expect("layer 3 ran");
    assert_eq!(verdict.envoy_version, gateway_bootstrap::envoy_version());
}

#[test]
fn a_rendered_registry_passes_all_layers_from_values_and_from_files() {
    let r = rendered();
    let view = ConfigView {
        clusters: &r.clusters,
        route_config: &r.route_config,
        ratelimit_yaml: &r.files["ratelimit.yaml"],
        jwt: r.jwt.as_ref(),
    };
    let report =
        all(&view, sample_entries().len(), r.route_count).expect("the renderer's output is valid");
    assert!(report.envoy.is_some());

    let parsed = ParsedConfig::from_files(&r.files).expect("rendered files parse");
    assert_eq!(parsed.clusters, r.clusters);
    all(&parsed.view(), sample_entries().len(), r.route_count).expect("the files are valid too");
}

#[test]
fn the_kill_switch_render_passes_all_layers() {
    let r =
        gateway_render::render_kill_switch(&gateway_render::RenderConfig::new("api.example.com"));
    let view = ConfigView {
        clusters: &r.clusters,
        route_config: &r.route_config,
        ratelimit_yaml: &r.files["ratelimit.yaml"],
        jwt: r.jwt.as_ref(),
    };
    all(&view, 0, r.route_count).expect("the kill-switch bundle must be publishable");
}

#[test]
fn envoy_rejects_a_domain_shared_by_two_virtual_hosts() {
    // Layer 1 would catch this first; calling layer 3 alone shows Envoy refuses it too.
    let clusters = vec![cluster("a")];
    let rc = route_config(vec![
        vhost("one", "x.api.example.com", "a"),
        vhost("two", "x.api.example.com", "a"),
    ]);
    let (summary, stderr) = rejected_by_envoy(&config_view(&clusters, &rc));
    assert!(
        summary.contains("x.api.example.com"),
        "summary should name the domain:\n{summary}"
    );
    assert!(summary.to_lowercase().contains("duplicate"), "{summary}");
    assert!(
        stderr.contains("[critical]"),
        "full stderr is kept:\n{stderr}"
    );
    assert!(
        !summary.contains("[critical]"),
        "summary drops log prefixes:\n{summary}"
    );
}

/// Envoy's summary when it refuses `clusters` behind one virtual host that routes to `cluster`.
fn envoy_refusal(clusters: Vec<Value>, cluster: &str) -> String {
    let rc = route_config(vec![vhost("one", "x.api.example.com", cluster)]);
    rejected_by_envoy(&config_view(&clusters, &rc)).0
}

/// Cluster `a` with `field` set to `value`.
fn cluster_a_with(field: &str, value: Value) -> Value {
    let mut bad = cluster("a");
    bad[field] = value;
    bad
}

#[test]
fn envoy_rejects_a_route_to_a_missing_cluster() {
    let summary = envoy_refusal(vec![cluster("a")], "nowhere");
    assert!(summary.contains("nowhere"), "{summary}");
}

#[test]
fn envoy_rejects_a_malformed_cluster() {
    let summary = envoy_refusal(vec![cluster_a_with("connect_timeout", json!("soon"))], "a");
    assert!(summary.contains("connect_timeout"), "{summary}");
}

#[test]
fn envoy_rejects_unknown_fields_in_the_inlined_config() {
    let summary = envoy_refusal(vec![cluster_a_with("bogus_field", json!(1))], "a");
    assert!(summary.contains("bogus_field"), "{summary}");
}

/// The layer that fails `clusters` behind one virtual host routing to `cluster`, counted as
/// (entries, routes), and the failure's message; `why` says why it must fail.
fn failing_layer(
    clusters: &[Value],
    cluster: &str,
    (entries, routes): (usize, usize),
    why: &str,
) -> (Layer, String) {
    let rc = route_config(vec![vhost("one", "x.api.example.com", cluster)]);
    let failure = all(&config_view(clusters, &rc), entries, routes).expect_err(why);
    let message = failure.to_string();
    (failure.layer, message)
}

#[test]
fn validate_all_names_the_failing_layer() {
    let (layer, message) = failing_layer(
        &[cluster("a")],
        "nowhere",
        (1, 1),
        "route to a missing cluster",
    );
    assert_eq!(layer, Layer::Rules);
    assert!(
        message.contains("cluster nowhere is not in clusters.json"),
        "{message}"
    );

    let (layer, _) = failing_layer(&[cluster("a")], "a", (4, 0), "entries without routes");
    assert_eq!(layer, Layer::EmptyRender);

    let malformed = [cluster_a_with("connect_timeout", json!("soon"))];
    let (layer, message) = failing_layer(&malformed, "a", (1, 1), "malformed cluster");
    assert_eq!(layer, Layer::Envoy);
    assert!(
        message
            .starts_with("layer 3 (envoy --mode validate) failed: envoy --mode validate rejected"),
        "{message}"
    );
}

#[test]
fn layer_3_is_skipped_only_on_request() {
    let clusters = vec![cluster("a")];
    let rc = route_config(vec![vhost("one", "x.api.example.com", "a")]);
    let view = config_view(&clusters, &rc);
    let missing = EnvoyOptions::new("/nonexistent/envoy");
    let failure = validate_all(
        &view,
        1,
        1,
        &ValidateOptions {
            envoy: missing.clone(),
            skip_envoy: false,
        },
    )
    .expect_err("a missing Envoy is an error, not a skip");
    assert_eq!(failure.layer, Layer::Envoy);
    assert!(
        failure.to_string().contains("ENVOY_BIN=/nonexistent/envoy"),
        "{failure}"
    );
    let report = validate_all(
        &view,
        1,
        1,
        &ValidateOptions {
            envoy: missing,
            skip_envoy: true,
        },
    )
    .expect("skipped");
    assert!(report.envoy.is_none());
    assert!(report.to_string().contains("SKIPPED"), "{report}");
}

#[test]
fn a_different_envoy_release_is_refused() {
    // A stand-in that only answers --version: the check must refuse before anything is judged.
    let dir = tempfile::tempdir().expect("temp dir");
    let fake = stand_in(
        dir.path(),
        "echo 'envoy  version: 0000/1.2.3/Clean/RELEASE/BoringSSL'\n",
    );
    let clusters: Vec<Value> = vec![];
    let rc = route_config(vec![]);
    let view = config_view(&clusters, &rc);
    let err = validate_with_envoy(&view, &EnvoyOptions::new(&fake)).expect_err("wrong release");
    let text = err.to_string();
    assert!(
        text.contains("1.2.3") && text.contains(gateway_bootstrap::envoy_version()),
        "{text}"
    );
}

#[test]
fn beside_runs_while_envoy_validates_and_the_verdict_keeps_the_layer_order() {
    let clusters = vec![cluster("a")];
    let good = route_config(vec![vhost("one", "x.api.example.com", "a")]);
    let view = config_view(&clusters, &good);
    let real = ValidateOptions {
        envoy: envoy_options(),
        skip_envoy: false,
    };
    let (verdict, beside) = validate_all_beside(&view, 1, 1, &real, || "prepared");
    assert!(verdict.expect("valid").envoy.is_some(), "layer 3 ran");
    assert_eq!(beside, Some("prepared"));

    // Layer 1 refuses: that is the verdict even though Envoy could not even start, and the work
    // beside is not done.
    let missing = ValidateOptions {
        envoy: EnvoyOptions::new("/nonexistent/envoy"),
        skip_envoy: false,
    };
    let bad = route_config(vec![vhost("one", "x.api.example.com", "nowhere")]);
    let (verdict, beside) =
        validate_all_beside(&config_view(&clusters, &bad), 1, 1, &missing, || "prepared");
    assert_eq!(verdict.expect_err("layer 1").layer, Layer::Rules);
    assert_eq!(beside, None);

    // Layers 1 and 2 pass and Envoy cannot start: layer 3, and the work beside was done.
    let (verdict, beside) = validate_all_beside(&view, 1, 1, &missing, || "prepared");
    let failure = verdict.expect_err("no Envoy");
    assert_eq!(failure.layer, Layer::Envoy);
    assert!(
        failure.to_string().contains("/nonexistent/envoy"),
        "{failure}"
    );
    assert_eq!(beside, Some("prepared"));
}

#[test]
fn an_envoy_validation_not_waited_for_is_killed() {
    // A stand-in for the pinned release that reads its config (`-c PATH`, the last argument),
    // writes its pid and takes ten minutes to judge.
    let dir = tempfile::tempdir().expect("temp dir");
    let pid_file = dir.path().join("pid");
    let fake = stand_in(
        dir.path(),
        &format!(
            "{}for a; do config=$a; done\ncat \"$config\" > /dev/null\necho $$ > {p}.tmp && mv {p}.tmp {p}\nexec sleep 600\n",
            pinned_version_line(),
            p = pid_file.display()
        ),
    );
    let clusters = vec![cluster("a")];
    let rc = route_config(vec![vhost("one", "x.api.example.com", "a")]);
    let view = config_view(&clusters, &rc);
    let running = start_envoy_validation(&view, &EnvoyOptions::new(&fake)).expect("started");
    for _ in 0..1000 {
        if pid_file.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = std::fs::read_to_string(&pid_file).expect("the stand-in wrote its pid");
    let proc_dir = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    assert!(proc_dir.exists(), "{} runs", proc_dir.display());
    drop(running);
    assert!(
        !proc_dir.exists(),
        "{} was killed and reaped",
        proc_dir.display()
    );
}

#[test]
fn an_envoy_that_stops_reading_its_bootstrap_is_judged_by_its_exit() {
    // A stand-in for the pinned release that reads ten bytes of its config (`-c PATH`, the last
    // argument) and refuses: the bootstrap is far larger than a pipe holds, so the write meets
    // a closed pipe. The verdict is Envoy's refusal, not a write error and not a hang.
    let dir = tempfile::tempdir().expect("temp dir");
    let fake = stand_in(
        dir.path(),
        &format!(
            "{}for a; do config=$a; done\nhead -c 10 \"$config\" > /dev/null\necho 'refused: stopped after ten bytes' >&2\nexit 1\n",
            pinned_version_line()
        ),
    );
    let clusters: Vec<Value> = (0..2000).map(|i| cluster(&format!("c{i}"))).collect();
    let rc = route_config(vec![vhost("one", "x.api.example.com", "c0")]);
    let view = config_view(&clusters, &rc);
    match validate_with_envoy(&view, &EnvoyOptions::new(&fake)) {
        Err(ValidationError::EnvoyRejected { stderr, .. }) => {
            assert!(stderr.contains("stopped after ten bytes"), "{stderr}")
        }
        other => panic!("expected Envoy's refusal, got {other:?}"),
    }
}
