//! `backend`: where the gateway sends a team's traffic, from the gateway's own network position.
//! The URL is parsed by hand and strictly, because every lenient URL parser is a way to smuggle
//! an address past the policy (`http://0x7f.1`, `http://127.1`, `http://evil@169.254.169.254`).

use super::identifiers::check_dns_name;
use super::report::quote;
use super::Policy;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A checked backend URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// `https://`: TLS with SNI set to the host.
    pub tls: bool,
    pub host: BackendHost,
    /// The explicit port, or 80/443 from the scheme.
    pub port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendHost {
    Name(String),
    V4(Ipv4Addr),
    V6(Ipv6Addr),
}

impl fmt::Display for BackendHost {
    /// The address as a socket address takes it: names and IPs bare, IPv6 without brackets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendHost::Name(n) => f.write_str(n),
            BackendHost::V4(ip) => write!(f, "{ip}"),
            BackendHost::V6(ip) => write!(f, "{ip}"),
        }
    }
}

/// Instance-metadata endpoints of the clouds a gateway may run in. Link-local ones are caught by
/// their range too; these are named so the message says what they are.
const METADATA_V4: [Ipv4Addr; 4] = [
    Ipv4Addr::new(169, 254, 169, 254), // AWS, GCP, Azure IMDS
    Ipv4Addr::new(169, 254, 170, 2),   // ECS task metadata and credentials
    Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud metadata
    Ipv4Addr::new(168, 63, 129, 16),   // Azure wire server
];
/// AWS IMDS over IPv6 (Nitro).
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
const METADATA_NAMES: [&str; 3] = [
    "metadata.google.internal",
    "instance-data.ec2.internal",
    "instance-data",
];

const LINK_LOCAL: &str = "is a link-local/metadata address; the gateway never routes to it";
const LOOPBACK: &str =
    "is a loopback address: from the gateway it reaches the gateway's own task, not your service \
     (allowed only where GATEWAY_ALLOW_LOOPBACK_BACKENDS=true, for local runs and tests)";
const UNSPECIFIED: &str =
    "is an unspecified address: connecting to it reaches the gateway's own task \
     (allowed only where GATEWAY_ALLOW_LOOPBACK_BACKENDS=true, for local runs and tests)";
const MULTICAST: &str = "is a multicast or broadcast address, not a backend";

/// Parses and judges a backend URL against the policy.
pub fn check_backend(url: &str, policy: &Policy) -> Result<Backend, String> {
    let backend = parse_backend(url)?;
    judge(&backend.host, policy)?;
    Ok(backend)
}

/// Parses `http[s]://host[:port][/]` and nothing else.
pub fn parse_backend(url: &str) -> Result<Backend, String> {
    if url.is_empty() {
        return Err("must not be empty; e.g. \"https://invoices.internal.example:8443\"".into());
    }
    if let Some(c) = url
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || !c.is_ascii())
    {
        return Err(format!(
            "{} contains {}; a backend URL is printable ASCII without spaces",
            quote(url),
            quote(&c.to_string())
        ));
    }
    let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        let lower = url.to_ascii_lowercase();
        let reason = if lower.starts_with("http://") || lower.starts_with("https://") {
            "the scheme must be lowercase http:// or https://".to_string()
        } else {
            match url.split_once("://") {
                Some((scheme, _)) => format!(
                    "scheme {} is not supported; use http:// or https://",
                    quote(scheme)
                ),
                None => "must start with http:// or https://".to_string(),
            }
        };
        return Err(format!("{}: {reason}", quote(url)));
    };
    if rest.contains('#') {
        return Err(format!(
            "{} has a fragment (\"#\"); give only scheme, host and port",
            quote(url)
        ));
    }
    if rest.contains('?') {
        return Err(format!(
            "{} has a query (\"?\"); give only scheme, host and port",
            quote(url)
        ));
    }
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    if !path.is_empty() && path != "/" {
        return Err(format!(
            "{} has a path {}; a backend is scheme, host and port only, requests keep their own path",
            quote(url),
            quote(path)
        ));
    }
    if authority.contains('@') {
        // The value is not quoted back: whatever is before the "@" may be a password.
        return Err(
            "must not carry user information (\"user:password@\"); give only scheme, host and port"
                .into(),
        );
    }
    if authority.is_empty() {
        return Err(format!("{} has no host", quote(url)));
    }
    let (host, port) = split_host_port(authority)?;
    let port = match port {
        None => {
            if tls {
                443
            } else {
                80
            }
        }
        Some(p) => parse_port(p)?,
    };
    Ok(Backend { tls, host, port })
}

