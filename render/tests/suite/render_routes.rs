//! The route configuration of the sample registry, read back from the rendered Value: virtual
//! hosts, ordering, matches, limits, and the refusals.

use gateway_render::contract::{
    CATCH_ALL_VHOST, KILL_SWITCH_FILTER, LOCAL_RATE_LIMIT_FILTER, ROUTE_CONFIG_NAME,
};
use gateway_render::{render, Entry, Limit, RenderError, Route};
use crate::support::{
    action_descriptors, config, example_entries, render_examples, rule_descriptors,
};
use serde_json::{json, Value};

fn vhost<'a>(rendered: &'a gateway_render::Rendered, name: &str) -> &'a Value {
    rendered.route_config["virtual_hosts"]
        .as_array()
        .expect("virtual_hosts")
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no virtual host {name}"))
}

/// The route called `name` in the virtual host `host`.
fn named_route<'a>(rendered: &'a gateway_render::Rendered, host: &str, name: &str) -> &'a Value {
    vhost(rendered, host)["routes"]
        .as_array()
        .expect("routes")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no route {name} in {host}"))
}

fn route_names(vhost: &Value) -> Vec<String> {
    vhost["routes"]
        .as_array()
        .expect("routes")
        .iter()
        .map(|r| r["name"].as_str().expect("name").to_string())
        .collect()
}

#[test]
fn one_virtual_host_per_team_host_then_the_catch_all() {
    let rendered = render_examples();
    let rc = &rendered.route_config;
    assert_eq!(rc["name"], ROUTE_CONFIG_NAME);
    assert_eq!(rc["validate_clusters"], true);
    let names: Vec<&str> = rc["virtual_hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "catalog.api.example.com",
            "invoices.api.example.com",
            CATCH_ALL_VHOST
        ]
    );
    assert_eq!(
        vhost(&rendered, "invoices.api.example.com")["domains"],
        json!(["invoices.api.example.com", "invoices.api.example.com:*"])
    );
    let catch_all = vhost(&rendered, CATCH_ALL_VHOST);
    assert_eq!(catch_all["domains"], json!(["*"]));
    assert_eq!(catch_all["routes"][0]["match"]["path"], "/healthz");
    assert_eq!(catch_all["routes"][0]["direct_response"]["status"], 200);
    assert_eq!(catch_all["routes"][1]["direct_response"]["status"], 404);
    let body: Value = serde_json::from_str(
        catch_all["routes"][1]["direct_response"]["body"]["inline_string"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert!(body["error"].is_string());
    assert_eq!(
        catch_all["routes"][1]["response_headers_to_add"][0]["header"],
        json!({ "key": "content-type", "value": "application/json" })
    );
    // Three billing/invoices-api routes, three billing/payments-api routes, two catalog routes.
    assert_eq!(rendered.route_count, 8);
    let cluster_names: Vec<&str> = rendered
        .clusters
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        cluster_names,
        [
            "billing.invoices-api",
            "billing.payments-api",
            "catalog.products-api"
        ]
    );
}

#[test]
fn two_services_share_the_team_host_ordered_by_specificity() {
    let rendered = render_examples();
    assert_eq!(
        route_names(vhost(&rendered, "invoices.api.example.com")),
        [
            // Longest prefix first: nested prefixes come before the prefix they are nested in.
            "billing.payments-api:DELETE,POST:/payments/refunds",
            "billing.invoices-api:*:/invoices/export",
            // Same length: method-specific routes first, then by path.
            "billing.invoices-api:GET:/invoices",
            "billing.invoices-api:POST:/invoices",
            "billing.payments-api:GET,HEAD:/payments",
            "billing.payments-api:POST:/payments",
            "invoices.api.example.com:not-found",
        ]
    );
}

fn entry(team: &str, service: &str, host: &str, routes: Vec<Route>) -> Entry {
    Entry {
        rollout: None,
        serving: None,
        team: team.into(),
        service: service.into(),
        host: host.into(),
        backend: "http://10.0.0.9:8080".into(),
        protocol: Default::default(),
        canary: None,
        health_check: None,
        preserve_host: false,
        jwt: Default::default(),
        backends: vec![],
        routes,
    }
}

fn route(path: &str, methods: Option<&[&str]>) -> Route {
    Route::new(path, methods, vec![])
}

