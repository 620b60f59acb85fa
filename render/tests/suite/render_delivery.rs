//! The delivery policy (docs/design.md#delivery-policy) on real renders, read as the sidecar
//! reads them, and on every forged shape a signed bundle could still carry.

use crate::support::{config, render_examples};
use gateway_render::check::Policy;
use gateway_render::contract::{CLUSTERS_FILE, ROUTES_FILE};
use gateway_render::delivery::{check_config, read_clusters, read_routes, PolicyError};
use gateway_render::render_kill_switch;
use serde_json::{json, Value};

fn policy(loopback: bool) -> Policy {
    Policy::new("example.com", loopback)
}

/// Both files through the streaming readers, and the in-memory check: they must agree.
fn judge(clusters: &Value, routes: &Value, policy: &Policy) -> Result<(), PolicyError> {
    let streamed = (|| {
        let names = read_clusters(clusters.to_string().as_bytes(), policy)?;
        read_routes(routes.to_string().as_bytes(), &names)
    })();
    let in_memory = check_config(
        clusters["resources"].as_array().expect("list"),
        &routes["resources"][0],
        policy,
    );
    assert_eq!(streamed, in_memory, "the two readings agree");
    streamed
}

fn files(rendered: &gateway_render::Rendered) -> (Value, Value) {
    let parse = |name| serde_json::from_str::<Value>(&rendered.files[name]).expect("json");
    (parse(CLUSTERS_FILE), parse(ROUTES_FILE))
}

#[test]
fn what_the_renderer_writes_passes() {
    for rendered in [
        render_examples(),
        render_kill_switch(&config()),
        gateway_render::render_kill_switch_for(&config(), &crate::support::example_entries()),
    ] {
        let (clusters, routes) = files(&rendered);
        judge(&clusters, &routes, &policy(false)).expect("a render passes");
    }
    // Every golden render of whole files: health checks, canaries, CORS, the kill switch.
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut judged = 0;
    for dir in std::fs::read_dir(&golden).expect("golden dirs") {
        let dir = dir.expect("entry").path();
        let read = |name: &str| -> Option<Value> {
            let text = std::fs::read_to_string(dir.join(name)).ok()?;
            Some(serde_json::from_str(&text).expect("json"))
        };
        let (Some(clusters), Some(routes)) = (read(CLUSTERS_FILE), read(ROUTES_FILE)) else {
            continue;
        };
        judge(&clusters, &routes, &policy(true))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        judged += 1;
    }
    assert!(judged >= 3, "golden renders judged: {judged}");
}

fn cluster(name: &str, address: Value) -> Value {
    json!({
        "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        "name": name, "type": "STATIC", "connect_timeout": "1s",
        "load_assignment": {"cluster_name": name, "endpoints": [{"lb_endpoints": [
            {"endpoint": {"address": address}}]}]}
    })
}

fn socket(host: &str, port: u16) -> Value {
    json!({"socket_address": {"address": host, "port_value": port}})
}

/// The example render with `edit` applied; the verdict and its message.
fn forged(
    policy: &Policy,
    edit: impl FnOnce(&mut Vec<Value>, &mut Vec<Value>, &mut Value),
) -> Result<(), String> {
    let (mut clusters, mut routes) = files(&render_examples());
    let mut list = clusters["resources"].as_array().expect("list").clone();
    let mut rc = routes["resources"][0].clone();
    let mut vhosts = rc["virtual_hosts"].as_array().expect("vhosts").clone();
    edit(&mut list, &mut vhosts, &mut rc);
    rc["virtual_hosts"] = Value::Array(vhosts);
    clusters["resources"] = Value::Array(list);
    routes["resources"] = json!([rc]);
    judge(&clusters, &routes, policy).map_err(|e| e.to_string())
}

fn steal_vhost(cluster: &str) -> Value {
    json!({"name": "steal", "domains": ["steal.example.com"],
           "routes": [{"match": {"prefix": "/"}, "route": {"cluster": cluster}}]})
}

#[test]
fn clusters_into_the_proxy_or_its_networks_are_refused() {
    let strict = policy(false);
    let cases: Vec<(&str, Value, bool, &str)> = vec![
        ("the admin pipe", json!({"pipe": {"path": "/run/envoy/admin.sock"}}), true, "only a socket_address"),
        ("an internal address", json!({"envoy_internal_address": {"server_listener_name": "x"}}), true, "only a socket_address"),
        ("loopback", socket("127.0.0.1", 8080), false, "is a loopback address"),
        ("IPv6 loopback", socket("::1", 8080), false, "is a loopback address"),
        ("localhost", socket("localhost", 8080), false, "the proxy's own host"),
        ("the metadata endpoint", socket("169.254.169.254", 80), true, "link-local/metadata"),
        ("the task metadata", socket("169.254.170.2", 80), true, "link-local/metadata"),
        ("IPv4 in IPv6 to metadata", socket("::ffff:169.254.169.254", 80), true, "link-local/metadata"),
        ("the admin port", socket("10.0.0.1", 15000), true, "15000-15019"),
        ("the unspecified address", socket("0.0.0.0", 9901), false, "unspecified"),
    ];
    for (what, address, even_with_loopback, expected) in cases {
        let edit = |c: &mut Vec<Value>, v: &mut Vec<Value>, _: &mut Value| {
            c.push(cluster("steal", address.clone()));
            v.insert(0, steal_vhost("steal"));
        };
        let err = forged(&strict, edit).expect_err(what);
        assert!(err.contains(expected), "{what}: {err}");
        assert!(err.starts_with("clusters.json: cluster steal:"), "{what}: {err}");
        let lenient = forged(&policy(true), edit);
        assert_eq!(lenient.is_err(), even_with_loopback, "{what} with loopback allowed: {lenient:?}");
    }
}

