//! The walk over an entry document: every field checked at its path, every problem kept, and
//! the typed `Entry` built only when there were none.

use super::backend::required_backend;
use super::entry_policy;
use super::cors::cors;
use super::duration::{check_timeout, DEFAULT_ROUTE_TIMEOUT_MS};
use super::header_changes::{header_changes, Direction};
use super::retries::{grpc_retry_conditions_allowed, retries, RetryContext};
use super::rewrite::rewrite;
use super::redirect::{redirect, NOT_WITH_A_REDIRECT};
use super::fields::{
    as_written, at_most, non_empty_list, object, optional_flag, reject_unknown, required,
    required_parsed, string,
};
use super::host::check_host;
use super::identifiers::check_identifier;
use super::limits::limits;
use super::matches::{header_matches, query_matches};
use super::mirror::{mirror, MAX_MIRROR_BACKENDS};
use super::clients::clients;
use super::jwt;
use super::methods::{methods, shared_methods};
use super::path::check_path;
use super::report::{child, describe, index, quote, Problems};
use super::{Policy, MAX_PATH_PREFIXES, MAX_ROUTES};
use crate::entry::{Cors, Entry, HeaderChanges, Limit, Protocol, Retries, Rewrite, Route};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

const ENTRY_FIELDS: [&str; 12] = [
    "team",
    "service",
    "host",
    "backend",
    "backends",
    "protocol",
    "canary",
    "health_check",
    "preserve_host",
    "jwt",
    "routes",
    "rollout",
];
const ROUTE_FIELDS: [&str; 18] = [
    "path",
    "exact",
    "headers",
    "query",
    "methods",
    "limits",
    "timeout",
    "retries",
    "rewrite",
    "request_headers",
    "response_headers",
    "cors",
    "websocket",
    "host_rewrite",
    "redirect",
    "mirror",
    "clients",
    "auth",
];

pub(crate) fn entry(v: &Value, policy: &Policy, problems: &mut Problems) -> Option<Entry> {
    let Value::Object(map) = v else {
        problems.push(
            "entry",
            format!("expected a JSON object, got {}", describe(v)),
        );
        return None;
    };
    reject_unknown(map, "", &ENTRY_FIELDS, problems);
    let team = checked_string(map, "team", check_identifier, problems);
    let service = checked_string(map, "service", check_identifier, problems);
    let host = checked_string(
        map,
        "host",
        |h| check_host(h, &policy.base_domain),
        problems,
    );
    let (backend, backends) = match (map.get("backend"), map.get("backends")) {
        (Some(_), Some(_)) => {
            problems.push("backends", "either backend (one) or backends (2 to 8, weighted), not both");
            (None, None)
        }
        (None, Some(v)) => (Some(String::new()), entry_policy::backends(v, "backends", policy, problems)),
        _ => (
            required_backend(map, "", "backend", policy, problems),
            Some(Vec::new()),
        ),
    };
    let protocol = match map.get("protocol") {
        None => Some(Protocol::default()),
        Some(v) => entry_policy::protocol(v, "protocol", problems),
    };
    let main_backends: Vec<&str> = map
        .get("backend")
        .and_then(Value::as_str)
        .into_iter()
        .chain(
            map.get("backends")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|b| b.get("url").and_then(Value::as_str)),
        )
        .collect();
    let canary = match map.get("canary") {
        None => Some(None),
        Some(v) => entry_policy::canary(v, "canary", &main_backends, policy, problems).map(Some),
    };
    let health_check = match map.get("health_check") {
        None => Some(None),
        Some(v) => entry_policy::health_check(v, "health_check", policy, problems).map(Some),
    };
    let preserve_host = optional_flag(map, "", "preserve_host", problems);
    let jwt = match map.get("jwt") {
        None => Some(Default::default()),
        Some(v) => jwt::providers(v, "jwt", policy, problems),
    };
    // The provider names a route's `auth` may name: the declared ones, whatever else is wrong
    // with them (`None` while `jwt` is not an object, so no route is judged against it).
    let provider_names: Option<Vec<String>> = match map.get("jwt") {
        None => Some(Vec::new()),
        Some(Value::Object(m)) => Some(m.keys().cloned().collect()),
        Some(_) => None,
    };
    let rollout = match map.get("rollout") {
        None => Some(None),
        Some(v) => super::rollout::rollout(v, "rollout", policy, problems).map(Some),
    };
    let grpc = grpc_retry_conditions_allowed(map);
    let cx = RouteContext { policy, grpc, providers: provider_names.as_deref() };
    let routes = required(map, "", "routes", problems)
        .and_then(|v| routes(v, "routes", &cx, problems));
    if let (Some(jwt), Some(routes)) = (&jwt, &routes) {
        check_claim_headers_unchanged(jwt, routes, "routes", problems);
        if let Some(Some(c)) = &canary {
            if let Some(h) = &c.header {
                if let Some(why) = claim_header_owner(jwt, &h.name) {
                    problems.push("canary.header.name", format!("{why}; a cohort is chosen before the token is verified, so a client could pick it by sending the header"));
                }
            }
        }
    }
    Some(Entry {
        team: team?,
        service: service?,
        host: host?,
        backend: backend?,
        backends: backends?,
        protocol: protocol?,
        canary: canary?,
        health_check: health_check?,
        preserve_host,
        jwt: jwt?,
        routes: routes?,
        rollout: rollout?,
        serving: None,
    })
}