#[test]
fn method_specific_comes_before_method_less_at_the_same_prefix_length() {
    // (The same path with all methods and with POST would overlap: the checks reject that.)
    let e = entry(
        "shop",
        "cart",
        "shop",
        vec![
            route("/cart", None),
            route("/cart/items", None),
            route("/list", Some(&["POST"])),
        ],
    );
    let rendered = render(&[e], &config()).unwrap();
    assert_eq!(
        route_names(vhost(&rendered, "shop.api.example.com")),
        [
            "shop.cart:*:/cart/items",
            "shop.cart:POST:/list",
            "shop.cart:*:/cart",
            "shop.api.example.com:not-found"
        ]
    );
}

#[test]
fn matches_are_segment_aware_and_methods_use_the_method_header() {
    let rendered = render_examples();
    let by_name = |name: &str| named_route(&rendered, "invoices.api.example.com", name);
    assert_eq!(
        by_name("billing.invoices-api:GET:/invoices")["match"],
        json!({ "path_separated_prefix": "/invoices", "headers": [{ "name": ":method", "string_match": { "exact": "GET" } }] })
    );
    assert_eq!(
        by_name("billing.payments-api:DELETE,POST:/payments/refunds")["match"]["headers"],
        json!([{ "name": ":method", "string_match": { "safe_regex": { "regex": "^(DELETE|POST)$" } } }])
    );
    assert_eq!(
        by_name("billing.invoices-api:*:/invoices/export")["match"],
        json!({ "path_separated_prefix": "/invoices/export" })
    );
    assert_eq!(
        by_name("invoices.api.example.com:not-found")["match"],
        json!({ "prefix": "/" })
    );
    let catalog = vhost(&rendered, "catalog.api.example.com");
    assert_eq!(
        catalog["routes"][1]["match"]["prefix"], "/images/",
        "a trailing slash is already a segment boundary"
    );
    let action = &by_name("billing.invoices-api:GET:/invoices")["route"];
    assert_eq!(action["cluster"], "billing.invoices-api");
    assert_eq!(
        action["host_rewrite_literal"],
        "invoices.internal.example:8443"
    );
    assert!(action["timeout"].is_string());
}

#[test]
fn a_team_route_on_the_root_for_all_methods_replaces_the_fallback() {
    let rendered = render(
        &[entry("web", "site", "www", vec![route("/", None)])],
        &config(),
    )
    .unwrap();
    assert_eq!(
        route_names(vhost(&rendered, "www.api.example.com")),
        ["web.site:*:/"]
    );
    assert_eq!(
        vhost(&rendered, "www.api.example.com")["routes"][0]["match"],
        json!({ "prefix": "/" })
    );
    let rendered = render(
        &[entry(
            "web",
            "site",
            "www",
            vec![route("/", Some(&["GET"]))],
        )],
        &config(),
    )
    .unwrap();
    assert_eq!(
        route_names(vhost(&rendered, "www.api.example.com")),
        ["web.site:GET:/", "www.api.example.com:not-found"]
    );
}

#[test]
fn burst_becomes_a_local_token_bucket_refilled_every_second() {
    let rendered = render_examples();
    let post = named_route(
        &rendered,
        "invoices.api.example.com",
        "billing.invoices-api:POST:/invoices",
    );
    let local = &post["typed_per_filter_config"][LOCAL_RATE_LIMIT_FILTER];
    assert_eq!(
        local["token_bucket"],
        json!({ "max_tokens": 20, "tokens_per_fill": 20, "fill_interval": "1s" })
    );
    assert_eq!(
        local["filter_enabled"]["default_value"],
        json!({ "numerator": 100, "denominator": "HUNDRED" })
    );
    assert_eq!(
        local["filter_enforced"]["default_value"],
        json!({ "numerator": 100, "denominator": "HUNDRED" })
    );
    assert_eq!(local["status"]["code"], "TooManyRequests");
    assert!(local["stat_prefix"].is_string());
    let get = named_route(
        &rendered,
        "invoices.api.example.com",
        "billing.invoices-api:GET:/invoices",
    );
    assert!(
        get.get("typed_per_filter_config").is_none(),
        "no burst, no local bucket"
    );
    // Only the gateway's own health-check route switches the kill switch off, for its own 200.
    for vh in rendered.route_config["virtual_hosts"].as_array().unwrap() {
        for r in vh["routes"].as_array().unwrap() {
            if r["typed_per_filter_config"]
                .get(KILL_SWITCH_FILTER)
                .is_some()
            {
                assert_eq!(vh["name"], CATCH_ALL_VHOST);
                assert_eq!(r["name"], "gateway-health-check");
                assert_eq!(r["direct_response"]["status"], 200);
            }
        }
        assert!(vh.get("typed_per_filter_config").is_none());
    }
}

