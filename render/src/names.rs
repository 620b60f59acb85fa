//! Readable, stable names for everything the renderer emits. Each name is derived only from the
//! entry's own fields, so it does not move when other entries come and go.
//!
//! `team` and `service` are identifiers (`a-z0-9-`), so joining them with `.` cannot be ambiguous.

use crate::entry::{Entry, Route};

/// The cluster of one entry: `billing.invoices-api`.
pub fn cluster_name(entry: &Entry) -> String {
    format!("{}.{}", entry.team, entry.service)
}

/// The canary backend's cluster: `billing.invoices-api.canary`. Three labels, so it can never
/// be another entry's `team.service`, and the entry's own cluster keeps its name.
pub fn canary_cluster_name(entry: &Entry) -> String {
    format!("{}.canary", cluster_name(entry))
}

/// The cluster a route mirrors to: `billing.invoices-api.mirror-1a2b3c4d`, the first 8 hex digits
/// of the backend URL's SHA-256, so adding or removing another mirror never renames it. Three
/// labels, like the canary's.
pub fn mirror_cluster_name(entry: &Entry, backend: &str) -> String {
    format!("{}.mirror-{}", cluster_name(entry), short_digest(backend.as_bytes()))
}

/// The cluster of one of an entry's `backends`: `billing.invoices-api.backend-1a2b3c4d`, named by
/// its URL as a mirror's is, so reordering or reweighting the list renames nothing.
pub fn weighted_backend_cluster_name(entry: &Entry, url: &str) -> String {
    format!("{}.backend-{}", cluster_name(entry), short_digest(url.as_bytes()))
}

/// The cluster Envoy fetches a `jwt` provider's keys through:
/// `billing.invoices-api.jwks-1a2b3c4d`, named by the JWKS URL's origin.
pub fn jwks_cluster_name(entry: &Entry, origin: &str) -> String {
    format!("{}.jwks-{}", cluster_name(entry), short_digest(origin.as_bytes()))
}

/// `scheme://authority` of a checked JWKS URL: what its cluster is named by and reaches.
pub fn jwks_origin(uri: &str) -> &str {
    let after = uri.find("://").map_or(0, |i| i + 3);
    let end = uri[after..].find('/').map_or(uri.len(), |i| after + i);
    &uri[..end]
}

/// A `jwt` provider's name in the JWT filter's configuration (and its requirement's):
/// `billing.invoices-api.main`, so no two entries' providers share one.
pub fn jwt_provider_name(entry: &Entry, provider: &str) -> String {
    format!("{}.{}", cluster_name(entry), provider)
}

/// The first 8 hex digits of `bytes`' SHA-256: a stable, character-safe part of a name.
fn short_digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The failover pair for the main share: the backend while it is healthy, else the canary.
pub fn main_first_cluster_name(entry: &Entry) -> String {
    format!("{}.main-first", cluster_name(entry))
}

/// The failover pair for the canary share and cohort: the canary while it is healthy, else the
/// backend.
pub fn canary_first_cluster_name(entry: &Entry) -> String {
    format!("{}.canary-first", cluster_name(entry))
}

/// The methods part of a route's key: `GET`, `GET,POST`, or `*` for every method.
/// Methods arrive sorted and uppercase from the checks.
pub fn methods_key(route: &Route) -> String {
    match &route.methods {
        Some(methods) if !methods.is_empty() => methods.join(","),
        _ => "*".to_string(),
    }
}

/// A route's key inside its entry: `GET:/invoices`, `*:/invoices/export`. Unique within an entry
/// because the checks reject two routes with the same path and overlapping methods (and two
/// different method sets that do not overlap are different strings). It is derived from the
/// route's content, not its position, so inserting a route does not rename the others (which
/// would reset their rate-limit counters).
pub fn route_key(route: &Route) -> String {
    format!("{}:{}", methods_key(route), match_key(route))
}

/// A route's path as a key: its prefix, or `=` and its exact path (what a browser's preflight
/// matches, which carries none of a route's header conditions).
pub fn path_key(route: &Route) -> String {
    match &route.exact {
        Some(exact) => format!("={exact}"),
        None => route.path.clone(),
    }
}

/// What a route matches besides its methods: its prefix (`/invoices`), an exact path after `=`
/// (`=/healthz`; paths start with `/`, so the two never meet), and with header or query
/// conditions `~` and the first 8 hex digits of their SHA-256 (`/search~1f2e3d4c`): names and
/// values may hold any visible character, which a name must not carry into the rate-limit
/// rules or the access log. The checks keep the conditions sorted, so their order as written
/// never renames a route.
pub fn match_key(route: &Route) -> String {
    let mut key = path_key(route);
    if route.has_conditions() {
        let conditions = serde_json::to_vec(&(&route.headers, &route.query))
            .expect("header and query matches serialize");
        key.push('~');
        key.push_str(&short_digest(&conditions));
    }
    key
}

