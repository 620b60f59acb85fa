//! The one RouteConfiguration: a virtual host per team host, its routes ordered by specificity,
//! a JSON 404 after them, and the gateway's catch-all virtual host for unknown hosts.

use crate::clusters::{backend_of, canary_backend_of};
use crate::contract::{
    CATCH_ALL_VHOST, HEALTH_CHECK_PATH, HEALTH_CHECK_ROUTE, KILL_SWITCH_FILTER,
    LOCAL_RATE_LIMIT_FILTER, ROUTE_CONFIG_NAME, ROUTE_CONFIG_TYPE_URL, ROUTE_METADATA_NAMESPACE,
};
use crate::entry::{Entry, Limit, Replace, Route};
use crate::names;
use crate::ratelimit;
use crate::route_policy;
use crate::rollout::{cohort_copies, Cohort as RolloutCohort, Unit};
use crate::config::RenderConfig;
use crate::error::RenderError;
use crate::value::{object, regex_escape};
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// Upstream answer time before Envoy gives up with a 504 (Envoy's own default, made explicit so
/// the rendered file says it).
const ROUTE_TIMEOUT: &str = "15s";
/// The route configuration and how many routes forward to a cluster (team routes and their CORS
/// preflight routes; fallbacks and catch-all excluded).
/// The route configuration and how many team routes it holds (fallbacks and catch-all excluded).
pub fn route_configuration<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
    cfg: &RenderConfig,
) -> Result<(Value, usize), RenderError> {
    let units: Vec<Unit> = entries
        .into_iter()
        .map(|e| Unit { entry: std::borrow::Cow::Borrowed(e), cohort: None })
        .collect();
    route_configuration_of(&units, cfg)
}

/// The route configuration of entries as the render expanded them: a rollout's two revisions
/// each with its cohort ([`crate::rollout`]).
pub(crate) fn route_configuration_of(
    units: &[Unit],
    cfg: &RenderConfig,
) -> Result<(Value, usize), RenderError> {
    let mut hosts: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    let mut cohorts: BTreeMap<String, &RolloutCohort> = BTreeMap::new();
    for unit in units {
        let entry = unit.entry.as_ref();
        hosts
            .entry(entry.fqdn(&cfg.base_domain))
            .or_default()
            .push(entry);
        if let Some(cohort) = &unit.cohort {
            cohorts.insert(entry.id(), cohort);
        }
    }
    let mut virtual_hosts = Vec::with_capacity(hosts.len() + 1);
    let mut route_count = 0;
    for (fqdn, host_entries) in &hosts {
        let (vhost, count) = team_virtual_host(fqdn, host_entries, &cohorts, cfg)?;
        virtual_hosts.push(vhost);
        route_count += count;
    }
    virtual_hosts.push(catch_all_virtual_host(
        404,
        &json_error_body("no route for this host"),
    ));
    Ok((route_config_resource(virtual_hosts), route_count))
}

/// The RouteConfiguration resource around the given virtual hosts.
pub fn route_config_resource(virtual_hosts: Vec<Value>) -> Value {
    object([
        ("@type", json!(ROUTE_CONFIG_TYPE_URL)),
        ("name", json!(ROUTE_CONFIG_NAME)),
        // RDS defaults this to false: a route to a missing cluster would be accepted and answer
        // 503. With it, Envoy rejects such a file and keeps the old routes.
        ("validate_clusters", json!(true)),
        ("virtual_hosts", Value::Array(virtual_hosts)),
    ])
}

/// The gateway's single `*` virtual host, answering every request with `status` and `body`,
/// except the load balancer's health check.
pub fn catch_all_virtual_host(status: u16, body: &str) -> Value {
    object([
        ("name", json!(CATCH_ALL_VHOST)),
        ("domains", json!(["*"])),
        (
            "routes",
            Value::Array(vec![
                health_check_route(),
                json_response_route(CATCH_ALL_VHOST, "", status, body),
            ]),
        ),
    ])
}