/// What every route of an entry is judged with.
struct RouteContext<'a> {
    policy: &'a Policy,
    grpc: bool,
    /// The entry's `jwt` provider names (`None` while `jwt` is not an object).
    providers: Option<&'a [String]>,
}

/// Which provider and claim `header` carries, as a reason, when it is a claim header.
fn claim_header_owner(
    jwt: &std::collections::BTreeMap<String, crate::entry::JwtProvider>,
    header: &str,
) -> Option<String> {
    jwt.iter().find_map(|(name, p)| {
        p.claims_to_headers.iter().find(|(_, v)| *v == header).map(|(claim, _)| {
            format!("{} carries claim {} of jwt provider {}", quote(header), quote(claim), quote(name))
        })
    })
}

/// A header the entry's providers copy a claim into is the gateway's on the entry's routes: a
/// route's own header changes would overwrite or drop the verified value, and a route matched
/// on it would be chosen by what the client sent (routes are chosen before the token is
/// verified).
fn check_claim_headers_unchanged(
    jwt: &std::collections::BTreeMap<String, crate::entry::JwtProvider>,
    routes: &[Route],
    field: &str,
    problems: &mut Problems,
) {
    for (i, route) in routes.iter().enumerate() {
        for (j, m) in route.headers.iter().enumerate() {
            if let Some(why) = claim_header_owner(jwt, &m.name) {
                problems.push(
                    child(&index(&child(&index(field, i), "headers"), j), "name"),
                    format!("{why}; routes are chosen before the token is verified, so a client would choose this one by sending it"),
                );
            }
        }
        let Some(h) = &route.request_headers else { continue };
        let named = h.add.keys().chain(h.set.keys()).chain(h.append.keys()).chain(h.remove.iter());
        for header in named {
            if let Some((provider, claim)) = jwt.iter().find_map(|(name, p)| {
                p.claims_to_headers.iter().find(|(_, v)| *v == header).map(|(c, _)| (name, c))
            }) {
                problems.push(
                    child(&index(field, i), "request_headers"),
                    format!(
                        "{} carries claim {} of jwt provider {}; the gateway sets it from a verified token",
                        quote(header),
                        quote(claim),
                        quote(provider)
                    ),
                );
            }
        }
    }
}

/// A required string field that must pass `rule`.
fn checked_string(
    map: &Map<String, Value>,
    key: &str,
    rule: impl Fn(&str) -> Result<(), String>,
    problems: &mut Problems,
) -> Option<String> {
    required_parsed(map, "", key, problems, as_written(rule))
}

