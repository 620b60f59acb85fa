//! The pieces the gateway bootstrap and the validation bootstrap share: node, admin, runtime,
//! the listener with its filter chain, and the rate-limit service's cluster. Both bootstraps are
//! built from these functions so that validation judges the listener the proxy really runs.

use crate::json::ROUTE_CONFIG_PLACEHOLDER;
use crate::{AdminAddress, BootstrapError, BootstrapParams};
use gateway_render::contract::{
    CLIENT_ACCESS_FILTER, COOKIE_SCOPE_FILTER, JWT_FILE, JWT_FILTER, JWT_AUTHN_TYPE_URL, JWT_SUBDIR, CORS_FILTER, GLOBAL_RATE_LIMIT_FILTER, PATH_GUARD_FILTER, KILL_SWITCH_FILTER, KILL_SWITCH_RUNTIME_KEY, LOCAL_RATE_LIMIT_FILTER,
    RATE_LIMIT_CLUSTER, RATE_LIMIT_DOMAIN, ROUTES_FILE, ROUTE_CONFIG_NAME,
    ROUTE_METADATA_NAMESPACE,
};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;

/// Read/write for every user that can reach the file: who can reach it is decided by its
/// directory, a task volume mounted only into the Envoy and sidecar containers (which run as
/// different users).
const ADMIN_SOCKET_MODE: u32 = 0o666;
/// Name of the gateway's listener and of the node.
pub(crate) const GATEWAY_NAME: &str = "gateway";
/// The global limiter's budget per request: beyond it the request passes (failure_mode_deny
/// is false), so a slow limiter costs at most this much latency.
const RATE_LIMIT_TIMEOUT: &str = "0.025s";
/// Upper bound on open downstream connections per task; Envoy warns at start without one.
const MAX_DOWNSTREAM_CONNECTIONS: u64 = 50_000;

/// Where the HCM gets its routes.
pub(crate) enum RouteSource<'a> {
    /// RDS from `routes.json` in a watched directory (the running gateway).
    Rds { routes_dir: &'a Path },
    /// The rendered route configuration inlined (the validation bootstrap).
    Inline,
}

pub(crate) fn socket_address(addr: SocketAddr) -> Value {
    json!({ "socket_address": { "address": addr.ip().to_string(), "port_value": addr.port() } })
}

/// Envoy's admin address: a pipe or a loopback socket address.
fn admin_address(admin: &AdminAddress) -> Result<Value, BootstrapError> {
    Ok(match admin {
        AdminAddress::Unix(path) => {
            json!({ "pipe": { "path": path_str("admin", path)?, "mode": ADMIN_SOCKET_MODE } })
        }
        AdminAddress::Tcp(addr) => socket_address(*addr),
    })
}

pub(crate) fn path_str<'p>(field: &'static str, path: &'p Path) -> Result<&'p str, BootstrapError> {
    path.to_str().ok_or_else(|| BootstrapError::NonUtf8Path {
        field,
        path: path.to_path_buf(),
    })
}

/// Envoy reloads a path-config file only when it is moved into the watched directory.
pub(crate) fn path_config_source(
    field: &'static str,
    dir: &Path,
    file: &str,
) -> Result<Value, BootstrapError> {
    let dir_str = path_str(field, dir)?;
    let file_path = dir.join(file);
    let file_str = path_str(field, &file_path)?;
    Ok(json!({
        "path_config_source": { "path": file_str, "watched_directory": { "path": dir_str } },
        "resource_api_version": "V3"
    }))
}

/// Node, admin, runtime and overload manager: the top of both bootstraps.
pub(crate) fn common_top(
    params: &BootstrapParams,
) -> Result<serde_json::Map<String, Value>, BootstrapError> {
    params.check()?;
    let top = json!({
        "node": { "id": GATEWAY_NAME, "cluster": GATEWAY_NAME },
        "admin": { "address": admin_address(&params.admin)? },
        // The admin layer is what `POST /runtime_modify` writes to; without it the level-1
        // kill switch cannot be thrown.
        "layered_runtime": { "layers": [
            { "name": "static", "static_layer": { KILL_SWITCH_RUNTIME_KEY: 0 } },
            { "name": "admin", "admin_layer": {} }
        ] },
        "overload_manager": { "resource_monitors": [ {
            "name": "envoy.resource_monitors.global_downstream_max_connections",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
                "max_active_downstream_connections": MAX_DOWNSTREAM_CONNECTIONS
            }
        } ] }
    });
    match top {
        Value::Object(map) => Ok(map),
        _ => unreachable!("json! object literal"),
    }
}

