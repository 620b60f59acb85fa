//! One CDS cluster per entry: where the gateway sends that service's traffic.

use crate::check::{check_health_check_interval, envoy_duration, MAX_HEALTH_CHECK_INTERVAL_MS};
use crate::contract::CLUSTER_TYPE_URL;
use crate::entry::{Canary, Entry, HealthCheck, Protocol};
use crate::names;
use crate::config::RenderConfig;
use crate::error::RenderError;
use crate::value::object;
use serde_json::{json, Value};
use std::net::IpAddr;

/// A backend URL taken apart. The checks have accepted it; this only refuses what it cannot render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub tls: bool,
    /// Host name or IP literal, without IPv6 brackets.
    pub host: String,
    pub port: u16,
}

impl Backend {
    pub fn parse(url: &str) -> Result<Backend, String> {
        let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err("expected an http:// or https:// URL".into());
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if !tail.is_empty() && tail != "/" {
            return Err(format!("path, query or fragment {tail:?} is not supported; the gateway forwards the request path as is"));
        }
        if authority.contains('@') {
            return Err("user information is not supported".into());
        }
        let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
            let close = bracketed.find(']').ok_or("unterminated IPv6 literal")?;
            (&bracketed[..close], &bracketed[close + 1..])
        } else {
            match authority.rfind(':') {
                Some(i) => (&authority[..i], &authority[i..]),
                None => (authority, ""),
            }
        };
        if host.is_empty() {
            return Err("no host".into());
        }
        let port = match port {
            "" => {
                if tls {
                    443
                } else {
                    80
                }
            }
            p => match p.strip_prefix(':').map(str::parse::<u16>) {
                Some(Ok(n)) if n > 0 => n,
                _ => return Err(format!("bad port {:?}", p.trim_start_matches(':'))),
            },
        };
        Ok(Backend {
            tls,
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }

    /// `host[:port]` as a Host header, the port only when it is not the scheme's default.
    pub fn authority(&self) -> String {
        let host = match self.ip() {
            Some(IpAddr::V6(_)) => format!("[{}]", self.host),
            _ => self.host.clone(),
        };
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// Parses an entry's backend, naming the entry when it cannot.
pub fn backend_of(entry: &Entry) -> Result<Backend, RenderError> {
    named_backend(entry, &entry.backend)
}

/// Parses an entry's canary backend, naming the entry when it cannot.
pub fn canary_backend_of(entry: &Entry, canary: &Canary) -> Result<Backend, RenderError> {
    named_backend(entry, &canary.backend)
}

/// Every cluster of an entry, in a fixed order: the backend's (`team.service`, the name it has
/// always had), and with a canary the canary's and the two failover pairs the routes split
/// between (docs/design.md#traffic-policy).
pub fn clusters(entry: &Entry, cfg: &RenderConfig) -> Result<Vec<Value>, RenderError> {
    let mut out = own_clusters(entry, cfg)?;
    out.extend(mirror_clusters(entry, cfg)?);
    if !entry.jwt.is_empty() {
        out.extend(jwks_clusters(entry, cfg)?);
    }
    Ok(out)
}

/// A cluster to `url` (`scheme://authority`) that Envoy itself calls (a key set's origin): a
/// backend cluster over HTTP/1.1 without a health check.
fn plain_cluster(
    entry: &Entry,
    name: &str,
    url: &str,
    cfg: &RenderConfig,
) -> Result<Value, RenderError> {
    let backend = named_backend(entry, url)?;
    let plain = Entry {
        protocol: crate::entry::Protocol::Http1,
        health_check: None,
        ..entry.clone()
    };
    let mut cluster = backend_cluster(&plain, name, &backend, false, cfg);
    if let Some(obj) = cluster.as_object_mut() {
        obj.remove("health_checks");
    }
    Ok(cluster)
}

/// One cluster per distinct mirror backend, after the entry's own, in name order: a backend
/// cluster like any other, without a health check (nothing waits on a mirror's answers).
fn mirror_clusters(entry: &Entry, cfg: &RenderConfig) -> Result<Vec<Value>, RenderError> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for url in entry.mirror_backends() {
        let backend = named_backend(entry, url)?;
        let name = names::mirror_cluster_name(entry, url);
        let mut cluster = backend_cluster(entry, &name, &backend, false, cfg);
        if let Some(obj) = cluster.as_object_mut() {
            obj.remove("health_checks");
        }
        out.push((name, cluster));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out.into_iter().map(|(_, c)| c).collect())
}

/// How many clusters `entry` renders (the registry bound counts them with this).
pub fn cluster_count(entry: &Entry) -> usize {
    let own = match (entry.backends.len(), entry.canary.is_some()) {
        (0, false) => 1,
        (0, true) => 4,
        (n, false) => n,
        (n, true) => n + 2,
    };
    own + entry.mirror_backends().len() + jwks_origins(entry).len()
}

/// The origins of the entry's `jwt` key sets Envoy fetches, each once, in order.
fn jwks_origins(entry: &Entry) -> std::collections::BTreeSet<&str> {
    entry
        .jwt
        .values()
        .filter_map(|p| p.jwks_uri.as_deref())
        .map(names::jwks_origin)
        .collect()
}

/// The clusters Envoy fetches the entry's remote key sets through (docs/design.md#authentication),
/// one per JWKS origin, in name order.
fn jwks_clusters(entry: &Entry, cfg: &RenderConfig) -> Result<Vec<Value>, RenderError> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for origin in jwks_origins(entry) {
        let name = names::jwks_cluster_name(entry, origin);
        out.push((name.clone(), plain_cluster(entry, &name, origin, cfg)?));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out.into_iter().map(|(_, c)| c).collect())
}

/// Parses any backend URL an entry names (`backend`, `backends[i].url`, `canary.backend`, a
/// mirror's), naming the entry when it cannot.
fn named_backend(entry: &Entry, url: &str) -> Result<Backend, RenderError> {
    Backend::parse(url).map_err(|reason| RenderError::Backend {
        entry: entry.id(),
        backend: url.to_string(),
        reason,
    })
}

/// With `backends`: one cluster each (named by URL, endpoints named for `auto_host_rewrite`), in
/// name order whatever the list's, and with a canary its cluster and `canary-first`, which fails
/// over to the backend of the largest weight (the first by name of equals). The main share is
/// split over the backends' own clusters with no failover between them: while one fails its
/// health check, its share of requests fails (503) until it recovers or the weights change, as
/// with Gateway API's weighted backends (docs/design.md#traffic-policy).
fn weighted_clusters(entry: &Entry, cfg: &RenderConfig) -> Result<Vec<Value>, RenderError> {
    let mut named: Vec<(String, &crate::entry::WeightedBackend)> = entry
        .backends
        .iter()
        .map(|b| (names::weighted_backend_cluster_name(entry, &b.url), b))
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (name, b) in &named {
        out.push(backend_cluster(entry, name, &named_backend(entry, &b.url)?, true, cfg));
    }
    if let Some(canary) = &entry.canary {
        let canary_name = names::canary_cluster_name(entry);
        out.push(backend_cluster(entry, &canary_name, &canary_backend_of(entry, canary)?, true, cfg));
        let fallback = named
            .iter()
            .max_by(|a, b| a.1.weight.cmp(&b.1.weight).then(b.0.cmp(&a.0)))
            .map(|(name, _)| name.clone())
            .unwrap_or_default();
        out.push(failover_cluster(
            &names::canary_first_cluster_name(entry),
            &canary_name,
            &fallback,
        ));
    }
    Ok(out)
}

fn own_clusters(entry: &Entry, cfg: &RenderConfig) -> Result<Vec<Value>, RenderError> {
    if !entry.backends.is_empty() {
        return weighted_clusters(entry, cfg);
    }
    let main_name = names::cluster_name(entry);
    let main = backend_of(entry)?;
    let Some(canary) = &entry.canary else {
        return Ok(vec![backend_cluster(entry, &main_name, &main, false, cfg)]);
    };
    let canary_name = names::canary_cluster_name(entry);
    let canary_backend = canary_backend_of(entry, canary)?;
    Ok(vec![
        backend_cluster(entry, &main_name, &main, true, cfg),
        backend_cluster(entry, &canary_name, &canary_backend, true, cfg),
        failover_cluster(
            &names::main_first_cluster_name(entry),
            &main_name,
            &canary_name,
        ),
        failover_cluster(
            &names::canary_first_cluster_name(entry),
            &canary_name,
            &main_name,
        ),
    ])
}

/// The entry's main Cluster resource, with `@type`.
pub fn cluster(entry: &Entry, cfg: &RenderConfig) -> Result<Value, RenderError> {
    let backend = backend_of(entry)?;
    Ok(backend_cluster(
        entry,
        &names::cluster_name(entry),
        &backend,
        entry.canary.is_some(),
        cfg,
    ))
}

/// One backend's cluster. `named_endpoint` writes the backend's authority as the endpoint's
/// hostname: routes that may land on either of two backends rewrite Host from it
/// (`auto_host_rewrite`), so each backend still sees its own name.
fn backend_cluster(
    entry: &Entry,
    name: &str,
    backend: &Backend,
    named_endpoint: bool,
    cfg: &RenderConfig,
) -> Value {
    let mut endpoint = json!({ "address": {
        "socket_address": { "address": backend.host, "port_value": backend.port }
    } });
    if named_endpoint {
        endpoint
            .as_object_mut()
            .expect("json! object literal")
            .insert("hostname".into(), json!(backend.authority()));
    }
    let http_config = if entry.protocol.is_http2() {
        json!({ "http2_protocol_options": {} })
    } else {
        json!({ "http_protocol_options": {} })
    };
    let mut cluster = json!({
        "@type": CLUSTER_TYPE_URL,
        "name": name,
        // A backend that does not accept a TCP connection in 2 s is down; failing fast frees the
        // client and the connection slot instead of queueing behind Envoy's 5 s default.
        "connect_timeout": "2s",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{ "lb_endpoints": [{ "endpoint": endpoint }] }]
        },
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                // Backends usually sit behind a load balancer that drops idle connections after
                // 60 s (AWS ALB's default). Envoy keeps pooled connections for an hour by default,
                // and reusing one the far side just closed fails the request with a 503.
                // Closing ours first avoids that race.
                "common_http_protocol_options": { "idle_timeout": "50s" },
                "explicit_http_config": http_config
            }
        },
        "circuit_breakers": circuit_breakers(),
        "outlier_detection": outlier_detection()
    });
    let obj = cluster.as_object_mut().expect("json! object literal");
    match backend.ip() {
        Some(_) => {
            obj.insert("type".into(), json!("STATIC"));
        }
        None => {
            obj.insert("type".into(), json!("LOGICAL_DNS"));
            // Private DNS names in a VPC often have AAAA records without an IPv6 route; prefer
            // IPv4 and fall back to IPv6 rather than Envoy's default of trying IPv6 first.
            obj.insert("dns_lookup_family".into(), json!("V4_PREFERRED"));
        }
    }
    if let Some(hc) = &entry.health_check {
        obj.insert(
            "health_checks".into(),
            json!([health_check(hc, backend, entry.protocol)]),
        );
    }
    if backend.tls {
        obj.insert(
            "transport_socket".into(),
            upstream_tls(backend, entry.protocol, cfg),
        );
    }
    cluster
}

