//! The gateway's own rules on rendered config, as a proxy receives it (docs/design.md#delivery-policy):
//! only the cluster kinds, addresses and virtual hosts the renderer produces. The sidecar runs
//! them on the files it is about to deliver, read one resource at a time from the staged files,
//! so a bundle signed by a compromised reconciler still cannot route into the proxy; the
//! validator's layer 1 runs the same checks before a publish.
//!
//! - a cluster: `@type` a Cluster; only the keys the renderer writes; `type` STATIC, STRICT_DNS
//!   or LOGICAL_DNS, or the aggregate `cluster_type` over clusters of the same bundle; a name
//!   that is not the bootstrap's; endpoints only `socket_address` (never a pipe or an internal
//!   address) on a port outside the gateway's reserved 15000–15019, an IP literal judged by the
//!   backend address rule (no loopback or unspecified address unless loopback backends are
//!   allowed, never link-local or metadata, within `GATEWAY_BACKEND_CIDRS` when set), and no
//!   `localhost` name unless loopback is allowed; TLS only as the renderer's upstream context;
//! - the route configuration: named as the bootstrap's RDS, `validate_clusters` on; each domain
//!   in one virtual host, no wildcard but the single catch-all; every route's clusters (its
//!   target, its weighted clusters, its mirrors) in the bundle; no target picked at request
//!   time; the gateway's own filters (kill switch, path guard, cookie scope) never configured
//!   per route, except the kill switch on the catch-all's health-check route.

use crate::check::{check_address, Policy};
use crate::contract::{
    CATCH_ALL_VHOST, CLUSTER_TYPE_URL, COOKIE_SCOPE_FILTER, HEALTH_CHECK_ROUTE,
    KILL_SWITCH_FILTER, PATH_GUARD_FILTER, RATE_LIMIT_CLUSTER, ROUTE_CONFIG_NAME,
    ROUTE_CONFIG_TYPE_URL,
};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read;
use std::net::IpAddr;

/// Keys a rendered cluster may have.
const CLUSTER_KEYS: [&str; 14] = [
    "@type",
    "circuit_breakers",
    "cluster_type",
    "connect_timeout",
    "dns_lookup_family",
    "health_checks",
    "lb_policy",
    "load_assignment",
    "name",
    "outlier_detection",
    "transport_socket",
    "type",
    "typed_extension_protocol_options",
    "common_lb_config",
];
const CLUSTER_TYPES: [&str; 3] = ["STATIC", "STRICT_DNS", "LOGICAL_DNS"];
const AGGREGATE: &str = "envoy.clusters.aggregate";
const TLS_SOCKET: &str = "envoy.transport_sockets.tls";
const TLS_CONTEXT: &str =
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext";
/// The ports the gateway keeps for itself on loopback (Envoy's admin, the rate-limit service,
/// the sidecars' health servers).
const RESERVED_PORTS: std::ops::RangeInclusive<u64> = 15000..=15019;
/// Filters of the gateway's own that no route may configure.
const OWN_FILTERS: [&str; 3] = [KILL_SWITCH_FILTER, PATH_GUARD_FILTER, COOKIE_SCOPE_FILTER];

/// A rule broken: in which file, where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {at}: {reason}")]
pub struct PolicyError {
    pub file: &'static str,
    pub at: String,
    pub reason: String,
}

/// The clusters' part of the rules: each cluster judged alone, and the names for the routes.
#[derive(Debug, Default)]
pub struct Clusters {
    pub names: BTreeSet<String>,
    /// Aggregate clusters and the clusters each points at, judged once all are known.
    aggregates: Vec<(String, Vec<String>)>,
}

