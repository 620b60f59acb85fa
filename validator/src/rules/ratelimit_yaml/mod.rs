//! envoyproxy/ratelimit's loader, as production runs it (the image pinned in
//! `infra/lib/proxy-service.ts`): what it refuses at start-up or on a reload (it then keeps its
//! old rules, or serves none at start), and what it serves otherwise. The validator's layer 1
//! and the local rate-limit service both load through here, so they cannot disagree on what a
//! file means; `validator/tests/ratelimit_peer.rs` holds this loader to upstream's own loader
//! tests.
//!
//! - [`yaml`]: the document as yaml.v2 parses it (libyaml's parser: same structure and errors);
//! - [`resolve`]: what type yaml.v2 gives each scalar;
//! - [`decode`]: the loader's two passes (known keys and leaf types, then its typed structs);
//! - [`build`]: its reading of the decoded files (domains, keys, units, replaces);
//! - [`lookup`]: which rule a descriptor reaches.
//!
//! Layer 1 ([`check`]) refuses, besides what the service refuses, what the service accepts but
//! the gateway's renderer never writes (a feature such as `shadow_mode` or `share_threshold`,
//! a unit past `day`, a wildcard value, YAML the renderer does not produce), naming it as
//! accepted by envoyproxy/ratelimit; and a domain other than the one the proxy asks for.

mod build;
mod decode;
mod lookup;
mod resolve;
mod yaml;

use super::{Findings, RuleViolation};
use gateway_render::contract::{RATE_LIMIT_DOMAIN, RATE_LIMIT_FILE};
use std::collections::BTreeMap;
use std::fmt;

pub use decode::KNOWN_KEYS;
pub use lookup::{Level, Matched};

/// A unit the service knows (its protocol's units, any case in the file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleUnit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl RuleUnit {
    pub const ALL: [RuleUnit; 7] = [
        RuleUnit::Second,
        RuleUnit::Minute,
        RuleUnit::Hour,
        RuleUnit::Day,
        RuleUnit::Week,
        RuleUnit::Month,
        RuleUnit::Year,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RuleUnit::Second => "second",
            RuleUnit::Minute => "minute",
            RuleUnit::Hour => "hour",
            RuleUnit::Day => "day",
            RuleUnit::Week => "week",
            RuleUnit::Month => "month",
            RuleUnit::Year => "year",
        }
    }

    /// The service's window (`UnitToDivider`): a month is 30 days, a year 365.
    pub fn seconds(self) -> u64 {
        match self {
            RuleUnit::Second => 1,
            RuleUnit::Minute => 60,
            RuleUnit::Hour => 3600,
            RuleUnit::Day => 86_400,
            RuleUnit::Week => 7 * 86_400,
            RuleUnit::Month => 30 * 86_400,
            RuleUnit::Year => 365 * 86_400,
        }
    }

    /// As the service reads a unit: upper-cased (Unicode, as Go's `strings.ToUpper`), one of
    /// the protocol's names but `UNKNOWN`.
    pub fn parse(text: &str) -> Option<RuleUnit> {
        let upper = text.to_uppercase();
        RuleUnit::ALL
            .into_iter()
            .find(|u| u.as_str().to_uppercase() == upper)
    }
}

/// A rule's `rate_limit`, with the descriptor flags the service keeps on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleLimit {
    /// `None` only for an unlimited rule (which may carry no unit, or one the service does not
    /// know).
    pub unit: Option<RuleUnit>,
    pub requests_per_unit: u32,
    pub unlimited: bool,
    /// Counted and reported, never refused.
    pub shadow_mode: bool,
    /// Counted; over the limit is reported in the status but answered OK.
    pub quota_mode: bool,
    /// What `replaces` entries of other rules name this one by.
    pub name: String,
    /// Names of the rules this one drops when both apply to one request.
    pub replaces: Vec<String>,
    /// Statistics per value (the service's metrics only).
    pub detailed_metric: bool,
}

/// A rule, by the service's composite key (`gateway.team_billing.service_x.route_y`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RuleNode {
    pub path: String,
    /// `key` or `key_value`, as the service indexes it.
    pub final_key: String,
    /// The rule's limit, when it has a `rate_limit`.
    pub limit: Option<RuleLimit>,
    /// By final key.
    pub children: BTreeMap<String, RuleNode>,
    /// The children's final keys that end in `*`, in file order (tried in that order).
    pub wildcards: Vec<String>,
    /// Every value this wildcard matches shares one counter.
    pub share_threshold: bool,
    /// Statistics name the request's value (the service's metrics only).
    pub value_to_metric: bool,
}

