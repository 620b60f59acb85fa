//! How the gateway serves: what every render takes besides the entries.

/// Where the gateway serves and how it trusts backends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderConfig {
    /// Team hosts are placed in front of this: `invoices` → `invoices.api.example.com`.
    pub base_domain: String,
    /// CA bundle that https backends' certificates must chain to, inside the proxy's image.
    pub upstream_ca_file: String,
    /// `per: client-ip` limits count an IPv6 client by this prefix of its address (one client
    /// owns a whole /64, usually); IPv4 clients by their whole address.
    /// `GATEWAY_CLIENT_IPV6_PREFIX`, default 64.
    pub client_ipv6_prefix: u8,
    /// Longest life of an upgraded (websocket) connection, in seconds: Envoy closes it then, so
    /// no client holds a task's connections without bound. `GATEWAY_MAX_WEBSOCKET_DURATION`,
    /// default 1 h.
    pub max_websocket_seconds: u64,
}

pub const DEFAULT_UPSTREAM_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";
pub const DEFAULT_CLIENT_IPV6_PREFIX: u8 = 64;
pub const DEFAULT_MAX_WEBSOCKET_SECONDS: u64 = 3_600;

impl RenderConfig {
    pub fn new(base_domain: impl Into<String>) -> Self {
        RenderConfig {
            base_domain: base_domain.into(),
            upstream_ca_file: DEFAULT_UPSTREAM_CA_FILE.to_string(),
            client_ipv6_prefix: DEFAULT_CLIENT_IPV6_PREFIX,
            max_websocket_seconds: DEFAULT_MAX_WEBSOCKET_SECONDS,
        }
    }
}