/// `GET /healthz` → 200 on hosts no team holds, with the level-1 kill switch's filter off for
/// this one route (a kill switch must not make the load balancer replace the tasks). The kill
/// switch's level 2 renders the same catch-all, so this route survives it too.
fn health_check_route() -> Value {
    json!({
        "name": HEALTH_CHECK_ROUTE,
        "match": {
            "path": HEALTH_CHECK_PATH,
            "headers": [{ "name": ":method", "string_match": { "exact": "GET" } }]
        },
        "direct_response": { "status": 200, "body": { "inline_string": "ok\n" } },
        "metadata": route_metadata("", ""),
        "typed_per_filter_config": {
            KILL_SWITCH_FILTER: {
                "@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig",
                "disabled": true
            }
        }
    })
}

/// `{"error":"…"}` plus a newline, for direct responses.
pub fn json_error_body(message: &str) -> String {
    format!("{}\n", json!({ "error": message }))
}

/// A route matching everything under `/`, answering directly with a JSON body. `team` is the
/// host's team for a team host's 404, empty on the catch-all: the access log then says "" rather
/// than null.
fn json_response_route(name: &str, team: &str, status: u16, body: &str) -> Value {
    answering_route(name, json!({ "prefix": "/" }), (team, ""), status, body)
}

/// A route matching `matcher` that answers `status` with the JSON `body` itself, its
/// metadata naming `team` and `service` (the access log's keys).
pub(crate) fn answering_route(
    name: &str,
    matcher: Value,
    (team, service): (&str, &str),
    status: u16,
    body: &str,
) -> Value {
    json!({
        "name": name,
        "metadata": route_metadata(team, service),
        "match": matcher,
        "direct_response": { "status": status, "body": { "inline_string": body } },
        // A direct response with a body is text/plain unless told otherwise.
        "response_headers_to_add": [{
            "header": { "key": "content-type", "value": "application/json" },
            "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"
        }]
    })
}

fn team_virtual_host(
    fqdn: &str,
    entries: &[&Entry],
    cohorts: &BTreeMap<String, &RolloutCohort>,
    cfg: &RenderConfig,
) -> Result<(Value, usize), RenderError> {
    if let Some(other) = entries.iter().find(|e| e.team != entries[0].team) {
        return Err(RenderError::HostConflict {
            host: fqdn.to_string(),
            first: entries[0].id(),
            second: other.id(),
        });
    }
    let team_routes: Vec<(&Entry, &Route)> = entries
        .iter()
        .flat_map(|e| e.routes.iter().map(move |r| (*e, r)))
        .collect();
    refuse_shadowing(fqdn, &team_routes, cohorts)?;
    let preflights = preflight_routes(entries);
    let mut routes: Vec<(&Entry, &Route, bool)> = team_routes
        .iter()
        .map(|(e, r)| (*e, *r, false))
        .chain(preflights.iter().map(|(e, r)| (*e, r, true)))
        .collect();
    routes.sort_by_cached_key(|(e, r, _)| specificity_key(e, r));

    // An entry's routes share its cluster and Host rewrite; worked out at its first route, so a
    // bad backend is still reported where the routes meet it.
    let mut upstreams: BTreeMap<(&str, &str), Upstream> = BTreeMap::new();
    let mut rendered = Vec::with_capacity(routes.len() + 1);
    let mut count = 0;
    for (entry, route, preflight) in &routes {
        let key = (entry.team.as_str(), entry.service.as_str());
        let upstream = match upstreams.entry(key) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => v.insert(Upstream::of(entry)?),
        };
        // A preflight route and a canary cohort's copy forward to a cluster too, so they count
        // as the validator's `count_routes` counts: every route with a cluster.
        let mut these = Vec::with_capacity(2);
        if *preflight {
            these.push(preflight_route(entry, upstream, route));
        } else if let Some(redirect) = &route.redirect {
            // Answered by Envoy: no cluster, no canary copy. Counted as a team route (the
            // validator's `count_routes` counts forwards and redirects).
            these.push(redirect_route(entry, route, redirect));
        } else {
            let team = team_route(entry, upstream, route, cfg)?;
            if let Some(cohort) = &upstream.cohort {
                these.push(cohort_route(team.clone(), cohort));
            }
            these.push(team);
        }
        // A rollout's revision: each route only for its cohort (docs/design.md#rollout).
        if let Some(cohort) = (!cohorts.is_empty()).then(|| cohorts.get(&entry.id())).flatten() {
            these = these.into_iter().flat_map(|r| cohort_copies(r, cohort)).collect();
        }
        count += these.len();
        rendered.extend(these);
    }
    let root_claimed = team_routes
        .iter()
        .any(|(_, r)| r.path == "/" && !r.is_exact() && r.methods.is_none() && !r.has_conditions());
    if !root_claimed {
        rendered.push(json_response_route(
            &names::fallback_route_name(fqdn),
            &entries[0].team,
            404,
            &json_error_body("no route for this path"),
        ));
    }
    Ok((team_host(fqdn, rendered), count))
}