#[test]
fn several_bursts_on_one_route_keep_the_smallest() {
    let mut r = route("/a", None);
    r.limits = vec![Limit::Burst { burst: 9 }, Limit::Burst { burst: 3 }];
    let rendered = render(&[entry("t", "s", "h", vec![r])], &config()).unwrap();
    let local = &vhost(&rendered, "h.api.example.com")["routes"][0]["typed_per_filter_config"]
        [LOCAL_RATE_LIMIT_FILTER];
    assert_eq!(local["token_bucket"]["max_tokens"], 3);
}

#[test]
fn rate_limit_actions_emit_exactly_the_rule_tree_paths() {
    let rendered = render_examples();
    let actions = action_descriptors(&rendered.route_config);
    assert_eq!(actions, rule_descriptors(&rendered.files["ratelimit.yaml"]));
    let s = |k: &str, v: Option<&str>| (k.to_string(), v.map(str::to_string));
    assert!(actions.contains(&vec![
        s("team", Some("billing")),
        s("service", Some("invoices-api")),
        s("route", Some("*:/invoices/export#0")),
        s("header", None),
    ]));
    assert!(actions.contains(&vec![
        s("team", Some("billing")),
        s("service", Some("invoices-api")),
        s("route", Some("POST:/invoices#0"))
    ]));
    // Two global limits on one route land on two different rules.
    assert!(actions
        .iter()
        .any(|p| p[2].1.as_deref() == Some("POST:/payments#0")));
    assert!(actions
        .iter()
        .any(|p| p[2].1.as_deref() == Some("POST:/payments#1")));
    let global = example_entries()
        .iter()
        .flat_map(|e| e.routes.clone())
        .flat_map(|r| r.limits)
        .filter(|l| matches!(l, Limit::Global { .. }))
        .count();
    assert_eq!(actions.len(), global);
}

