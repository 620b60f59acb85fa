//! Route policy in Envoy's terms, read back from the rendered Value (retries, rewrite, header
//! changes, CORS with its preflight route, websocket), and the golden bytes of the corpus's
//! route-policy entries (docs/design.md#route-policy).

use gateway_render::check::{check_entry_bytes, Policy};
use gateway_render::contract::{CORS_FILTER, LOCAL_RATE_LIMIT_FILTER};
use gateway_render::{render, Entry, Rendered};
use crate::support::config;
use serde_json::{json, Value};
use std::path::PathBuf;

fn corpus_entry(file: &str) -> Entry {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/good")
        .join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    check_entry_bytes(&bytes, &Policy::new("api.example.com", false))
        .unwrap_or_else(|r| panic!("{file}:\n{r}"))
}

/// The corpus entry `file`, rendered alone.
fn render_corpus_entry(file: &str) -> Rendered {
    render(&[corpus_entry(file)], &config()).expect("renders")
}

fn routes(rendered: &Rendered) -> &Vec<Value> {
    rendered.route_config["virtual_hosts"][0]["routes"]
        .as_array()
        .expect("routes")
}

fn named<'a>(rendered: &'a Rendered, name: &str) -> &'a Value {
    routes(rendered)
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no route {name}"))
}