impl Clusters {
    /// Judges one cluster resource.
    pub fn add(&mut self, cluster: &Value, policy: &Policy) -> Result<(), (String, String)> {
        let name = cluster
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ("a cluster".to_string(), "has no name".to_string()))?;
        let at = format!("cluster {name}");
        let fail = |reason: String| Err((at.clone(), reason));
        if cluster.get("@type").and_then(Value::as_str) != Some(CLUSTER_TYPE_URL) {
            return fail(format!("@type is not {CLUSTER_TYPE_URL}"));
        }
        let Some(object) = cluster.as_object() else {
            return fail("is not an object".into());
        };
        if let Some(key) = object.keys().find(|k| !CLUSTER_KEYS.contains(&k.as_str())) {
            return fail(format!("{key}: not a setting the renderer writes"));
        }
        if name == RATE_LIMIT_CLUSTER {
            return fail("the name is the bootstrap's rate-limit cluster".into());
        }
        if !self.names.insert(name.to_string()) {
            return fail("defined twice".into());
        }
        match (cluster.get("type"), cluster.get("cluster_type")) {
            (Some(t), None) if t.as_str().is_some_and(|t| CLUSTER_TYPES.contains(&t)) => {}
            (None, Some(ct)) if ct.get("name").and_then(Value::as_str) == Some(AGGREGATE) => {
                let targets: Vec<String> = ct
                    .pointer("/typed_config/clusters")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.as_str().map(str::to_string))
                    .collect();
                if targets.is_empty() {
                    return fail("an aggregate cluster over no clusters".into());
                }
                self.aggregates.push((name.to_string(), targets));
                if cluster.get("load_assignment").is_some() {
                    return fail("an aggregate cluster has no endpoints of its own".into());
                }
                return Ok(());
            }
            _ => {
                return fail(format!(
                    "type must be one of {} (or the aggregate cluster_type)",
                    CLUSTER_TYPES.join(", ")
                ))
            }
        }
        endpoints(cluster, name, policy).map_err(|reason| (at.clone(), reason))?;
        if let Some(socket) = cluster.get("transport_socket") {
            if socket.get("name").and_then(Value::as_str) != Some(TLS_SOCKET)
                || socket.pointer("/typed_config/@type").and_then(Value::as_str)
                    != Some(TLS_CONTEXT)
            {
                return fail(format!("transport_socket must be {TLS_SOCKET} with an UpstreamTlsContext"));
            }
        }
        Ok(())
    }

    /// Once every cluster is in: each aggregate points only at clusters of the bundle.
    pub fn finish(&self) -> Result<(), (String, String)> {
        for (name, targets) in &self.aggregates {
            if let Some(missing) = targets.iter().find(|t| !self.names.contains(*t) || *t == name) {
                return Err((
                    format!("cluster {name}"),
                    format!("aggregates {missing}, which is not another cluster of this bundle"),
                ));
            }
        }
        Ok(())
    }
}

fn endpoints(cluster: &Value, name: &str, policy: &Policy) -> Result<(), String> {
    let Some(assignment) = cluster.get("load_assignment") else {
        return Err("has no load_assignment".into());
    };
    if assignment.get("cluster_name").and_then(Value::as_str) != Some(name) {
        return Err("load_assignment.cluster_name is not the cluster's name".into());
    }
    let groups = assignment
        .get("endpoints")
        .and_then(Value::as_array)
        .ok_or("load_assignment has no endpoints")?;
    for endpoint in groups
        .iter()
        .flat_map(|g| g.get("lb_endpoints").and_then(Value::as_array).into_iter().flatten())
    {
        let address = endpoint
            .pointer("/endpoint/address")
            .and_then(Value::as_object)
            .ok_or("an endpoint has no address")?;
        if address.len() != 1 || !address.contains_key("socket_address") {
            let kinds: Vec<&String> = address.keys().collect();
            return Err(format!(
                "endpoint address {kinds:?}: only a socket_address (no pipe, no internal address)"
            ));
        }
        let socket = &address["socket_address"];
        let keys_ok = socket
            .as_object()
            .is_some_and(|o| o.keys().all(|k| k == "address" || k == "port_value"));
        if !keys_ok {
            return Err("socket_address has settings beyond address and port_value".into());
        }
        let host = socket.get("address").and_then(Value::as_str).unwrap_or("");
        let port = socket.get("port_value").and_then(Value::as_u64).unwrap_or(0);
        if !(1..=65535).contains(&port) || RESERVED_PORTS.contains(&port) {
            return Err(format!(
                "endpoint {host}:{port}: the port is outside 1-65535 or one the gateway keeps (15000-15019)"
            ));
        }
        match host.parse::<IpAddr>() {
            Ok(ip) => check_address(ip, policy).map_err(|e| format!("endpoint {e}"))?,
            Err(_) => {
                let lower = host.trim_end_matches('.').to_ascii_lowercase();
                if host.is_empty() {
                    return Err("an endpoint has no address".into());
                }
                if (lower == "localhost" || lower.ends_with(".localhost"))
                    && !policy.allow_loopback_backends
                {
                    return Err(format!("endpoint {host} is the proxy's own host"));
                }
            }
        }
    }
    Ok(())
}