fn routes(
    v: &Value,
    field: &str,
    cx: &RouteContext<'_>,
    problems: &mut Problems,
) -> Option<Vec<Route>> {
    let items = non_empty_list(v, field, "routes", "must list at least one route", problems)?;
    let before = problems.0.len();
    at_most(items, MAX_ROUTES, field, "routes", " per entry", problems);
    let checked: Vec<Option<Route>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| route(item, &index(field, i), cx, problems))
        .collect();
    check_duplicates(&checked, field, problems);
    check_mirror_backends(&checked, field, problems);
    check_shared_cors(&checked, field, problems);
    let prefixes: BTreeSet<String> = checked.iter().flatten().map(super::guard_key).collect();
    if prefixes.len() > MAX_PATH_PREFIXES {
        problems.push(
            field,
            format!(
                "claims {} distinct path prefixes; at most {MAX_PATH_PREFIXES} (each is a guard row in the one registration transaction)",
                prefixes.len()
            ),
        );
    }
    if problems.0.len() > before {
        return None;
    }
    checked.into_iter().collect()
}

fn route(
    v: &Value,
    field: &str,
    cx: &RouteContext<'_>,
    problems: &mut Problems,
) -> Option<Route> {
    let (policy, grpc) = (cx.policy, cx.grpc);
    let map = object(v, field, "a route", problems)?;
    reject_unknown(map, field, &ROUTE_FIELDS, problems);
    let (path, exact) = path_or_exact(map, field, problems);
    let headers = match map.get("headers") {
        None => Some(Vec::new()),
        Some(v) => header_matches(v, &child(field, "headers"), problems),
    };
    let query = match map.get("query") {
        None => Some(Vec::new()),
        Some(v) => query_matches(v, &child(field, "query"), problems),
    };
    let methods = match map.get("methods") {
        None => Some(None),
        Some(v) => methods(v, &child(field, "methods"), problems).map(Some),
    };
    let limits = match map.get("limits") {
        None => Some(Vec::new()),
        Some(v) => limits(v, &child(field, "limits"), problems),
    };
    let timeout_field = child(field, "timeout");
    let timeout = match map.get("timeout") {
        None => Some(None),
        Some(v) => string(v, &timeout_field, problems).and_then(|t| {
            check_timeout(t, policy.max_route_timeout_ms)
                .map(|_| Some(t.to_string()))
                .map_err(|reason| problems.push(&timeout_field, reason))
                .ok()
        }),
    };
    let policy_fields = route_policy(map, field, policy, grpc, &path, &methods, &limits, &timeout, problems);
    let host_rewrite_field = child(field, "host_rewrite");
    let host_rewrite = match map.get("host_rewrite") {
        None => Some(None),
        Some(v) => string(v, &host_rewrite_field, problems).and_then(|h| {
            super::identifiers::check_dns_name(h)
                .map(|()| Some(h.to_string()))
                .map_err(|reason| problems.push(&host_rewrite_field, reason))
                .ok()
        }),
    };
    let clients = match map.get("clients") {
        None => Some(None),
        Some(v) => clients(v, &child(field, "clients"), problems).map(Some),
    };
    let mirror = match map.get("mirror") {
        None => Some(None),
        Some(v) => mirror(v, &child(field, "mirror"), policy, problems).map(Some),
    };
    let redirect = match map.get("redirect") {
        None => Some(None),
        Some(v) => redirect_only(map, v, field, path.as_deref(), &limits, problems).map(Some),
    };
    let auth = match map.get("auth") {
        None => Some(None),
        Some(v) => jwt::route_auth(v, &child(field, "auth"), cx.providers, problems).map(Some),
    };
    let (retries, rewrite, request_headers, response_headers, cors, websocket) = policy_fields?;
    Some(Route {
        path: path?,
        exact: exact?,
        headers: headers?,
        query: query?,
        methods: methods?,
        limits: limits?,
        timeout: timeout?,
        retries,
        rewrite,
        request_headers,
        response_headers,
        cors,
        websocket,
        host_rewrite: host_rewrite?,
        redirect: redirect?,
        mirror: mirror?,
        clients: clients?,
        auth: auth?,
    })
}

