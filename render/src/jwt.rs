//! The JWT filter's configuration (docs/design.md#authentication): every entry's `jwt` providers
//! and one requirement per provider, as the `TypedExtensionConfig` Envoy discovers from
//! `jwt.json`; the per-route config that requires a token. The clusters Envoy fetches remote
//! key sets through are `clusters::jwks_clusters`.

use crate::contract::{
    FILTER_CONFIG_TYPE_URL, JWT_AUTHN_TYPE_URL, JWT_FILTER, JWT_PER_ROUTE_TYPE_URL,
    TYPED_EXTENSION_CONFIG_TYPE_URL,
};
use crate::entry::{Entry, JwtProvider, Route};
use crate::names;
use crate::route_policy::per_filter_config;
use serde_json::{json, Map, Value};

/// How long Envoy keeps a fetched key set before fetching it again.
const JWKS_CACHE_DURATION: &str = "300s";
/// How long one fetch of a key set may take.
const JWKS_FETCH_TIMEOUT: &str = "5s";

/// The filter's configuration for `entries` (sorted by id): `None` when no entry declares `jwt`,
/// so a registry without tokens renders exactly as it did before the filter existed.
pub fn jwt_config(entries: &[&Entry]) -> Option<Value> {
    let mut providers = Map::new();
    let mut requirements = Map::new();
    for entry in entries {
        for (name, p) in &entry.jwt {
            let full = names::jwt_provider_name(entry, name);
            providers.insert(full.clone(), provider(entry, p));
            requirements.insert(full.clone(), json!({ "provider_name": full }));
        }
    }
    if providers.is_empty() {
        return None;
    }
    Some(json!({
        "@type": TYPED_EXTENSION_CONFIG_TYPE_URL,
        "name": JWT_FILTER,
        "typed_config": {
            "@type": JWT_AUTHN_TYPE_URL,
            "providers": providers,
            "requirement_map": requirements,
        }
    }))
}

/// The configuration with no provider: what a proxy runs while no entry declares `jwt` (the
/// sidecar writes it when a bundle carries no `jwt.json`).
pub fn empty_jwt_config() -> Value {
    json!({
        "@type": TYPED_EXTENSION_CONFIG_TYPE_URL,
        "name": JWT_FILTER,
        "typed_config": { "@type": JWT_AUTHN_TYPE_URL }
    })
}

/// Where `jwt.json` sits for a proxy whose routes' watched directory is `routes_dir`.
pub fn jwt_path(routes_dir: &std::path::Path) -> std::path::PathBuf {
    routes_dir.join(crate::contract::JWT_SUBDIR).join(crate::contract::JWT_FILE)
}

/// `jwt.json`'s bytes for `config` (a `TypedExtensionConfig`) at `version_info`: the
/// DiscoveryResponse the renderer writes, through the one serializer.
pub fn jwt_file(config: Value, version_info: &str) -> String {
    crate::canonical::to_json_bytes(&json!({
        "resources": [config],
        "type_url": TYPED_EXTENSION_CONFIG_TYPE_URL,
        "version_info": version_info
    }))
}

