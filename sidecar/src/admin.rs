//! Envoy's admin endpoint, read-only: the few stats that say which config Envoy applied, whether
//! it refused a file, and whether the global rate limiter is failing open.

use crate::error::SidecarError;
use gateway_envoy_admin::{encode_query_value, AdminClient, AdminEndpoint};
use gateway_render::contract::ROUTE_CONFIG_NAME;
use serde_json::Value;
use std::collections::BTreeMap;

/// CDS: the `version_info` of the last clusters file Envoy accepted, and its refusals.
pub const CDS_VERSION: &str = "cluster_manager.cds.version_text";
pub const CDS_REJECTED: &str = "cluster_manager.cds.update_rejected";
/// The JWT filter's extension config discovery (`jwt.json`).
pub const JWT_VERSION: &str =
    "extension_config_discovery.http_filter.envoy.filters.http.jwt_authn.version_text";
pub const JWT_REJECTED: &str =
    "extension_config_discovery.http_filter.envoy.filters.http.jwt_authn.update_rejected";

/// Envoy's admin, on a Unix socket (`unix:/PATH`, production) or loopback (`http://HOST:PORT`).
#[derive(Debug, Clone)]
pub struct EnvoyAdmin {
    base: String,
    client: AdminClient,
}

/// One reading of the stats the sidecar needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    texts: BTreeMap<String, String>,
    counters: BTreeMap<String, u64>,
}

impl EnvoyAdmin {
    pub fn new(base: &str) -> Result<Self, SidecarError> {
        let endpoint: AdminEndpoint =
            base.parse()
                .map_err(|e: gateway_envoy_admin::AdminError| SidecarError::Admin {
                    url: base.to_string(),
                    reason: e.to_string(),
                })?;
        Ok(EnvoyAdmin {
            base: endpoint.to_string(),
            client: AdminClient::new(endpoint),
        })
    }

    /// The admin client, for readers beside delivery (the request metrics' own task).
    pub fn client(&self) -> &AdminClient {
        &self.client
    }

    pub fn url(&self) -> &str {
        &self.base
    }

    /// For an admin on a Unix socket: makes sure the socket's directory exists and that Envoy,
    /// which runs as its own user, can create the socket there. In the proxy task the directory
    /// is a task volume shared only by Envoy and this sidecar, and Fargate creates task volumes
    /// root-owned; the sidecar starts first (Envoy waits for it to be healthy), so it opens the
    /// directory up (1777, like /tmp) for the one container that shares it.
    pub fn prepare_socket_dir(&self) -> Result<(), SidecarError> {
        use std::os::unix::fs::PermissionsExt;
        let AdminEndpoint::Unix(path) = self.client.endpoint() else {
            return Ok(());
        };
        let Some(dir) = path.parent() else {
            return Ok(());
        };
        let fail = |e: std::io::Error| SidecarError::Admin {
            url: self.base.clone(),
            reason: format!("preparing the socket directory {}: {e}", dir.display()),
        };
        std::fs::create_dir_all(dir).map_err(fail)?;
        let mode = std::fs::metadata(dir).map_err(fail)?.permissions().mode() & 0o7777;
        if mode != 0o1777 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777)).map_err(fail)?;
        }
        Ok(())
    }

    /// `GET /stats?format=json` filtered to the stats below (the full list is large at 10k
    /// clusters; Envoy filters with RE2 before serialising).
    pub async fn stats(&self) -> Result<Stats, SidecarError> {
        let filter = format!(
            r"^cluster_manager\.cds\.(version_text|update_rejected)$|^http\..+\.rds\.{route}\.(version_text|update_rejected)$|^cluster\..+\.ratelimit\.(error|failure_mode_allowed)$|^extension_config_discovery\.http_filter\.envoy\.filters\.http\.jwt_authn\.(version_text|update_rejected)$",
            route = regex_escape(ROUTE_CONFIG_NAME)
        );
        self.read_stats(&filter, None).await
    }

    /// The CDS and RDS version texts alone: what a delivery step polls for. Asked of Envoy's
    /// text readouts only (`type=TextReadouts`, a handful), so Envoy does not match every
    /// counter of every cluster against the filter; at 10k routes that match is what makes
    /// [`Self::stats`] slow, and Envoy answers admin on the thread that applies config.
    pub async fn versions(&self) -> Result<Stats, SidecarError> {
        let filter = format!(
            r"^cluster_manager\.cds\.version_text$|^http\..+\.rds\.{route}\.version_text$|^extension_config_discovery\.http_filter\.envoy\.filters\.http\.jwt_authn\.version_text$",
            route = regex_escape(ROUTE_CONFIG_NAME)
        );
        self.read_stats(&filter, Some("TextReadouts")).await
    }

    async fn read_stats(&self, filter: &str, kind: Option<&str>) -> Result<Stats, SidecarError> {
        let url = format!("{}/stats", self.base);
        let err = |reason: String| SidecarError::Admin {
            url: url.clone(),
            reason,
        };
        let response = self
            .client
            .get(&format!(
                "/stats?format=json{}&filter={}",
                kind.map(|k| format!("&type={k}")).unwrap_or_default(),
                encode_query_value(filter)
            ))
            .await
            .map_err(|e| err(e.to_string()))?;
        if !response.is_success() {
            return Err(err(format!("HTTP {}", response.status)));
        }
        Stats::parse(&response.body).map_err(err)
    }
}

