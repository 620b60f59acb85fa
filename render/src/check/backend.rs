//! `backend`: where the gateway sends a team's traffic, from the gateway's own network position.
//! The URL is parsed by hand and strictly, because every lenient URL parser is a way to smuggle
//! an address past the policy (`http://0x7f.1`, `http://127.1`, `http://evil@169.254.169.254`).

use super::address::check_address;
use super::cidr::under_domains;
use super::identifiers::check_dns_name;
use super::report::quote;
use super::spelled::spelled_addresses;
use super::Policy;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

/// Cloud metadata services by name; their addresses are refused by `check_address`.
const METADATA_NAMES: [&str; 3] = [
    "metadata.google.internal",
    "instance-data.ec2.internal",
    "instance-data",
];

/// Loopback ports of the proxy task's own services (the rate-limit service's gRPC, HTTP and
/// debug ports, the sidecars' health and status servers; infra's `PROXY_PORTS`). A backend on
/// one of them would reach those services wherever its name leads to the task itself, so they
/// are refused whatever the address.
pub const PROXY_RESERVED_PORTS: std::ops::RangeInclusive<u16> = 15000..=15019;

/// A required backend URL field `key` of `map` (`backend`, `backends[i].url`, a mirror's
/// `backend`), judged by [`check_backend`], with its problem at the field.
pub(crate) fn required_backend(
    map: &serde_json::Map<String, serde_json::Value>,
    field: &str,
    key: &str,
    policy: &Policy,
    problems: &mut super::report::Problems,
) -> Option<String> {
    super::fields::required_parsed(map, field, key, problems, |b: &str| {
        check_backend(b, policy).map(|_| b.to_string())
    })
}

/// Parses and judges a backend URL against the policy.
pub fn check_backend(url: &str, policy: &Policy) -> Result<Backend, String> {
    let backend = parse_backend(url)?;
    judge(&backend.host, policy)?;
    if PROXY_RESERVED_PORTS.contains(&backend.port) {
        return Err(format!(
            "port {} is reserved for the proxy task's own services (ports {}-{}); use another port",
            backend.port,
            PROXY_RESERVED_PORTS.start(),
            PROXY_RESERVED_PORTS.end()
        ));
    }
    Ok(backend)
}