/// The gateway listener: one filter chain, one HCM.
pub(crate) fn gateway_listener(
    params: &BootstrapParams,
    routes: RouteSource<'_>,
) -> Result<Value, BootstrapError> {
    let mut hcm = json!({
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": GATEWAY_NAME,
        "codec_type": "AUTO",
        // The client address for `remote_address` rate-limit actions comes from
        // X-Forwarded-For, trusting exactly the CDN and the load balancer in front.
        "use_remote_address": true,
        "xff_num_trusted_hops": params.xff_num_trusted_hops,
        // Routes are prefix matches on normalised paths: `/a/../b` and `//b` must not slip past
        // a team's prefix.
        "normalize_path": true,
        "merge_slashes": true,
        "path_with_escaped_slashes_action": "UNESCAPE_AND_REDIRECT",
        // The backend's `server` header passes through unless its route removes it (an entry's
        // `response_headers`); Envoy's default would overwrite it with `server: envoy` on every
        // answer, so a removal could never take effect. The gateway's own answers carry none.
        "server_header_transformation": "PASS_THROUGH",
        "request_headers_timeout": "10s",
        "stream_idle_timeout": "300s",
        "common_http_protocol_options": {
            "idle_timeout": "900s",
            "headers_with_underscores_action": "REJECT_REQUEST"
        },
        "http2_protocol_options": {
            "max_concurrent_streams": 100,
            "initial_stream_window_size": 65536,
            "initial_connection_window_size": 1048576
        },
        // Request ids: Envoy makes one when the request has none, keeps the client's (a team
        // traces a call through its own systems), sends it to the backend and returns it.
        // `pack_trace_reason: false`: an incoming id reaches the backend byte for byte.
        "generate_request_id": true,
        "preserve_external_request_id": true,
        "always_set_request_id_in_response": true,
        "request_id_extension": { "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig",
            "pack_trace_reason": false
        } },
        // Before anything routes on or forwards them: the forwarding headers a client wrote
        // are removed, so a backend sees only what the gateway itself sets (`x-forwarded-for`
        // past the trusted hops, `x-forwarded-proto`, and `x-forwarded-host` appended by every
        // team route from the host the client asked for).
        "early_header_mutation_extensions": [client_forwarding_headers_removed()],
        "access_log": [access_log()],
        "local_reply_config": local_replies(),
        "http_filters": http_filters(jwt_filter(&routes)?)
    });
    let route_field = match routes {
        RouteSource::Rds { routes_dir } => (
            "rds",
            json!({
                "route_config_name": ROUTE_CONFIG_NAME,
                "config_source": path_config_source("routes_dir", routes_dir, ROUTES_FILE)?
            }),
        ),
        RouteSource::Inline => (
            "route_config",
            Value::String(ROUTE_CONFIG_PLACEHOLDER.to_string()),
        ),
    };
    if let Some(map) = hcm.as_object_mut() {
        map.insert(route_field.0.to_string(), route_field.1);
    }
    Ok(json!({
        "name": GATEWAY_NAME,
        "address": socket_address(params.listen),
        "per_connection_buffer_limit_bytes": 32768,
        "filter_chains": [ { "filters": [ {
            "name": "envoy.filters.network.http_connection_manager",
            "typed_config": hcm
        } ] } ]
    }))
}

/// Envoy's JWT filter, off on every route but those whose `FilterConfig` enables it (a route
/// that requires a token). Running, its providers come by extension config discovery from
/// `jwt.json` in the `jwt` subdirectory of the routes' watched directory (a directory of its own:
/// a move into a watched directory makes Envoy re-read every file watched there), starting from
/// no provider until the file is read, so the listener never waits on it; validating, the
/// rendered providers are inlined.
fn jwt_filter(routes: &RouteSource<'_>) -> Result<Value, BootstrapError> {
    Ok(match routes {
        RouteSource::Rds { routes_dir } => json!({
            "name": JWT_FILTER,
            "disabled": true,
            "config_discovery": {
                "config_source": path_config_source("routes_dir", &routes_dir.join(JWT_SUBDIR), JWT_FILE)?,
                "default_config": { "@type": JWT_AUTHN_TYPE_URL },
                "apply_default_config_without_warming": true,
                "type_urls": [JWT_AUTHN_TYPE_URL]
            }
        }),
        RouteSource::Inline => json!({
            "name": JWT_FILTER,
            "disabled": true,
            "typed_config": { "@type": JWT_AUTHN_TYPE_URL }
        }),
    })
}