#[test]
fn clusters_the_renderer_never_writes_are_refused() {
    let strict = policy(false);
    let cases: Vec<(&str, Box<dyn Fn(&mut Value)>, &str)> = vec![
        ("EDS", Box::new(|c| c["type"] = json!("EDS")), "type must be one of"),
        ("ORIGINAL_DST", Box::new(|c| c["type"] = json!("ORIGINAL_DST")), "type must be one of"),
        ("a dynamic forward proxy", Box::new(|c| {
            c.as_object_mut().expect("object").remove("type");
            c["cluster_type"] = json!({"name": "envoy.clusters.dynamic_forward_proxy"});
        }), "type must be one of"),
        ("an unknown setting", Box::new(|c| c["upstream_bind_config"] = json!({})), "upstream_bind_config: not a setting"),
        ("the bootstrap's name", Box::new(|c| {
            c["name"] = json!("ratelimit");
            c["load_assignment"]["cluster_name"] = json!("ratelimit");
        }), "bootstrap's rate-limit cluster"),
        ("a raw transport socket", Box::new(|c| c["transport_socket"] = json!({"name": "envoy.transport_sockets.raw_buffer"})), "transport_socket must be"),
        ("a source address", Box::new(|c| {
            c["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]["ipv4_compat"] = json!(true);
        }), "beyond address and port_value"),
    ];
    for (what, change, expected) in cases {
        let err = forged(&strict, |c, _, _| change(&mut c[0])).expect_err(what);
        assert!(err.contains(expected), "{what}: {err}");
    }
}

#[test]
fn routes_the_renderer_never_writes_are_refused() {
    let strict = policy(false);
    let team = |v: &mut Vec<Value>| -> usize {
        v.iter()
            .position(|vh| vh["name"] != "gateway-catch-all")
            .expect("a team vhost")
    };
    type Edit = Box<dyn Fn(&mut Vec<Value>, &mut Vec<Value>, &mut Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        ("a missing cluster", Box::new(|_, v, _| v.insert(0, steal_vhost("no.such"))), "which this bundle does not define"),
        ("a target picked at request time", Box::new(move |_, v, _| {
            let i = team(v);
            v[i]["routes"][0]["route"] = json!({"cluster_header": "x-cluster"});
        }), "cluster_header"),
        ("a mirror to a missing cluster", Box::new(move |_, v, _| {
            let i = team(v);
            v[i]["routes"][0]["route"]["request_mirror_policies"] = json!([{"cluster": "ratelimit"}]);
        }), "\"ratelimit\""),
        ("a second catch-all", Box::new(|_, v, _| {
            let mut vh = steal_vhost("billing.invoices-api");
            vh["domains"] = json!(["*"]);
            v.insert(0, vh);
        }), "only the gateway's one catch-all"),
        ("a wildcard", Box::new(|_, v, _| {
            let mut vh = steal_vhost("billing.invoices-api");
            vh["domains"] = json!(["*.example.com"]);
            v.insert(0, vh);
        }), "is a wildcard"),
        ("a host served twice", Box::new(move |_, v, _| {
            let i = team(v);
            let mut vh = steal_vhost("billing.invoices-api");
            vh["domains"] = v[i]["domains"].clone();
            v.push(vh);
        }), "is also served by virtual host"),
        ("the kill switch off on a team route", Box::new(move |_, v, _| {
            let i = team(v);
            v[i]["routes"][0]["typed_per_filter_config"] = json!({"gateway.kill_switch": {}});
        }), "gateway.kill_switch"),
        ("the path guard off for a host", Box::new(move |_, v, _| {
            let i = team(v);
            v[i]["typed_per_filter_config"] = json!({"gateway.path_guard": {}});
        }), "gateway.path_guard"),
        ("another route configuration name", Box::new(|_, _, rc| rc["name"] = json!("other")), "name must be \"gateway\""),
        ("validate_clusters off", Box::new(|_, _, rc| rc["validate_clusters"] = json!(false)), "validate_clusters must be true"),
    ];
    for (what, edit, expected) in cases {
        let err = forged(&strict, |c, v, rc| edit(c, v, rc)).expect_err(what);
        assert!(err.contains(expected), "{what}: {err}");
    }
}
