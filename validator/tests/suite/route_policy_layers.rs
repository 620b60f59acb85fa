//! Every route-policy entry of the check corpus renders into a config all three validation layers
//! accept (the gateway rules, the descriptors, and the real Envoy on the validation bootstrap,
//! whose filter chain carries the CORS filter), and the render counts routes as the validator does.
//! The regexes a route renders stay within Envoy's RE2 program size: the largest CORS pattern the
//! check allows and a route with all nine methods pass, one character more does not.

use crate::common;

use common::envoy_options;
use gateway_render::check::{check_entry_bytes, check_origin, Policy, MAX_CORS_PATTERN_DOMAIN_LEN};
use gateway_render::{render, Entry, RenderConfig, Rendered};
use gateway_validator::{
    count_routes, validate_all, ConfigView, Layer, Report, ValidateOptions, ValidationFailure,
};
use serde_json::Value;
use std::path::Path;

fn corpus_entry(file: &str) -> Entry {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../render/tests/corpus/good")
        .join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    check_entry_bytes(&bytes, &Policy::new("api.example.com", false))
        .unwrap_or_else(|r| panic!("{file}: {r}"))
}

/// All three layers, the real Envoy's included.
fn validate(r: &Rendered) -> Result<Report, ValidationFailure> {
    let view = ConfigView {
        clusters: &r.clusters,
        route_config: &r.route_config,
        ratelimit_yaml: &r.files["ratelimit.yaml"],
        jwt: r.jwt.as_ref(),
    };
    validate_all(
        &view,
        1,
        r.route_count,
        &ValidateOptions {
            envoy: envoy_options(),
            skip_envoy: false,
        },
    )
}

/// Every `safe_regex` in the route configuration.
fn regexes(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("safe_regex").and_then(|s| s.get("regex")) {
                out.push(r.clone());
            }
            m.values().for_each(|x| regexes(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| regexes(x, out)),
        _ => {}
    }
}