/// The union of two `TypedExtensionConfig`s of the JWT filter (the live one and a new one):
/// every provider and requirement of both, the new one's where both have a name. Make-before-
/// break: routes of either side find their requirement while the routes change.
pub fn jwt_union(live: &Value, new: &Value) -> Value {
    let mut out = new.clone();
    for key in ["providers", "requirement_map"] {
        let Some(live_map) = live.pointer(&format!("/typed_config/{key}")).and_then(Value::as_object) else {
            continue;
        };
        let Some(typed) = out.get_mut("typed_config").and_then(Value::as_object_mut) else {
            continue;
        };
        let slot = typed.entry(key).or_insert_with(|| Value::Object(Map::new()));
        if let Some(map) = slot.as_object_mut() {
            for (name, v) in live_map {
                map.entry(name.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    out
}

fn provider(entry: &Entry, p: &JwtProvider) -> Value {
    let mut out = Map::new();
    out.insert("issuer".into(), json!(p.issuer));
    if !p.audiences.is_empty() {
        out.insert("audiences".into(), json!(p.audiences));
    }
    // Only the Authorization header: a token in a query string ends up in logs and caches.
    out.insert(
        "from_headers".into(),
        json!([{ "name": "authorization", "value_prefix": "Bearer " }]),
    );
    out.insert("forward".into(), json!(p.forward));
    if let Some(keys) = &p.jwks {
        let text = serde_json::to_string(keys).expect("a key set serialises");
        out.insert("local_jwks".into(), json!({ "inline_string": text }));
    }
    if let Some(uri) = &p.jwks_uri {
        out.insert(
            "remote_jwks".into(),
            json!({
                "http_uri": {
                    "uri": uri,
                    "cluster": names::jwks_cluster_name(entry, names::jwks_origin(uri)),
                    "timeout": JWKS_FETCH_TIMEOUT
                },
                "cache_duration": JWKS_CACHE_DURATION,
                // Fetched when the configuration arrives, not on the first request.
                "async_fetch": {}
            }),
        );
    }
    if !p.claims_to_headers.is_empty() {
        let mut claims: Vec<(&String, &String)> = p.claims_to_headers.iter().collect();
        claims.sort_by(|a, b| a.1.cmp(b.1));
        let claims: Vec<Value> = claims
            .into_iter()
            .map(|(claim, header)| json!({ "header_name": header, "claim_name": claim }))
            .collect();
        out.insert("claim_to_headers".into(), Value::Array(claims));
    }
    Value::Object(out)
}

/// A route's part: the JWT filter enabled with the provider's requirement where the route
/// requires a token; elsewhere on an entry with claim headers, those headers removed from the
/// request, so no client can send what the backend takes for a verified claim.
pub(crate) fn extend_route(entry: &Entry, route: &Route, out: &mut Map<String, Value>) {
    if let Some(auth) = &route.auth {
        let config = json!({
            "@type": FILTER_CONFIG_TYPE_URL,
            "config": {
                "@type": JWT_PER_ROUTE_TYPE_URL,
                "requirement_name": names::jwt_provider_name(entry, &auth.jwt)
            }
        });
        per_filter_config(out).insert(JWT_FILTER.into(), config);
        return;
    }
    let claims = entry.claim_headers();
    if claims.is_empty() {
        return;
    }
    let mut removed: Vec<String> = out
        .get("request_headers_to_remove")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    removed.extend(claims.into_iter().map(str::to_string));
    removed.sort();
    removed.dedup();
    out.insert("request_headers_to_remove".into(), json!(removed));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{check_entry_value, Policy};
    use crate::contract::JWT_FILE;
    use crate::delivery::{check_jwt_config, check_jwt_routes, read_jwt};
    use crate::{render, RenderConfig};
    use std::collections::BTreeSet;

    const EC: (&str, &str) = (
        "axfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpY",
        "T-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU",
    );

    fn entry(team: &str, provider: &str, claim_header: &str) -> Entry {
        let doc = json!({
            "team": team, "service": "api", "host": team, "backend": "https://api.internal.example",
            "jwt": { provider: { "issuer": "https://id.example.com/",
                "jwks": { "keys": [ { "kty": "EC", "crv": "P-256", "x": EC.0, "y": EC.1 } ] },
                "claims_to_headers": { "sub": claim_header } } },
            "routes": [ { "path": "/private", "auth": { "jwt": provider } }, { "path": "/public" },
                        { "path": "/open", "request_headers": { "remove": ["x-debug"] } } ]
        });
        check_entry_value(&doc, &Policy::new("api.example.com", false)).expect("valid")
    }

    fn routes_of(r: &crate::Rendered) -> Vec<Value> {
        r.route_config["virtual_hosts"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|vh| vh["routes"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    #[test]
    fn only_routes_with_auth_enable_the_filter_and_the_rest_of_the_entry_drops_its_claim_headers() {
        let r = render(&[entry("billing", "main", "x-user-id"), entry("catalog", "idp", "x-caller")], &RenderConfig::new("api.example.com"))
            .expect("renders");
        let routes = routes_of(&r);
        let named = |name: &str| routes.iter().find(|r| r["name"] == name).cloned().unwrap_or_else(|| panic!("{name}"));
        let private = named("billing.api:*:/private");
        assert_eq!(
            private["typed_per_filter_config"][JWT_FILTER]["config"]["requirement_name"],
            "billing.api.main"
        );
        assert!(private.get("request_headers_to_remove").is_none());
        let public = named("billing.api:*:/public");
        assert!(public["typed_per_filter_config"].get(JWT_FILTER).is_none());
        assert_eq!(public["request_headers_to_remove"], json!(["x-user-id"]));
        // A team's own removals stay, with the claim header beside them, in name order.
        assert_eq!(named("billing.api:*:/open")["request_headers_to_remove"], json!(["x-debug", "x-user-id"]));
        // One team's claim header is nothing to another team's routes.
        assert_eq!(named("catalog.api:*:/public")["request_headers_to_remove"], json!(["x-caller"]));
        let config = r.jwt.as_ref().expect("jwt.json rendered");
        let providers = config["typed_config"]["providers"].as_object().expect("providers");
        assert_eq!(providers.keys().collect::<Vec<_>>(), ["billing.api.main", "catalog.api.idp"]);
        let clusters = r.clusters.iter().filter_map(|c| c["name"].as_str()).map(str::to_string).collect();
        let requirements = check_jwt_config(config, &clusters).expect("the delivery policy passes it");
        check_jwt_routes(&r.route_config, &requirements).expect("every route's requirement is defined");
        assert!(read_jwt(r.files[JWT_FILE].as_bytes(), &clusters).is_ok());
    }

    #[test]
    fn a_registry_without_jwt_renders_no_jwt_file_and_the_same_hash() {
        let mut e = entry("billing", "main", "x-user-id");
        let with = render(std::slice::from_ref(&e), &RenderConfig::new("api.example.com")).expect("renders");
        e.jwt.clear();
        for r in &mut e.routes {
            r.auth = None;
        }
        let without = render(&[e], &RenderConfig::new("api.example.com")).expect("renders");
        assert!(with.files.contains_key(JWT_FILE));
        assert!(!without.files.contains_key(JWT_FILE) && without.jwt.is_none());
        assert_ne!(with.hash, without.hash);
        assert_eq!(without.files.len(), 3, "clusters, ratelimit and routes, as before the filter");
    }

    #[test]
    fn the_union_keeps_both_sides_and_the_new_definition_wins() {
        let live = json!({ "typed_config": { "providers": { "a": { "issuer": "old" }, "b": { "issuer": "b" } },
                                             "requirement_map": { "a": { "provider_name": "a" }, "b": { "provider_name": "b" } } } });
        let new = json!({ "typed_config": { "providers": { "a": { "issuer": "new" }, "c": { "issuer": "c" } },
                                            "requirement_map": { "a": { "provider_name": "a" }, "c": { "provider_name": "c" } } } });
        let u = jwt_union(&live, &new);
        assert_eq!(u["typed_config"]["providers"]["a"]["issuer"], "new");
        assert_eq!(u["typed_config"]["providers"]["b"]["issuer"], "b");
        assert_eq!(u["typed_config"]["requirement_map"].as_object().map(|m| m.len()), Some(3));
        assert_eq!(jwt_union(&json!({}), &new), new, "nothing live: the new configuration alone");
        let empty = empty_jwt_config();
        assert_eq!(jwt_union(&live, &empty)["typed_config"]["providers"].as_object().map(|m| m.len()), Some(2));
    }

    #[test]
    fn the_delivery_policy_refuses_what_the_renderer_never_writes() {
        let clusters: BTreeSet<String> = ["billing.api".to_string()].into();
        let good = json!({ "@type": TYPED_EXTENSION_CONFIG_TYPE_URL, "name": JWT_FILTER, "typed_config": {
            "@type": JWT_AUTHN_TYPE_URL,
            "providers": { "p": { "issuer": "https://id.example.com/", "local_jwks": { "inline_string": "{}" },
                                   "from_headers": [ { "name": "authorization", "value_prefix": "Bearer " } ] } },
            "requirement_map": { "p": { "provider_name": "p" } } } });
        assert_eq!(check_jwt_config(&good, &clusters).expect("passes"), BTreeSet::from(["p".to_string()]));
        let mut cases: Vec<(Value, &str)> = Vec::new();
        let mut v = good.clone();
        v["typed_config"]["providers"]["p"]["remote_jwks"] = json!({ "http_uri": { "uri": "http://169.254.169.254/", "cluster": "admin", "timeout": "1s" } });
        cases.push((v, "which this bundle does not define"));
        let mut v = good.clone();
        v["typed_config"]["providers"]["p"]["from_params"] = json!(["access_token"]);
        cases.push((v, "from_params: not a setting the renderer writes"));
        let mut v = good.clone();
        v["typed_config"]["providers"]["p"]["from_headers"] = json!([{ "name": "x-token" }]);
        cases.push((v, "Authorization header only"));
        let mut v = good.clone();
        v["typed_config"]["providers"]["p"]["local_jwks"] = json!({ "filename": "/etc/shadow" });
        cases.push((v, "only an inline key set"));
        let mut v = good.clone();
        v["typed_config"]["rules"] = json!([{ "match": { "prefix": "/" } }]);
        cases.push((v, "rules: not a setting the renderer writes"));
        let mut v = good.clone();
        v["typed_config"]["requirement_map"]["any"] = json!({ "allow_missing_or_failed": {} });
        cases.push((v, "must be one provider of this file"));
        let mut v = good.clone();
        v["name"] = json!("gateway.kill_switch");
        cases.push((v, "the bootstrap's filter"));
        for (config, want) in cases {
            let err = check_jwt_config(&config, &clusters).expect_err(want).to_string();
            assert!(err.contains(want), "{want}: {err}");
        }
        let route = json!({ "virtual_hosts": [ { "name": "v", "routes": [ { "name": "r",
            "typed_per_filter_config": { JWT_FILTER: { "@type": crate::contract::FILTER_CONFIG_TYPE_URL,
                "config": { "@type": crate::contract::JWT_PER_ROUTE_TYPE_URL, "requirement_name": "other" } } } } ] } ] });
        let err = check_jwt_routes(&route, &BTreeSet::from(["p".to_string()])).expect_err("undefined").to_string();
        assert!(err.contains("\"other\", which the bundle's jwt.json does not define"), "{err}");
    }
}
