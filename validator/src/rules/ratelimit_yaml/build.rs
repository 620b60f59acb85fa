//! The loader's reading of decoded files (`loadConfig` and `loadDescriptors` in
//! envoyproxy/ratelimit's config_impl.go): a non-empty domain, each domain in one file only
//! (unless MERGE_DOMAIN_CONFIG is set, which infra does not set),
//! every descriptor with a key, `key` or `key_value` unique among siblings, a unit the service
//! knows unless unlimited and none when unlimited, `replaces` entries named and not the rule's
//! own name, `share_threshold` only on a value ending in `*`.

use super::decode::{Note, YamlDescriptor, YamlRoot};
use super::{Refusal, RuleLimit, RuleNode, RuleSet, RuleTree, RuleUnit};
use std::collections::BTreeMap;

/// Builds the rule set from each file's root, collecting every refusal (the service stops at
/// the first, in file order, which is the first here too).
/// `merge_domains` is the service's MERGE_DOMAIN_CONFIG (production leaves it off).
pub fn build(
    files: &[(String, YamlRoot)],
    merge_domains: bool,
    refusals: &mut Vec<Refusal>,
    notes: &mut Vec<Note>,
) -> RuleSet {
    let mut set = RuleSet::default();
    for (file, root) in files {
        let mut f = Sink {
            file,
            refusals: &mut *refusals,
            notes: &mut *notes,
        };
        if root.domain.is_empty() {
            f.refuse("domain", "config file cannot have empty domain");
            continue;
        }
        if let Some(tree) = set.domains.get_mut(&root.domain) {
            if !merge_domains {
                f.refuse(
                    "domain",
                    format!("duplicate domain '{}' in config file", root.domain),
                );
                continue;
            }
            load_descriptors(
                &root.descriptors,
                &format!("{}.", root.domain),
                &mut tree.children,
                &mut tree.wildcards,
                &mut f,
            );
            continue;
        }
        let mut tree = RuleTree {
            domain: root.domain.clone(),
            ..RuleTree::default()
        };
        load_descriptors(
            &root.descriptors,
            &format!("{}.", root.domain),
            &mut tree.children,
            &mut tree.wildcards,
            &mut f,
        );
        set.domains.insert(root.domain.clone(), tree);
    }
    set
}

struct Sink<'a> {
    file: &'a str,
    refusals: &'a mut Vec<Refusal>,
    notes: &'a mut Vec<Note>,
}

impl Sink<'_> {
    fn refuse(&mut self, object: impl Into<String>, reason: impl Into<String>) {
        self.refusals.push(Refusal {
            file: self.file.to_string(),
            object: object.into(),
            reason: reason.into(),
        });
    }

    /// A feature the gateway's renderer never writes, named by the rule's path.
    fn note(&mut self, path: &str, what: String) {
        self.notes.push(Note {
            at: path.to_string(),
            what,
        });
    }
}

fn load_descriptors(
    list: &[YamlDescriptor],
    parent: &str,
    level: &mut BTreeMap<String, RuleNode>,
    wildcards: &mut Vec<String>,
    f: &mut Sink<'_>,
) {
    for (i, d) in list.iter().enumerate() {
        if d.key.is_empty() {
            f.refuse(
                format!("{parent}descriptors[{i}]"),
                "descriptor has empty key",
            );
            continue;
        }
        let final_key = if d.value.is_empty() {
            d.key.clone()
        } else {
            format!("{}_{}", d.key, d.value)
        };
        let path = format!("{parent}{final_key}");
        if level.contains_key(&final_key) {
            f.refuse(
                &path,
                format!("duplicate descriptor composite key '{path}'"),
            );
            continue;
        }
        let limit = d.rate_limit.as_ref().map(|rl| {
            let unit = RuleUnit::parse(&rl.unit);
            if rl.unlimited && unit.is_some() {
                f.refuse(&path, "should not specify rate limit unit when unlimited");
            } else if !rl.unlimited && unit.is_none() {
                f.refuse(&path, format!("invalid rate limit unit '{}'", rl.unit));
            }
            for replaced in &rl.replaces {
                if replaced.is_empty() {
                    f.refuse(&path, "should not have an empty replaces entry");
                } else if *replaced == rl.name {
                    f.refuse(&path, "replaces should not contain name of same descriptor");
                }
            }
            if let Some(unit @ (RuleUnit::Week | RuleUnit::Month | RuleUnit::Year)) = unit {
                f.note(&path, format!("the unit '{}'", unit.as_str()));
            }
            if !rl.unlimited && rl.requests_per_unit == 0 {
                f.note(&path, "requests_per_unit 0 (every request refused)".into());
            }
            RuleLimit {
                unit,
                requests_per_unit: rl.requests_per_unit,
                unlimited: rl.unlimited,
                shadow_mode: d.shadow_mode,
                quota_mode: d.quota_mode,
                name: rl.name.clone(),
                replaces: rl.replaces.clone(),
                detailed_metric: d.detailed_metric,
            }
        });
        let wildcard = final_key.ends_with('*');
        if d.share_threshold && !wildcard {
            f.refuse(
                &path,
                format!("share_threshold can only be used with wildcard values (ending with '*'), but found key '{final_key}'"),
            );
        }
        if wildcard {
            f.note(
                &path,
                format!("the wildcard '{final_key}' (a prefix match)"),
            );
            wildcards.push(final_key.clone());
        }
        let mut node = RuleNode {
            path: path.clone(),
            final_key: final_key.clone(),
            limit,
            share_threshold: d.share_threshold && wildcard,
            value_to_metric: d.value_to_metric,
            ..RuleNode::default()
        };
        load_descriptors(
            &d.descriptors,
            &format!("{path}."),
            &mut node.children,
            &mut node.wildcards,
            f,
        );
        level.insert(final_key, node);
    }
}
