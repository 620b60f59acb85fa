//! One CDS cluster per entry: where the gateway sends that service's traffic.

use crate::contract::CLUSTER_TYPE_URL;
use crate::entry::Entry;
use crate::names;
use crate::renderer::{RenderConfig, RenderError};
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
    Backend::parse(&entry.backend).map_err(|reason| RenderError::Backend {
        entry: entry.id(),
        backend: entry.backend.clone(),
        reason,
    })
}

/// The entry's Cluster resource, with `@type`.
pub fn cluster(entry: &Entry, cfg: &RenderConfig) -> Result<Value, RenderError> {
    let backend = backend_of(entry)?;
    let name = names::cluster_name(entry);
    let mut cluster = json!({
        "@type": CLUSTER_TYPE_URL,
        "name": name,
        // A backend that does not accept a TCP connection in 2 s is down; failing fast frees the
        // client and the connection slot instead of queueing behind Envoy's 5 s default.
        "connect_timeout": "2s",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{ "lb_endpoints": [{ "endpoint": { "address": {
                "socket_address": { "address": backend.host, "port_value": backend.port }
            } } }] }]
        },
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                // Backends usually sit behind a load balancer that drops idle connections after
                // 60 s (AWS ALB's default). Envoy keeps pooled connections for an hour by default,
                // and reusing one the far side just closed fails the request with a 503.
                // Closing ours first avoids that race.
                "common_http_protocol_options": { "idle_timeout": "50s" },
                "explicit_http_config": { "http_protocol_options": {} }
            }
        },
        // Envoy's defaults (1024 connections, pending and active requests, 3 retries) already
        // apply per cluster, so one team's slow backend exhausts only its own budget; they are
        // spelled out so a reader of clusters.json sees the isolation between teams.
        "circuit_breakers": {
            "thresholds": [{
                "priority": "DEFAULT",
                "max_connections": 1024,
                "max_pending_requests": 1024,
                "max_requests": 1024,
                "max_retries": 3
            }]
        }
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
    if backend.tls {
        obj.insert("transport_socket".into(), upstream_tls(&backend, cfg));
    }
    Ok(cluster)
}

/// TLS to the backend: SNI is the backend host, and its certificate must chain to the CA bundle
/// and name that host. An IP literal cannot be an SNI name, so it is matched as an IP SAN instead.
fn upstream_tls(backend: &Backend, cfg: &RenderConfig) -> Value {
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
            team: "billing".into(),
            service: "invoices-api".into(),
            host: "invoices".into(),
            backend: backend.into(),
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