/// Headers a client may write that backends (and the frameworks they run) read as facts about
/// the request's origin, its original host, URL or method. Envoy manages `x-forwarded-for` (past
/// `xff_num_trusted_hops`) and `x-forwarded-proto` itself; every other forwarding header is the
/// client's word and is removed before routing. docs/design.md#envoy-bootstrap lists them.
pub const CLIENT_FORWARDING_HEADERS: [&str; 26] = [
    "forwarded",
    "x-forwarded-host",
    "x-forwarded-server",
    "x-forwarded-port",
    "x-forwarded-prefix",
    "x-forwarded-path",
    "x-forwarded-uri",
    "x-forwarded-scheme",
    "x-forwarded-ssl",
    "x-forwarded-by",
    "x-forwarded-client-cert",
    "x-original-forwarded-for",
    "x-original-host",
    "x-original-url",
    "x-original-uri",
    "x-rewrite-url",
    "x-real-ip",
    "x-client-ip",
    "client-ip",
    "true-client-ip",
    "x-cluster-client-ip",
    "cf-connecting-ip",
    "fastly-client-ip",
    "x-host",
    "x-http-method-override",
    // Envoy writes it when a route rewrites the path; the access log's `path` reads it, so a
    // client's own must never arrive.
    "x-envoy-original-path",
];

/// Removes [`CLIENT_FORWARDING_HEADERS`] from every request as it arrives, before the route is
/// chosen or any filter reads it.
fn client_forwarding_headers_removed() -> Value {
    let mutations: Vec<Value> = CLIENT_FORWARDING_HEADERS
        .iter()
        .map(|h| json!({ "remove": h }))
        .collect();
    json!({
        "name": "envoy.http.early_header_mutation.header_mutation",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation",
            "mutations": mutations
        }
    })
}

/// A path segment made of one or two dots followed by a `;` path parameter, in any spelling
/// (`..;`, `.;`, `%2e%2e;`, `.%2E%3b`, double-encoded `%252e`, overlong UTF-8 `%c0%ae`): Envoy's
/// normalisation does not treat it as a dot segment, but servlet containers resolve `..;` as
/// `..`, so `/pub/%2e%2e;/admin` would leave a team's prefix at the backend. Matched on the
/// normalised path without its query, case-insensitively; a safe_regex must match the whole
/// path, hence `.*` at both ends. (Envoy's own normalisation already resolves a literal `..;`
/// as `..`, before any filter: `/pub/..;/admin` routes as `/admin`.)
pub const DOT_SEGMENT_PARAMETER_REGEX: &str =
    "(?i).*/(\\.|%2e|%252e|%c0%ae){1,2}(;|%3b|%253b).*";