/// Routes with a cluster or a redirect, as `gateway_validator::count_routes` counts them (the
/// validator is not a dependency of this crate).
fn gateway_validator_count(rc: &Value) -> usize {
    rc["virtual_hosts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|vh| vh["routes"].as_array().into_iter().flatten())
        .filter(|r| r.get("route").is_some() || r.get("redirect").is_some())
        .count()
}

#[test]
fn the_design_example_renders_every_field() {
    let rendered = render_corpus_entry("route-policy-design-example.json");
    let r = named(&rendered, "billing.invoices-api:GET:/invoices");
    assert_eq!(r["route"]["timeout"], "5s");
    assert_eq!(
        r["route"]["retry_policy"],
        json!({"retry_on": "5xx,connect-failure,reset", "num_retries": 2, "per_try_timeout": "2s"})
    );
    assert_eq!(r["route"]["prefix_rewrite"], "/v2/invoices");
    assert_eq!(r["route"]["host_rewrite_literal"], "invoices.internal.example");
    assert!(r["route"].get("auto_host_rewrite").is_none(), "{r}");
    assert_eq!(
        r["match"]["path_separated_prefix"], "/invoices",
        "the rewrite replaces whole segments"
    );
    assert!(
        r["route"].get("upgrade_configs").is_none(),
        "websocket: false renders nothing"
    );
    assert_eq!(
        r["request_headers_to_add"],
        json!([{"header": {"key": "x-team", "value": "billing"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}])
    );
    assert_eq!(r["request_headers_to_remove"], json!(["x-debug"]));
    assert_eq!(
        r["response_headers_to_add"],
        json!([{"header": {"key": "cache-control", "value": "no-store"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"},
               {"header": {"key": "vary", "value": "origin"}, "append_action": "APPEND_IF_EXISTS_OR_ADD"}])
    );
    assert_eq!(r["response_headers_to_remove"], json!(["server"]));
    assert_eq!(
        r["typed_per_filter_config"][CORS_FILTER],
        json!({
            "@type": "type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy",
            "allow_origin_string_match": [{"exact": "https://app.example.com"}],
            "allow_methods": "GET", "allow_headers": "x-api-key",
            "expose_headers": "x-request-id", "max_age": "600",
            "allow_credentials": false, "forward_not_matching_preflights": false
        })
    );
    // A redirect route: Envoy answers, no cluster.
    let moved = named(&rendered, "billing.invoices-api:GET:/old-invoices");
    assert_eq!(
        moved["redirect"],
        json!({"scheme_redirect": "https", "prefix_rewrite": "/invoices", "response_code": "MOVED_PERMANENTLY"})
    );
    assert!(moved.get("route").is_none(), "{moved}");
    // GET only: the browser's OPTIONS gets a route of its own, before the GET route's fallback.
    let p = named(&rendered, "billing.invoices-api:preflight:/invoices");
    assert_eq!(
        p["match"]["headers"],
        json!([{"name": ":method", "string_match": {"exact": "OPTIONS"}},
               {"name": "origin", "string_match": {"safe_regex": {"regex": ".+"}}},
               {"name": "access-control-request-method", "present_match": true}])
    );
    // A route entry (the CORS filter skips direct responses); the filter answers every match.
    assert_eq!(p["route"]["cluster"], "billing.invoices-api");
    assert_eq!(
        r["typed_per_filter_config"][CORS_FILTER]["forward_not_matching_preflights"],
        false
    );
    assert_eq!(
        p["typed_per_filter_config"][CORS_FILTER],
        r["typed_per_filter_config"][CORS_FILTER]
    );
    assert_eq!(
        rendered.route_count,
        gateway_validator_count(&rendered.route_config),
        "the render counts routes as the validator does: every route with a cluster or a redirect"
    );
    // The GET route and its preflight, and the redirect.
    assert_eq!(rendered.route_count, 3);
}

#[test]
fn shared_paths_patterns_percent_and_websocket() {
    let rendered = render_corpus_entry("route-policy-shared-path-and-bounds.json");
    let names: Vec<&str> = routes(&rendered)
        .iter()
        .map(|r| r["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "billing.invoices-api:GET,HEAD:/invoices",
            "billing.invoices-api:OPTIONS:/invoices",
            "billing.invoices-api:POST:/invoices",
            "billing.invoices-api:GET,OPTIONS:/docs/",
            "billing.invoices-api:*:/feed",
            "billing.invoices-api:*:/",
        ]
        .map(|n| n.replace("OPTIONS:/invoices", "preflight:/invoices"))
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
    );
    let get = named(&rendered, "billing.invoices-api:GET,HEAD:/invoices");
    assert_eq!(
        get["route"]["retry_policy"],
        json!({"retry_on": "gateway-error,retriable-status-codes", "num_retries": 3,
               "per_try_timeout": "14.999s", "retriable_status_codes": [429, 503]})
    );
    let cors = &get["typed_per_filter_config"][CORS_FILTER];
    assert_eq!(
        cors["allow_origin_string_match"],
        json!([{"exact": "http://localhost:3000"},
               {"safe_regex": {"regex": "^https://[a-z0-9-]+(\\.[a-z0-9-]+)*\\.example\\.com$"}},
               {"exact": "https://app.example.com"}])
    );
    assert_eq!(
        (
            cors["max_age"].as_str(),
            cors["allow_credentials"].as_bool()
        ),
        (Some("86400"), Some(true))
    );
    let post = named(&rendered, "billing.invoices-api:POST:/invoices");
    assert_eq!(
        post["route"]["retry_policy"]["retry_on"],
        "connect-failure,refused-stream"
    );
    assert_eq!(
        post["request_headers_to_add"][0]["header"],
        json!({"key": "x-percent", "value": "100%% %%UPSTREAM_HOST%% literal"}),
        "a % is escaped, so Envoy never reads a value as a formatter command"
    );
    let feed = named(&rendered, "billing.invoices-api:*:/feed");
    assert_eq!(
        feed["route"]["upgrade_configs"],
        json!([{"upgrade_type": "websocket", "enabled": true}])
    );
    assert_eq!(
        feed["typed_per_filter_config"][CORS_FILTER]["allow_origin_string_match"],
        json!([{"safe_regex": {"regex": ".+"}}])
    );
    assert!(feed["typed_per_filter_config"]
        .get(LOCAL_RATE_LIMIT_FILTER)
        .is_none());
    let root = named(&rendered, "billing.invoices-api:*:/");
    assert_eq!(
        (
            root["match"]["prefix"].as_str(),
            root["route"]["prefix_rewrite"].as_str()
        ),
        (Some("/"), Some("/legacy/"))
    );
    assert_eq!(
        root["response_headers_to_remove"],
        json!(["server", "x-powered-by"])
    );
    let docs = named(&rendered, "billing.invoices-api:GET,OPTIONS:/docs/");
    assert_eq!(docs["route"]["prefix_rewrite"], "/static/docs/");
}

#[test]
fn a_burst_and_a_cors_policy_share_the_per_filter_config() {
    let mut e = corpus_entry("route-policy-design-example.json");
    e.routes[0].limits = vec![gateway_render::Limit::Burst { burst: 5 }];
    let rendered = render(&[e], &config()).expect("renders");
    let tpfc = &named(&rendered, "billing.invoices-api:GET:/invoices")["typed_per_filter_config"];
    assert!(
        tpfc.get(LOCAL_RATE_LIMIT_FILTER).is_some() && tpfc.get(CORS_FILTER).is_some(),
        "{tpfc}"
    );
}

#[test]
fn route_policy_renders_to_the_golden_bytes() {
    let entries = [
        corpus_entry("route-policy-design-example.json"),
        corpus_entry("route-policy-shared-path-and-bounds.json"),
        corpus_entry("route-matches-and-rewrites.json"),
        corpus_entry("route-mirror.json"),
        corpus_entry("entry-backends.json"),
        corpus_entry("entry-backends-canary.json"),
        corpus_entry("route-clients.json"),
        corpus_entry("route-jwt.json"),
    ];
    // Two entries of one team on one host would conflict on /invoices; render each alone.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/route-policy");
    for (i, e) in entries.iter().enumerate() {
        let rendered = render(std::slice::from_ref(e), &config()).expect("renders");
        let text = rendered
            .files
            .get("routes.json")
            .expect("routes.json")
            .clone();
        // The JWT filter's providers, for an entry that declares them (`jwt-{i}.json`).
        if let Some(jwt) = rendered.files.get("jwt.json") {
            let path = dir.join(format!("jwt-{i}.json"));
            if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
                std::fs::write(&path, jwt).expect("write golden");
            } else {
                let golden = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1", path.display()));
                assert!(golden == *jwt, "{} differs from the render", path.display());
            }
        }
        let path = dir.join(format!("routes-{i}.json"));
        if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
            std::fs::create_dir_all(&dir).expect("golden dir");
            std::fs::write(&path, &text).expect("write golden");
            continue;
        }
        let golden = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1", path.display()));
        assert!(
            golden == text,
            "{} differs from the render; if intended, run with UPDATE_GOLDEN=1 and review the diff",
            path.display()
        );
        // Byte-stable: the same entry written in another order renders the same bytes.
        let mut shuffled = e.clone();
        shuffled.routes.reverse();
        let again = render(&[shuffled], &config()).expect("renders");
        assert_eq!(again.files.get("routes.json"), Some(&text));
    }
}