/// The route configuration's part, one virtual host at a time.
#[derive(Debug, Default)]
pub struct Routes {
    names: BTreeSet<String>,
    domains: BTreeMap<String, String>,
    catch_all: Option<String>,
}

impl Routes {
    /// The route configuration's own settings (everything but its virtual hosts).
    pub fn config(name: Option<&str>, validate_clusters: Option<bool>) -> Result<(), (String, String)> {
        let at = format!("route configuration {:?}", name.unwrap_or(""));
        if name != Some(ROUTE_CONFIG_NAME) {
            return Err((at, format!("name must be {ROUTE_CONFIG_NAME:?}, the bootstrap's")));
        }
        if validate_clusters != Some(true) {
            return Err((at, "validate_clusters must be true".into()));
        }
        Ok(())
    }

    /// Judges one virtual host against the bundle's clusters.
    pub fn add(&mut self, vh: &Value, clusters: &BTreeSet<String>) -> Result<(), (String, String)> {
        let name = vh.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        let at = format!("virtual host {name}");
        let fail = |reason: String| Err((at.clone(), reason));
        if name.is_empty() || !self.names.insert(name.clone()) {
            return fail("has no name, or one another virtual host has".into());
        }
        own_filters(vh, false).map_err(|r| (at.clone(), r))?;
        let domains: Vec<&str> = vh
            .get("domains")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if domains.is_empty() {
            return fail("no domains".into());
        }
        for domain in domains {
            if domain == "*" {
                if name != CATCH_ALL_VHOST || self.catch_all.is_some() {
                    return fail("only the gateway's one catch-all may match every host".into());
                }
                self.catch_all = Some(name.clone());
                continue;
            }
            if domain.strip_suffix(":*").unwrap_or(domain).contains('*') {
                return fail(format!("domain {domain:?} is a wildcard"));
            }
            if let Some(owner) = self.domains.insert(domain.to_ascii_lowercase(), name.clone()) {
                return fail(format!("domain {domain} is also served by virtual host {owner}"));
            }
        }
        for (i, route) in vh
            .get("routes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let route_name = route.get("name").and_then(Value::as_str);
            let health = name == CATCH_ALL_VHOST && route_name == Some(HEALTH_CHECK_ROUTE);
            let label = || format!("{at}: route {}", route_name.map_or(format!("#{i}"), str::to_string));
            own_filters(route, health).map_err(|r| (label(), r))?;
            if let Some(action) = route.get("route") {
                targets(action, clusters).map_err(|r| (label(), r))?;
            }
        }
        Ok(())
    }
}

/// No per-route config of the gateway's own filters; the kill switch only where `kill_ok`.
fn own_filters(at: &Value, kill_ok: bool) -> Result<(), String> {
    let Some(config) = at.get("typed_per_filter_config").and_then(Value::as_object) else {
        return Ok(());
    };
    for filter in OWN_FILTERS {
        if config.contains_key(filter) && !(kill_ok && filter == KILL_SWITCH_FILTER) {
            return Err(format!("configures the gateway's own filter {filter}"));
        }
    }
    Ok(())
}

fn targets(action: &Value, clusters: &BTreeSet<String>) -> Result<(), String> {
    for picked in ["cluster_header", "cluster_specifier_plugin", "inline_cluster_specifier_plugin"] {
        if action.get(picked).is_some() {
            return Err(format!("{picked}: the target may not be picked at request time"));
        }
    }
    let mut named: Vec<&str> = Vec::new();
    named.extend(action.get("cluster").and_then(Value::as_str));
    for w in action
        .pointer("/weighted_clusters/clusters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        named.push(w.get("name").and_then(Value::as_str).unwrap_or(""));
    }
    for m in action
        .get("request_mirror_policies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        named.push(m.get("cluster").and_then(Value::as_str).unwrap_or(""));
    }
    if named.is_empty() {
        return Err("a route action with no cluster".into());
    }
    if let Some(missing) = named.iter().find(|c| !clusters.contains(**c)) {
        return Err(format!("targets cluster {missing:?}, which this bundle does not define"));
    }
    Ok(())
}