/// Every tenant's host is under the base domain, so a cookie a backend scopes to the base domain
/// (or its parent) would reach every other tenant's host and shadow their cookies. On every
/// answer, a `Set-Cookie` `Domain` attribute that is neither the host the client asked for nor a
/// name below it (names below a team's host are only ever that team's) is dropped, which makes
/// the cookie host-only: it still works for the host that set it. Everything else in the header
/// is kept as written.
pub const COOKIE_SCOPE_LUA: &str = r#"
local function within(domain, host)
  local d = string.lower((string.gsub(domain, "^%.", "")))
  return d == host or (#d > #host and string.sub(d, -(#host + 1)) == "." .. host)
end

function envoy_on_request(request_handle)
  local host = request_handle:headers():get(":authority") or ""
  request_handle:streamInfo():dynamicMetadata():set("gateway.cookie_scope", "host", host)
end

function envoy_on_response(response_handle)
  local headers = response_handle:headers()
  local n = headers:getNumValues("set-cookie")
  if n == 0 then return end
  local meta = response_handle:streamInfo():dynamicMetadata():get("gateway.cookie_scope")
  local host = string.lower((meta and meta["host"]) or "")
  host = (string.gsub(host, ":%d+$", ""))
  local cookies, changed = {}, false
  for i = 0, n - 1 do
    local kept = {}
    for part in string.gmatch(headers:getAtIndex("set-cookie", i), "[^;]+") do
      local name, value = string.match(part, "^%s*([^=]-)%s*=%s*(.-)%s*$")
      if #kept > 0 and name and string.lower(name) == "domain" and not within(value, host) then
        changed = true
      else
        table.insert(kept, part)
      end
    end
    cookies[#cookies + 1] = table.concat(kept, ";")
  end
  if not changed then return end
  headers:remove("set-cookie")
  for _, cookie in ipairs(cookies) do headers:add("set-cookie", cookie) end
end
"#;

/// What the gateway's limits answer (local replies only: a backend's own 429 passes as it is):
/// the same JSON shape as its 404s and 503s, for the burst bucket and the global limiter alike.
pub const RATE_LIMITED_MESSAGE: &str = "rate limit exceeded";
/// What the gateway's own 403s say (a route's `clients`, the path guard).
pub const FORBIDDEN_MESSAGE: &str = "forbidden";
/// What the gateway's own 401s say (a route that requires a token, without a valid one; Envoy's
/// `www-authenticate` header says why).
pub const UNAUTHORIZED_MESSAGE: &str = "unauthorized";

/// The gateway's own answers as JSON: its refusals (403: a route's `clients`, the path guard, a
/// refused upgrade) and its limits' 429s. Only local replies are mapped, so a backend's own 403
/// or 429 passes unchanged.
fn local_replies() -> Value {
    let json_reply = |status: u16, runtime_key: &str, message: &str| {
        json!({
            "filter": { "status_code_filter": { "comparison": {
                "op": "EQ",
                "value": { "default_value": status, "runtime_key": runtime_key }
            } } },
            "body_format_override": {
                "text_format_source": {
                    "inline_string": gateway_render::routes::json_error_body(message)
                },
                "content_type": "application/json"
            }
        })
    };
    json!({
        "mappers": [
            json_reply(401, "gateway.local_reply.unauthorized", UNAUTHORIZED_MESSAGE),
            json_reply(403, "gateway.local_reply.forbidden", FORBIDDEN_MESSAGE),
            json_reply(429, "gateway.local_reply.rate_limited", RATE_LIMITED_MESSAGE),
        ]
    })
}

/// One JSON line per request on stdout (the ECS log driver ships it to CloudWatch Logs); keys
/// in docs/design.md#access-log. The path is logged without its query string, and no cookie,
/// authorization or other client-chosen header but the user agent and request id is logged:
/// query strings and those headers carry credentials. Team and service come from the route's
/// metadata, which only team routes carry (and the level-2 kill switch keeps), so the catch-all
/// logs them empty.
fn access_log() -> Value {
    let meta = |key: &str| format!("%METADATA(ROUTE:{ROUTE_METADATA_NAMESPACE}:{key})%");
    json!({
        "name": "envoy.access_loggers.stdout",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
            "log_format": {
                // REQ_WITHOUT_QUERY is an extension: declared here or Envoy refuses the format.
                "formatters": [ {
                    "name": "envoy.formatter.req_without_query",
                    "typed_config": { "@type": "type.googleapis.com/envoy.extensions.formatter.req_without_query.v3.ReqWithoutQuery" }
                } ],
                "json_format": {
                    "time": "%START_TIME(%Y-%m-%dT%H:%M:%E3SZ)%",
                    "team": meta("team"),
                    "service": meta("service"),
                    // `stable` or `candidate` on a rolled-out entry's routes, else null.
                    "revision": meta("revision"),
                    "route": "%ROUTE_NAME%",
                    "method": "%REQ(:METHOD)%",
                    // The path the client asked for (Envoy keeps it in x-envoy-original-path
                    // when the route rewrote it); the one the backend got beside it.
                    "path": "%REQ_WITHOUT_QUERY(X-ENVOY-ORIGINAL-PATH?:PATH)%",
                    "upstream_path": "%REQ_WITHOUT_QUERY(:PATH)%",
                    "status": "%RESPONSE_CODE%",
                    "response_flags": "%RESPONSE_FLAGS%",
                    "duration_ms": "%DURATION%",
                    "upstream_host": "%UPSTREAM_HOST%",
                    "client_ip": "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
                    "request_id": "%REQ(X-REQUEST-ID)%",
                    "bytes_in": "%BYTES_RECEIVED%",
                    "bytes_out": "%BYTES_SENT%",
                    "user_agent": "%REQ(USER-AGENT)%"
                }
            }
        }
    })
}

/// The cookie scope first (a response passes the filters in reverse, so it sees every answer
/// last), then the kill switch (it must stop traffic before anything else spends effort on it), then the
/// path guard (a traversal is refused before any route's policy applies), then CORS
/// (a browser's preflight is answered locally, before it costs a token or a limiter call; on
/// other requests it only adds headers, and only on routes with a `cors` policy), then the JWT
/// filter (on routes that require a token: a request without a valid one is refused before it
/// costs a token of the limits, and the limits count what the token says), then the local
/// bucket (cheap, per task) before the global limiter (a network call), then the router.
fn http_filters(jwt: Value) -> Value {
    json!([
        {
            // First, so it sees every answer last, whoever wrote it (the backend, a route's
            // response headers, the gateway itself).
            "name": COOKIE_SCOPE_FILTER,
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua",
                "default_source_code": { "inline_string": COOKIE_SCOPE_LUA }
            }
        },
        {
            "name": KILL_SWITCH_FILTER,
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
                "abort": { "http_status": 503, "percentage": { "numerator": 0, "denominator": "HUNDRED" } },
                "abort_percent_runtime": KILL_SWITCH_RUNTIME_KEY
            }
        },
        {
            // Before any route's filter sees it: a path that would step out of a prefix at the
            // backend is refused (403) here, whatever the route.
            "name": PATH_GUARD_FILTER,
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC",
                "rules": {
                    "action": "DENY",
                    "policies": { "dot-segment-parameter": {
                        "permissions": [ { "url_path": { "path": { "safe_regex": { "regex": DOT_SEGMENT_PARAMETER_REGEX } } } } ],
                        "principals": [ { "any": true } ]
                    } }
                }
            }
        },
        {
            // No rules here: pass-through unless a route carries RBACPerRoute (a route's
            // `clients`), judged on the address past the trusted hops.
            "name": CLIENT_ACCESS_FILTER,
            "typed_config": { "@type": "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC" }
        },
        {
            // Pass-through unless the route carries a CorsPolicy (an entry's `cors`).
            "name": CORS_FILTER,
            "typed_config": { "@type": "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors" }
        },
        jwt,
        {
            // No token bucket here: pass-through unless a route sets one in
            // typed_per_filter_config (an entry's `burst`).
            "name": LOCAL_RATE_LIMIT_FILTER,
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
                "stat_prefix": "local_rate_limit"
            }
        },
        {
            "name": GLOBAL_RATE_LIMIT_FILTER,
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit",
                "domain": RATE_LIMIT_DOMAIN,
                // A down limiter must not take the gateway down with it.
                "failure_mode_deny": false,
                // The one source of the x-ratelimit-limit, -remaining and -reset headers, on
                // every answer a global limit counted (429 or not): Envoy computes them from
                // the service's descriptor statuses, so production (envoyproxy/ratelimit,
                // whose own response headers stay off) and the local service send the same.
                "enable_x_ratelimit_headers": "DRAFT_VERSION_03",
                "timeout": RATE_LIMIT_TIMEOUT,
                "rate_limit_service": {
                    "grpc_service": { "envoy_grpc": { "cluster_name": RATE_LIMIT_CLUSTER } },
                    "transport_api_version": "V3"
                }
            }
        },
        {
            "name": "envoy.filters.http.router",
            "typed_config": { "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router" }
        }
    ])
}

/// The rate-limit service next to Envoy: gRPC, so HTTP/2.
pub(crate) fn ratelimit_cluster(params: &BootstrapParams) -> Value {
    json!({
        "name": RATE_LIMIT_CLUSTER,
        "type": "STATIC",
        "connect_timeout": "0.25s",
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": { "http2_protocol_options": {} }
            }
        },
        "load_assignment": {
            "cluster_name": RATE_LIMIT_CLUSTER,
            "endpoints": [ { "lb_endpoints": [ { "endpoint": { "address": socket_address(params.ratelimit) } } ] } ]
        }
    })
}