/// Envoy's defaults (1024 connections, pending and active requests) already apply per cluster,
/// so one team's slow backend exhausts only its own budget; they are spelled out so a reader of
/// clusters.json sees the isolation between teams. Retries are budgeted rather than counted:
/// at most 20 % of the requests in flight may be retries (at least 3 at a time, so a quiet
/// service can still retry), so a failing backend is never hammered by its own retries.
fn circuit_breakers() -> Value {
    json!({
        "thresholds": [{
            "priority": "DEFAULT",
            "max_connections": 1024,
            "max_pending_requests": 1024,
            "max_requests": 1024,
            "retry_budget": {
                "budget_percent": { "value": 20.0 },
                "min_retry_concurrency": 3
            }
        }]
    })
}

/// Passive outlier detection on every backend cluster (docs/design.md#traffic-policy): five
/// consecutive 5xx (or connection failures) eject a host for 30 s, doubling up to 5 min. Envoy
/// ejects a host only while the ejected share stays at or below `max_ejection_percent`, so
/// with 50 % the last host of a cluster is never ejected; the success-rate detector, which
/// needs five hosts to judge, is off.
fn outlier_detection() -> Value {
    json!({
        "consecutive_5xx": 5,
        "interval": "10s",
        "base_ejection_time": "30s",
        "max_ejection_time": "300s",
        "max_ejection_percent": 50,
        "enforcing_success_rate": 0
    })
}