/// One domain's rules.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RuleTree {
    pub domain: String,
    pub children: BTreeMap<String, RuleNode>,
    pub wildcards: Vec<String>,
}

/// Every domain the service loaded, from all the files of its directory.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RuleSet {
    pub domains: BTreeMap<String, RuleTree>,
}

/// One rules file: the name the service gives it (its path under the watched directory, as
/// the service names it in its messages) and its text.
#[derive(Debug, Clone, Copy)]
pub struct RulesFile<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

/// One reason the service refuses a load. Displayed as the service words it: `FILE: REASON`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub file: String,
    /// Where in the file: `document…`, `domain`, or a rule's path.
    pub object: String,
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.reason)
    }
}

/// Loads a set of files as production's service loads its directory: the rules it would
/// serve, or every reason it would refuse them (the first is the one it logs).
pub fn load_files(files: &[RulesFile<'_>]) -> Result<RuleSet, Vec<Refusal>> {
    load_files_with(files, false)
}

/// [`load_files`] with the service's MERGE_DOMAIN_CONFIG: files naming one domain add to it.
pub fn load_files_with(
    files: &[RulesFile<'_>],
    merge_domains: bool,
) -> Result<RuleSet, Vec<Refusal>> {
    let mut refusals = Vec::new();
    let mut roots = Vec::new();
    for file in files {
        match decode::decode(file.text) {
            Ok(decoded) => roots.push((file.name.to_string(), decoded.root)),
            Err(reasons) => refusals.extend(reasons.into_iter().map(|r| Refusal {
                file: file.name.to_string(),
                object: r.at,
                reason: r.reason,
            })),
        }
    }
    if !refusals.is_empty() {
        return Err(refusals);
    }
    let set = build::build(&roots, merge_domains, &mut refusals, &mut Vec::new());
    if refusals.is_empty() {
        Ok(set)
    } else {
        Err(refusals)
    }
}

/// Loads one rules file, named as the gateway names it (`ratelimit.yaml`).
pub fn load(text: &str) -> Result<RuleSet, Vec<Refusal>> {
    load_files(&[RulesFile {
        name: RATE_LIMIT_FILE,
        text,
    }])
}

/// Layer 1 on `ratelimit.yaml` alone: what the service refuses, what the gateway's renderer
/// never writes, and a foreign domain; empty when the file is what the renderer writes.
pub fn check_rules_file(text: &str) -> Vec<RuleViolation> {
    let mut out = Vec::new();
    check(
        text,
        &mut Findings {
            file: RATE_LIMIT_FILE,
            out: &mut out,
        },
    );
    out
}

/// Layer 1: checks the rules file; returns the gateway domain's rule tree when the file could
/// be decoded (so the descriptors can be checked against it too).
pub(crate) fn check(text: &str, f: &mut Findings<'_>) -> Option<RuleTree> {
    let decoded = match decode::decode(text) {
        Ok(decoded) => decoded,
        Err(reasons) => {
            for r in reasons {
                f.add(r.at, r.reason);
            }
            return None;
        }
    };
    let domain = decoded.root.domain.clone();
    let mut refusals = Vec::new();
    let mut notes = decoded.notes;
    let mut set = build::build(
        &[(RATE_LIMIT_FILE.to_string(), decoded.root)],
        false,
        &mut refusals,
        &mut notes,
    );
    for r in refusals {
        f.add(r.object, r.reason);
    }
    for n in notes {
        f.add(
            n.at,
            format!(
                "{} is accepted by envoyproxy/ratelimit but not used by the gateway's renderer",
                n.what
            ),
        );
    }
    if !domain.is_empty() && domain != RATE_LIMIT_DOMAIN {
        f.add(
            "domain",
            format!("is {domain:?}; the proxy asks for domain {RATE_LIMIT_DOMAIN:?}"),
        );
    }
    Some(set.domains.remove(&domain).unwrap_or(RuleTree {
        domain,
        ..RuleTree::default()
    }))
}

#[cfg(test)]
mod tests;
