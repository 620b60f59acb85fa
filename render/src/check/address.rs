//! Where an IP address leads, from the gateway's network position. One judgement for a literal
//! backend address and for every address a backend name resolves to (the resolving itself is
//! I/O and happens at the edges: the register function, the reconciler, `gatewayctl check`).
//!
//! IPv6 has several spellings that carry an IPv4 address inside it; each is judged by the IPv4
//! address it carries, because a host or a translator on the path delivers it there.

use super::Policy;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

pub(crate) const LINK_LOCAL: &str =
    "is a link-local/metadata address; the gateway never routes to it";
pub(crate) const LOOPBACK: &str =
    "is a loopback address: from the gateway it reaches the gateway's own task, not your service \
     (allowed only where GATEWAY_ALLOW_LOOPBACK_BACKENDS=true, for local runs and tests)";
pub(crate) const UNSPECIFIED: &str =
    "is an unspecified address: connecting to it reaches the gateway's own task \
     (allowed only where GATEWAY_ALLOW_LOOPBACK_BACKENDS=true, for local runs and tests)";
pub(crate) const MULTICAST: &str = "is a multicast or broadcast address, not a backend";
const SITE_LOCAL: &str =
    "is a site-local address (fec0::/10, deprecated by RFC 3879): where it leads depends on the site, not on you";

/// Why an address is refused, before the loopback policy is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    LinkLocal,
    Loopback,
    Unspecified,
    Multicast,
    SiteLocal,
}

impl Class {
    fn why(self) -> &'static str {
        match self {
            Class::LinkLocal => LINK_LOCAL,
            Class::Loopback => LOOPBACK,
            Class::Unspecified => UNSPECIFIED,
            Class::Multicast => MULTICAST,
            Class::SiteLocal => SITE_LOCAL,
        }
    }

    /// Loopback and unspecified reach the gateway's own task: allowed for local runs and tests.
    fn allowed_by(self, policy: &Policy) -> bool {
        policy.allow_loopback_backends && matches!(self, Class::Loopback | Class::Unspecified)
    }
}

