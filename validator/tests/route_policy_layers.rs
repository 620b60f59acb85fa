//! Every route-policy entry of the check corpus renders into a config all three validation layers
//! accept (the gateway rules, the descriptors, and the real Envoy on the validation bootstrap,
//! whose filter chain carries the CORS filter), and the render counts routes as the validator does.

mod common;

use common::envoy_options;
use gateway_render::check::{check_entry_bytes, Policy};
use gateway_render::{render, RenderConfig};
use gateway_validator::{count_routes, validate_all, ConfigView, ValidateOptions};
use std::path::Path;

#[test]
fn route_policy_renders_pass_all_layers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../render/tests/corpus/good");
    let mut checked = 0;
    for file in ["route-policy-design-example.json", "route-policy-shared-path-and-bounds.json"] {
        let bytes = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let entry = check_entry_bytes(&bytes, &Policy::new("api.example.com", false))
            .unwrap_or_else(|r| panic!("{file}: {r}"));
        let r = render(&[entry], &RenderConfig::new("api.example.com")).expect("renders");
        assert_eq!(r.route_count, count_routes(&r.route_config), "{file}");
        let view = ConfigView {
            clusters: &r.clusters,
            route_config: &r.route_config,
            ratelimit_yaml: &r.files["ratelimit.yaml"],
        };
        let report = validate_all(
            &view,
            1,
            r.route_count,
            &ValidateOptions {
                envoy: envoy_options(),
                skip_envoy: false,
            },
        )
        .unwrap_or_else(|f| panic!("{file}: {f}"));
        assert!(report.envoy.is_some(), "{file}: Envoy judged it");
        checked += 1;
    }
    assert_eq!(checked, 2);
}
