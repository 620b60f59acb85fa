//! The registration entry: a team's declaration of its host, backend, routes and limits.
//!
//! These types are what a *checked* entry looks like. Raw input is never deserialised into
//! them directly: `check` walks the JSON, reports every problem with its field path, and only
//! then builds an `Entry`. The serde derives serve the bundle's `entries` and the registry's
//! stored JSON, which hold entries that already passed the checks.
//!
//! The `JsonSchema` derives give the entry's JSON Schema (`crate::schema`) its shape, doc
//! comments included; `crate::schema` adds the checks' fixed bounds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One team's declaration for one service. Key: `team/service`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The team: owns the host. 1-63 of `a-z0-9-`, starting with a letter, not ending with `-`.
    pub team: String,
    /// The service: owns its path prefixes on the team's host. The same shape as `team`.
    pub service: String,
    /// DNS labels placed in front of the gateway's base domain (`invoices` → `invoices.api.example.com`).
        pub host: String,
    /// `http://` or `https://` URL with host and optional port, judged by where it leads
    /// (docs/design.md#backend-policy). An entry has `backend` or `backends`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub backend: String,
    /// 2–8 backends sharing the traffic by weight, in place of `backend`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<WeightedBackend>,
    /// How the gateway speaks to the backend(s); `http1` when left out.
    #[serde(default, skip_serializing_if = "Protocol::is_default")]
    pub protocol: Protocol,
    /// A second backend taking a share of the traffic and a header cohort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<Canary>,
    /// Active HTTP health checking of the backend(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheck>,
    /// The backend sees the client's Host (the team's own hostname) instead of its own name;
    /// TLS SNI stays the backend's name. A route's `host_rewrite` still wins on that route.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preserve_host: bool,
    /// Token issuers a route may require (`auth.jwt`), by a name of the team's choosing:
    /// verified by Envoy at the edge (docs/design.md#authentication).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub jwt: BTreeMap<String, JwtProvider>,
    /// The service's routes.
    pub routes: Vec<Route>,
    /// Serve this revision to part of the entry's requests while the last fully published one
    /// serves the rest, fixed (`percent`) or in steps the gateway judges
    /// (docs/design.md#rollout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
    /// Written by the reconciler, never by a team: the stable revision this one is rolled out
    /// beside and the share the candidate gets in this render. Part of the rendered entry (the
    /// bundle's `entries`, the render input digest), never of a registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub serving: Option<Box<Serving>>,
}

/// A rollout: `percent` (fixed, moved by registering again) or `steps` judged by the gateway
/// every `interval` on the two revisions' own request metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rollout {
    /// 0–100: the share of the entry's requests this revision serves; 100 promotes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<u32>,
    /// Increasing shares (1–100) ending at 100, each held for `interval` and advanced while
    /// this revision is as healthy as the stable one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<u32>,
    /// How long each step lasts before it is judged (`ms`, `s` or `m`), at least the operators'
    /// minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// 0–1: how much the candidate's 5xx share of its answers may exceed the stable one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_5xx_increase: Option<serde_json::Number>,
    /// 1–100: how many times the stable revision's p99 latency the candidate's may be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_p99_ratio: Option<serde_json::Number>,
}

/// What a render serves of an entry in rollout (set by the reconciler).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Serving {
    /// The last fully published revision, serving every request outside the candidate's share.
    pub stable: Entry,
    /// The registered revision number of `stable`.
    pub stable_revision: u64,
    /// 1–99: the candidate's share in this render.
    pub percent: u32,
}

/// One issuer of JSON Web Tokens: whose tokens are accepted, for which audiences, verified with
/// which public keys, and which claims the backend gets as headers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JwtProvider {
    /// The token's `iss`, exactly: an `https://` (or `http://`) URL.
    pub issuer: String,
    /// A token's `aud` must hold one of these; left out, any audience.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    /// The issuer's public keys, inline. A provider has `jwks` or `jwks_uri`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks: Option<Jwks>,
    /// Where Envoy fetches the issuer's public keys: only for an issuer the operators allow
    /// (`GATEWAY_JWT_ISSUERS`), judged like a backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Claim name → request header the backend gets it in; a client's own copy never passes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claims_to_headers: BTreeMap<String, String>,
    /// Sends the token on to the backend (by default it is removed once verified).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forward: bool,
}

/// A JSON Web Key Set of public keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Jwks {
    /// The keys (RSA or EC P-256 public keys).
    pub keys: Vec<Jwk>,
}