fn split_host_port(authority: &str) -> Result<(BackendHost, Option<&str>), String> {
    if let Some(bracketed) = authority.strip_prefix('[') {
        let Some((inside, after)) = bracketed.split_once(']') else {
            return Err(format!(
                "{} opens \"[\" without a closing \"]\"",
                quote(authority)
            ));
        };
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or_else(|| {
                format!(
                    "{} has {} after the IPv6 address; expected \":PORT\"",
                    quote(authority),
                    quote(after)
                )
            })?),
        };
        if inside.contains('%') {
            return Err(format!(
                "IPv6 address {} has a zone id; zone ids are not allowed",
                quote(inside)
            ));
        }
        let ip: Ipv6Addr = inside
            .parse()
            .map_err(|_| format!("{} is not a valid IPv6 address", quote(inside)))?;
        return Ok((BackendHost::V6(ip), port));
    }
    let (host, port) = match authority.split_once(':') {
        Some((_, after)) if after.contains(':') => {
            return Err(format!(
                "{}: an IPv6 address must be in brackets, e.g. http://[2001:db8::1]:8080",
                quote(authority)
            ))
        }
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    if host.is_empty() {
        return Err(format!("{} has no host", quote(authority)));
    }
    if looks_numeric(host) {
        return parse_dotted_quad(host).map(|ip| (BackendHost::V4(ip), port));
    }
    check_dns_name(host).map_err(|why| format!("host {why}"))?;
    Ok((BackendHost::Name(host.to_string()), port))
}

/// Whether a URL parser would read the host as an IPv4 address (WHATWG: the last label is a
/// number, decimal or 0x-hex). Such a host must then be a canonical dotted quad.
fn looks_numeric(host: &str) -> bool {
    let last = host.rsplit('.').find(|l| !l.is_empty()).unwrap_or(host);
    let hex = last.strip_prefix("0x").or_else(|| last.strip_prefix("0X"));
    last.bytes().all(|b| b.is_ascii_digit())
        || hex.is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Four decimal parts 0–255 without leading zeros. `127.1`, `2130706433`, `0x7f.0.0.1` and
/// `010.0.0.1` all name an address other than the one a reader sees, so they are refused.
fn parse_dotted_quad(host: &str) -> Result<Ipv4Addr, String> {
    let refuse = || {
        format!(
            "{} is not a dotted-quad IPv4 address; write four decimal parts 0-255 without leading zeros, e.g. 10.0.0.1",
            quote(host)
        )
    };
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() != 4 {
        return Err(refuse());
    }
    let mut octets = [0u8; 4];
    for (octet, part) in octets.iter_mut().zip(&parts) {
        let canonical = !part.is_empty()
            && part.len() <= 3
            && part.bytes().all(|b| b.is_ascii_digit())
            && (*part == "0" || !part.starts_with('0'));
        *octet = part.parse().ok().filter(|_| canonical).ok_or_else(refuse)?;
    }
    Ok(Ipv4Addr::from(octets))
}

fn parse_port(p: &str) -> Result<u16, String> {
    let bad = || {
        format!(
            "port {} must be a number 1-65535 without leading zeros",
            quote(p)
        )
    };
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) || p.starts_with('0') {
        return Err(bad());
    }
    p.parse::<u16>().ok().filter(|n| *n > 0).ok_or_else(bad)
}

/// Where the gateway must not send traffic.
fn judge(host: &BackendHost, policy: &Policy) -> Result<(), String> {
    let verdict = match host {
        BackendHost::V4(ip) => judge_v4(*ip),
        BackendHost::V6(ip) => judge_v6(*ip),
        BackendHost::Name(name) => return judge_name(name, policy),
    };
    match verdict {
        None => Ok(()),
        Some(why) if policy.allow_loopback_backends && (why == LOOPBACK || why == UNSPECIFIED) => {
            Ok(())
        }
        Some(why) => Err(format!("{host} {why}")),
    }
}