/// A team host's virtual host holding `routes`.
pub(crate) fn team_host(fqdn: &str, routes: Vec<Value>) -> Value {
    object([
        ("name", json!(fqdn)),
        // With a port in the Host header (`host:8443`) Envoy matches the domain literally, so the
        // host also gets a port wildcard.
        ("domains", json!([fqdn, format!("{fqdn}:*")])),
        ("routes", Value::Array(routes)),
    ])
}

/// Order inside a virtual host, Gateway API's precedence: exact paths first, then longer path
/// first (a nested prefix is always longer than the one it is nested in, so it is never
/// shadowed), then method-specific before method-less, then more header matches, then more
/// query matches; then path, methods, conditions and entry id, so the order never depends on
/// input order. (One path with and without methods overlaps; the checks reject that, and
/// `refuse_shadowing` too.)
#[allow(clippy::type_complexity)]
pub fn specificity_key(
    entry: &Entry,
    route: &Route,
) -> (bool, Reverse<usize>, bool, Reverse<usize>, Reverse<usize>, String, String, String, String) {
    (
        !route.is_exact(),
        Reverse(route.matched_path().len()),
        route.methods.is_none(),
        Reverse(route.headers.len()),
        Reverse(route.query.len()),
        route.matched_path().to_string(),
        names::methods_key(route),
        names::match_key(route),
        entry.id(),
    )
}

/// Two routes on one host with the same path and overlapping methods: whichever came first
/// would silently take the other's traffic. The registry prevents it; the renderer refuses too.
fn refuse_shadowing(
    fqdn: &str,
    routes: &[(&Entry, &Route)],
    cohorts: &BTreeMap<String, &RolloutCohort>,
) -> Result<(), RenderError> {
    // A rollout's two revisions serve disjoint cohorts, so they may share a path.
    let owner = |e: &Entry| match cohorts.get(&e.id()) {
        Some(c) => format!("{}/{}", e.team, c.service),
        None => e.id(),
    };
    let mut by_match: BTreeMap<String, Vec<(&Entry, &Route)>> = BTreeMap::new();
    for (e, r) in routes {
        by_match.entry(names::match_key(r)).or_default().push((e, r));
    }
    for (path, claims) in by_match {
        for (i, (ea, ra)) in claims.iter().enumerate() {
            for (eb, rb) in &claims[i + 1..] {
                let rollout_pair = ea.id() != eb.id()
                    && owner(ea) == owner(eb)
                    && cohorts.contains_key(&ea.id())
                    && cohorts.contains_key(&eb.id());
                if methods_overlap(ra, rb) && !rollout_pair {
                    return Err(RenderError::PathConflict {
                        host: fqdn.to_string(),
                        path: path.to_string(),
                        first: format!("{} ({})", ea.id(), names::methods_key(ra)),
                        second: format!("{} ({})", eb.id(), names::methods_key(rb)),
                    });
                }
            }
        }
    }
    Ok(())
}

fn methods_overlap(a: &Route, b: &Route) -> bool {
    match (&a.methods, &b.methods) {
        (Some(x), Some(y)) if !x.is_empty() && !y.is_empty() => x.iter().any(|m| y.contains(m)),
        _ => true,
    }
}