/// One public key: RSA (`n`, `e`) or EC P-256 (`crv`, `x`, `y`); a private member is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Jwk {
    /// `RSA` or `EC`.
    pub kty: String,
    /// The key id a token's header names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
    /// RS256, RS384, RS512, PS256, PS384, PS512 (RSA) or ES256 (EC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// `sig` when given.
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
    /// RSA modulus, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
    /// RSA public exponent, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e: Option<String>,
    /// `P-256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crv: Option<String>,
    /// EC point x, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    /// EC point y, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<String>,
    /// `["verify"]` when given (as some libraries write a public key's JWK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_ops: Option<Vec<String>>,
    /// The key's certificate chain (standard base64 DER), as identity providers publish it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x5c: Option<Vec<String>>,
    /// The certificate's SHA-1 thumbprint, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x5t: Option<String>,
    /// The certificate's SHA-256 thumbprint, base64url.
    #[serde(default, rename = "x5t#S256", skip_serializing_if = "Option::is_none")]
    pub x5t_s256: Option<String>,
}

/// What a route requires of a request before the backend sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteAuth {
    /// The name of one of the entry's `jwt` providers: a valid token of it is required.
    pub jwt: String,
}

/// One of an entry's `backends`: `weight` parts of the traffic (0–100) go to `url`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightedBackend {
    /// Same rules as the entry's `backend`.
    pub url: String,
    /// 0–100: this backend's share is its weight over the sum of the weights.
    pub weight: u32,
}

/// The upstream protocol (docs/design.md#traffic-policy).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// HTTP/1.1.
    #[default]
    Http1,
    /// HTTP/2: h2 over TLS (ALPN), h2c with prior knowledge over http.
    Http2,
    /// gRPC, which is HTTP/2.
    Grpc,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Http1, Protocol::Http2, Protocol::Grpc];

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::Http2 => "http2",
            Protocol::Grpc => "grpc",
        }
    }

    pub fn is_default(&self) -> bool {
        *self == Protocol::Http1
    }

    /// Whether the upstream connection is HTTP/2.
    pub fn is_http2(self) -> bool {
        matches!(self, Protocol::Http2 | Protocol::Grpc)
    }
}

/// A second backend: `weight` percent of the service's traffic, plus every request whose header
/// `header.name` equals `header.value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Canary {
    /// Same rules as the entry's `backend`.
    pub backend: String,
    /// 0–100; 100 is a cutover.
    pub weight: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<CanaryHeader>,
}

/// The team's own cohort header: a request carrying `name: value` goes to the canary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CanaryHeader {
    /// A lowercase request header name.
    pub name: String,
    /// Visible ASCII and inner spaces.
    pub value: String,
}

/// Active HTTP health checking: `GET path` every `interval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HealthCheck {
    /// The path the backend answers 200 on while healthy (the rules of a route's `path`).
    pub path: String,
    /// `ms`, `s` or `m` (`"10s"`), from the operators' minimum (default 5 s) to 5 min.
    pub interval: String,
}

/// One route: a path prefix (or one exact path) on the team's host, optionally narrowed by
/// request headers and query parameters, sent to the entry's backend(s).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Segment-aware path prefix, starting with `/`. A route has `path` or `exact`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// One exact path (the query string aside), in place of `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// Request headers that must all match too: a value, or present or absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderMatch>,
    /// Query parameters that must all match too: a value, or present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query: Vec<QueryMatch>,
    /// HTTP methods this route answers; left out, every method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub methods: Option<Vec<String>>,
    /// Rate limits: global limits counted by the rate-limit service, and a local burst bucket.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<Limit>,
    /// Whole-request timeout (`"5s"`, `"250ms"`, `"1m"`), at most the operators' maximum
    /// (default 60 s); left out, 15 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Retries of a failed try (docs/design.md#route-policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<Retries>,
    /// The path the backend sees: a string or `{ "prefix" }` replaces the matched prefix
    /// (`/invoices/7` → `/v2/invoices/7`; `/` strips it: `/strip/three` → `/three`), `{ "path" }`
    /// the whole path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<Rewrite>,
    /// Headers set on or removed from the request before it reaches the backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<HeaderChanges>,
    /// Headers set on or removed from the backend's response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<HeaderChanges>,
    /// The route's CORS policy, answered by Envoy's CORS filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cors: Option<Cors>,
    /// Allows the websocket upgrade on this route.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub websocket: bool,
    /// The Host the backend is sent (a DNS name) instead of its own name; TLS SNI stays the
    /// backend's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_rewrite: Option<String>,
    /// Answers with a redirect instead of proxying to the backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<Redirect>,
    /// Copies a share of the route's requests to another backend; its answers are ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<Mirror>,
    /// Which client addresses the route admits: `allow` (only these) and `deny` (never these).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<Clients>,
    /// What a request must carry: `{ "jwt": PROVIDER }`, a valid token of one of the entry's
    /// `jwt` providers (401 without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<RouteAuth>,
}