/// `path` (a prefix) or `exact` (one path): exactly one. The prefix is `""` on an exact route.
/// A prefix replacement (a `rewrite` string or `prefix`, a redirect's `prefix`) needs a prefix.
fn path_or_exact(
    map: &Map<String, Value>,
    field: &str,
    problems: &mut Problems,
) -> (Option<String>, Option<Option<String>>) {
    match (map.get("path"), map.get("exact")) {
        (Some(_), Some(_)) => {
            problems.push(
                child(field, "exact"),
                "a route matches a prefix (path) or one exact path (exact), not both",
            );
            (None, None)
        }
        (None, Some(v)) => {
            let at = child(field, "exact");
            let exact = string(v, &at, problems).and_then(|s| {
                check_path(s)
                    .map(|()| s.to_string())
                    .map_err(|reason| problems.push(&at, reason))
                    .ok()
            });
            let prefix_replaced = matches!(map.get("rewrite"), Some(Value::String(_)))
                || map.get("rewrite").and_then(|r| r.get("prefix")).is_some()
                || map.get("redirect").and_then(|r| r.get("prefix")).is_some();
            if prefix_replaced {
                problems.push(
                    at,
                    "an exact route has no prefix to replace; rewrite or redirect its whole path with { \"path\": … }",
                );
                return (None, None);
            }
            (Some(String::new()), exact.map(Some))
        }
        (Some(_), None) => (
            required_parsed(map, field, "path", problems, as_written(check_path)),
            Some(None),
        ),
        (None, None) => (
            required_parsed(map, field, "path", problems, as_written(check_path)),
            None,
        ),
    }
}

/// A `redirect`, and nothing beside it that only means something for a request the backend
/// gets: the gateway answers, so no timeout, retry, rewrite, header change, CORS or upgrade
/// applies, and a global limit (counted from the route action, which a redirect has none of)
/// would silently never count. A `burst` bucket still applies.
fn redirect_only(
    map: &Map<String, Value>,
    v: &Value,
    field: &str,
    path: Option<&str>,
    limits: &Option<Vec<Limit>>,
    problems: &mut Problems,
) -> Option<crate::entry::Redirect> {
    let before = problems.0.len();
    for key in NOT_WITH_A_REDIRECT {
        if map.contains_key(key) {
            problems.push(
                child(field, key),
                "a redirect route answers the client itself and sends nothing to the backend; leave it out",
            );
        }
    }
    for (i, limit) in limits.iter().flatten().enumerate() {
        if matches!(limit, Limit::Global { .. }) {
            problems.push(
                index(&child(field, "limits"), i),
                "a redirect route counts only burst limits: the global limiter is asked from a route that forwards",
            );
        }
    }
    let redirect = redirect(v, &child(field, "redirect"), path, problems);
    (problems.0.len() == before).then_some(redirect).flatten()
}

type PolicyFields = (
    Option<Retries>,
    Option<Rewrite>,
    Option<HeaderChanges>,
    Option<HeaderChanges>,
    Option<Cors>,
    bool,
);

