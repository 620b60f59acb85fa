//! A route's traffic policy in Envoy's terms (docs/design.md#route-policy): retries, the prefix
//! rewrite, header changes and the websocket upgrade on the route action or the route, the CORS
//! policy as the CORS filter's per-route config, and for a CORS route whose methods leave out
//! `OPTIONS` a preflight route, so the browser's `OPTIONS` reaches the policy at all.

use crate::check::{envoy_duration, parse_duration};
use crate::contract::{CLIENT_ACCESS_FILTER, CORS_FILTER};
use crate::entry::{Cors, HeaderChanges, Replace, Route};
use crate::config::RenderConfig;
use crate::value::regex_escape;
use serde_json::{json, Map, Value};

const CORS_POLICY_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy";

/// Adds the route action's part of the policy: `retry_policy`, `prefix_rewrite`, `upgrade_configs`.
pub(crate) fn extend_action(route: &Route, action: &mut Map<String, Value>, cfg: &RenderConfig) {
    if let Some(r) = &route.retries {
        let mut policy = Map::new();
        policy.insert("retry_on".into(), json!(r.on.join(",")));
        policy.insert("num_retries".into(), json!(r.attempts));
        if let Some(ms) = r
            .per_try_timeout
            .as_deref()
            .and_then(|t| parse_duration(t).ok())
        {
            policy.insert("per_try_timeout".into(), json!(envoy_duration(ms)));
        }
        if !r.status_codes.is_empty() {
            policy.insert("retriable_status_codes".into(), json!(r.status_codes));
        }
        action.insert("retry_policy".into(), Value::Object(policy));
    }
    if let Some(rewrite) = &route.rewrite {
        let (key, value) = path_rewrite(&route.path, rewrite.replace());
        action.insert(key.into(), value);
    }
    if route.websocket {
        // The listener enables no upgrade: only routes that ask for websockets get them.
        action.insert(
            "upgrade_configs".into(),
            json!([{ "upgrade_type": "websocket", "enabled": true }]),
        );
        // An upgraded stream never ends as a request does, so the route timeout never applies
        // to it; this bounds how long one connection holds a task every team shares.
        action.insert(
            "max_stream_duration".into(),
            json!({ "max_stream_duration": format!("{}s", cfg.max_websocket_seconds) }),
        );
    }
}

/// The route action's (or redirect's) key and value that replace `replace` on a request matched
/// by the prefix `path`. The match is segment-aware (`path_separated_prefix`, or a prefix ending
/// in `/`), and the checks keep a replacement's trailing `/` in step with the path's, so
/// `prefix_rewrite` never joins two segments or doubles a slash. Two cases need a regex (RE2,
/// the whole path without its query): `/` in place of a prefix other than `/` strips it with
/// the slashes after it (`/strip/three` → `/three`, `/strip` → `/`), and a whole-path
/// replacement.
pub(crate) fn path_rewrite(path: &str, replace: Replace<'_>) -> (&'static str, Value) {
    match replace {
        Replace::Prefix("/") if path != "/" => {
            let regex = format!("^{}/*", regex_escape(path.trim_end_matches('/')));
            ("regex_rewrite", json!({ "pattern": { "regex": regex }, "substitution": "/" }))
        }
        Replace::Prefix(prefix) => ("prefix_rewrite", json!(prefix)),
        Replace::Path(whole) => (
            "regex_rewrite",
            json!({ "pattern": { "regex": "^/.*$" }, "substitution": whole }),
        ),
    }
}

/// Adds the route's part of the policy: header changes and the CORS filter's config.
pub(crate) fn extend_route(route: &Route, out: &mut Map<String, Value>) {
    if let Some(h) = &route.request_headers {
        header_changes(h, "request", out);
    }
    if let Some(h) = &route.response_headers {
        header_changes(h, "response", out);
    }
    if let Some(c) = &route.cors {
        per_filter_config(out).insert(CORS_FILTER.into(), cors_policy(c));
    }
    client_access(route, out);
}

const RBAC_PER_ROUTE_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute";

