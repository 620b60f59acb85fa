//! The checked-in production bootstrap and proxy arguments are generated; these tests keep the
//! files equal to the generator's output.

use gateway_bootstrap::{
    gateway_bootstrap, proxy_args, to_pretty_json, BootstrapParams, PRODUCTION_BOOTSTRAP_PATH,
};
use std::path::Path;

const REGENERATE: &str =
    "regenerate with: cargo run -p gatewayctl -- bootstrap > bootstrap/envoy.json \
     && cargo run -p gatewayctl -- bootstrap --xff-num-trusted-hops 2 > bootstrap/envoy.behind-cdn.json \
     && cargo run -p gatewayctl -- bootstrap --args > bootstrap/envoy.args";

fn checked_in(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; {REGENERATE}", path.display()))
}

#[test]
fn envoy_json_is_the_generator_output() {
    let generated = to_pretty_json(
        &gateway_bootstrap(&BootstrapParams::production()).expect("production params"),
    );
    assert!(
        checked_in("envoy.json") == generated,
        "bootstrap/envoy.json differs from the generator; {REGENERATE}"
    );
}

/// The image's bootstrap when a CDN sits in front of the load balancer (infra picks it when it
/// deploys one): two trusted hops, everything else the same.
#[test]
fn envoy_behind_cdn_json_is_the_generator_output() {
    let mut params = BootstrapParams::production();
    params.xff_num_trusted_hops = 2;
    let generated = to_pretty_json(&gateway_bootstrap(&params).expect("production params"));
    assert!(
        checked_in("envoy.behind-cdn.json") == generated,
        "bootstrap/envoy.behind-cdn.json differs from the generator; {REGENERATE}"
    );
}

#[test]
fn envoy_args_are_the_generator_output() {
    let mut generated = proxy_args(Path::new(PRODUCTION_BOOTSTRAP_PATH), false).join("\n");
    generated.push('\n');
    assert!(
        checked_in("envoy.args") == generated,
        "bootstrap/envoy.args differs from the generator; {REGENERATE}"
    );
}
