//! Names that spell an address. Wildcard DNS services answer a name with the address written in
//! it (`127.0.0.1.nip.io`, `app-169-254-170-2.sslip.io`, `app-7f000001.nip.io`, `--1.sslip.io`),
//! and a few public names always answer loopback (`localtest.me`). Resolution may not be
//! possible where the check runs, so the spelling alone is judged too: offline, a name is refused
//! for the address it spells exactly as that address would be.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Public names (and their subdomains) whose DNS always answers 127.0.0.1.
const LOOPBACK_DOMAINS: [&str; 5] = [
    "localtest.me",
    "lvh.me",
    "vcap.me",
    "localho.st",
    "localhost.direct",
];

/// Every address the name spells, in the order found.
pub(crate) fn spelled_addresses(name: &str) -> Vec<IpAddr> {
    let mut found = Vec::new();
    if LOOPBACK_DOMAINS
        .iter()
        .any(|d| name == *d || name.ends_with(&format!(".{d}")))
    {
        found.push(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let labels: Vec<&str> = name.split('.').collect();
    // Four numeric labels in a row: a.b.c.d.nip.io.
    for w in labels.windows(4) {
        if let Some(ip) = quad(w[0], w[1], w[2], w[3]) {
            found.push(IpAddr::V4(ip));
        }
    }
    for label in &labels {
        // a-b-c-d at the end of a label: app-10-0-0-1.nip.io, 10-0-0-1.sslip.io.
        let parts: Vec<&str> = label.rsplitn(5, '-').collect();
        if parts.len() >= 4 {
            if let Some(ip) = quad(parts[3], parts[2], parts[1], parts[0]) {
                found.push(IpAddr::V4(ip));
            }
        }
        // Eight hex digits at the end of a label: app-7f000001.nip.io.
        let tail = label.rsplit('-').next().unwrap_or(label);
        if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_hexdigit()) {
            if let Ok(n) = u32::from_str_radix(tail, 16) {
                found.push(IpAddr::V4(Ipv4Addr::from(n)));
            }
        }
        // IPv6 with dashes for colons: --1.sslip.io, fe80--1.sslip.io.
        if label.contains("--") {
            if let Ok(ip) = label.replace('-', ":").parse::<Ipv6Addr>() {
                found.push(IpAddr::V6(ip));
            }
        }
    }
    found
}

fn quad(a: &str, b: &str, c: &str, d: &str) -> Option<Ipv4Addr> {
    let octet = |s: &str| -> Option<u8> {
        (!s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    Some(Ipv4Addr::new(octet(a)?, octet(b)?, octet(c)?, octet(d)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelled(name: &str) -> Vec<String> {
        spelled_addresses(name)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn finds_the_spellings_wildcard_dns_answers() {
        assert_eq!(spelled("127.0.0.1.nip.io"), ["127.0.0.1"]);
        assert_eq!(spelled("api.169.254.170.2.nip.io"), ["169.254.170.2"]);
        assert_eq!(spelled("app-169-254-169-254.sslip.io"), ["169.254.169.254"]);
        assert_eq!(spelled("10-0-0-1.sslip.io"), ["10.0.0.1"]);
        assert_eq!(spelled("app-7f000001.nip.io"), ["127.0.0.1"]);
        assert_eq!(spelled("--1.sslip.io"), ["::1"]);
        assert_eq!(spelled("fe80--1.sslip.io"), ["fe80::1"]);
        assert_eq!(spelled("a.localtest.me"), ["127.0.0.1"]);
        assert!(spelled("invoices.internal.example").is_empty());
        assert!(spelled("svc-1-2.example").is_empty());
        assert!(spelled("v1-2-3.example").is_empty());
        assert!(spelled("a---a.example").is_empty());
    }
}
