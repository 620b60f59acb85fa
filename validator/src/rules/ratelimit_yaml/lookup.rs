//! Which rule a descriptor reaches (`GetLimit` in envoyproxy/ratelimit's config_impl.go): per
//! entry, the child keyed `key_value`, else the first wildcard child (in file order) whose key
//! without its trailing `*` begins `key_value`, else the child keyed `key` alone; the limit is
//! the one on the node the last entry reaches, and the walk stops where the rules end.

use super::{RuleLimit, RuleNode, RuleSet};
use std::collections::BTreeMap;

/// The limit a descriptor reaches, and for each entry matched through a `share_threshold`
/// wildcard the pattern it counts under (`files/*`: every matching value shares one counter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched<'t> {
    pub limit: &'t RuleLimit,
    pub path: &'t str,
    pub shared: Vec<Option<String>>,
}

/// One level of rules: the children by final key, and the wildcard keys among them in file order.
#[derive(Clone, Copy)]
pub struct Level<'t> {
    pub children: &'t BTreeMap<String, RuleNode>,
    pub wildcards: &'t [String],
}

impl<'t> Level<'t> {
    /// The child one descriptor entry selects, and whether through a wildcard.
    pub fn select(self, key: &str, value: &str) -> Option<(&'t RuleNode, bool)> {
        let composite = format!("{key}_{value}");
        if let Some(node) = self.children.get(&composite) {
            return Some((node, false));
        }
        for wildcard in self.wildcards {
            let prefix = wildcard.strip_suffix('*').unwrap_or(wildcard);
            if composite.starts_with(prefix) {
                if let Some(node) = self.children.get(wildcard) {
                    return Some((node, true));
                }
            }
        }
        self.children.get(key).map(|node| (node, false))
    }
}

impl RuleSet {
    /// The limit for `entries` (key, value pairs in order) in `domain`, if any rule with a
    /// limit is reached by the last entry.
    pub fn limit<'t>(&'t self, domain: &str, entries: &[(String, String)]) -> Option<Matched<'t>> {
        let tree = self.domains.get(domain)?;
        let mut level = tree.level();
        let mut shared = vec![None; entries.len()];
        let mut found = None;
        for (i, (key, value)) in entries.iter().enumerate() {
            let Some((node, by_wildcard)) = level.select(key, value) else {
                break;
            };
            if by_wildcard && node.share_threshold {
                let pattern = &node.final_key;
                let pattern = pattern.strip_prefix(&format!("{key}_")).unwrap_or(pattern);
                shared[i] = Some(pattern.to_string());
            }
            if i + 1 == entries.len() {
                found = node.limit.as_ref().map(|limit| (limit, node.path.as_str()));
            }
            if node.children.is_empty() {
                break;
            }
            level = node.level();
        }
        let (limit, path) = found?;
        Some(Matched {
            limit,
            path,
            shared,
        })
    }
}

impl super::RuleTree {
    pub fn level(&self) -> Level<'_> {
        Level {
            children: &self.children,
            wildcards: &self.wildcards,
        }
    }
}

impl RuleNode {
    pub fn level(&self) -> Level<'_> {
        Level {
            children: &self.children,
            wildcards: &self.wildcards,
        }
    }
}