/// Segment-aware prefix match (or the exact path) plus the method, header and query conditions.
pub fn route_match(route: &Route) -> Value {
    let mut m = serde_json::Map::new();
    if let Some(exact) = &route.exact {
        m.insert("path".into(), json!(exact));
    } else if route.path == "/" || route.path.ends_with('/') {
        // Already ends at a segment boundary; `path_separated_prefix` refuses a trailing `/`.
        m.insert("prefix".into(), json!(route.path));
    } else {
        // Matches `/a/b`, `/a/b/…` and `/a/b?…`, never `/a/bX`.
        m.insert("path_separated_prefix".into(), json!(route.path));
    }
    match route.methods.as_deref() {
        Some([one]) => {
            m.insert(
                "headers".into(),
                json!([{ "name": ":method", "string_match": { "exact": one } }]),
            );
        }
        Some(many) if !many.is_empty() => {
            let alternatives: Vec<String> = many.iter().map(|m| regex_escape(m)).collect();
            let regex = format!("^({})$", alternatives.join("|"));
            m.insert("headers".into(), json!([{ "name": ":method", "string_match": { "safe_regex": { "regex": regex } } }]));
        }
        _ => {}
    }
    if !route.headers.is_empty() {
        let conditions = route.headers.iter().map(|h| match (&h.value, h.present) {
            (Some(value), _) => json!({ "name": h.name, "string_match": { "exact": value } }),
            (None, Some(false)) => json!({ "name": h.name, "present_match": true, "invert_match": true }),
            (None, _) => json!({ "name": h.name, "present_match": true }),
        });
        match m.get_mut("headers").and_then(Value::as_array_mut) {
            Some(headers) => headers.extend(conditions),
            None => {
                m.insert("headers".into(), Value::Array(conditions.collect()));
            }
        }
    }
    if !route.query.is_empty() {
        let conditions: Vec<Value> = route
            .query
            .iter()
            .map(|q| match &q.value {
                Some(value) => json!({ "name": q.name, "string_match": { "exact": value } }),
                None => json!({ "name": q.name, "present_match": true }),
            })
            .collect();
        m.insert("query_parameters".into(), Value::Array(conditions));
    }
    Value::Object(m)
}


/// Where an entry's routes send traffic.
struct Upstream {
    target: Destination,
    /// The backend sees its own name, matching the SNI it is sent (many TLS servers refuse a
    /// Host that differs from SNI); the name the client used travels in x-forwarded-host.
    /// `None` when a request may land on either of two backends: Host then comes from the
    /// chosen endpoint's hostname (`auto_host_rewrite`).
    host_rewrite: Option<String>,
    /// `preserve_host`: no rewrite at all, the backend sees the client's Host.
    preserve_host: bool,
    /// With a canary cohort header: the route copy that sends the cohort to the canary.
    cohort: Option<Cohort>,
}

/// Where a route sends its requests.
enum Destination {
    Cluster(String),
    /// The service's traffic split by weight between clusters: a canary's two failover pairs
    /// (percent), or `backends` and a canary's pair.
    Split(Vec<(String, u32)>),
}

struct Cohort {
    header: String,
    value: String,
    cluster: String,
}

impl Upstream {
    /// A route action's target, timeout and Host rewrite.
    fn action(&self, timeout: String) -> serde_json::Map<String, Value> {
        let mut action = serde_json::Map::new();
        match &self.target {
            Destination::Cluster(name) => {
                action.insert("cluster".into(), json!(name));
            }
            Destination::Split(shares) => {
                let clusters: Vec<Value> = shares
                    .iter()
                    .map(|(name, weight)| json!({ "name": name, "weight": weight }))
                    .collect();
                action.insert("weighted_clusters".into(), json!({ "clusters": clusters }));
            }
        }
        action.insert("timeout".into(), json!(timeout));
        match &self.host_rewrite {
            _ if self.preserve_host => None,
            Some(host) => action.insert("host_rewrite_literal".into(), json!(host)),
            None => action.insert("auto_host_rewrite".into(), json!(true)),
        };
        action
    }