/// The route-level traffic policy (docs/design.md#route-policy): `retries`, `rewrite`,
/// `request_headers`, `response_headers`, `cors`, `websocket`. Each is judged against what the
/// rest of the route says (its methods, timeout, path and limits) when that part is valid.
#[allow(clippy::too_many_arguments)]
fn route_policy(
    map: &Map<String, Value>,
    field: &str,
    policy: &Policy,
    grpc: bool,
    path: &Option<String>,
    methods: &Option<Option<Vec<String>>>,
    limits: &Option<Vec<Limit>>,
    timeout: &Option<Option<String>>,
    problems: &mut Problems,
) -> Option<PolicyFields> {
    let before = problems.0.len();
    let timeout_ms = match timeout {
        Some(None) => Some(DEFAULT_ROUTE_TIMEOUT_MS),
        Some(Some(t)) => crate::check::parse_duration(t).ok(),
        None => None,
    };
    let retries = match map.get("retries") {
        None => None,
        Some(v) => {
            let cx = RetryContext {
                // Invalid methods (reported there) leave the non-idempotent rule unjudged.
                methods: match methods {
                    Some(m) => m.as_deref(),
                    None => Some(&[]),
                },
                timeout_ms,
                grpc,
                max_attempts: policy.max_retry_attempts,
            };
            retries(v, &child(field, "retries"), &cx, problems)
        }
    };
    let rewrite = map
        .get("rewrite")
        .and_then(|v| rewrite(v, &child(field, "rewrite"), path.as_deref(), problems));
    let limit_keys: Vec<(usize, String)> = match limits {
        Some(limits) => limits
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match l {
                Limit::Global { header: Some(h), .. } => Some((i, h.clone())),
                _ => None,
            })
            .collect(),
        // Invalid limits: judge the header names against the raw ones still written there.
        None => raw_limit_headers(map),
    };
    let request_headers = map.get("request_headers").and_then(|v| {
        let direction = Direction::Request { limit_keys: &limit_keys };
        header_changes(v, &child(field, "request_headers"), &direction, problems)
    });
    let response_headers = map.get("response_headers").and_then(|v| {
        header_changes(v, &child(field, "response_headers"), &Direction::Response, problems)
    });
    let cors = map
        .get("cors")
        .and_then(|v| cors(v, &child(field, "cors"), &policy.base_domain, problems));
    let websocket_field = child(field, "websocket");
    let websocket = optional_flag(map, field, "websocket", problems);
    if websocket {
        if let Some(Some(ms)) = methods {
            if !ms.iter().any(|m| m == "GET") {
                problems.push(
                    &websocket_field,
                    "the route does not accept GET, which a websocket handshake uses",
                );
            }
        }
    }
    if problems.0.len() > before {
        return None;
    }
    Some((retries, rewrite, request_headers, response_headers, cors, websocket))
}

/// `(index, header)` of each limit that names a header, read from the raw JSON.
fn raw_limit_headers(map: &Map<String, Value>) -> Vec<(usize, String)> {
    let Some(Value::Array(items)) = map.get("limits") else {
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Some((i, l.get("header")?.as_str()?.to_string())))
        .collect()
}

/// A browser's preflight (`OPTIONS`) for a path is answered by one CORS policy, so the routes of
/// an entry that share a path must declare the same `cors`, or none of them.
fn check_shared_cors(routes: &[Option<Route>], field: &str, problems: &mut Problems) {
    for (j, b) in routes.iter().enumerate() {
        let Some(b) = b else { continue };
        let first = routes[..j]
            .iter()
            .enumerate()
            .find_map(|(i, a)| {
                a.as_ref()
                    .filter(|a| super::path_key(a) == super::path_key(b))
                    .map(|a| (i, a))
            });
        let Some((i, a)) = first else { continue };
        if a.cors != b.cors {
            problems.push(
                child(&index(field, j), "cors"),
                format!(
                    "must be the same as {}.cors: both routes have path {}, and a browser's preflight for a path is answered by one policy",
                    index(field, i),
                    quote(b.matched_path())
                ),
            );
        }
    }
}

/// At most [`MAX_MIRROR_BACKENDS`] distinct mirror backends per entry, named at the first route
/// past them.
fn check_mirror_backends(routes: &[Option<Route>], field: &str, problems: &mut Problems) {
    let mut seen: Vec<&str> = Vec::new();
    for (i, r) in routes.iter().enumerate() {
        let Some(m) = r.as_ref().and_then(|r| r.mirror.as_ref()) else { continue };
        if seen.contains(&m.backend.as_str()) {
            continue;
        }
        seen.push(&m.backend);
        if seen.len() > MAX_MIRROR_BACKENDS {
            problems.push(
                child(&child(&index(field, i), "mirror"), "backend"),
                format!(
                    "a mirror backend past the {MAX_MIRROR_BACKENDS} distinct ones an entry may have (each is a cluster in every proxy)"
                ),
            );
        }
    }
}