/// Both files, in memory (the validator's layer 1).
pub fn check_config(
    clusters: &[Value],
    route_config: &Value,
    policy: &Policy,
) -> Result<(), PolicyError> {
    let in_clusters = |(at, reason)| PolicyError {
        file: crate::contract::CLUSTERS_FILE,
        at,
        reason,
    };
    let in_routes = |(at, reason)| PolicyError {
        file: crate::contract::ROUTES_FILE,
        at,
        reason,
    };
    let mut c = Clusters::default();
    for cluster in clusters {
        c.add(cluster, policy).map_err(in_clusters)?;
    }
    c.finish().map_err(in_clusters)?;
    let mut r = Routes::default();
    Routes::config(
        route_config.get("name").and_then(Value::as_str),
        route_config.get("validate_clusters").and_then(Value::as_bool),
    )
    .map_err(in_routes)?;
    own_filters(route_config, false).map_err(|reason| in_routes(("route configuration".into(), reason)))?;
    for vh in route_config
        .get("virtual_hosts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        r.add(vh, &c.names).map_err(in_routes)?;
    }
    Ok(())
}

/// Keys the JWT filter's configuration, a provider and a key fetch may have: what the renderer
/// writes.
const JWT_CONFIG_KEYS: [&str; 3] = ["@type", "providers", "requirement_map"];
const JWT_PROVIDER_KEYS: [&str; 7] =
    ["issuer", "audiences", "from_headers", "forward", "local_jwks", "remote_jwks", "claim_to_headers"];
const REMOTE_JWKS_KEYS: [&str; 3] = ["http_uri", "cache_duration", "async_fetch"];

/// `jwt.json`'s one resource, the JWT filter's `TypedExtensionConfig` (docs/design.md#authentication):
/// named as the bootstrap's filter, of the JWT filter's type, only the settings the renderer
/// writes; tokens only from the Authorization header; inline keys only as a string; a key
/// fetch only through a cluster of this bundle; each requirement one provider of it. Returns
/// the requirement names (what routes may name).
pub fn check_jwt_config(
    config: &Value,
    clusters: &BTreeSet<String>,
) -> Result<BTreeSet<String>, PolicyError> {
    use crate::contract::{JWT_AUTHN_TYPE_URL, JWT_FILE, JWT_FILTER, TYPED_EXTENSION_CONFIG_TYPE_URL};
    let fail = |at: &str, reason: String| PolicyError { file: JWT_FILE, at: at.to_string(), reason };
    if config.get("@type").and_then(Value::as_str) != Some(TYPED_EXTENSION_CONFIG_TYPE_URL) {
        return Err(fail("resource", format!("@type is not {TYPED_EXTENSION_CONFIG_TYPE_URL}")));
    }
    if config.get("name").and_then(Value::as_str) != Some(JWT_FILTER) {
        return Err(fail("resource", format!("name must be {JWT_FILTER:?}, the bootstrap's filter")));
    }
    let typed = config.get("typed_config").and_then(Value::as_object).ok_or_else(|| fail("typed_config", "missing".into()))?;
    if typed.get("@type").and_then(Value::as_str) != Some(JWT_AUTHN_TYPE_URL) {
        return Err(fail("typed_config", format!("@type is not {JWT_AUTHN_TYPE_URL}")));
    }
    if let Some(key) = typed.keys().find(|k| !JWT_CONFIG_KEYS.contains(&k.as_str())) {
        return Err(fail("typed_config", format!("{key}: not a setting the renderer writes")));
    }
    let empty = serde_json::Map::new();
    let providers = typed.get("providers").and_then(Value::as_object).unwrap_or(&empty);
    for (name, p) in providers {
        let at = format!("provider {name}");
        let p = p.as_object().ok_or_else(|| fail(&at, "is not an object".into()))?;
        if let Some(key) = p.keys().find(|k| !JWT_PROVIDER_KEYS.contains(&k.as_str())) {
            return Err(fail(&at, format!("{key}: not a setting the renderer writes")));
        }
        if let Some(from) = p.get("from_headers") {
            if from != &serde_json::json!([{ "name": "authorization", "value_prefix": "Bearer " }]) {
                return Err(fail(&at, "from_headers: tokens come from the Authorization header only".into()));
            }
        }
        if let Some(local) = p.get("local_jwks") {
            let only_inline = local.as_object().is_some_and(|m| m.len() == 1 && m.get("inline_string").is_some_and(Value::is_string));
            if !only_inline {
                return Err(fail(&at, "local_jwks: only an inline key set".into()));
            }
        }
        if let Some(remote) = p.get("remote_jwks") {
            let m = remote.as_object().ok_or_else(|| fail(&at, "remote_jwks is not an object".into()))?;
            if let Some(key) = m.keys().find(|k| !REMOTE_JWKS_KEYS.contains(&k.as_str())) {
                return Err(fail(&at, format!("remote_jwks.{key}: not a setting the renderer writes")));
            }
            let cluster = remote.pointer("/http_uri/cluster").and_then(Value::as_str).unwrap_or("");
            if !clusters.contains(cluster) {
                return Err(fail(&at, format!("fetches keys through cluster {cluster:?}, which this bundle does not define")));
            }
        }
    }
    let mut names = BTreeSet::new();
    for (name, r) in typed.get("requirement_map").and_then(Value::as_object).unwrap_or(&empty) {
        let provider = r.get("provider_name").and_then(Value::as_str);
        let plain = r.as_object().is_some_and(|m| m.len() == 1);
        match provider {
            Some(p) if plain && providers.contains_key(p) => {
                names.insert(name.clone());
            }
            _ => return Err(fail(&format!("requirement {name}"), "must be one provider of this file, by provider_name".into())),
        }
    }
    Ok(names)
}