    fn of(entry: &Entry) -> Result<Upstream, RenderError> {
        if !entry.backends.is_empty() {
            return Ok(Upstream::weighted(entry));
        }
        let host_rewrite = backend_of(entry)?.authority();
        let Some(canary) = &entry.canary else {
            return Ok(Upstream {
                target: Destination::Cluster(names::cluster_name(entry)),
                host_rewrite: Some(host_rewrite),
                preserve_host: entry.preserve_host,
                cohort: None,
            });
        };
        canary_backend_of(entry, canary)?;
        let main = names::main_first_cluster_name(entry);
        let canary_first = names::canary_first_cluster_name(entry);
        let target = match canary.weight {
            0 => Destination::Cluster(main),
            100 => Destination::Cluster(canary_first.clone()),
            w => Destination::Split(vec![(main, 100 - w), (canary_first.clone(), w)]),
        };
        Ok(Upstream {
            target,
            host_rewrite: None,
            preserve_host: entry.preserve_host,
            cohort: canary.header.as_ref().map(|h| Cohort {
                header: h.name.clone(),
                value: h.value.clone(),
                cluster: canary_first,
            }),
        })
    }
}

impl Upstream {
    /// `backends`: each backend with a weight gets weight parts of the main share, and a canary
    /// its percent of the whole (backend `i` weighs `(100 - canary) × weight_i`, the canary's pair
    /// `canary × Σ weights`). Host comes from the chosen endpoint's name.
    fn weighted(entry: &Entry) -> Upstream {
        let canary_weight = entry.canary.as_ref().map_or(0, |c| c.weight);
        let total: u32 = entry.backends.iter().map(|b| b.weight).sum();
        let canary_first = names::canary_first_cluster_name(entry);
        let mut shares: Vec<(String, u32)> = entry
            .backends
            .iter()
            .filter(|b| b.weight > 0 && canary_weight < 100)
            .map(|b| (names::weighted_backend_cluster_name(entry, &b.url), (100 - canary_weight) * b.weight))
            .collect();
        shares.sort();
        if canary_weight > 0 {
            shares.push((canary_first.clone(), canary_weight * total));
        }
        let target = match shares.len() {
            1 => Destination::Cluster(shares.remove(0).0),
            _ => Destination::Split(shares),
        };
        Upstream {
            target,
            host_rewrite: None,
            preserve_host: entry.preserve_host,
            cohort: entry.canary.as_ref().and_then(|c| c.header.as_ref()).map(|h| Cohort {
                header: h.name.clone(),
                value: h.value.clone(),
                cluster: canary_first,
            }),
        }
    }
}

/// The route's `timeout` in Envoy's form; the default 15 s when the entry sets none
/// (docs/design.md#registration-entry). Checked entries always parse; an unparsable one (written
/// around the checks) falls back to the default rather than reaching Envoy.
fn route_timeout(route: &Route) -> String {
    route
        .timeout
        .as_deref()
        .and_then(|t| crate::check::parse_duration(t).ok())
        .map_or_else(|| ROUTE_TIMEOUT.to_string(), crate::check::envoy_duration)
}