/// Two routes with one path and a method in common: Envoy would only ever use the first, so
/// the second one's limits would silently never apply.
fn check_duplicates(routes: &[Option<Route>], field: &str, problems: &mut Problems) {
    // Each route's key once (a route with conditions hashes them), not once per pair.
    let keys: Vec<Option<String>> = routes.iter().map(|r| r.as_ref().map(crate::names::match_key)).collect();
    for (j, b) in routes.iter().enumerate() {
        let Some(b) = b else { continue };
        for (i, a) in routes[..j].iter().enumerate() {
            let Some(a) = a else { continue };
            if keys[i] != keys[j] {
                continue;
            }
            let shared = shared_methods(a.methods.as_deref(), b.methods.as_deref());
            if shared.is_empty() {
                continue;
            }
            problems.push(
                index(field, j),
                format!(
                    "same {} {}{} as {} with overlapping methods ({}); give each path and method one route",
                    if b.is_exact() { "exact path" } else { "path" },
                    quote(b.matched_path()),
                    if b.has_conditions() { " and conditions" } else { "" },
                    index(field, i),
                    shared.join(", ")
                ),
            );
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> Result<Entry, Vec<String>> {
        let mut p = Problems::default();
        let policy = Policy::new("api.example.com", false);
        match entry(&v, &policy, &mut p) {
            Some(e) if p.is_empty() => Ok(e),
            _ => Err(p.0.iter().map(|p| p.to_string()).collect()),
        }
    }

    fn base() -> Value {
        json!({"team": "billing", "service": "invoices", "host": "invoices",
               "backend": "https://invoices.internal.example", "routes": [{"path": "/invoices"}]})
    }

    #[test]
    fn a_minimal_entry_builds() {
        let e = run(base()).expect("valid");
        assert_eq!(
            e.routes,
            vec![Route {
                path: "/invoices".into(),
                methods: None,
                limits: vec![],
                timeout: None,
                ..Default::default()
            }]
        );
    }

    #[test]
    fn missing_and_unknown_top_level_fields() {
        let errs = run(json!({"teem": "billing"})).expect_err("bad");
        assert_eq!(
            errs,
            vec![
                "teem: unknown field; expected team, service, host, backend, backends, protocol, canary, health_check, preserve_host, jwt, routes or rollout (did you mean \"team\"?)",
                "team: required field is missing",
                "service: required field is missing",
                "host: required field is missing",
                "backend: required field is missing",
                "routes: required field is missing",
            ]
        );
        assert_eq!(
            run(json!([])),
            Err(vec!["entry: expected a JSON object, got array".to_string()])
        );
    }

    #[test]
    fn routes_bounds() {
        let mut v = base();
        v["routes"] = json!([]);
        assert_eq!(
            run(v.clone()),
            Err(vec!["routes: must list at least one route".to_string()])
        );
        v["routes"] = json!({"path": "/"});
        assert!(
            run(v.clone()).expect_err("object")[0].starts_with("routes: expected a list of routes")
        );
        v["routes"] = Value::Array(
            (0..=MAX_ROUTES)
                .map(|i| json!({"path": format!("/r{i}")}))
                .collect(),
        );
        let errs = run(v.clone()).expect_err("too many");
        assert!(
            errs.iter()
                .any(|e| e.starts_with("routes: has 65 routes; at most 64")),
            "{errs:?}"
        );
        v["routes"] = Value::Array(
            (0..=MAX_PATH_PREFIXES)
                .map(|i| json!({"path": format!("/r{i}")}))
                .collect(),
        );
        let errs = run(v.clone()).expect_err("too many prefixes");
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with("routes: claims 46 distinct path prefixes; at most 45"),
            "{errs:?}"
        );
        v["routes"] = Value::Array((0..MAX_ROUTES).map(|i| json!({"path": format!("/r{}", i % MAX_PATH_PREFIXES), "methods": [if i < MAX_PATH_PREFIXES {"GET"} else {"POST"}]})).collect());
        assert!(run(v).is_ok());
    }

    #[test]
    fn duplicate_routes_name_both_indices() {
        let mut v = base();
        v["routes"] = json!([
            {"path": "/a", "methods": ["GET"]},
            {"path": "/a", "methods": ["POST"]},
            {"path": "/a", "methods": ["PUT", "GET"]},
            {"path": "/b"},
            {"path": "/b", "methods": ["DELETE"]},
            {"path": "/b/"},
        ]);
        let errs = run(v).expect_err("dups");
        assert_eq!(
            errs,
            vec![
                "routes[2]: same path \"/a\" as routes[0] with overlapping methods (GET); give each path and method one route",
                "routes[4]: same path \"/b\" as routes[3] with overlapping methods (DELETE); give each path and method one route",
            ]
        );
    }

    #[test]
    fn route_fields() {
        let mut v = base();
        v["routes"] = json!([{"path": "/a", "limitz": [], "methods": []}, {"methods": ["GET"]}, "/c", {"path": 5}]);
        let errs = run(v).expect_err("bad");
        assert_eq!(
            errs,
            vec![
                "routes[0].limitz: unknown field; expected path, exact, headers, query, methods, limits, timeout, retries, rewrite, request_headers, response_headers, cors, websocket, host_rewrite, redirect, mirror, clients or auth (did you mean \"limits\"?)",
                "routes[0].methods: must not be empty; leave methods out to match every method",
                "routes[1].path: required field is missing",
                "routes[2]: expected a route (a JSON object), got string",
                "routes[3].path: expected a string, got 5",
            ]
        );
    }

    #[test]
    fn a_redirect_route_takes_nothing_that_needs_the_backend() {
        let mut v = base();
        v["routes"] = json!([
            {"path": "/old", "redirect": {"prefix": "/new"}, "limits": [{"burst": 5}]},
            {"path": "/gone", "timeout": "5s", "websocket": false,
             "limits": [{"per": "client-ip", "requests": 5, "every": "minute"}],
             "redirect": {"host": "new.example.com"}}
        ]);
        assert_eq!(
            run(v).expect_err("bad"),
            vec![
                "routes[1].timeout: a redirect route answers the client itself and sends nothing to the backend; leave it out",
                "routes[1].websocket: a redirect route answers the client itself and sends nothing to the backend; leave it out",
                "routes[1].limits[0]: a redirect route counts only burst limits: the global limiter is asked from a route that forwards",
            ]
        );
        let mut v = base();
        v["routes"] = json!([{"path": "/old", "redirect": {"prefix": "/new", "status": 308}}]);
        let entry = run(v).expect("valid");
        assert_eq!(entry.routes[0].redirect.as_ref().and_then(|r| r.status), Some(308));
    }

    #[test]
    fn a_host_rewrite_is_a_dns_name() {
        let mut v = base();
        v["routes"] = json!([{"path": "/a", "host_rewrite": "api.internal.example"},
                             {"path": "/b", "host_rewrite": "Evil Host"},
                             {"path": "/c", "host_rewrite": 7},
                             {"path": "/d", "host_rewrite": "x.example", "redirect": {"prefix": "/e"}}]);
        let errs = run(v).expect_err("bad");
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0].starts_with("routes[1].host_rewrite: "), "{errs:?}");
        assert_eq!(errs[1], "routes[2].host_rewrite: expected a string, got 7");
        assert_eq!(errs[2], "routes[3].host_rewrite: a redirect route answers the client itself and sends nothing to the backend; leave it out");
        let mut v = base();
        v["routes"] = json!([{"path": "/a", "host_rewrite": "api.internal.example"}]);
        assert_eq!(run(v).expect("valid").routes[0].host_rewrite.as_deref(), Some("api.internal.example"));
    }

    #[test]
    fn route_timeouts_are_bounded_by_the_operators_maximum() {
        let mut v = base();
        v["routes"] = json!([{"path": "/a", "timeout": "250ms"}, {"path": "/b", "timeout": "61s"},
                             {"path": "/c", "timeout": 5}, {"path": "/d", "timeout": "1h"}]);
        assert_eq!(
            run(v.clone()).expect_err("bad"),
            vec![
                "routes[1].timeout: is 61s; at most 60s (the operators' maximum route timeout)",
                "routes[2].timeout: expected a string, got 5",
                "routes[3].timeout: \"1h\" is not a duration; write a whole number with unit ms, s or m (\"5s\", \"250ms\")",
            ]
        );
        v["routes"] = json!([{"path": "/a", "timeout": "250ms"}, {"path": "/b", "timeout": "1m"}]);
        let e = run(v.clone()).expect("valid");
        assert_eq!(e.routes[0].timeout.as_deref(), Some("250ms"));
        assert_eq!(e.routes[1].timeout.as_deref(), Some("1m"));
        let mut strict = Policy::new("api.example.com", false);
        strict.max_route_timeout_ms = 30_000;
        let mut p = Problems::default();
        assert!(entry(&v, &strict, &mut p).is_none() || !p.is_empty());
        assert_eq!(p.0[0].to_string(), "routes[1].timeout: is 60s; at most 30s (the operators' maximum route timeout)");
    }

    #[test]
    fn route_policy_is_judged_against_the_rest_of_the_route() {
        let mut v = base();
        v["routes"] = json!([
            {"path": "/invoices", "methods": ["POST"], "retries": {"attempts": 2, "on": ["5xx"]}},
            {"path": "/invoices", "methods": ["GET"], "timeout": "2s",
             "retries": {"attempts": 2, "on": ["5xx"], "per_try_timeout": "2s"},
             "cors": {"origins": ["https://app.example.com"]}},
            {"path": "/feed", "methods": ["POST"], "websocket": true, "rewrite": "/v2/",
             "request_headers": {"add": {"x-api-key": "k"}},
             "limits": [{"per": "header", "header": "x-api-key", "requests": 5, "every": "minute"}]},
        ]);
        assert_eq!(
            run(v).expect_err("bad"),
            vec![
                "routes[0].retries.on[0]: \"5xx\" retries a POST route; a route accepting POST may retry only on connect-failure or refused-stream (the backend never saw the request)",
                "routes[1].retries.per_try_timeout: is 2s; must be below the route's timeout (2s), or one try uses the whole request's time",
                "routes[2].rewrite: \"/v2/\" ends with \"/\" and path \"/feed\" does not: \"/feed/7\" would reach the backend as \"/v2//7\"",
                "routes[2].request_headers.add.x-api-key: \"x-api-key\" is the header this route's limits[0] counts; the backend would see a key other than the one limited",
                "routes[2].websocket: the route does not accept GET, which a websocket handshake uses",
            ]
        );
    }

    #[test]
    fn routes_on_one_path_share_one_cors_policy() {
        let mut v = base();
        v["routes"] = json!([
            {"path": "/invoices", "methods": ["GET"], "cors": {"origins": ["https://app.example.com"]}},
            {"path": "/invoices", "methods": ["PUT"]},
            {"path": "/invoices", "methods": ["DELETE"], "cors": {"origins": ["https://app.example.com"]}},
        ]);
        assert_eq!(
            run(v).expect_err("bad"),
            vec!["routes[1].cors: must be the same as routes[0].cors: both routes have path \"/invoices\", and a browser's preflight for a path is answered by one policy"]
        );
    }

    #[test]
    fn a_full_route_policy_builds_canonically() {
        let mut v = base();
        v["routes"] = json!([{"path": "/invoices", "methods": ["GET"], "timeout": "5s",
            "retries": {"attempts": 2, "on": ["reset", "connect-failure", "5xx"], "per_try_timeout": "2s"},
            "rewrite": "/v2/invoices",
            "request_headers": {"add": {"x-team": "billing"}, "remove": ["x-debug"]},
            "response_headers": {"add": {"cache-control": "no-store"}, "remove": ["server"]},
            "cors": {"origins": ["https://app.example.com"], "methods": ["GET"], "headers": ["x-api-key"],
                     "max_age": "10m", "credentials": false},
            "websocket": false}]);
        let e = run(v).expect("valid");
        let r = &e.routes[0];
        assert_eq!(r.retries.as_ref().expect("retries").on, ["5xx", "connect-failure", "reset"]);
        assert_eq!(r.rewrite, Some(Rewrite::prefix("/v2/invoices")));
        // The typed entry round-trips through the same checks (the reconciler's re-check).
        assert_eq!(crate::check::check_entry(&e, &Policy::new("api.example.com", false)), Ok(()));
    }
}