/// A route's (or virtual host's) config of the JWT filter: only the enabling `FilterConfig`
/// around a requirement `requirements` holds.
fn jwt_per_route(at: &Value, requirements: &BTreeSet<String>) -> Result<(), String> {
    use crate::contract::{FILTER_CONFIG_TYPE_URL, JWT_FILTER, JWT_PER_ROUTE_TYPE_URL};
    let Some(config) = at.pointer("/typed_per_filter_config").and_then(|c| c.get(JWT_FILTER)) else {
        return Ok(());
    };
    let wrapper_ok = config.get("@type").and_then(Value::as_str) == Some(FILTER_CONFIG_TYPE_URL)
        && config.as_object().is_some_and(|m| m.len() == 2);
    let inner = config.get("config");
    let inner_ok = inner.and_then(|c| c.get("@type")).and_then(Value::as_str) == Some(JWT_PER_ROUTE_TYPE_URL)
        && inner.and_then(Value::as_object).is_some_and(|m| m.len() == 2);
    let name = inner.and_then(|c| c.get("requirement_name")).and_then(Value::as_str);
    match name {
        Some(n) if wrapper_ok && inner_ok && requirements.contains(n) => Ok(()),
        Some(n) if wrapper_ok && inner_ok => Err(format!("requires JWT requirement {n:?}, which the bundle's jwt.json does not define")),
        _ => Err(format!("{JWT_FILTER}: only a FilterConfig enabling one requirement by name")),
    }
}

/// Every route's and virtual host's JWT filter config names a requirement of `requirements`.
pub fn check_jwt_routes(route_config: &Value, requirements: &BTreeSet<String>) -> Result<(), PolicyError> {
    let fail = |at: String, reason: String| PolicyError { file: crate::contract::ROUTES_FILE, at, reason };
    jwt_per_route(route_config, requirements).map_err(|r| fail("route configuration".into(), r))?;
    for vh in route_config.get("virtual_hosts").and_then(Value::as_array).into_iter().flatten() {
        let vname = vh.get("name").and_then(Value::as_str).unwrap_or("");
        jwt_per_route(vh, requirements).map_err(|r| fail(format!("virtual host {vname}"), r))?;
        for route in vh.get("routes").and_then(Value::as_array).into_iter().flatten() {
            let rname = route.get("name").and_then(Value::as_str).unwrap_or("");
            jwt_per_route(route, requirements).map_err(|r| fail(format!("virtual host {vname}: route {rname}"), r))?;
        }
    }
    Ok(())
}

