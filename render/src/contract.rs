//! Names shared by the renderer, the bootstrap, the validator and the sidecar. Changing one
//! changes a contract with a running Envoy or rate-limit service.

/// The RouteConfiguration name in `routes.json`; the bootstrap's `rds.route_config_name`.
pub const ROUTE_CONFIG_NAME: &str = "gateway";
/// The envoyproxy/ratelimit domain the proxy asks for and `ratelimit.yaml` declares.
pub const RATE_LIMIT_DOMAIN: &str = "gateway";
/// The static cluster in the bootstrap that points at the rate-limit service.
pub const RATE_LIMIT_CLUSTER: &str = "ratelimit";
/// Runtime key of the level-1 kill switch (abort percentage of the kill-switch fault filter).
pub const KILL_SWITCH_RUNTIME_KEY: &str = "gateway.kill_switch.abort_percent";
/// Name of the catch-all virtual host that answers a JSON 404 for unknown hosts.
pub const CATCH_ALL_VHOST: &str = "gateway-catch-all";
/// The load balancer's health check: `GET /healthz` on a host no team holds (the catch-all)
/// answers 200 under both kill-switch levels, so a kill switch never makes tasks "unhealthy"
/// (ECS would replace them and forget a level-1 switch). It tells nothing about teams' routes.
pub const HEALTH_CHECK_PATH: &str = "/healthz";
/// Name of the catch-all's health-check route: the only route allowed to switch the kill-switch
/// filter off, and only for its own fixed 200.
pub const HEALTH_CHECK_ROUTE: &str = "gateway-health-check";

/// Route metadata namespace (`metadata.filter_metadata`) holding a team route's `team` and
/// `service`; the bootstrap's access log reads them with `%METADATA(ROUTE:gateway:team)%`
/// (docs/design.md#access-log).
pub const ROUTE_METADATA_NAMESPACE: &str = "gateway";

/// File names inside a bundle and in the watched directories.
pub const CLUSTERS_FILE: &str = "clusters.json";
pub const ROUTES_FILE: &str = "routes.json";
pub const RATE_LIMIT_FILE: &str = "ratelimit.yaml";
/// The one S3 object that carries a published config.
pub const BUNDLE_OBJECT: &str = "bundle.json";
/// Object metadata on every version of [`BUNDLE_OBJECT`] (docs/design.md#bucket-layout-and-metadata):
/// the bundle's hash, which a reader checks against the hash the bundle states.
pub const BUNDLE_META_HASH: &str = "hash";
/// Which tool wrote the version (`reconciler`, `seed`, `kill-switch`, `restore`).
pub const BUNDLE_META_WRITER: &str = "writer";
/// The principal that wrote it, when the writer recorded one.
pub const BUNDLE_META_WRITTEN_BY: &str = "written-by";
/// The bundle format this build writes and delivers (docs/design.md#bundle-format-and-hash).
pub const BUNDLE_FORMAT: u32 = 2;
/// Members of a format-2 bundle besides the three files: the manifest (first), the signature
/// (second, when signed) and the exact entries.
pub const MANIFEST_FILE: &str = "manifest.json";
pub const SIGNATURE_FILE: &str = "signature.json";
pub const ENTRIES_FILE: &str = "entries.json";

pub const CLUSTER_TYPE_URL: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
pub const ROUTE_CONFIG_TYPE_URL: &str =
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

/// HTTP filter names in the gateway's listener. Per-route config (`typed_per_filter_config`) is
/// keyed by these names, so the renderer and the bootstrap must agree on them.
pub const LOCAL_RATE_LIMIT_FILTER: &str = "envoy.filters.http.local_ratelimit";
pub const GLOBAL_RATE_LIMIT_FILTER: &str = "envoy.filters.http.ratelimit";
/// The client-access RBAC filter: pass-through unless a route carries its per-route rules (a
/// route's `clients`). Routes may configure it, so it is not one of the gateway's own filters
/// (the path guard is an RBAC filter of another name).
pub const CLIENT_ACCESS_FILTER: &str = "envoy.filters.http.rbac";
/// Envoy's CORS filter: pass-through unless a route carries a policy (an entry's `cors`).
pub const CORS_FILTER: &str = "envoy.filters.http.cors";
/// The kill switch's fault filter has a name of its own so no route config can override it.
pub const KILL_SWITCH_FILTER: &str = "gateway.kill_switch";
/// The RBAC filter refusing dot-segment path parameters (`..;`); a name of its own, so no
/// route's per-filter config can switch it off.
pub const PATH_GUARD_FILTER: &str = "gateway.path_guard";
/// The Lua filter that keeps a backend's cookies to the host that answered (a `Domain` above it
/// is dropped); a name of its own, so no route's per-filter config can switch it off.
pub const COOKIE_SCOPE_FILTER: &str = "gateway.cookie_scope";
/// Envoy's JWT filter: its providers arrive by extension config discovery from [`JWT_FILE`] in a
/// watched directory (the bootstrap's `config_discovery`), and it is off on every route but those
/// that require a token (`disabled` in the bootstrap, enabled per route by their `FilterConfig`).
pub const JWT_FILTER: &str = "envoy.filters.http.jwt_authn";
/// The bundle member and watched file carrying the JWT filter's configuration; a bundle carries
/// it only when an entry declares `jwt`.
pub const JWT_FILE: &str = "jwt.json";
/// The JWT filter's watched directory: this subdirectory of the routes' watched directory. A
/// directory of its own, since a move into a watched directory makes Envoy re-read every file
/// watched there (a new `jwt.json` must not cost every proxy a re-parse of 10k routes), and
/// inside the routes' one, so the proxies need no directory, volume or flag more.
pub const JWT_SUBDIR: &str = "jwt";
pub const TYPED_EXTENSION_CONFIG_TYPE_URL: &str =
    "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig";
pub const JWT_AUTHN_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication";
pub const JWT_PER_ROUTE_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.PerRouteConfig";
/// A per-route `FilterConfig` wrapper: enables a filter the listener disables by default.
pub const FILTER_CONFIG_TYPE_URL: &str = "type.googleapis.com/envoy.config.route.v3.FilterConfig";
