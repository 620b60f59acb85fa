//! A rollout's render (docs/design.md#rollout): both revisions, each route only for its cohort,
//! candidate names under `team.service.candidate`, and the ends of the share one revision each.

use gateway_render::check::check_entry_value;
use gateway_render::{render, Entry, Policy, RenderConfig, Serving};
use serde_json::{json, Value};

const DOMAIN: &str = "api.example.com";

fn version(rewrite: &str, backend: &str) -> Entry {
    check_entry_value(
        &json!({ "team": "billing", "service": "invoices", "host": "invoices", "backend": backend,
                 "routes": [ { "path": "/api", "rewrite": rewrite, "limits": [ { "burst": 10 } ] } ] }),
        &Policy::new(DOMAIN, false),
    )
    .expect("a good entry")
}

fn rolled(percent: u32) -> Entry {
    let mut candidate = version("/v2", "https://v2.internal.example");
    candidate.serving = Some(Box::new(Serving {
        stable: version("/v1", "https://v1.internal.example"),
        stable_revision: 1,
        percent,
    }));
    candidate
}

fn routes(rendered: &gateway_render::Rendered) -> Vec<Value> {
    rendered.route_config["virtual_hosts"][0]["routes"].as_array().expect("routes").clone()
}

#[test]
fn both_revisions_render_each_route_for_its_cohort_only() {
    let cfg = RenderConfig::new(DOMAIN);
    let r = render(&[rolled(20)], &cfg).expect("renders");
    let names: Vec<String> = routes(&r).iter().map(|r| r["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(
        names,
        [
            "billing.invoices:*:/api#rollout-cookie",
            "billing.invoices:*:/api#rollout-new",
            "billing.invoices:*:/api#rollout-other",
            "billing.invoices.candidate:*:/api#rollout-cookie",
            "billing.invoices.candidate:*:/api#rollout-new",
            "invoices.api.example.com:not-found",
        ]
    );
    let clusters: Vec<&str> = r.clusters.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(clusters, ["billing.invoices.candidate", "billing.invoices"]);
    for route in routes(&r).iter().filter(|r| r["name"].as_str().unwrap().contains("#rollout")) {
        let meta = &route["metadata"]["filter_metadata"]["gateway"];
        assert_eq!(meta["service"], "invoices", "the access log names the entry's own service");
        let candidate = route["name"].as_str().unwrap().starts_with("billing.invoices.candidate");
        assert_eq!(meta["revision"], if candidate { "candidate" } else { "stable" });
        assert_eq!(route["route"]["cluster"], if candidate { "billing.invoices.candidate" } else { "billing.invoices" });
        assert_eq!(route["route"]["regex_rewrite"].is_null() && route["route"]["prefix_rewrite"] == if candidate { "/v2" } else { "/v1" }, true, "{route}");
        let sets_cookie = route["response_headers_to_add"].to_string().contains("set-cookie");
        assert_eq!(sets_cookie, route["name"].as_str().unwrap().ends_with("#rollout-new"), "{route}");
    }
    assert!(r.route_count >= 5, "every copy counts: {}", r.route_count);
    // The same rollout in any order renders the same bytes; a share change moves only routes.
    assert_eq!(render(&[rolled(20)], &cfg).unwrap().hash, r.hash);
    let fifty = render(&[rolled(50)], &cfg).unwrap();
    assert_ne!(fifty.hash, r.hash);
    assert_eq!(fifty.clusters, r.clusters, "a share change moves no cluster");
}

#[test]
fn the_ends_of_the_share_serve_one_revision_under_its_own_names() {
    let cfg = RenderConfig::new(DOMAIN);
    let hundred = render(&[rolled(100)], &cfg).unwrap();
    let mut alone = version("/v2", "https://v2.internal.example");
    alone.serving = None;
    assert_eq!(hundred.files, render(&[alone], &cfg).unwrap().files, "100 % is the candidate alone");
    let zero = render(&[rolled(0)], &cfg).unwrap();
    assert_eq!(zero.files, render(&[version("/v1", "https://v1.internal.example")], &cfg).unwrap().files, "0 % is the stable revision alone");
}

/// The exact bytes of a rollout at 20 % (`tests/golden/rollout`): both revisions' clusters, the
/// cohort copies and their regexes, the set-cookie, per-revision rate-limit keys. Regenerate
/// deliberately with `UPDATE_GOLDEN=1` and review the diff.
#[test]
fn a_rollout_matches_the_golden_files() {
    let policy = Policy::new(DOMAIN, false);
    let entry = |rewrite: &str, backend: &str| {
        check_entry_value(
            &json!({ "team": "billing", "service": "invoices", "host": "invoices", "backend": backend,
                     "routes": [ { "path": "/api", "methods": ["GET"], "rewrite": rewrite,
                                   "limits": [ { "per": "client-ip", "requests": 100, "every": "minute" } ] } ],
                     "rollout": { "steps": [20, 50, 100], "interval": "5m" } }),
            &policy,
        )
        .expect("a good entry")
    };
    let mut candidate = entry("/v2", "https://v2.internal.example");
    let mut stable = entry("/v1", "https://v1.internal.example");
    stable.rollout = None;
    candidate.serving = Some(Box::new(Serving { stable, stable_revision: 4, percent: 20 }));
    let other = check_entry_value(
        &json!({ "team": "catalog", "service": "products", "host": "catalog", "backend": "https://catalog.internal.example",
                 "routes": [ { "path": "/products" } ] }),
        &policy,
    )
    .expect("a good entry");
    let rendered = render(&[other.clone(), candidate.clone()], &RenderConfig::new(DOMAIN)).expect("renders");
    assert_eq!(render(&[candidate, other], &RenderConfig::new(DOMAIN)).unwrap().hash, rendered.hash, "input order");
    crate::support::check_golden(&crate::support::golden_dir("rollout"), &crate::support::expected_files(&rendered));
    // Another team's routes carry no cohort condition and set no cookie.
    let catalog = rendered.route_config["virtual_hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "catalog.api.example.com")
        .expect("catalog's host")
        .to_string();
    assert!(!catalog.contains("gw-ro-") && !catalog.contains("rollout") && !catalog.contains("set-cookie"), "{catalog}");
}