/// Judges what a backend name resolved to where the check ran: every address must pass
/// `check_address`. `answer` is the resolver's addresses or why it found none; a name without
/// addresses passes unless the policy requires backends to resolve. The message names the name,
/// the address and why.
pub fn check_resolved(
    name: &str,
    answer: &Result<Vec<IpAddr>, String>,
    policy: &Policy,
) -> Result<(), String> {
    let addresses = match answer {
        Ok(addresses) if !addresses.is_empty() => addresses,
        Ok(_) | Err(_) if !policy.require_resolvable_backends => return Ok(()),
        Ok(_) => {
            return Err(format!(
                "{name} resolves to no address, and backends must resolve (GATEWAY_REQUIRE_RESOLVABLE_BACKENDS=true)"
            ))
        }
        Err(why) => {
            return Err(format!(
                "{name} does not resolve ({why}), and backends must resolve (GATEWAY_REQUIRE_RESOLVABLE_BACKENDS=true)"
            ))
        }
    };
    let mut sorted = addresses.clone();
    sorted.sort();
    sorted.dedup();
    for ip in sorted {
        check_address(ip, policy).map_err(|why| format!("{name} resolves to {why}"))?;
    }
    Ok(())
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

/// Where the gateway must not send traffic, as far as the URL alone tells.
fn judge(host: &BackendHost, policy: &Policy) -> Result<(), String> {
    match host {
        BackendHost::V4(ip) => judge_literal(IpAddr::V4(*ip), policy),
        BackendHost::V6(ip) => judge_literal(IpAddr::V6(*ip), policy),
        BackendHost::Name(name) => judge_name(name, policy),
    }
}

fn judge_literal(ip: IpAddr, policy: &Policy) -> Result<(), String> {
    check_address(ip, policy)?;
    // Passing here but not under the strict policy: an allowed loopback of a local run.
    let loopback_allowed =
        policy.allow_loopback_backends && check_address(ip, &Policy::new("", false)).is_err();
    if !policy.backend_domains.is_empty() && policy.backend_cidrs.is_empty() && !loopback_allowed {
        return Err(format!(
            "{ip} is an IP address, but backends must be names under GATEWAY_BACKEND_DOMAINS ({})",
            policy.backend_domains.join(", ")
        ));
    }
    Ok(())
}

fn judge_name(name: &str, policy: &Policy) -> Result<(), String> {
    if METADATA_NAMES.contains(&name) {
        return Err(format!(
            "{name} is a cloud metadata endpoint; the gateway never routes to it"
        ));
    }
    let localhost = name == "localhost" || name.ends_with(".localhost");
    if localhost && !policy.allow_loopback_backends {
        return Err(format!("{name} {}", super::address::LOOPBACK));
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
    // The address a name spells is where wildcard DNS sends it: judged like that address (its
    // refused classes; the CIDR list is for what names resolve to).
    let classes_only = Policy {
        backend_cidrs: Vec::new(),
        ..policy.clone()
    };
    for ip in spelled_addresses(name) {
        check_address(ip, &classes_only).map_err(|why| {
            format!("{name} spells the address {ip}, which wildcard DNS (nip.io, sslip.io, localtest.me) answers with: {why}")
        })?;
    }
    if !localhost
        && !policy.backend_domains.is_empty()
        && !under_domains(name, &policy.backend_domains)
    {
        return Err(format!(
            "{name} is not under the domains backends may be in (GATEWAY_BACKEND_DOMAINS: {})",
            policy.backend_domains.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::address::LINK_LOCAL;
    use super::super::test_policies::{local, strict};
    use super::*;

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
        assert!(check_backend("http://1.2.3.4.example.com", &strict()).is_ok());
        // A name spelling a refused address is judged as that address (wildcard DNS).
        assert!(rejected("http://0.0.0.1.example.com", &strict())
            .contains("spells the address 0.0.0.1"));
        assert!(rejected("http://127.0.0.1.nip.io:9901", &strict()).contains("loopback"));
        assert!(check_backend("http://127.0.0.1.nip.io:9901", &local()).is_ok());
        assert!(rejected("http://169-254-170-2.sslip.io", &local()).contains("link-local"));
        assert!(rejected("http://api.localtest.me", &strict()).contains("loopback"));
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
    fn ipv6_spellings_of_refused_ipv4_are_refused() {
        for url in [
            "http://[::169.254.169.254]",
            "http://[::ffff:0:169.254.169.254]",
            "http://[2002:a9fe:a9fe::1]",
            "http://[64:ff9b:1::a9fe:a9fe]",
            "http://[2001:0:a9fe:a9fe::1]",
        ] {
            let e = rejected(url, &local());
            assert!(
                e.contains("169.254.169.254") && e.ends_with(LINK_LOCAL),
                "{url}: {e}"
            );
        }
        for url in [
            "http://[::127.0.0.1]",
            "http://[::ffff:0:127.0.0.1]",
            "http://[2002:7f00:1::1]",
        ] {
            assert!(rejected(url, &strict()).contains("loopback"), "{url}");
        }
        assert!(rejected("http://[fec0::1]", &local()).contains("site-local"));
    }

    #[test]
    fn the_proxy_tasks_own_ports_are_refused() {
        let e = rejected("http://10.0.0.1:15001", &strict());
        assert!(e.contains("port 15001 is reserved"), "{e}");
        assert!(rejected("http://127.0.0.1:15019", &local()).contains("reserved"));
        assert!(check_backend("http://10.0.0.1:15020", &strict()).is_ok());
        assert!(check_backend("http://10.0.0.1:8081", &strict()).is_ok());
    }

    #[test]
    fn operator_domains_and_cidrs_restrict_literal_backends() {
        let p = strict()
            .with_backend_rules("internal.example", "")
            .expect("valid");
        assert!(check_backend("https://a.internal.example", &p).is_ok());
        let e = rejected("https://a.other.example", &p);
        assert!(
            e.contains("GATEWAY_BACKEND_DOMAINS: internal.example"),
            "{e}"
        );
        assert!(rejected("http://10.0.0.1", &p).contains("must be names"));
        let p = strict()
            .with_backend_rules("internal.example", "10.0.0.0/8")
            .expect("valid");
        assert!(check_backend("http://10.0.0.1", &p).is_ok());
        assert!(rejected("http://192.168.0.1", &p).contains("GATEWAY_BACKEND_CIDRS"));
        let local = local()
            .with_backend_rules("internal.example", "")
            .expect("valid");
        assert!(check_backend("http://127.0.0.1:8080", &local).is_ok());
        assert!(check_backend("http://localhost:8080", &local).is_ok());
    }

    #[test]
    fn resolved_addresses_are_judged_naming_name_address_and_reason() {
        let answer = Ok(vec![
            "10.0.0.5".parse().expect("ip"),
            "127.0.0.1".parse().expect("ip"),
        ]);
        assert_eq!(
            check_resolved("sneaky.example", &answer, &strict()),
            Err(format!(
                "sneaky.example resolves to 127.0.0.1 {}",
                super::super::address::LOOPBACK
            ))
        );
        assert!(check_resolved("sneaky.example", &answer, &local()).is_ok());
        let imds = Ok(vec!["::ffff:169.254.169.254".parse().expect("ip")]);
        let e = check_resolved("meta.example", &imds, &local()).expect_err("imds");
        assert!(
            e.starts_with("meta.example resolves to ::ffff:169.254.169.254 is an IPv4-mapped"),
            "{e}"
        );
        let nx: Result<Vec<IpAddr>, String> = Err("no such name".into());
        assert!(check_resolved("private.example", &nx, &strict()).is_ok());
        assert!(check_resolved("private.example", &Ok(vec![]), &strict()).is_ok());
        let mut must = strict();
        must.require_resolvable_backends = true;
        let e = check_resolved("private.example", &nx, &must).expect_err("must resolve");
        assert!(
            e.contains("no such name") && e.contains("GATEWAY_REQUIRE_RESOLVABLE_BACKENDS"),
            "{e}"
        );
        let cidrs = strict()
            .with_backend_rules("", "10.0.0.0/8")
            .expect("valid");
        let e = check_resolved(
            "pub.example",
            &Ok(vec!["8.8.8.8".parse().expect("ip")]),
            &cidrs,
        )
        .expect_err("outside");
        assert!(
            e.contains("pub.example resolves to 8.8.8.8 is outside"),
            "{e}"
        );
    }

    #[test]
    fn credentials_are_not_echoed() {
        assert!(!rejected("http://admin:s3cret@invoices", &strict()).contains("s3cret"));
    }
}