/// CIDR blocks of the trusted client address (past the trusted hops). With `allow`, only those;
/// `deny` refuses its blocks even inside an allowed one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Clients {
    /// At most 16 CIDR blocks in canonical form (`10.0.0.0/8`, `2001:db8::/32`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// At most 16 CIDR blocks in canonical form.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

/// A route's request mirror: `percent` of its requests are also sent to `backend`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mirror {
    /// Same rules as the entry's `backend` (and claimed like it).
    pub backend: String,
    /// 0–100.
    pub percent: u32,
}

/// A request header a route matches on: `value` exactly, or `present` (true: sent with any
/// value; false: not sent).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeaderMatch {
    /// A lowercase header name.
    pub name: String,
    /// The exact value (visible ASCII and inner spaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// In place of `value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<bool>,
}

/// A query parameter a route matches on: `value` exactly, or `present: true`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryMatch {
    /// The parameter's name as sent.
    pub name: String,
    /// The exact value as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `true`, in place of `value`: sent with any value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<bool>,
}

/// A route's path rewrite. The string form is the original one and keeps its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Rewrite {
    /// Replaces the matched prefix (as `{ "prefix" }`).
    Prefix(String),
    /// `{ "prefix": "/v2" }` or `{ "path": "/full" }`.
    To(RewriteTo),
}

/// The object form of a rewrite: exactly one of its fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewriteTo {
    /// Replaces the whole path (the query string is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Replaces the matched prefix, segment by segment; `/` strips it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// What a rewrite replaces, read off either form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace<'a> {
    /// The matched prefix.
    Prefix(&'a str),
    /// The whole path.
    Path(&'a str),
}

impl Rewrite {
    /// The string form's meaning, `prefix`.
    pub fn prefix(p: &str) -> Rewrite {
        Rewrite::Prefix(p.to_string())
    }

    pub fn replace(&self) -> Replace<'_> {
        match self {
            Rewrite::Prefix(p) => Replace::Prefix(p),
            Rewrite::To(RewriteTo { path: Some(p), .. }) => Replace::Path(p),
            Rewrite::To(RewriteTo { prefix, .. }) => Replace::Prefix(prefix.as_deref().unwrap_or("/")),
        }
    }
}

/// Where a redirect sends the client: every part left out stays the request's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Redirect {
    /// `http` or `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// A host name (lowercase DNS labels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// 1–65535.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Replaces the whole path (the query string is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Replaces the matched prefix, segment by segment, as `rewrite` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// 301, 302 (the default), 303, 307 or 308.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl Route {
    /// The path the route matches: its prefix, or its exact path.
    pub fn matched_path(&self) -> &str {
        self.exact.as_deref().unwrap_or(&self.path)
    }

    /// Whether the route matches one exact path.
    pub fn is_exact(&self) -> bool {
        self.exact.is_some()
    }

    /// Whether the route matches on anything besides its path and methods.
    pub fn has_conditions(&self) -> bool {
        !self.headers.is_empty() || !self.query.is_empty()
    }

    /// A route at `path` answering `methods` (`None`: every method) with `limits`; every other
    /// field its default.
    pub fn new(path: &str, methods: Option<&[&str]>, limits: Vec<Limit>) -> Route {
        Route {
            path: path.into(),
            methods: methods.map(|m| m.iter().map(|s| s.to_string()).collect()),
            limits,
            ..Default::default()
        }
    }
}

/// A route's retry policy.
// Conditions and status codes are kept sorted (canonical entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Retries {
    /// Retries after the first try (Envoy's `num_retries`), at most the operators' maximum.
    pub attempts: u32,
    /// Retry conditions (`connect-failure`, `5xx`, …), Envoy's `retry_on` names.
    pub on: Vec<String>,
    /// With `retriable-status-codes`: the statuses that are retried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_codes: Vec<u16>,
    /// Time for one try (`"2s"`); below the route's timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_try_timeout: Option<String>,
}

/// Headers to set (overwriting any the client or backend sent), to append to, and to remove.
// `remove` is kept sorted (canonical entry).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeaderChanges {
    /// Header names (lowercase) and the values they are set to, as `set` does (kept from before
    /// `set` existed; Gateway API's `add` appends, which is `append` here).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub add: BTreeMap<String, String>,
    /// Header names (lowercase) and the values they are set to, replacing any value already
    /// there.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, String>,
    /// Header names (lowercase) and a value added beside any already there.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub append: BTreeMap<String, String>,
    /// Header names (lowercase) to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
}

/// A route's CORS policy.
// Lists are kept sorted (canonical entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cors {
    /// Exact origins (`https://app.example.com`), suffix patterns (`https://*.example.com`) or `*`.
    pub origins: Vec<String>,
    /// The methods a preflight allows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// The request headers (lowercase) a preflight allows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// The response headers (lowercase) a browser lets the page's script read, beyond the
    /// CORS-safelisted ones (`access-control-expose-headers`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expose_headers: Vec<String>,
    /// How long a browser may cache the preflight's answer (`"10m"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age: Option<String>,
    /// Whether the browser sends credentials (cookies, authorization); never with origin `*`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub credentials: bool,
}