/// Active HTTP health checking: `GET path` on the backend with its own Host, every `interval`
/// whether or not the cluster has traffic. Three failures take the host out, two successes
/// bring it back. The check times out with the connect budget, or sooner when checks are
/// more frequent than that.
fn health_check(hc: &HealthCheck, backend: &Backend, protocol: Protocol) -> Value {
    let interval_ms =
        check_health_check_interval(&hc.interval, 0).unwrap_or(MAX_HEALTH_CHECK_INTERVAL_MS);
    let interval = envoy_duration(interval_ms);
    let mut http = json!({ "host": backend.authority(), "path": hc.path });
    if protocol.is_http2() {
        http.as_object_mut()
            .expect("json! object literal")
            .insert("codec_client_type".into(), json!("HTTP2"));
    }
    json!({
        "timeout": envoy_duration(interval_ms.min(2_000)),
        "interval": interval,
        "no_traffic_interval": interval,
        "unhealthy_threshold": 3,
        "healthy_threshold": 2,
        "http_health_check": http
    })
}

/// A cluster that sends to `first` while it has healthy hosts and fails over to `second`
/// (Envoy's aggregate cluster): how a canary share moves to the other backend when its own
/// health check takes it out.
fn failover_cluster(name: &str, first: &str, second: &str) -> Value {
    json!({
        "@type": CLUSTER_TYPE_URL,
        "name": name,
        "connect_timeout": "2s",
        "lb_policy": "CLUSTER_PROVIDED",
        "cluster_type": {
            "name": "envoy.clusters.aggregate",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig",
                "clusters": [first, second]
            }
        },
        "circuit_breakers": circuit_breakers()
    })
}