/// The Envoy route name: `billing.invoices-api:GET:/invoices`. Shows up in access logs.
pub fn route_name(entry: &Entry, route: &Route) -> String {
    format!("{}:{}", cluster_name(entry), route_key(route))
}

/// The name of the route answering browsers' CORS preflights (`OPTIONS`) on a path of an entry
/// whose routes there do not take `OPTIONS`: `billing.invoices-api:preflight:/invoices` (the
/// stand-in route's [`match_key`]). Methods are uppercase, so it never equals a route's name.
pub fn preflight_route_name(entry: &Entry, stand_in: &Route) -> String {
    format!("{}:preflight:{}", cluster_name(entry), match_key(stand_in))
}

/// The value of the `route` rate-limit descriptor for the limit at `limit_index` in the route's
/// `limits`: `GET:/invoices#0`. The index keeps two limits of one route apart in the rule tree
/// (envoyproxy/ratelimit rejects a duplicate key). Paths never contain `#` and methods never
/// contain `:`, so the value maps back to exactly one (route, limit).
pub fn route_descriptor_value(route: &Route, limit_index: usize) -> String {
    format!("{}#{}", route_key(route), limit_index)
}

/// `stat_prefix` of a route's local (burst) bucket: stats are per service, not per route, so a
/// path never becomes part of a stat name.
pub fn local_rate_limit_stat_prefix(entry: &Entry) -> String {
    format!("burst.{}", cluster_name(entry))
}

/// Name of a team host's fallback route (the JSON 404 after the team's routes).
pub fn fallback_route_name(fqdn: &str) -> String {
    format!("{fqdn}:not-found")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(path: &str, methods: Option<&[&str]>) -> Route {
        Route::new(path, methods, vec![])
    }

    fn entry() -> Entry {
        Entry {
            rollout: None,
            serving: None,
            team: "billing".into(),
            service: "invoices-api".into(),
            host: "invoices".into(),
            backend: "https://invoices.internal.example:8443".into(),
            protocol: Default::default(),
            canary: None,
            health_check: None,
            preserve_host: false,
            jwt: Default::default(),
            backends: vec![],
            routes: vec![],
        }
    }

    #[test]
    fn names_are_readable_and_derived_from_team_service_and_route() {
        let e = entry();
        assert_eq!(cluster_name(&e), "billing.invoices-api");
        assert_eq!(
            route_name(&e, &route("/invoices", Some(&["GET"]))),
            "billing.invoices-api:GET:/invoices"
        );
        assert_eq!(
            route_name(&e, &route("/invoices", Some(&["GET", "POST"]))),
            "billing.invoices-api:GET,POST:/invoices"
        );
        assert_eq!(
            route_name(&e, &route("/invoices/export", None)),
            "billing.invoices-api:*:/invoices/export"
        );
        assert_eq!(
            route_descriptor_value(&route("/invoices", Some(&["POST"])), 1),
            "POST:/invoices#1"
        );
        assert_eq!(
            fallback_route_name("invoices.api.example.com"),
            "invoices.api.example.com:not-found"
        );
    }

    #[test]
    fn exact_paths_and_conditions_get_names_of_their_own() {
        use crate::entry::{HeaderMatch, QueryMatch};
        let exact = Route {
            exact: Some("/healthz".into()),
            ..Route::default()
        };
        assert_eq!(route_key(&exact), "*:=/healthz");
        let mut with_header = route("/search", Some(&["GET"]));
        with_header.headers = vec![HeaderMatch {
            name: "x-version".into(),
            value: Some("2#x".into()),
            present: None,
        }];
        let key = route_key(&with_header);
        assert!(key.starts_with("GET:/search~") && key.len() == "GET:/search~".len() + 8, "{key}");
        assert!(!key.contains('#'), "{key}");
        let mut with_query = route("/search", Some(&["GET"]));
        with_query.query = vec![QueryMatch {
            name: "x-version".into(),
            value: Some("2#x".into()),
            present: None,
        }];
        assert_ne!(route_key(&with_query), key, "a header and a query parameter differ");
        assert_eq!(route_key(&with_header.clone()), key, "stable");
    }

    #[test]
    fn disjoint_method_sets_on_one_path_get_different_names() {
        let e = entry();
        assert_ne!(
            route_name(&e, &route("/invoices", Some(&["GET"]))),
            route_name(&e, &route("/invoices", Some(&["POST"])))
        );
        assert_ne!(
            route_descriptor_value(&route("/a", None), 0),
            route_descriptor_value(&route("/a", None), 1)
        );
    }
}