/// `jwt.json` (a DiscoveryResponse around the one `TypedExtensionConfig`) read whole: it is
/// small (public keys and names). The requirement names.
pub fn read_jwt<R: Read>(reader: R, clusters: &BTreeSet<String>) -> Result<BTreeSet<String>, PolicyError> {
    use crate::contract::{JWT_FILE, TYPED_EXTENSION_CONFIG_TYPE_URL};
    let fail = |at: &str, reason: String| PolicyError { file: JWT_FILE, at: at.to_string(), reason };
    let doc: Value = serde_json::from_reader(reader).map_err(|e| fail("document", format!("not JSON: {e}")))?;
    if doc.get("type_url").and_then(Value::as_str) != Some(TYPED_EXTENSION_CONFIG_TYPE_URL) {
        return Err(fail("type_url", format!("is not {TYPED_EXTENSION_CONFIG_TYPE_URL}")));
    }
    if let Some(key) = doc.as_object().into_iter().flat_map(|m| m.keys()).find(|k| !["resources", "type_url", "version_info"].contains(&k.as_str())) {
        return Err(fail("document", format!("{key}: not a setting the renderer writes")));
    }
    match doc.get("resources").and_then(Value::as_array).map(Vec::as_slice) {
        Some([config]) => check_jwt_config(config, clusters),
        _ => Err(fail("resources", "must hold exactly the JWT filter's configuration".into())),
    }
}

/// `clusters.json` read from `reader` one cluster at a time; the names, for the routes.
pub fn read_clusters<R: Read>(reader: R, policy: &Policy) -> Result<BTreeSet<String>, PolicyError> {
    let file = crate::contract::CLUSTERS_FILE;
    let mut c = Clusters::default();
    let mut failure = None;
    let result = stream_resources(reader, |resource| {
        c.add(&resource, policy).map_err(|e| failure = Some(e))
    });
    resolve(file, result, failure)?;
    c.finish().map_err(|(at, reason)| PolicyError { file, at, reason })?;
    Ok(c.names)
}

/// `routes.json` read from `reader`: its one route configuration, one virtual host at a time.
pub fn read_routes<R: Read>(reader: R, clusters: &BTreeSet<String>) -> Result<(), PolicyError> {
    let file = crate::contract::ROUTES_FILE;
    let mut r = Routes::default();
    let mut failure: Option<(String, String)> = None;
    let mut configs = 0;
    let mut config = |seen: &mut Option<(String, String)>, rc: RouteConfigSeen| {
        configs += 1;
        let at = || "route configuration".to_string();
        if configs > 1 {
            *seen = Some(("resources".into(), "more than one route configuration".into()));
        } else if rc.type_url.as_deref() != Some(ROUTE_CONFIG_TYPE_URL) {
            *seen = Some((at(), format!("@type is not {ROUTE_CONFIG_TYPE_URL}")));
        } else if let Some(key) = rc.refused_key {
            *seen = Some((at(), format!("{key}: not a setting the renderer writes")));
        } else if let Err(reason) = rc.own.map_or(Ok(()), |v| own_filters(&v, false)) {
            *seen = Some((at(), reason));
        } else if let Err(e) = Routes::config(rc.name.as_deref(), rc.validate_clusters) {
            *seen = Some(e);
        }
    };
    let result = {
        let mut de = serde_json::Deserializer::from_reader(reader);
        let mut state = RoutesStream {
            failure: &mut failure,
            on_vhost: &mut |seen: &mut Option<(String, String)>, vh: Value| {
                if let Err(e) = r.add(&vh, clusters) {
                    *seen = Some(e);
                }
            },
            on_config: &mut config,
        };
        de.deserialize_map(TopRoutes(&mut state)).and_then(|()| de.end())
    };
    resolve(file, result, failure)?;
    if configs != 1 {
        return Err(PolicyError {
            file,
            at: "resources".into(),
            reason: "must hold exactly one route configuration".into(),
        });
    }
    Ok(())
}

/// What a route configuration said besides its virtual hosts.
#[derive(Default)]
struct RouteConfigSeen {
    type_url: Option<String>,
    name: Option<String>,
    validate_clusters: Option<bool>,
    own: Option<Value>,
    refused_key: Option<String>,
}