/// TLS to the backend: SNI is the backend host, and its certificate must chain to the CA bundle
/// and name that host. An IP literal cannot be an SNI name, so it is matched as an IP SAN instead.
fn upstream_tls(backend: &Backend, protocol: Protocol, cfg: &RenderConfig) -> Value {
    let (san_type, sni) = match backend.ip() {
        Some(_) => ("IP_ADDRESS", None),
        None => ("DNS", Some(backend.host.clone())),
    };
    let mut tls = json!({
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
        "common_tls_context": {
            "validation_context": {
                "trusted_ca": { "filename": cfg.upstream_ca_file },
                "match_typed_subject_alt_names": [
                    { "san_type": san_type, "matcher": { "exact": backend.host } }
                ]
            }
        }
    });
    if protocol.is_http2() {
        // HTTP/2 over TLS is negotiated: without ALPN "h2" most servers answer HTTP/1.1.
        tls["common_tls_context"]
            .as_object_mut()
            .expect("json! object literal")
            .insert("alpn_protocols".into(), json!(["h2"]));
    }
    if let Some(sni) = sni {
        tls.as_object_mut()
            .expect("json! object literal")
            .insert("sni".into(), json!(sni));
    }
    object([
        ("name", json!("envoy.transport_sockets.tls")),
        ("typed_config", tls),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_backends_with_default_and_explicit_ports() {
        let b = Backend::parse("https://invoices.internal.example:8443").unwrap();
        assert_eq!(
            (b.tls, b.host.as_str(), b.port),
            (true, "invoices.internal.example", 8443)
        );
        assert_eq!(b.authority(), "invoices.internal.example:8443");
        let b = Backend::parse("http://10.0.3.7").unwrap();
        assert_eq!((b.tls, b.port, b.ip().is_some()), (false, 80, true));
        assert_eq!(b.authority(), "10.0.3.7");
        let b = Backend::parse("https://[fd00::7]/").unwrap();
        assert_eq!((b.host.as_str(), b.port), ("fd00::7", 443));
        assert_eq!(b.authority(), "[fd00::7]");
    }

    #[test]
    fn refuses_what_it_cannot_render() {
        assert!(Backend::parse("ftp://x").is_err());
        assert!(Backend::parse("http://x:0").is_err());
        assert!(Backend::parse("http://x:99999").is_err());
        assert!(Backend::parse("http://x/base").is_err());
        assert!(Backend::parse("http://u@x").is_err());
        assert!(Backend::parse("http://:80").is_err());
    }

    fn entry(backend: &str) -> Entry {
        Entry {
            rollout: None,
            serving: None,
            team: "billing".into(),
            service: "invoices-api".into(),
            host: "invoices".into(),
            backend: backend.into(),
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
    fn dns_backend_is_logical_dns_with_tls_sni_and_san() {
        let cfg = RenderConfig::new("api.example.com");
        let c = cluster(&entry("https://invoices.internal.example:8443"), &cfg).unwrap();
        assert_eq!(c["type"], "LOGICAL_DNS");
        assert_eq!(c["name"], "billing.invoices-api");
        let tls = &c["transport_socket"]["typed_config"];
        assert_eq!(tls["sni"], "invoices.internal.example");
        let vc = &tls["common_tls_context"]["validation_context"];
        assert_eq!(
            vc["trusted_ca"]["filename"],
            "/etc/ssl/certs/ca-certificates.crt"
        );
        assert_eq!(
            vc["match_typed_subject_alt_names"][0]["matcher"]["exact"],
            "invoices.internal.example"
        );
    }

    #[test]
    fn ip_backend_is_static_and_plain_http_has_no_tls() {
        let cfg = RenderConfig::new("api.example.com");
        let c = cluster(&entry("http://10.0.3.7:8080"), &cfg).unwrap();
        assert_eq!(c["type"], "STATIC");
        assert!(c.get("transport_socket").is_none());
        assert!(c.get("dns_lookup_family").is_none());
        let addr = &c["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
            ["socket_address"];
        assert_eq!(addr["address"], "10.0.3.7");
        assert_eq!(addr["port_value"], 8080);
    }
}