/// A global limit (counted by the rate-limit service) or a local burst bucket (per Envoy task).
// deny_unknown_fields: a limit is one or the other, never fields of both (the checks refuse
// `{"burst": 5, "per": "route"}`; without it serde would read a burst and drop `per`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub enum Limit {
    /// A local token bucket in each Envoy task: `burst` tokens, refilled `burst` per second.
    Burst {
        /// Tokens in each Envoy task's bucket, and how many it refills every second.
        burst: u32,
    },
    /// `requests` per `every`, counted by the rate-limit service across every proxy task.
    Global {
        /// What is counted separately: each client address, the whole route, or each value of
        /// a request header.
        per: Per,
        /// Set exactly when `per` is `header`: the lowercase header name whose value is counted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        header: Option<String>,
        /// Requests allowed in each window.
        requests: u32,
        /// The window.
        every: Unit,
    },
}

/// What a global limit counts separately.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Per {
    ClientIp,
    Route,
    Header,
}

/// A global limit's window.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Second,
    Minute,
    Hour,
    Day,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Second => "second",
            Unit::Minute => "minute",
            Unit::Hour => "hour",
            Unit::Day => "day",
        }
    }
}

impl Per {
    pub fn as_str(self) -> &'static str {
        match self {
            Per::ClientIp => "client-ip",
            Per::Route => "route",
            Per::Header => "header",
        }
    }
}

impl Entry {
    /// `team/service`, the entry's key in the registry and its id everywhere else.
    pub fn id(&self) -> String {
        format!("{}/{}", self.team, self.service)
    }

    /// The full hostname this entry's routes are served on.
    pub fn fqdn(&self, base_domain: &str) -> String {
        format!("{}.{}", self.host, base_domain)
    }

    /// Every upstream URL the entry sends traffic to, with the field that names it: `backend`
    /// and, with a canary, `canary.backend`. A later field naming an upstream joins here, and so
    /// joins the name lookups at registration (`adapters/src/resolve.rs`) and the backend claims
    /// (docs/design.md#ownership-and-conflicts).
    pub fn upstreams(&self) -> Vec<(String, &str)> {
        let own = (!self.backend.is_empty()).then(|| ("backend".to_string(), self.backend.as_str()));
        own.into_iter()
            .chain(
                self.backends
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (format!("backends[{i}].url"), b.url.as_str())),
            )
            .chain(
                self.canary
                    .as_ref()
                    .map(|c| ("canary.backend".to_string(), c.backend.as_str())),
            )
            .chain(self.routes.iter().enumerate().filter_map(|(i, r)| {
                let m = r.mirror.as_ref()?;
                Some((format!("routes[{i}].mirror.backend"), m.backend.as_str()))
            }))
            // A rollout's stable revision keeps its backends resolved, judged and claimed.
            .chain(self.serving.iter().flat_map(|s| {
                s.stable
                    .upstreams()
                    .into_iter()
                    .map(|(field, url)| (format!("serving.stable.{field}"), url))
            }))
            .collect()
    }

    /// The entry as its team registered it: without the stable revision the registry keeps beside
    /// a rollout (`serving`).
    pub fn registered(&self) -> Entry {
        Entry { serving: None, ..self.clone() }
    }

    /// The entry and, while it is rolled out, its stable revision: what every proxy holds.
    pub fn revisions(&self) -> impl Iterator<Item = &Entry> {
        std::iter::once(self).chain(self.serving.iter().map(|s| &s.stable))
    }

    /// The JWKS URLs of the entry's `jwt` providers, with the field that names each: resolved
    /// and judged like backends, never claimed (an issuer serves many teams).
    pub fn jwks_uris(&self) -> Vec<(String, &str)> {
        self.jwt
            .iter()
            .filter_map(|(name, p)| Some((format!("jwt.{name}.jwks_uri"), p.jwks_uri.as_deref()?)))
            .collect()
    }

    /// The request headers the entry's providers set from claims, sorted, each once.
    pub fn claim_headers(&self) -> std::collections::BTreeSet<&str> {
        self.jwt
            .values()
            .flat_map(|p| p.claims_to_headers.values().map(String::as_str))
            .collect()
    }

    /// The distinct backends the entry's routes mirror to, sorted: one cluster each.
    pub fn mirror_backends(&self) -> std::collections::BTreeSet<&str> {
        self.routes
            .iter()
            .filter_map(|r| r.mirror.as_ref().map(|m| m.backend.as_str()))
            .collect()
    }
}