#[test]
fn a_host_claimed_by_two_teams_is_refused_naming_both() {
    let a = entry("billing", "invoices-api", "shared", vec![route("/a", None)]);
    let b = entry("catalog", "products-api", "shared", vec![route("/b", None)]);
    let err = render(&[b, a], &config()).unwrap_err();
    assert!(matches!(err, RenderError::HostConflict { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("shared.api.example.com")
            && text.contains("billing/invoices-api")
            && text.contains("catalog/products-api"),
        "{text}"
    );
}

#[test]
fn the_same_path_on_a_host_with_overlapping_methods_is_refused_naming_both() {
    let a = entry(
        "billing",
        "invoices-api",
        "inv",
        vec![route("/x", Some(&["GET", "POST"]))],
    );
    let b = entry(
        "billing",
        "payments-api",
        "inv",
        vec![route("/x", Some(&["POST"]))],
    );
    let text = render(&[a.clone(), b], &config()).unwrap_err().to_string();
    assert!(
        text.contains("/x")
            && text.contains("billing/invoices-api")
            && text.contains("billing/payments-api"),
        "{text}"
    );
    // Disjoint methods on one path do not shadow each other.
    let c = entry(
        "billing",
        "payments-api",
        "inv",
        vec![route("/x", Some(&["DELETE"]))],
    );
    assert!(render(&[a, c], &config()).is_ok());
}

#[test]
fn a_duplicate_entry_and_a_bad_backend_are_refused() {
    let a = entry("t", "s", "h", vec![route("/a", None)]);
    let err = render(&[a.clone(), a.clone()], &config()).unwrap_err();
    assert!(matches!(err, RenderError::DuplicateEntry { .. }), "{err}");
    let mut bad = a;
    bad.backend = "ftp://files.example".into();
    let text = render(&[bad], &config()).unwrap_err().to_string();
    assert!(
        text.contains("t/s") && text.contains("ftp://files.example"),
        "{text}"
    );
}

#[test]
fn route_timeouts_render_in_envoys_form_and_default_to_15s() {
    let mut slow = route("/slow", Some(&["GET"]));
    slow.timeout = Some("250ms".into());
    let mut long = route("/long", None);
    long.timeout = Some("1m".into());
    let plain = route("/plain", None);
    let e = entry("billing", "timeouts", "timeouts", vec![slow, long, plain]);
    let rendered = render(&[e], &config()).expect("renders");
    let routes = vhost(&rendered, "timeouts.api.example.com")["routes"].clone();
    let timeout_of = |path: &str| {
        routes
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["match"]["path_separated_prefix"] == path)
            .unwrap_or_else(|| panic!("{path}"))["route"]["timeout"]
            .clone()
    };
    assert_eq!(timeout_of("/slow"), "0.250s");
    assert_eq!(timeout_of("/long"), "60s");
    assert_eq!(timeout_of("/plain"), "15s");
}

#[test]
fn nested_services_and_conditions_order_by_precedence_whatever_the_input_order() {
    use gateway_render::{HeaderMatch, QueryMatch};
    let web = entry("shop", "web", "shop", vec![route("/", None)]);
    let mut versioned = route("/api", Some(&["GET"]));
    versioned.headers = vec![HeaderMatch {
        name: "x-version".into(),
        value: Some("2".into()),
        present: None,
    }];
    let mut queried = route("/api", Some(&["GET"]));
    queried.query = vec![QueryMatch {
        name: "v".into(),
        value: Some("2".into()),
        present: None,
    }];
    let exact = Route {
        exact: Some("/api/health".into()),
        ..Route::default()
    };
    let api = entry(
        "shop",
        "api",
        "shop",
        vec![queried, route("/api", Some(&["GET"])), versioned, exact],
    );
    let one = render(&[web.clone(), api.clone()], &config()).unwrap();
    let other = render(&[api, web], &config()).unwrap();
    assert_eq!(one.files, other.files, "byte-stable in either order");
    let names = route_names(vhost(&one, "shop.api.example.com"));
    assert_eq!(names[0], "shop.api:*:=/api/health", "{names:?}");
    assert!(names[1].starts_with("shop.api:GET:/api~"), "{names:?}");
    assert!(names[2].starts_with("shop.api:GET:/api~"), "{names:?}");
    assert_eq!(&names[3..], ["shop.api:GET:/api", "shop.web:*:/"], "{names:?}");
    // The header condition before the query condition.
    let second = named_route(&one, "shop.api.example.com", &names[1]);
    assert!(second["match"].get("query_parameters").is_none(), "{second}");
}

#[test]
fn the_same_match_from_two_services_is_refused_but_conditions_tell_routes_apart() {
    let mut beta = route("/api", None);
    beta.headers = vec![gateway_render::HeaderMatch {
        name: "x-beta".into(),
        value: None,
        present: Some(true),
    }];
    let a = entry("shop", "a", "shop", vec![route("/api", None), beta]);
    assert!(render(&[a.clone()], &config()).is_ok(), "one entry, conditions apart");
    let b = entry("shop", "b", "shop", vec![route("/api", None)]);
    let err = render(&[a, b], &config()).unwrap_err().to_string();
    assert!(err.contains("path /api on shop.api.example.com is claimed twice"), "{err}");
}

#[test]
fn preserve_host_leaves_the_clients_host_and_a_routes_host_rewrite_still_wins() {
    let mut rewritten = route("/other", None);
    rewritten.host_rewrite = Some("api.internal.example".into());
    let mut e = entry("shop", "web", "shop", vec![route("/web", None), rewritten]);
    e.preserve_host = true;
    let rendered = render(std::slice::from_ref(&e), &config()).unwrap();
    let action = &named_route(&rendered, "shop.api.example.com", "shop.web:*:/web")["route"];
    assert!(action.get("host_rewrite_literal").is_none() && action.get("auto_host_rewrite").is_none(), "{action}");
    let action = &named_route(&rendered, "shop.api.example.com", "shop.web:*:/other")["route"];
    assert_eq!(action["host_rewrite_literal"], "api.internal.example", "{action}");
    // The cluster (and so its TLS SNI) is the same with or without it.
    e.preserve_host = false;
    let before = render(&[e], &config()).unwrap();
    assert_eq!(before.clusters, rendered.clusters);
}