fn judge_v4(ip: Ipv4Addr) -> Option<&'static str> {
    if ip.is_link_local() || METADATA_V4.contains(&ip) {
        Some(LINK_LOCAL)
    } else if ip.is_multicast() || ip.is_broadcast() {
        Some(MULTICAST)
    } else if ip.is_loopback() {
        Some(LOOPBACK)
    } else if ip.octets()[0] == 0 {
        // 0.0.0.0/8 ("this network"): Linux connects 0.0.0.0 to the local host.
        Some(UNSPECIFIED)
    } else {
        None
    }
}

fn judge_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // An IPv4-mapped address (::ffff:a.b.c.d) reaches a.b.c.d; so does the NAT64 well-known
    // prefix (64:ff9b::/96) wherever a NAT64 gateway is on the path.
    let seg = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return judge_v4(v4);
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let ([a, b], [c, d]) = (seg[6].to_be_bytes(), seg[7].to_be_bytes());
        return judge_v4(Ipv4Addr::new(a, b, c, d));
    }
    if (seg[0] & 0xffc0) == 0xfe80 || ip == METADATA_V6 {
        Some(LINK_LOCAL)
    } else if ip.is_multicast() {
        Some(MULTICAST)
    } else if ip.is_loopback() {
        Some(LOOPBACK)
    } else if ip.is_unspecified() {
        Some(UNSPECIFIED)
    } else {
        None
    }
}