/// Keys of a route configuration that could pick targets or load routes from elsewhere.
const REFUSED_ROUTE_CONFIG_KEYS: [&str; 3] = ["cluster_specifier_plugins", "vhds", "typed_per_filter_config_overrides"];

type Seen<'a> = &'a mut Option<(String, String)>;

struct RoutesStream<'a> {
    failure: Seen<'a>,
    on_vhost: &'a mut dyn FnMut(&mut Option<(String, String)>, Value),
    on_config: &'a mut dyn FnMut(&mut Option<(String, String)>, RouteConfigSeen),
}

impl RoutesStream<'_> {
    fn stop<E: de::Error>(&self) -> Result<(), E> {
        if self.failure.is_some() {
            Err(stopped())
        } else {
            Ok(())
        }
    }
}

struct TopRoutes<'a, 'b>(&'a mut RoutesStream<'b>);

impl<'de> Visitor<'de> for TopRoutes<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a discovery response object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "resources" => map.next_value_seed(ConfigList(&mut *self.0))?,
                "version_info" | "type_url" => {
                    map.next_value::<String>()?;
                }
                other => return Err(de::Error::custom(format!("unexpected key {other:?}"))),
            }
        }
        Ok(())
    }
}

struct ConfigList<'a, 'b>(&'a mut RoutesStream<'b>);

impl<'de> DeserializeSeed<'de> for ConfigList<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ConfigList<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of route configurations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(OneConfig(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

struct OneConfig<'a, 'b>(&'a mut RoutesStream<'b>);

impl<'de> DeserializeSeed<'de> for OneConfig<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for OneConfig<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a route configuration")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = RouteConfigSeen::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "@type" => seen.type_url = Some(map.next_value()?),
                "name" => seen.name = Some(map.next_value()?),
                "validate_clusters" => seen.validate_clusters = Some(map.next_value()?),
                "typed_per_filter_config" => seen.own = Some(map.next_value()?),
                "virtual_hosts" => map.next_value_seed(VirtualHosts(&mut *self.0))?,
                k if REFUSED_ROUTE_CONFIG_KEYS.contains(&k) => {
                    seen.refused_key.get_or_insert(key.clone());
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        (self.0.on_config)(self.0.failure, seen);
        self.0.stop()
    }
}

struct VirtualHosts<'a, 'b>(&'a mut RoutesStream<'b>);

impl<'de> DeserializeSeed<'de> for VirtualHosts<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for VirtualHosts<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of virtual hosts")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(vh) = seq.next_element::<Value>()? {
            (self.0.on_vhost)(self.0.failure, vh);
            self.0.stop()?;
        }
        Ok(())
    }
}

fn resolve(
    file: &'static str,
    result: Result<(), serde_json::Error>,
    failure: Option<(String, String)>,
) -> Result<(), PolicyError> {
    if let Some((at, reason)) = failure {
        return Err(PolicyError { file, at, reason });
    }
    result.map_err(|e| PolicyError {
        file,
        at: "the file".into(),
        reason: format!("not readable as a discovery response: {e}"),
    })
}

/// A closure's own refusal, passed through serde as an error and replaced by what it recorded.
fn stopped<E: de::Error>() -> E {
    E::custom("stopped by a rule")
}

/// Calls `each` with every element of the top-level `resources` array, one at a time.
fn stream_resources<R: Read>(
    reader: R,
    mut each: impl FnMut(Value) -> Result<(), ()>,
) -> Result<(), serde_json::Error> {
    struct Top<'a>(&'a mut dyn FnMut(Value) -> Result<(), ()>);
    impl<'de> Visitor<'de> for Top<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a discovery response object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "resources" => map.next_value_seed(Each(&mut *self.0))?,
                    "version_info" | "type_url" => {
                        map.next_value::<String>()?;
                    }
                    other => return Err(de::Error::custom(format!("unexpected key {other:?}"))),
                }
            }
            Ok(())
        }
    }
    struct Each<'a>(&'a mut dyn FnMut(Value) -> Result<(), ()>);
    impl<'de> DeserializeSeed<'de> for Each<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de> Visitor<'de> for Each<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of resources")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(v) = seq.next_element::<Value>()? {
                (self.0)(v).map_err(|()| stopped::<A::Error>())?;
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_reader(reader);
    de.deserialize_map(Top(&mut each))?;
    de.end()
}