/// Judges one address: refused classes, then the operators' CIDR allow-list. The message starts
/// with the address.
pub fn check_address(ip: IpAddr, policy: &Policy) -> Result<(), String> {
    let refusals = match ip {
        IpAddr::V4(v4) => class_v4(v4).map(|c| (c, None)).into_iter().collect(),
        IpAddr::V6(v6) => classes_v6(v6),
    };
    if let Some((class, carried)) = refusals.iter().find(|(c, _)| !c.allowed_by(policy)) {
        return Err(match carried {
            None => format!("{ip} {}", class.why()),
            Some((form, v4)) => format!(
                "{ip} is {form} carrying the IPv4 address {v4}, which {}",
                class.why()
            ),
        });
    }
    if !refusals.is_empty() {
        // An allowed loopback is the gateway's own task in a local run: the CIDR list, which
        // describes the backends' networks, does not apply to it.
        return Ok(());
    }
    if !policy.backend_cidrs.is_empty() && !policy.backend_cidrs.iter().any(|c| c.contains(ip)) {
        return Err(format!(
            "{ip} is outside the networks backends may be in (GATEWAY_BACKEND_CIDRS: {})",
            policy
                .backend_cidrs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

type Refusal = (Class, Option<(&'static str, Ipv4Addr)>);

fn class_v4(ip: Ipv4Addr) -> Option<Class> {
    if ip.is_link_local() || METADATA_V4.contains(&ip) {
        Some(Class::LinkLocal)
    } else if ip.is_multicast() || ip.is_broadcast() {
        Some(Class::Multicast)
    } else if ip.is_loopback() {
        Some(Class::Loopback)
    } else if ip.octets()[0] == 0 {
        // 0.0.0.0/8 ("this network"): Linux connects 0.0.0.0 to the local host.
        Some(Class::Unspecified)
    } else {
        None
    }
}

/// The refused classes of an IPv6 address: its own, or those of the IPv4 addresses it carries
/// (with the form that carried each).
fn classes_v6(ip: Ipv6Addr) -> Vec<Refusal> {
    let seg = ip.segments();
    let own = if ip.is_loopback() {
        Some(Class::Loopback)
    } else if ip.is_unspecified() {
        Some(Class::Unspecified)
    } else if (seg[0] & 0xffc0) == 0xfe80 || ip == METADATA_V6 {
        Some(Class::LinkLocal)
    } else if (seg[0] & 0xffc0) == 0xfec0 {
        Some(Class::SiteLocal)
    } else if ip.is_multicast() {
        Some(Class::Multicast)
    } else {
        None
    };
    if let Some(class) = own {
        return vec![(class, None)];
    }
    carried_v4(ip)
        .into_iter()
        .filter_map(|(form, v4)| class_v4(v4).map(|c| (c, Some((form, v4)))))
        .collect()
}

fn v4(hi: u16, lo: u16) -> Ipv4Addr {
    let ([a, b], [c, d]) = (hi.to_be_bytes(), lo.to_be_bytes());
    Ipv4Addr::new(a, b, c, d)
}

/// Every IPv4 address an IPv6 address may deliver to, with the name of the form.
fn carried_v4(ip: Ipv6Addr) -> Vec<(&'static str, Ipv4Addr)> {
    let s = ip.segments();
    let b = ip.octets();
    let mut found = Vec::new();
    // ::ffff:a.b.c.d (RFC 4291): the host's own IPv4 stack.
    if s[..5] == [0, 0, 0, 0, 0] && s[5] == 0xffff {
        found.push(("an IPv4-mapped address", v4(s[6], s[7])));
    }
    // ::a.b.c.d (RFC 4291, deprecated IPv4-compatible).
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        found.push(("an IPv4-compatible address", v4(s[6], s[7])));
    }
    // ::ffff:0:a.b.c.d (RFC 2765 SIIT IPv4-translated).
    if s[..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0 {
        found.push(("an IPv4-translated (SIIT) address", v4(s[6], s[7])));
    }
    // 2002:AABB:CCDD::/16 (RFC 3056 6to4).
    if s[0] == 0x2002 {
        found.push(("a 6to4 address", v4(s[1], s[2])));
    }
    // 64:ff9b::/96 (RFC 6052 well-known NAT64 prefix).
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        found.push(("a NAT64 address", v4(s[6], s[7])));
    }
    // 64:ff9b:1::/48 (RFC 8215 local-use NAT64): the prefix length is the operator's choice, so
    // both places RFC 6052 puts the IPv4 address for a /48 and a /96 are judged.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        // An all-zero candidate is the unused position of the other prefix length.
        for candidate in [Ipv4Addr::new(b[6], b[7], b[9], b[10]), v4(s[6], s[7])] {
            if !candidate.is_unspecified() {
                found.push(("a local-use NAT64 address", candidate));
            }
        }
    }
    // 2001::/32 (RFC 4380 Teredo): the server in segments 2-3, the client inverted in 6-7.
    if s[0] == 0x2001 && s[1] == 0 {
        found.push(("a Teredo address", v4(s[2], s[3])));
        found.push(("a Teredo address", v4(!s[6], !s[7])));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::super::test_policies::{local, strict};
    use super::*;

    fn refused(ip: &str, policy: &Policy) -> String {
        let ip: IpAddr = ip.parse().expect("literal");
        check_address(ip, policy).expect_err(&ip.to_string())
    }

    #[test]
    fn ipv6_forms_carrying_refused_ipv4_are_refused_naming_the_carried_address() {
        for (ip, carried, form) in [
            ("::169.254.169.254", "169.254.169.254", "IPv4-compatible"),
            ("::ffff:0:169.254.169.254", "169.254.169.254", "SIIT"),
            ("::ffff:169.254.169.254", "169.254.169.254", "IPv4-mapped"),
            ("2002:a9fe:a9fe::1", "169.254.169.254", "6to4"),
            ("64:ff9b::a9fe:aa02", "169.254.170.2", "NAT64"),
            (
                "64:ff9b:1:a9fe:a9:fe00::",
                "169.254.169.254",
                "local-use NAT64",
            ),
            ("64:ff9b:1::a9fe:a9fe", "169.254.169.254", "local-use NAT64"),
            ("2001:0:a9fe:a9fe::1", "169.254.169.254", "Teredo"),
            (
                "2001:0:4136:e378:8000:63bf:5601:5601",
                "169.254.169.254",
                "Teredo",
            ),
            ("2002:e000:1::", "224.0.0.1", "6to4"),
        ] {
            for policy in [strict(), local()] {
                let e = refused(ip, &policy);
                assert!(e.contains(carried) && e.contains(form), "{ip}: {e}");
            }
        }
    }

    #[test]
    fn carried_loopback_follows_the_loopback_policy() {
        for ip in [
            "::127.0.0.1",
            "::ffff:0:127.0.0.1",
            "2002:7f00:1::",
            "64:ff9b::7f00:1",
        ] {
            let e = refused(ip, &strict());
            assert!(
                e.contains("127.0.0.1") && e.contains("loopback"),
                "{ip}: {e}"
            );
            assert!(
                check_address(ip.parse().expect("literal"), &local()).is_ok(),
                "{ip}"
            );
        }
    }

    #[test]
    fn site_local_and_the_plain_refusals() {
        assert!(refused("fec0::1", &local()).contains("site-local"));
        assert!(refused("feff::1", &local()).contains("site-local"));
        assert!(refused("fe80::1", &local()).ends_with(LINK_LOCAL));
        assert!(refused("ff02::1", &local()).contains("multicast"));
        assert!(refused("255.255.255.255", &local()).contains("broadcast"));
        assert!(refused("::1", &strict()).contains("loopback"));
        assert!(refused("::", &strict()).contains("unspecified"));
        assert_eq!(
            refused("169.254.170.2", &strict()),
            "169.254.170.2 is a link-local/metadata address; the gateway never routes to it"
        );
    }

    #[test]
    fn ordinary_addresses_pass() {
        for ip in [
            "10.1.2.3",
            "93.184.216.34",
            "2001:db8::1",
            "2600:1f18::1",
            "fd12::1",
            "2002:0a00:0001::1",
            "64:ff9b::a00:1",
            "64:ff9b:1::a00:1",
        ] {
            assert!(
                check_address(ip.parse().expect("literal"), &strict()).is_ok(),
                "{ip}"
            );
        }
    }

    #[test]
    fn the_cidr_allow_list_is_enforced_and_named() {
        let policy = strict()
            .with_backend_rules("", "10.0.0.0/8, fd00::/8")
            .expect("valid rules");
        assert!(check_address("10.9.9.9".parse().expect("ip"), &policy).is_ok());
        assert!(check_address("fd12::1".parse().expect("ip"), &policy).is_ok());
        let e = refused("93.184.216.34", &policy);
        assert_eq!(
            e,
            "93.184.216.34 is outside the networks backends may be in (GATEWAY_BACKEND_CIDRS: 10.0.0.0/8, fd00::/8)"
        );
        // A refused class stays refused inside an allowed range.
        assert!(refused(
            "169.254.169.254",
            &strict().with_backend_rules("", "0.0.0.0/0").expect("ok")
        )
        .contains("link-local"));
    }
}