fn judge_name(name: &str, policy: &Policy) -> Result<(), String> {
    if METADATA_NAMES.contains(&name) {
        return Err(format!(
            "{name} is a cloud metadata endpoint; the gateway never routes to it"
        ));
    }
    if (name == "localhost" || name.ends_with(".localhost")) && !policy.allow_loopback_backends {
        return Err(format!("{name} {LOOPBACK}"));
    }
    let base = policy
        .base_domain
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if !base.is_empty() && (name == base || name.ends_with(&format!(".{base}"))) {
        return Err(format!(
            "{name} is the gateway itself (under the base domain {base}); routing the gateway to itself makes a loop"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> Policy {
        Policy::new("api.example.com", false)
    }

    fn local() -> Policy {
        Policy::new("api.example.com", true)
    }

    fn rejected(url: &str, policy: &Policy) -> String {
        let e = check_backend(url, policy).expect_err(url);
        assert!(!e.contains('\n'), "{e}");
        e
    }

    #[test]
    fn parses_hosts_ports_and_schemes() {
        let b = check_backend("https://invoices.internal.example:8443", &strict()).expect("ok");
        assert_eq!(
            b,
            Backend {
                tls: true,
                host: BackendHost::Name("invoices.internal.example".into()),
                port: 8443
            }
        );
        assert_eq!(
            check_backend("http://invoices", &strict()).map(|b| b.port),
            Ok(80)
        );
        assert_eq!(
            check_backend("https://invoices/", &strict()).map(|b| b.port),
            Ok(443)
        );
        assert_eq!(
            check_backend("http://10.0.0.1:8080", &strict()).map(|b| b.host),
            Ok(BackendHost::V4(Ipv4Addr::new(10, 0, 0, 1)))
        );
        let v6 = check_backend("http://[2001:db8::1]:9000", &strict()).expect("v6");
        assert_eq!(
            (v6.host.to_string(), v6.port),
            ("2001:db8::1".to_string(), 9000)
        );
        assert!(check_backend("http://0.0.0.1.example.com", &strict()).is_ok());
        assert!(check_backend("http://a:65535", &strict()).is_ok());
    }

    #[test]
    fn refuses_everything_but_scheme_host_and_port() {
        let cases = [
            ("", "empty"),
            ("invoices.internal:80", "must start with http"),
            ("ftp://invoices", "scheme \"ftp\""),
            ("HTTP://invoices", "lowercase"),
            ("http://", "no host"),
            ("http://:8080", "no host"),
            ("http://user@invoices", "user information"),
            ("http://user:pw@invoices", "user information"),
            ("http://invoices/api", "has a path"),
            ("http://invoices//", "has a path"),
            ("http://invoices?x=1", "query"),
            ("http://invoices#x", "fragment"),
            ("http://in voices", "without spaces"),
            ("http://invoices\n", "without spaces"),
            ("http://invoicés", "printable ASCII"),
            ("http://Invoices", "lowercase"),
            ("http://invoices.", "end with"),
            ("http://in_voices", "lowercase"),
            ("http://*.invoices", "wildcard"),
            ("http://invoices:0", "port"),
            ("http://invoices:65536", "port"),
            ("http://invoices:080", "leading zeros"),
            ("http://invoices:", "port"),
            ("http://invoices:http", "port"),
            ("http://2001:db8::1", "brackets"),
            ("http://[2001:db8::1", "closing"),
            ("http://[2001:db8::1]x", "expected \":PORT\""),
            ("http://[fe80::1%25eth0]", "zone id"),
            ("http://[not-v6]", "not a valid IPv6"),
            ("http://invoices\\@evil", "user information"),
            ("http://a\"b", "lowercase"),
        ];
        for (url, why) in cases {
            let e = rejected(url, &strict());
            assert!(e.contains(why), "{url:?}: {e}");
        }
    }

    #[test]
    fn refuses_non_canonical_ipv4() {
        for url in [
            "http://2130706433",
            "http://0x7f.1",
            "http://0x7f000001",
            "http://127.1",
            "http://127.0.1",
            "http://010.0.0.1",
            "http://10.0.0.01",
            "http://0177.0.0.1",
            "http://256.0.0.1",
            "http://1.2.3.4.5",
            "http://10.0.0.1.",
            "http://example.123",
        ] {
            let e = rejected(url, &local());
            assert!(
                e.contains("not a dotted-quad") || e.contains("end with"),
                "{url}: {e}"
            );
        }
    }

    #[test]
    fn link_local_and_metadata_are_always_refused() {
        for url in [
            "http://169.254.169.254",
            "http://169.254.170.2",
            "http://169.254.1.1:8080",
            "http://[fe80::1]",
            "http://[febf::1]",
            "http://[fd00:ec2::254]",
            "http://[::ffff:169.254.169.254]",
            "http://[::ffff:a9fe:a9fe]",
            "http://[64:ff9b::169.254.169.254]",
            "http://100.100.100.200",
        ] {
            let e = rejected(url, &local());
            assert!(e.ends_with(LINK_LOCAL), "{url}: {e}");
        }
        assert_eq!(
            rejected("http://169.254.169.254", &strict()),
            "169.254.169.254 is a link-local/metadata address; the gateway never routes to it"
        );
        assert!(rejected("http://metadata.google.internal", &local()).contains("metadata endpoint"));
        assert!(rejected("http://224.0.0.1", &local()).contains("multicast"));
        assert!(rejected("http://255.255.255.255", &local()).contains("broadcast"));
        assert!(rejected("http://[ff02::1]", &local()).contains("multicast"));
    }

    #[test]
    fn loopback_and_unspecified_depend_on_the_policy() {
        for url in [
            "http://127.0.0.1:8080",
            "http://127.255.0.9",
            "http://[::1]:8080",
            "http://localhost:8080",
            "http://api.localhost",
            "http://0.0.0.0",
            "http://0.1.2.3",
            "http://[::]",
            "http://[::ffff:127.0.0.1]",
        ] {
            let e = rejected(url, &strict());
            assert!(e.contains("GATEWAY_ALLOW_LOOPBACK_BACKENDS"), "{url}: {e}");
            assert!(check_backend(url, &local()).is_ok(), "{url}");
        }
    }

    #[test]
    fn the_gateway_itself_is_a_loop() {
        for url in [
            "https://api.example.com",
            "https://invoices.api.example.com:443",
        ] {
            let e = rejected(url, &local());
            assert!(e.contains("makes a loop"), "{url}: {e}");
        }
        assert!(check_backend("https://api.example.com.internal", &strict()).is_ok());
        assert!(check_backend("https://xapi.example.com", &strict()).is_ok());
    }

    #[test]
    fn private_and_public_addresses_are_fine() {
        for url in [
            "http://10.1.2.3",
            "http://172.16.0.1",
            "http://192.168.1.1",
            "https://93.184.216.34",
            "http://[fd12::1]",
        ] {
            assert!(check_backend(url, &strict()).is_ok(), "{url}");
        }
    }

    #[test]
    fn credentials_are_not_echoed() {
        assert!(!rejected("http://admin:s3cret@invoices", &strict()).contains("s3cret"));
    }
}