#[test]
fn route_policy_renders_pass_all_layers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../render/tests/corpus/good");
    let mut checked = 0;
    for file in [
        "route-policy-design-example.json",
        "route-policy-shared-path-and-bounds.json",
        "route-policy-cross-tenant-bounds.json",
        "route-matches-and-rewrites.json",
        "route-mirror.json",
        "entry-backends.json",
        "entry-backends-canary.json",
        "entry-preserve-host.json",
        "route-clients.json",
        "route-jwt.json",
    ] {
        let bytes = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let entry = check_entry_bytes(&bytes, &Policy::new("api.example.com", false))
            .unwrap_or_else(|r| panic!("{file}: {r}"));
        let r = render(&[entry], &RenderConfig::new("api.example.com")).expect("renders");
        assert_eq!(r.route_count, count_routes(&r.route_config), "{file}");
        let view = ConfigView {
            clusters: &r.clusters,
            route_config: &r.route_config,
            ratelimit_yaml: &r.files["ratelimit.yaml"],
            jwt: r.jwt.as_ref(),
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
    assert_eq!(checked, 10);
}

/// A provider whose keys Envoy fetches (an issuer the operators allow) renders a key-set cluster
/// Envoy accepts with the filter's configuration inlined; a route naming a requirement the
/// providers do not define is refused at layer 1 (the delivery policy), before any proxy
/// would answer it 403.
#[test]
fn fetched_key_sets_validate_and_a_route_without_its_requirement_breaks_layer_one() {
    let mut policy = Policy::new("api.example.com", false);
    policy.jwt = gateway_render::check::JwtPolicy::from_values(
        Some("https://id.example.com/,https://accounts.example.org|https://keys.example.org/oauth2/"),
        None,
        None,
        None,
    )
    .expect("issuers");
    let doc = serde_json::json!({
        "team": "billing", "service": "invoices-api", "host": "invoices",
        "backend": "https://invoices.internal.example:8443",
        "jwt": {
            "id": { "issuer": "https://id.example.com/", "jwks_uri": "https://id.example.com/.well-known/jwks.json",
                    "claims_to_headers": { "sub": "x-user-id" } },
            "partner": { "issuer": "https://accounts.example.org", "jwks_uri": "https://keys.example.org/oauth2/v3/certs" }
        },
        "routes": [
            { "path": "/invoices", "auth": { "jwt": "id" } },
            { "path": "/partners", "auth": { "jwt": "partner" } },
            { "path": "/public" }
        ]
    });
    let entry = gateway_render::check::check_entry_value(&doc, &policy).unwrap_or_else(|r| panic!("{r}"));
    let r = render(&[entry], &RenderConfig::new("api.example.com")).expect("renders");
    assert!(r.clusters.iter().filter(|c| c["name"].as_str().is_some_and(|n| n.contains(".jwks-"))).count() == 2);
    let view = ConfigView {
        clusters: &r.clusters,
        route_config: &r.route_config,
        ratelimit_yaml: &r.files["ratelimit.yaml"],
        jwt: r.jwt.as_ref(),
    };
    let options = ValidateOptions { envoy: envoy_options(), skip_envoy: false };
    let report = validate_all(&view, 1, r.route_count, &options).unwrap_or_else(|f| panic!("{f}"));
    assert!(report.envoy.is_some(), "Envoy judged it");

    // The same routes with the providers gone: layer 1 names the route and the requirement.
    let without = ConfigView { jwt: None, ..view };
    let failure = validate_all(&without, 1, r.route_count, &options).expect_err("refused");
    let message = failure.to_string();
    assert!(
        message.contains("billing.invoices-api.id") && message.contains("jwt.json does not define"),
        "{message}"
    );
}

#[test]
fn the_largest_cors_pattern_and_all_nine_methods_fit_envoys_regex_size() {
    let entry = corpus_entry("route-policy-cross-tenant-bounds.json");
    let longest = &entry.routes[0].cors.as_ref().expect("cors").origins;
    let longest = longest
        .iter()
        .find(|o| {
            o.split_once("://*.")
                .is_some_and(|(_, after)| after.len() == MAX_CORS_PATTERN_DOMAIN_LEN && after.contains(':'))
        })
        .expect("the corpus entry holds a pattern of the largest length, with a port")
        .clone();
    assert_eq!(entry.routes[0].methods.as_ref().map(Vec::len), Some(9));
    let r = render(std::slice::from_ref(&entry), &RenderConfig::new("api.example.com"))
        .expect("renders");
    let mut found = Vec::new();
    regexes(&r.route_config, &mut found);
    let domain = longest.split_once("://*.").expect("pattern").1.replace('.', "\\.");
    assert!(
        found.iter().any(|x| x.ends_with(&format!("{domain}$"))),
        "the longest pattern renders a regex: {found:?}"
    );
    assert!(
        found
            .iter()
            .any(|x| x == "^(CONNECT|DELETE|GET|HEAD|OPTIONS|PATCH|POST|PUT|TRACE)$"),
        "the nine methods render one regex: {found:?}"
    );
    validate(&r).unwrap_or_else(|f| panic!("Envoy refused the largest allowed regexes: {f}"));

    // One character more, for either scheme: the check refuses it, and so does Envoy.
    for one_more in [
        longest.replacen(".bbb", ".bbbb", 1),
        format!("http://*.{}.{}.com", "a".repeat(63), "b".repeat(16)),
    ] {
        let after = one_more.split_once("://*.").expect("pattern").1;
        assert_eq!(after.len(), MAX_CORS_PATTERN_DOMAIN_LEN + 1);
        let refused = check_origin(&one_more, false, "api.example.com").expect_err(&one_more);
        assert!(refused.contains("are at most 83"), "{refused}");
        let mut past = entry.clone();
        past.routes[0].cors.as_mut().expect("cors").origins = vec![one_more.clone()];
        let r = render(&[past], &RenderConfig::new("api.example.com")).expect("renders");
        let failure = validate(&r).expect_err(&one_more);
        assert_eq!(failure.layer, Layer::Envoy, "{failure}");
        assert!(
            failure.to_string().contains("RE2 program size of 101 > max program size of 100"),
            "{failure}"
        );
    }
}

/// A rollout's two revisions, every cohort copy with its cookie and request-id regexes, pass
/// every layer at shares across the range (docs/design.md#rollout).
#[test]
fn a_rollout_renders_both_revisions_into_a_config_every_layer_accepts() {
    let policy = Policy::new("api.example.com", false);
    let version = |rewrite: &str, backend: &str| {
        let text = format!(
            r#"{{"team":"billing-platform-team","service":"invoices-and-receipts-api","host":"invoices","backend":"{backend}","routes":[{{"path":"/api","rewrite":"{rewrite}","methods":["GET","POST"],"limits":[{{"per":"client-ip","requests":10,"every":"minute"}},{{"burst":5}}]}},{{"path":"/cors","cors":{{"origins":["https://app.example.com"]}}}}]}}"#
        );
        check_entry_bytes(text.as_bytes(), &policy).unwrap_or_else(|r| panic!("{r}"))
    };
    for percent in [1, 20, 50, 99] {
        let mut candidate = version("/v2", "https://v2.internal.example");
        candidate.serving = Some(Box::new(gateway_render::Serving {
            stable: version("/v1", "https://v1.internal.example"),
            stable_revision: 1,
            percent,
        }));
        let rendered = render(&[candidate], &RenderConfig::new("api.example.com")).expect("renders");
        let report = validate(&rendered).unwrap_or_else(|f| panic!("{percent} %: {f}"));
        assert_eq!(count_routes(&rendered.route_config), rendered.route_count);
        assert!(report.envoy.is_some(), "Envoy judged it: {report}");
    }
}
