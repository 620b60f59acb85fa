//! One host's guard rows, read together: the host guard and every path guard under `HOST#{fqdn}`.
//!
//! Hosts inside hosts. A team's host must not be a subdomain of another team's host, nor a
//! parent of one (cookies scoped to the parent reach every subdomain). The check is race-free
//! without a lock because of where it is written: the host guard row of every *enclosing* host
//! (each label suffix in front of the base domain: `a.x` is enclosed by `x`) keeps `under`, the
//! set of hosts below it and their teams. A registration that claims a host writes, in the same
//! transaction as its own host guard, the guard row of each enclosing host: its version is bumped
//! under a version condition and the claimed host is added to `under`. A registration claiming
//! an enclosing host writes that same row under the same kind of condition. So two teams racing
//! for `a.x` and `x` both write the `x` row conditioned on the version they read: one commits,
//! the other's condition fails and, re-reading, finds the conflict (the enclosing host's team, or
//! the inner host in `under`) and names its holder. Releasing a host removes it from `under` the
//! same way. Enclosing rows are full puts computed from a consistent read (the version condition
//! proves nothing changed in between), so a row touched for several reasons in one registration
//! (moving from `b.x` to `a.x`) is written once. Depth is bounded by `MAX_HOST_LABELS`, so the
//! rows fit the transaction.

use super::keys::{self, Item};
use super::pages::query_partition;
use super::{error::from_sdk, RegistryError};
use std::collections::BTreeMap;

/// Attribute on a host guard row: the hosts inside this one that a team holds, `"{fqdn} {team}"`.
pub(crate) const ATTR_UNDER: &str = "under";

/// The host guard: which team holds the host (none once released) and its version. The row
/// outlives its team: a released host keeps its version, so a registration that read the host
/// before a release and a re-claim can never match the version again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostGuard {
    pub team: Option<String>,
    pub version: u64,
    /// Held hosts inside this one: fqdn → team.
    pub under: BTreeMap<String, String>,
    /// The claim counters as read (`claims`, `root`, `seg:{segment}` → value; see
    /// [`claim_counters`]). They only ever grow.
    pub counters: BTreeMap<String, u64>,
}

/// Host guard: counts every registration that claimed a new path prefix on the host.
pub(crate) const ATTR_CLAIMS: &str = "claims";
/// Host guard: counts every claim of the prefix `/` on the host.
pub(crate) const ATTR_ROOT: &str = "root";
/// Host guard: `seg:{first segment}` counts every claim of a prefix in that first segment.
pub(crate) const SEGMENT_PREFIX: &str = "seg:";

/// Which counters of the host guard a new claim of `prefix` bumps and which it requires
/// unchanged since the read, so registrations of different services on one host need not
/// serialise on the host guard's version (docs/design.md#registration-transaction).
///
/// Two prefixes overlap only when one is `/` or both share their first segment
/// (`prefixes_overlap`). A claim of `/a...` bumps `seg:a` and `claims` and requires `seg:a` and
/// `root` unchanged; a claim of `/` bumps `root` and `claims` and requires `claims` unchanged.
/// So of two overlapping claims the one committing second always finds a counter it required
/// moved, re-reads and sees the other; claims in different first segments touch no counter the
/// other requires.
/// An exact path's guard key (`=/healthz`) and a key with conditions (`/a~1a2b3c4d`) count in
/// their path's first segment.
pub(crate) fn claim_counters(prefix: &str) -> (Vec<String>, Vec<String>) {
    let path = prefix.split_once('~').map_or(prefix, |(path, _)| path);
    let segment = path
        .trim_start_matches('=')
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    if segment.is_empty() {
        (
            vec![ATTR_CLAIMS.to_string(), ATTR_ROOT.to_string()],
            vec![ATTR_CLAIMS.to_string()],
        )
    } else {
        let seg = format!("{SEGMENT_PREFIX}{segment}");
        (
            vec![ATTR_CLAIMS.to_string(), seg.clone()],
            vec![seg, ATTR_ROOT.to_string()],
        )
    }
}

impl HostGuard {
    pub fn from_item(item: &Item) -> Result<HostGuard, RegistryError> {
        let mut under = BTreeMap::new();
        if let Some(set) = item.get(ATTR_UNDER).and_then(|v| v.as_ss().ok()) {
            for element in set {
                if let Some((fqdn, team)) = element.split_once(' ') {
                    under.insert(fqdn.to_string(), team.to_string());
                }
            }
        }
        let counters = item
            .keys()
            .filter(|k| {
                k.as_str() == ATTR_CLAIMS
                    || k.as_str() == ATTR_ROOT
                    || k.starts_with(SEGMENT_PREFIX)
            })
            .filter_map(|k| keys::get_n(item, k).map(|v| (k.clone(), v)))
            .collect();
        Ok(HostGuard {
            team: keys::get_s(item, keys::ATTR_TEAM).map(str::to_string),
            version: keys::need_n(item, keys::ATTR_VERSION)?,
            under,
            counters,
        })
    }