impl Stats {
    /// Envoy's `{"stats":[{"name":…,"value":…},…]}`; text readouts have string values.
    pub fn parse(body: &[u8]) -> Result<Stats, String> {
        let doc: Value =
            serde_json::from_slice(body).map_err(|e| format!("stats are not JSON: {e}"))?;
        let list = doc
            .get("stats")
            .and_then(Value::as_array)
            .ok_or("stats: no \"stats\" list")?;
        let mut stats = Stats::default();
        for item in list {
            // Histograms come as an element without a name.
            let Some(name) = item.get("name").and_then(Value::as_str) else {
                continue;
            };
            match item.get("value") {
                Some(Value::String(s)) => {
                    stats.texts.insert(name.to_string(), s.clone());
                }
                Some(Value::Number(n)) => {
                    stats
                        .counters
                        .insert(name.to_string(), n.as_u64().unwrap_or(0));
                }
                _ => {}
            }
        }
        Ok(stats)
    }

    /// These stats with the version texts of a later reading (`versions`); the counters stay
    /// this reading's.
    pub fn with_texts_of(mut self, later: Stats) -> Stats {
        self.texts = later.texts;
        self
    }

    pub fn cds_version(&self) -> Option<&str> {
        self.texts.get(CDS_VERSION).map(String::as_str)
    }

    pub fn cds_rejected(&self) -> u64 {
        self.counters.get(CDS_REJECTED).copied().unwrap_or(0)
    }

    /// The JWT filter's applied `jwt.json` version.
    pub fn jwt_version(&self) -> Option<&str> {
        self.texts.get(JWT_VERSION).map(String::as_str)
    }

    pub fn jwt_rejected(&self) -> u64 {
        self.counters.get(JWT_REJECTED).copied().unwrap_or(0)
    }

    /// `http.<stat_prefix>.rds.<route config>.version_text`: found by suffix so the sidecar does
    /// not depend on the listener's stat prefix.
    pub fn rds_version(&self) -> Option<&str> {
        let suffix = rds_suffix("version_text");
        self.texts
            .iter()
            .find(|(k, _)| k.starts_with("http.") && k.ends_with(&suffix))
            .map(|(_, v)| v.as_str())
    }

    pub fn rds_rejected(&self) -> u64 {
        let suffix = rds_suffix("update_rejected");
        self.counters
            .iter()
            .filter(|(k, _)| k.starts_with("http.") && k.ends_with(&suffix))
            .map(|(_, v)| v)
            .sum()
    }

    /// The RDS stat's full name, for messages.
    pub fn rds_stat_name(&self, leaf: &str) -> String {
        let suffix = rds_suffix(leaf);
        self.texts
            .keys()
            .chain(self.counters.keys())
            .find(|k| k.starts_with("http.") && k.ends_with(&suffix))
            .cloned()
            .unwrap_or_else(|| format!("http.*{suffix}"))
    }

    /// Requests the global rate-limit filter could not check (limiter down or slow), summed over
    /// upstream clusters, and how many of them it let through (`failure_mode_deny: false`).
    pub fn ratelimit_failures(&self) -> RateLimitFailures {
        let sum = |leaf: &str| -> u64 {
            self.counters
                .iter()
                .filter(|(k, _)| k.starts_with("cluster.") && k.ends_with(leaf))
                .map(|(_, v)| v)
                .sum()
        };
        RateLimitFailures {
            errors: sum(".ratelimit.error"),
            failure_mode_allowed: sum(".ratelimit.failure_mode_allowed"),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RateLimitFailures {
    pub errors: u64,
    pub failure_mode_allowed: u64,
}

fn rds_suffix(leaf: &str) -> String {
    format!(".rds.{ROUTE_CONFIG_NAME}.{leaf}")
}

fn regex_escape(s: &str) -> String {
    s.chars().fold(String::new(), |mut out, c| {
        if !c.is_ascii_alphanumeric() && c != '_' && c != '-' {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_versions_rejections_and_limiter_failures() {
        let body = br#"{"stats":[
            {"name":"cluster_manager.cds.version_text","value":"sha256:a"},
            {"name":"cluster_manager.cds.update_rejected","value":2},
            {"name":"http.gateway.rds.gateway.version_text","value":"sha256:b"},
            {"name":"http.gateway.rds.gateway.update_rejected","value":1},
            {"name":"cluster.billing.invoices.ratelimit.error","value":3},
            {"name":"cluster.billing.invoices.ratelimit.failure_mode_allowed","value":3},
            {"name":"cluster.shop.cart.ratelimit.error","value":4},
            {"histograms":{"supported_quantiles":[]}}
        ]}"#;
        let stats = Stats::parse(body).expect("valid");
        assert_eq!(stats.cds_version(), Some("sha256:a"));
        assert_eq!(stats.cds_rejected(), 2);
        assert_eq!(stats.rds_version(), Some("sha256:b"));
        assert_eq!(stats.rds_rejected(), 1);
        assert_eq!(
            stats.rds_stat_name("version_text"),
            "http.gateway.rds.gateway.version_text"
        );
        assert_eq!(
            stats.ratelimit_failures(),
            RateLimitFailures {
                errors: 7,
                failure_mode_allowed: 3
            }
        );
    }

    #[test]
    fn missing_stats_read_as_absent_or_zero() {
        let stats = Stats::parse(br#"{"stats":[]}"#).expect("valid");
        assert_eq!(stats.cds_version(), None);
        assert_eq!(stats.rds_version(), None);
        assert_eq!(stats.rds_rejected(), 0);
        assert!(Stats::parse(b"[]").is_err());
    }
}