fn team_route(
    entry: &Entry,
    upstream: &Upstream,
    route: &Route,
    cfg: &RenderConfig,
) -> Result<Value, RenderError> {
    let mut action = upstream.action(route_timeout(route));
    if let Some(host) = &route.host_rewrite {
        // The team's choice of Host replaces the backend's own name (a split's per-endpoint
        // name too); SNI is the cluster's and stays the backend's.
        action.remove("auto_host_rewrite");
        action.insert("host_rewrite_literal".into(), json!(host));
    }
    action.insert("append_x_forwarded_host".into(), json!(true));
    if let Some(m) = &route.mirror {
        // Envoy sends the copy without waiting for it and drops its answer; the copy's Host
        // gets Envoy's `-shadow` suffix, so a backend can tell copies apart.
        action.insert(
            "request_mirror_policies".into(),
            json!([{
                "cluster": names::mirror_cluster_name(entry, &m.backend),
                "runtime_fraction": { "default_value": { "numerator": m.percent, "denominator": "HUNDRED" } }
            }]),
        );
    }
    let rate_limits = ratelimit::route_rate_limits(entry, route, cfg.client_ipv6_prefix)?;
    if !rate_limits.is_empty() {
        action.insert("rate_limits".into(), Value::Array(rate_limits));
    }
    route_policy::extend_action(route, &mut action, cfg);
    let mut out = object([
        ("name", Value::String(names::route_name(entry, route))),
        ("match", route_match(route)),
        ("route", Value::Object(action)),
        ("metadata", route_metadata(&entry.team, &entry.service)),
    ]);
    let members = out.as_object_mut().expect("object of members");
    if let Some(tokens) = burst_tokens(route) {
        route_policy::per_filter_config(members)
            .insert(LOCAL_RATE_LIMIT_FILTER.into(), local_rate_limit(entry, tokens));
    }
    route_policy::extend_route(route, members);
    crate::jwt::extend_route(entry, route, members);
    Ok(out)
}

/// A team route Envoy answers with a redirect: each part given replaces the request's own
/// (`prefix` the matched prefix, `path` the whole path, the query string kept either way).
fn redirect_route(entry: &Entry, route: &Route, r: &crate::entry::Redirect) -> Value {
    let mut redirect = serde_json::Map::new();
    if let Some(scheme) = &r.scheme {
        redirect.insert("scheme_redirect".into(), json!(scheme));
    }
    if let Some(host) = &r.host {
        redirect.insert("host_redirect".into(), json!(host));
    }
    if let Some(port) = r.port {
        redirect.insert("port_redirect".into(), json!(port));
    }
    if let Some(path) = &r.path {
        redirect.insert("path_redirect".into(), json!(path));
    }
    if let Some(prefix) = &r.prefix {
        let (key, value) = route_policy::path_rewrite(&route.path, Replace::Prefix(prefix));
        redirect.insert(key.into(), value);
    }
    let code = match r.status.unwrap_or(302) {
        301 => "MOVED_PERMANENTLY",
        303 => "SEE_OTHER",
        307 => "TEMPORARY_REDIRECT",
        308 => "PERMANENT_REDIRECT",
        _ => "FOUND",
    };
    redirect.insert("response_code".into(), json!(code));
    let mut out = object([
        ("name", Value::String(names::route_name(entry, route))),
        ("match", route_match(route)),
        ("redirect", Value::Object(redirect)),
        ("metadata", route_metadata(&entry.team, &entry.service)),
    ]);
    let members = out.as_object_mut().expect("object of members");
    if let Some(tokens) = burst_tokens(route) {
        route_policy::per_filter_config(members)
            .insert(LOCAL_RATE_LIMIT_FILTER.into(), local_rate_limit(entry, tokens));
    }
    route_policy::client_access(route, members);
    if route.auth.is_some() {
        crate::jwt::extend_route(entry, route, members);
    }
    out
}

/// The copy of a team route that sends the canary cohort (requests whose header equals the
/// value) to the canary first, placed just before the route itself. It matches a subset of
/// what the route matches, so it never shadows another route. Any client can send the header:
/// the cohort is the team's own opt-in, not an access control (docs/design.md#traffic-policy).
fn cohort_route(mut route: Value, cohort: &Cohort) -> Value {
    if let Some(name) = route.get("name").and_then(Value::as_str) {
        route["name"] = json!(format!("{name}#canary"));
    }
    let condition = json!({ "name": cohort.header, "string_match": { "exact": cohort.value } });
    match route["match"]["headers"].as_array_mut() {
        Some(headers) => headers.push(condition),
        None => route["match"]["headers"] = json!([condition]),
    }
    if let Some(action) = route["route"].as_object_mut() {
        action.remove("weighted_clusters");
        action.insert("cluster".into(), json!(cohort.cluster));
    }
    route
}

