//! The rendered shapes are real Envoy 1.40 config: a bootstrap that inlines the rendered clusters
//! and route configuration (Envoy's validate mode does not read `path_config_source` files)
//! passes `envoy --mode validate`.

use gateway_render::{render_kill_switch, Rendered};
use gateway_testkit::validate::validate_bootstrap;
use crate::support::envoy::gateway_bootstrap;
use crate::support::{config, render_examples};
use serde_json::json;

fn assert_valid(rendered: &Rendered) {
    let (ok, output) = validate_bootstrap(&gateway_bootstrap(rendered, 0, 0));
    assert!(ok, "Envoy rejected the rendered config:\n{output}");
    assert!(output.contains("OK"), "Envoy did not say OK:\n{output}");
    // A deprecated field works today and breaks on a later Envoy; keep the renderer off them.
    assert!(
        !output.to_lowercase().contains("deprecated"),
        "Envoy warns about a deprecated field:\n{output}"
    );
}

#[test]
fn envoy_accepts_the_rendered_sample_registry() {
    let rendered = render_examples();
    assert!(rendered.route_count > 0);
    assert_valid(&rendered);
}

#[test]
fn envoy_accepts_the_kill_switch_render() {
    assert_valid(&render_kill_switch(&config()));
}

#[test]
fn envoy_rejects_a_broken_render_so_the_check_above_means_something() {
    let mut rendered = render_examples();
    // A route to a cluster that is not there: validate_clusters must make Envoy refuse it.
    rendered.route_config["virtual_hosts"][0]["routes"][0]["route"]["cluster"] =
        json!("nobody.missing");
    let (ok, output) = validate_bootstrap(&gateway_bootstrap(&rendered, 0, 0));
    assert!(
        !ok,
        "Envoy accepted a route to a missing cluster:\n{output}"
    );
    assert!(
        output.contains("nobody.missing"),
        "Envoy's reason should name the cluster:\n{output}"
    );
}