    /// The `under` set as stored (none when empty: DynamoDB has no empty sets).
    pub fn under_set(under: &BTreeMap<String, String>) -> Option<Vec<String>> {
        (!under.is_empty()).then(|| {
            under
                .iter()
                .map(|(fqdn, team)| format!("{fqdn} {team}"))
                .collect()
        })
    }

    /// The first held host inside this one whose team is not `team`.
    pub fn foreign_under(&self, team: &str) -> Option<(&String, &String)> {
        self.under.iter().find(|(_, t)| t.as_str() != team)
    }
}

/// The hosts enclosing `host` (labels in front of `base_domain`), nearest first, as fqdns:
/// `a.b.c` → `b.c.{base}`, `c.{base}`. The base domain itself is the gateway's, not a team host.
pub(crate) fn enclosing_hosts(host: &str, base_domain: &str) -> Vec<String> {
    let base = base_domain.trim_end_matches('.');
    let labels: Vec<&str> = host.split('.').collect();
    (1..labels.len())
        .map(|i| format!("{}.{base}", labels[i..].join(".")))
        .collect()
}

/// One host guard row, read consistently (no path guards).
pub(crate) async fn read_guard(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    fqdn: &str,
) -> Result<Option<HostGuard>, RegistryError> {
    let got = client
        .get_item()
        .table_name(table)
        .set_key(Some(keys::key(keys::host_pk(fqdn), keys::HOST_SK)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| from_sdk(&format!("reading the guard of host {fqdn}"), e))?;
    got.item().map(HostGuard::from_item).transpose()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostView {
    pub fqdn: String,
    pub guard: Option<HostGuard>,
    /// prefix → owning `team/service`
    pub paths: BTreeMap<String, String>,
}

impl HostView {
    /// Prefixes on this host held by `id`.
    pub fn held_by<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        self.paths
            .iter()
            .filter(move |(_, holder)| holder.as_str() == id)
            .map(|(p, _)| p)
    }

    /// Whether any service other than `id` still holds a path here. Every entry has at least
    /// one route, hence one path guard, so this is "is `id` the last service on the host".
    pub fn others_remain(&self, id: &str) -> bool {
        self.paths.values().any(|holder| holder != id)
    }
}

/// A strongly consistent Query of the host's partition, all pages.
pub(crate) async fn read_host(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    fqdn: &str,
) -> Result<HostView, RegistryError> {
    let mut view = HostView {
        fqdn: fqdn.to_string(),
        guard: None,
        paths: BTreeMap::new(),
    };
    let items = query_partition(
        client,
        table,
        &keys::host_pk(fqdn),
        None,
        &format!("reading the guards of host {fqdn}"),
    )
    .await?;
    for item in &items {
        let sk = keys::need_s(item, keys::SK)?;
        if sk == keys::HOST_SK {
            view.guard = Some(HostGuard::from_item(item)?);
        } else if let Some(prefix) = sk.strip_prefix(keys::PATH_PREFIX) {
            let holder = keys::need_s(item, keys::ATTR_SERVICE)?;
            view.paths.insert(prefix.to_string(), holder.to_string());
        }
    }
    Ok(view)
}

#[cfg(test)]
mod tests {
    use super::{claim_counters, enclosing_hosts};
    use gateway_render::check::prefixes_overlap;

    /// Every pair of overlapping prefixes has a counter one bumps and the other requires, both
    /// ways round; the disjoint pairs here share none.
    #[test]
    fn overlapping_claims_always_meet_on_a_counter() {
        let paths = [
            "/", "/a", "/a/", "/a/b", "/a/b/c/", "/ab", "/b", "/b/a", "/a:x",
        ];
        for a in paths {
            for b in paths {
                let (bump_a, need_a) = claim_counters(a);
                let (bump_b, need_b) = claim_counters(b);
                let meet = bump_a.iter().any(|c| need_b.contains(c))
                    && bump_b.iter().any(|c| need_a.contains(c));
                assert_eq!(meet, prefixes_overlap(a, b), "{a} {b}");
            }
        }
    }

    #[test]
    fn enclosing_hosts_stop_at_the_base_domain() {
        assert_eq!(
            enclosing_hosts("a.b.c", "api.example.com"),
            ["b.c.api.example.com", "c.api.example.com"]
        );
        assert!(enclosing_hosts("invoices", "api.example.com").is_empty());
    }
}