/// For each path of an entry where a route declares `cors` and no route there takes `OPTIONS`,
/// a stand-in route (methods `OPTIONS`, the path's policy) that places the preflight route in
/// specificity order. The checks make every route on a path declare the same `cors`.
fn preflight_routes<'a>(entries: &[&'a Entry]) -> Vec<(&'a Entry, Route)> {
    let mut out: Vec<(&Entry, Route)> = Vec::new();
    for entry in entries {
        // Keyed by the path (or exact path) alone: a browser's preflight carries none of the
        // headers a route's conditions name.
        let mut matches: BTreeMap<String, (&Route, Option<&crate::entry::Cors>, bool)> =
            BTreeMap::new();
        for r in &entry.routes {
            let slot = matches.entry(crate::check::path_key(r)).or_insert((r, None, false));
            slot.1 = slot.1.or(r.cors.as_ref());
            // A route with conditions may not match a preflight, which then needs its own.
            slot.2 |= route_policy::answers_options(r) && !r.has_conditions();
        }
        for (_, (r, cors, answers_options)) in matches {
            if let (Some(cors), false) = (cors, answers_options) {
                out.push((
                    *entry,
                    Route {
                        path: r.path.clone(),
                        exact: r.exact.clone(),
                        methods: Some(vec!["OPTIONS".to_string()]),
                        cors: Some(cors.clone()),
                        ..Route::default()
                    },
                ));
            }
        }
    }
    out
}

/// A browser's preflight (`OPTIONS` with an `origin` and `access-control-request-method`) on a
/// path whose routes take no `OPTIONS`. The CORS filter answers every such request itself (the
/// policy sets `forward_not_matching_preflights: false`): with the allow headers for an allowed
/// origin, without `access-control-allow-origin` (which a browser reads as a refusal) for any
/// other. The route forwards to the entry's cluster only because the CORS filter acts on route
/// entries alone, never on direct responses; nothing matching it reaches the backend.
fn preflight_route(entry: &Entry, upstream: &Upstream, stand_in: &Route) -> Value {
    let mut m = route_match(stand_in);
    if let Some(headers) = m.get_mut("headers").and_then(Value::as_array_mut) {
        headers.push(json!({ "name": "origin", "string_match": { "safe_regex": { "regex": ".+" } } }));
        headers.push(json!({ "name": "access-control-request-method", "present_match": true }));
    }
    let mut out = object([
        ("name", json!(names::preflight_route_name(entry, stand_in))),
        ("match", m),
        ("metadata", route_metadata(&entry.team, &entry.service)),
        (
            "route",
            Value::Object(upstream.action(ROUTE_TIMEOUT.to_string())),
        ),
    ]);
    route_policy::extend_route(
        stand_in,
        out.as_object_mut().expect("object of members"),
    );
    out
}

/// Who a route belongs to, for the access log: Envoy's formatter cannot split the route or
/// cluster name, so the renderer writes team and service where `%METADATA(ROUTE:…)%` reads
/// them (docs/design.md#access-log).
fn route_metadata(team: &str, service: &str) -> Value {
    json!({ "filter_metadata": { ROUTE_METADATA_NAMESPACE: { "service": service, "team": team } } })
}

/// A route can carry one local bucket. Of several `burst` limits the smallest is kept: a bucket
/// of N tokens refilled N per second never holds more than one of M ≥ N, so it alone enforces both.
fn burst_tokens(route: &Route) -> Option<u32> {
    route
        .limits
        .iter()
        .filter_map(|l| match l {
            Limit::Burst { burst } => Some(*burst),
            Limit::Global { .. } => None,
        })
        .min()
}

fn local_rate_limit(entry: &Entry, tokens: u32) -> Value {
    json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
        "stat_prefix": names::local_rate_limit_stat_prefix(entry),
        "token_bucket": { "max_tokens": tokens, "tokens_per_fill": tokens, "fill_interval": "1s" },
        "filter_enabled": { "runtime_key": "gateway.burst.enabled", "default_value": { "numerator": 100, "denominator": "HUNDRED" } },
        "filter_enforced": { "runtime_key": "gateway.burst.enforced", "default_value": { "numerator": 100, "denominator": "HUNDRED" } },
        "status": { "code": "TooManyRequests" }
    })
}