/// `clients` as the client-access RBAC filter's per-route config. `remote_ip` is the address
/// past the trusted hops (the listener's `xff_num_trusted_hops`), never a header the client
/// wrote. One ALLOW policy: inside an allowed block (any address without `allow`) and in no
/// denied one; everything else gets Envoy's 403.
pub(crate) fn client_access(route: &Route, out: &mut Map<String, Value>) {
    let Some(c) = &route.clients else { return };
    let blocks = |list: &[String]| -> Value {
        let ids: Vec<Value> = list
            .iter()
            .map(|cidr| {
                let (address, prefix) = cidr.split_once('/').unwrap_or((cidr, "0"));
                let prefix: u32 = prefix.parse().unwrap_or(0);
                json!({ "remote_ip": { "address_prefix": address, "prefix_len": prefix } })
            })
            .collect();
        json!({ "or_ids": { "ids": ids } })
    };
    let mut principal = Vec::new();
    if !c.allow.is_empty() {
        principal.push(blocks(&c.allow));
    }
    if !c.deny.is_empty() {
        principal.push(json!({ "not_id": blocks(&c.deny) }));
    }
    let principal = match principal.len() {
        1 => principal.remove(0),
        _ => json!({ "and_ids": { "ids": principal } }),
    };
    let config = json!({
        "@type": RBAC_PER_ROUTE_TYPE_URL,
        "rbac": { "rules": {
            "action": "ALLOW",
            "policies": { "clients": { "permissions": [{ "any": true }], "principals": [principal] } }
        } }
    });
    per_filter_config(out).insert(CLIENT_ACCESS_FILTER.into(), config);
}

/// The route's `typed_per_filter_config`, created when absent.
pub(crate) fn per_filter_config(out: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let slot = out
        .entry("typed_per_filter_config")
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut().expect("made an object above")
}

fn header_changes(h: &HeaderChanges, direction: &str, out: &mut Map<String, Value>) {
    // `add` and `set` overwrite, `append` adds a value; one list in header-name order (a name
    // is in one of them only, the checks see to it).
    let mut changes: Vec<(&String, &String, &str)> = h
        .add
        .iter()
        .chain(&h.set)
        .map(|(k, v)| (k, v, "OVERWRITE_IF_EXISTS_OR_ADD"))
        .chain(h.append.iter().map(|(k, v)| (k, v, "APPEND_IF_EXISTS_OR_ADD")))
        .collect();
    changes.sort_by(|a, b| a.0.cmp(b.0));
    if !changes.is_empty() {
        let add: Vec<Value> = changes
            .into_iter()
            .map(|(key, value, action)| {
                json!({
                    // Envoy reads `%…%` in a value as a formatter command (a client address, an
                    // upstream host); `%%` is a literal percent, so the value arrives as written.
                    "header": { "key": key, "value": value.replace('%', "%%") },
                    "append_action": action
                })
            })
            .collect();
        out.insert(format!("{direction}_headers_to_add"), Value::Array(add));
    }
    if !h.remove.is_empty() {
        out.insert(format!("{direction}_headers_to_remove"), json!(h.remove));
    }
}

/// The CORS filter's per-route policy.
pub fn cors_policy(c: &Cors) -> Value {
    let origins: Vec<Value> = c.origins.iter().map(|o| origin_matcher(o)).collect();
    let mut policy = Map::new();
    policy.insert("@type".into(), json!(CORS_POLICY_TYPE_URL));
    policy.insert("allow_origin_string_match".into(), Value::Array(origins));
    if !c.methods.is_empty() {
        policy.insert("allow_methods".into(), json!(c.methods.join(",")));
    }
    if !c.headers.is_empty() {
        policy.insert("allow_headers".into(), json!(c.headers.join(",")));
    }
    if !c.expose_headers.is_empty() {
        policy.insert("expose_headers".into(), json!(c.expose_headers.join(",")));
    }
    if let Some(ms) = c.max_age.as_deref().and_then(|a| parse_duration(a).ok()) {
        policy.insert("max_age".into(), json!((ms / 1_000).to_string()));
    }
    policy.insert("allow_credentials".into(), json!(c.credentials));
    // A preflight from an origin the policy does not allow is answered here too (without
    // `access-control-allow-origin`, a refusal to the browser), never forwarded to the backend.
    policy.insert("forward_not_matching_preflights".into(), json!(false));
    Value::Object(policy)
}

/// `*` → any origin; `https://*.example.com[:port]` → one or more labels in front of
/// `example.com`; anything else exactly. The check bounds a pattern's domain and port
/// (`MAX_CORS_PATTERN_DOMAIN_LEN`) so this regex stays within Envoy's RE2 program size.
fn origin_matcher(origin: &str) -> Value {
    if origin == "*" {
        return json!({ "safe_regex": { "regex": ".+" } });
    }
    match origin.split_once("://*.") {
        Some((scheme, rest)) => {
            let regex = format!(
                "^{}://[a-z0-9-]+(\\.[a-z0-9-]+)*\\.{}$",
                scheme,
                rest.replace('.', "\\.")
            );
            json!({ "safe_regex": { "regex": regex } })
        }
        None => json!({ "exact": origin }),
    }
}

/// Whether a route's `OPTIONS` requests reach it (no methods, or methods listing OPTIONS).
pub(crate) fn answers_options(route: &Route) -> bool {
    route
        .methods
        .as_ref()
        .is_none_or(|m| m.iter().any(|x| x == "OPTIONS"))
}
