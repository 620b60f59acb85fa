//! Operators' restrictions on where backends may be: CIDR blocks (`GATEWAY_BACKEND_CIDRS`) and
//! domain suffixes (`GATEWAY_BACKEND_DOMAINS`), parsed from the settings' values.

use super::identifiers::check_dns_name;
use super::report::quote;
use std::fmt;
use std::net::IpAddr;

/// One CIDR block, e.g. `10.0.0.0/8` or `fd00::/8`. The address is stored with its host bits
/// cleared, so `10.1.2.3/8` and `10.0.0.0/8` are the same block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (addr, prefix) = s.split_once('/').ok_or_else(|| {
            format!(
                "{} is not a CIDR block; write ADDRESS/PREFIX, e.g. 10.0.0.0/8",
                quote(s)
            )
        })?;
        let ip: IpAddr = addr
            .parse()
            .map_err(|_| format!("{}: {} is not an IP address", quote(s), quote(addr)))?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= max && !prefix.starts_with('+'))
            .ok_or_else(|| format!("{}: prefix {} must be 0-{max}", quote(s), quote(prefix)))?;
        Ok(Cidr {
            network: mask(ip, prefix),
            prefix,
        })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.network.is_ipv4() && mask(ip, self.prefix) == self.network
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4((bits & m).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6((bits & m).into())
        }
    }
}

/// A comma-separated list of CIDR blocks; empty means no restriction.
pub fn parse_cidrs(value: &str) -> Result<Vec<Cidr>, String> {
    items(value)
        .map(|s| Cidr::parse(s).map_err(|e| format!("GATEWAY_BACKEND_CIDRS: {e}")))
        .collect()
}

/// A comma-separated list of domain suffixes (`internal.example`, `.corp.example`); empty means
/// no restriction. Each is a lowercase DNS name; a leading dot is allowed and dropped.
pub fn parse_domains(value: &str) -> Result<Vec<String>, String> {
    items(value)
        .map(|s| {
            let d = s.strip_prefix('.').unwrap_or(s);
            check_dns_name(d)
                .map(|()| d.to_string())
                .map_err(|why| format!("GATEWAY_BACKEND_DOMAINS: {} {why}", quote(s)))
        })
        .collect()
}

fn items(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// Whether `name` is one of the suffixes or under one (on a label boundary).
pub fn under_domains(name: &str, domains: &[String]) -> bool {
    domains.iter().any(|d| {
        name == d
            || name
                .strip_suffix(d.as_str())
                .is_some_and(|rest| rest.ends_with('.'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_parse_contain_and_print_canonically() {
        let c = Cidr::parse("10.1.2.3/8").expect("valid");
        assert_eq!(c.to_string(), "10.0.0.0/8");
        assert!(c.contains("10.255.0.1".parse().expect("ip")));
        assert!(!c.contains("11.0.0.1".parse().expect("ip")));
        assert!(!c.contains("::ffff:10.0.0.1".parse().expect("ip")));
        let all = Cidr::parse("0.0.0.0/0").expect("valid");
        assert!(all.contains("203.0.113.9".parse().expect("ip")));
        let v6 = Cidr::parse("2600:1f18::/32").expect("valid");
        assert!(v6.contains("2600:1f18:1::5".parse().expect("ip")));
        assert!(Cidr::parse("fd00::1/128")
            .expect("valid")
            .contains("fd00::1".parse().expect("ip")));
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0/8",
            "x/8",
            "::/129",
            "10.0.0.0/+8",
            "10.0.0.0/",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_cidrs(" 10.0.0.0/8 ,, fd00::/8 ").map(|v| v.len()),
            Ok(2)
        );
        assert!(parse_cidrs("10.0.0.0/8,oops")
            .expect_err("bad")
            .contains("GATEWAY_BACKEND_CIDRS"));
    }

    #[test]
    fn domains_match_on_label_boundaries() {
        let d = parse_domains("internal.example, .corp.example").expect("valid");
        assert_eq!(d, ["internal.example", "corp.example"]);
        assert!(under_domains("internal.example", &d));
        assert!(under_domains("a.b.internal.example", &d));
        assert!(under_domains("x.corp.example", &d));
        assert!(!under_domains("evilinternal.example", &d));
        assert!(!under_domains("internal.example.evil.com", &d));
        assert!(parse_domains("Bad Domain").is_err());
    }
}
