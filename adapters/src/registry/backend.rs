//! Backend claims: a backend belongs to the team that first registered it
//! (docs/design.md#ownership-and-conflicts).
//!
//! Without them, a team that registers another team's backend as its own publishes every path
//! and method of that backend on its own host, without the owner's limits. So each backend
//! authority (`host:port`, the host lowercased and the scheme's default port written out) has
//! one row, `BACKEND#{authority}` / `BACKEND`: `team`, the holder; `users`, the `team/service`
//! ids using it; `shared_with`, the teams operators allowed (`gatewayctl backend share`).
//!
//! A registration that starts using an authority adds its id to `users` in its own transaction,
//! under the condition that nobody holds the authority, its team does, or it is shared with its
//! team; a claim nobody uses any more (no `users`) is free to the next team. One that stops
//! using it removes its id. While any service uses an authority its holder therefore cannot
//! change, and an authority the entry keeps needs no write at all: its id is already a user.
//! Claims are on the authority as written, not on what a name resolves to: the operators'
//! `GATEWAY_BACKEND_CIDRS` and `GATEWAY_BACKEND_DOMAINS` fence addresses.

use super::error::from_sdk;
use super::keys::{self, Item};
use super::RegistryError;
use gateway_render::check::{parse_backend, BackendHost};
use gateway_render::Entry;
use std::collections::BTreeSet;

/// One backend claim as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BackendClaim {
    /// `host:port`.
    pub authority: String,
    /// The team holding it.
    pub team: String,
    /// The `team/service` ids using it; empty for a claim nobody uses (free to the next team).
    pub users: BTreeSet<String>,
    /// Teams operators shared it with.
    pub shared_with: BTreeSet<String>,
}

impl BackendClaim {
    pub(crate) fn from_item(item: &Item) -> Result<BackendClaim, RegistryError> {
        let pk = keys::need_s(item, keys::PK)?;
        let set = |name: &str| -> BTreeSet<String> {
            item.get(name)
                .and_then(|v| v.as_ss().ok())
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default()
        };
        Ok(BackendClaim {
            authority: pk
                .strip_prefix(keys::BACKEND_PREFIX)
                .unwrap_or(pk)
                .to_string(),
            team: keys::need_s(item, keys::ATTR_TEAM)?.to_string(),
            users: set(keys::ATTR_USERS),
            shared_with: set(keys::ATTR_SHARED_WITH),
        })
    }

    /// Whether `team`'s services may use it: the holder's own, or a team it is shared with.
    pub fn admits(&self, team: &str) -> bool {
        self.team == team || self.shared_with.contains(team)
    }

    /// Whether no service uses it: the next team to register it takes it.
    pub fn is_stale(&self) -> bool {
        self.users.is_empty()
    }
}

/// The authority a backend URL claims: `host:port`, the name lowercased, an IPv6 address in
/// brackets in its canonical form, the port written out (80 for `http://`, 443 for `https://`).
/// An IPv4-mapped IPv6 address (`[::ffff:10.0.0.7]`) is the IPv4 address it maps: a socket
/// connects to that very address. `None` for a URL the checks would refuse (only an entry stored
/// under older rules has one).
pub(crate) fn authority(url: &str) -> Option<String> {
    let backend = parse_backend(url).ok()?;
    let host = match backend.host {
        BackendHost::Name(name) => name.to_ascii_lowercase(),
        BackendHost::V4(ip) => ip.to_string(),
        BackendHost::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{ip}]"),
        },
    };
    Some(format!("{host}:{}", backend.port))
}

/// Every authority `entry` sends traffic to (`Entry::upstreams`: `backend`, `canary.backend`).
pub(crate) fn authorities(entry: &Entry) -> BTreeSet<String> {
    entry
        .upstreams()
        .into_iter()
        .filter_map(|(_, url)| authority(url))
        .collect()
}

/// An authority as an operator writes it: `host:port`, or a backend URL
/// (`https://invoices.internal.example` is `invoices.internal.example:443`).
pub fn parse_authority(arg: &str) -> Result<String, String> {
    let lower = arg.to_ascii_lowercase();
    let url = if lower.contains("://") {
        lower
    } else {
        let port_written = match lower.strip_prefix('[') {
            Some(rest) => rest.contains("]:"),
            None => lower.contains(':'),
        };
        if !port_written {
            return Err(format!(
                "{arg:?} has no port: write host:port (invoices.internal.example:8443) or the backend URL (https://invoices.internal.example)"
            ));
        }
        format!("http://{lower}")
    };
    parse_backend(&url)
        .map_err(|why| format!("{arg:?}: {why}"))
        .and_then(|_| authority(&url).ok_or_else(|| format!("{arg:?} does not parse")))
}

/// A backend another team holds, naming the holder and how operators share it.
pub(crate) fn backend_conflict(authority: &str, holder: &str, claimant: &str) -> RegistryError {
    RegistryError::Conflict {
        what: format!("backend {authority}"),
        holder: format!(
            "team {holder} (operators can share it: gatewayctl backend share {authority} {claimant})"
        ),
    }
}

/// One backend claim, read consistently.
pub(crate) async fn read_claim(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    authority: &str,
) -> Result<Option<BackendClaim>, RegistryError> {
    let got = client
        .get_item()
        .table_name(table)
        .set_key(Some(keys::backend_key(authority)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| from_sdk(&format!("reading the claim of backend {authority}"), e))?;
    got.item().map(BackendClaim::from_item).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authority_is_the_lowercase_host_and_the_port_written_out() {
        let cases = [
            (
                "https://invoices.internal.example:8443",
                "invoices.internal.example:8443",
            ),
            (
                "https://invoices.internal.example",
                "invoices.internal.example:443",
            ),
            (
                "https://invoices.internal.example/",
                "invoices.internal.example:443",
            ),
            (
                "http://invoices.internal.example",
                "invoices.internal.example:80",
            ),
            ("http://10.0.0.7:8080", "10.0.0.7:8080"),
            ("https://[2001:db8:0:0::1]", "[2001:db8::1]:443"),
            ("http://[::ffff:10.0.0.7]:8080", "10.0.0.7:8080"),
        ];
        for (url, expected) in cases {
            assert_eq!(authority(url).as_deref(), Some(expected), "{url}");
        }
        // http and https on the same host and port are one backend.
        assert_eq!(
            authority("http://x.example:443"),
            authority("https://x.example")
        );
        assert_eq!(authority("ftp://x.example"), None);
    }

    #[test]
    fn operators_write_an_authority_or_a_url() {
        assert_eq!(
            parse_authority("Invoices.Internal.Example:8443").as_deref(),
            Ok("invoices.internal.example:8443")
        );
        assert_eq!(
            parse_authority("https://invoices.internal.example").as_deref(),
            Ok("invoices.internal.example:443")
        );
        assert_eq!(
            parse_authority("[2001:DB8::1]:443").as_deref(),
            Ok("[2001:db8::1]:443")
        );
        let no_port = parse_authority("invoices.internal.example").unwrap_err();
        assert!(no_port.contains("has no port"), "{no_port}");
        assert!(parse_authority("x.example:0").is_err());
        assert!(parse_authority("[2001:db8::1]").is_err());
    }

    #[test]
    fn a_conflict_names_the_holder_and_the_way_to_share() {
        assert_eq!(
            backend_conflict("invoices.internal.example:8443", "alpha", "intruder").to_string(),
            "backend invoices.internal.example:8443 is held by team alpha (operators can share it: gatewayctl backend share invoices.internal.example:8443 intruder)"
        );
    }
}
