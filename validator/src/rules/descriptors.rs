//! Descriptors and rule tree agree: every descriptor a route's rate-limit actions can send is
//! counted by exactly one rule, and every rule is reachable by some route. A descriptor no rule
//! matches is a limit that silently does not apply; a rule no route reaches is dead config.
//!
//! The lookup below is the service's (`Level::select`: per descriptor entry, `key_value` first,
//! then the first `key_prefix*` wildcard in file order, then `key` alone; the limit is the one
//! on the node of the last entry), plus what a value known only at request time could reach.

use super::ratelimit_yaml::{Level, RuleNode, RuleTree};
use super::{Findings, RuleViolation};
use gateway_render::contract::{RATE_LIMIT_FILE, ROUTES_FILE};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// One descriptor entry: its key, and its value when fixed in the config (`None` when Envoy
/// only knows it at request time: client address, header value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DescriptorEntry {
    pub key: String,
    pub value: Option<String>,
}

/// A descriptor some route can send, and where it comes from.
#[derive(Debug)]
pub(crate) struct Chain {
    pub origin: String,
    pub entries: Vec<DescriptorEntry>,
}

/// Every descriptor the route configuration's global rate-limit actions can send. Only stage 0
/// counts: it is the stage of the bootstrap's global rate-limit filter.
pub(crate) fn route_chains(rc: &Value, f: &mut Findings<'_>) -> Vec<Chain> {
    let mut chains = Vec::new();
    for (i, vh) in rc
        .get("virtual_hosts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let vh_label = vh.get("name").and_then(Value::as_str).map_or_else(
            || format!("virtual_hosts[{i}]"),
            |n| format!("virtual host {n}"),
        );
        collect(vh.get("rate_limits"), None, &vh_label, &mut chains, f);
        for (route, label) in super::labelled_routes(vh, &vh_label) {
            let action = route.get("route");
            let cluster = action
                .and_then(|a| a.get("cluster"))
                .and_then(Value::as_str);
            collect(
                action.and_then(|a| a.get("rate_limits")),
                cluster,
                &label,
                &mut chains,
                f,
            );
        }
    }
    chains
}

fn collect(
    rate_limits: Option<&Value>,
    cluster: Option<&str>,
    label: &str,
    chains: &mut Vec<Chain>,
    f: &mut Findings<'_>,
) {
    for (k, rl) in rate_limits
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if rl.get("stage").and_then(Value::as_u64).unwrap_or(0) != 0 {
            continue;
        }
        let origin = format!("{label}, rate_limits[{k}]");
        let mut entries = Vec::new();
        for action in rl
            .get("actions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match action_entry(action, cluster) {
                Ok(entry) => entries.push(entry),
                Err(reason) => {
                    f.add(&origin, reason);
                    entries.clear();
                    break;
                }
            }
        }
        if !entries.is_empty() {
            chains.push(Chain { origin, entries });
        }
    }
}

/// The descriptor entry an Envoy rate-limit action emits (keys as Envoy 1.40 names them).
fn action_entry(action: &Value, cluster: Option<&str>) -> Result<DescriptorEntry, String> {
    let Some((kind, cfg)) = action.as_object().and_then(|m| m.iter().next()) else {
        return Err("empty rate-limit action".into());
    };
    let key_or = |default: &str| {
        cfg.get("descriptor_key")
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_string()
    };
    let fixed = |key: String| DescriptorEntry {
        key,
        value: cfg
            .get("descriptor_value")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    let dynamic = |key: String| DescriptorEntry { key, value: None };
    Ok(match kind.as_str() {
        "generic_key" => fixed(key_or("generic_key")),
        "header_value_match" => fixed(key_or("header_match")),
        "query_parameter_value_match" => fixed(key_or("query_match")),
        "destination_cluster" => DescriptorEntry {
            key: "destination_cluster".into(),
            value: cluster.map(str::to_string),
        },
        "remote_address" => dynamic("remote_address".into()),
        "masked_remote_address" => dynamic("masked_remote_address".into()),
        "source_cluster" => dynamic("source_cluster".into()),
        "request_headers" | "query_parameters" | "metadata" | "dynamic_metadata" => {
            match cfg.get("descriptor_key").and_then(Value::as_str) {
                Some(k) => dynamic(k.to_string()),
                None => return Err(format!("{kind} action without descriptor_key")),
            }
        }
        other => {
            return Err(format!(
                "rate-limit action {other}: the validator does not know which descriptor it sends"
            ))
        }
    })
}

fn show(entries: &[DescriptorEntry]) -> String {
    entries
        .iter()
        .map(|e| {
            format!(
                "{}={}",
                e.key,
                e.value.as_deref().unwrap_or("<request-time>")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves a descriptor as the service would: the rule whose limit applies, or why none does.
fn resolve<'t>(tree: &'t RuleTree, entries: &[DescriptorEntry]) -> Result<&'t RuleNode, String> {
    let mut level: Level<'t> = tree.level();
    let mut at = tree.domain.clone();
    for (i, entry) in entries.iter().enumerate() {
        let next = match &entry.value {
            Some(value) => level.select(&entry.key, value).map(|(node, _)| node),
            None => {
                // A value known only at request time could hit any `key_...` sibling instead.
                let prefix = format!("{}_", entry.key);
                if let Some((other, _)) =
                    level.children.iter().find(|(k, _)| k.starts_with(&prefix))
                {
                    return Err(format!(
                        "{} is only known at request time and may match rule {at}.{other} instead of {at}.{}",
                        entry.key, entry.key
                    ));
                }
                level.children.get(&entry.key)
            }
        };
        let Some(node) = next else {
            return Err(format!(
                "no rule under {at} for {}={}",
                entry.key,
                entry.value.as_deref().unwrap_or("<request-time>")
            ));
        };
        if i + 1 == entries.len() {
            return if node.limit.is_some() {
                Ok(node)
            } else {
                Err(format!("rule {} has no rate_limit", node.path))
            };
        }
        if node.children.is_empty() {
            return Err(format!(
                "rule {} ends before the descriptor does",
                node.path
            ));
        }
        level = node.level();
        at = node.path.clone();
    }
    Err("empty descriptor".into())
}

pub(crate) fn agree(chains: &[Chain], tree: &RuleTree, out: &mut Vec<RuleViolation>) {
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    {
        let mut f = Findings {
            file: ROUTES_FILE,
            out: &mut *out,
        };
        for chain in chains {
            match resolve(tree, &chain.entries) {
                Ok(node) => {
                    reached.insert(&node.path);
                }
                Err(reason) => f.add(
                    &chain.origin,
                    format!(
                        "descriptor ({}) is counted by no rule in {RATE_LIMIT_FILE}: {reason}",
                        show(&chain.entries)
                    ),
                ),
            }
        }
    }
    let mut f = Findings {
        file: RATE_LIMIT_FILE,
        out,
    };
    unreached(&tree.children, &reached, &mut f);
}

fn unreached(level: &BTreeMap<String, RuleNode>, reached: &BTreeSet<&str>, f: &mut Findings<'_>) {
    for node in level.values() {
        if node.limit.is_some() && !reached.contains(node.path.as_str()) {
            f.add(
                &node.path,
                "no route sends this descriptor: the rule can never apply",
            );
        }
        if node.limit.is_none() && node.children.is_empty() {
            f.add(&node.path, "has neither rate_limit nor descriptors");
        }
        unreached(&node.children, reached, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::ratelimit_yaml;
    use crate::rules::testing::run;
    use serde_json::json;

    fn tree(yaml: &str) -> RuleTree {
        let (tree, v) = run(RATE_LIMIT_FILE, |f| ratelimit_yaml::check(yaml, f));
        assert!(v.is_empty(), "{v:?}");
        tree.expect("tree")
    }

    fn gk(key: &str, value: &str) -> Value {
        json!({"generic_key": {"descriptor_key": key, "descriptor_value": value}})
    }

    fn rc(actions: Vec<Vec<Value>>) -> Value {
        let rate_limits: Vec<Value> = actions.into_iter().map(|a| json!({"actions": a})).collect();
        json!({"virtual_hosts": [{"name": "billing", "routes": [
            {"name": "r1", "route": {"cluster": "c", "rate_limits": rate_limits}}]}]})
    }

    fn check(rc: &Value, yaml: &str) -> Vec<String> {
        let tree = tree(yaml);
        let (chains, mut v) = run(ROUTES_FILE, |f| route_chains(rc, f));
        agree(&chains, &tree, &mut v);
        v.iter().map(ToString::to_string).collect()
    }

    /// Route r1's two descriptors, after `before`: the team's route counter and its per-client
    /// one, which `RULES` both count.
    fn with_r1_limits(before: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
        let mut actions = before;
        actions.push(vec![gk("team", "billing"), gk("route", "r1")]);
        actions.push(vec![
            gk("team", "billing"),
            gk("route", "r1"),
            json!({"remote_address": {}}),
        ]);
        actions
    }

    const RULES: &str = "domain: gateway\ndescriptors:\n- key: team\n  value: billing\n  descriptors:\n  - key: route\n    value: r1\n    rate_limit: {unit: minute, requests_per_unit: 5}\n    descriptors:\n    - key: remote_address\n      rate_limit: {unit: second, requests_per_unit: 1}\n";

    #[test]
    fn matching_descriptors_and_rules_agree() {
        let rc = rc(with_r1_limits(vec![]));
        assert_eq!(check(&rc, RULES), Vec::<String>::new());
    }

    #[test]
    fn a_descriptor_without_a_rule_is_a_violation() {
        let mut actions = with_r1_limits(vec![]);
        actions.push(vec![gk("team", "billing"), gk("route", "r2")]);
        let rc = rc(actions);
        assert_eq!(
            check(&rc, RULES),
            ["routes.json: virtual host billing, route r1, rate_limits[2]: descriptor (team=billing, route=r2) is counted by no rule in ratelimit.yaml: no rule under gateway.team_billing for route=r2"]
        );
    }

    #[test]
    fn a_descriptor_stopping_at_a_rule_without_limit_is_a_violation() {
        let rc = rc(with_r1_limits(vec![vec![gk("team", "billing")]]));
        let v = check(&rc, RULES);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].ends_with("rule gateway.team_billing has no rate_limit"),
            "{v:?}"
        );
    }

    #[test]
    fn an_unreachable_rule_is_a_violation() {
        let rc = rc(vec![vec![gk("team", "billing"), gk("route", "r1")]]);
        assert_eq!(
            check(&rc, RULES),
            ["ratelimit.yaml: gateway.team_billing.route_r1.remote_address: no route sends this descriptor: the rule can never apply"]
        );
    }

    #[test]
    fn request_time_values_must_not_collide_with_fixed_rules() {
        let yaml = "domain: gateway\ndescriptors:\n- key: remote_address\n  rate_limit: {unit: second, requests_per_unit: 1}\n- key: remote_address\n  value: 10.0.0.1\n  rate_limit: {unit: second, requests_per_unit: 9}\n";
        let rc = rc(vec![vec![json!({"remote_address": {}})]]);
        let v = check(&rc, yaml);
        assert!(
            v.iter()
                .any(|s| s.contains("may match rule gateway.remote_address_10.0.0.1")),
            "{v:?}"
        );
    }

    #[test]
    fn unknown_actions_and_other_stages_are_handled() {
        let mut rc = rc(vec![vec![json!({"extension": {}})]]);
        rc["virtual_hosts"][0]["routes"][0]["route"]["rate_limits"]
            .as_array_mut()
            .expect("list")
            .push(json!({"stage": 1, "actions": [gk("nothing", "x")]}));
        let v = check(&rc, "domain: gateway\n");
        assert_eq!(
            v,
            ["routes.json: virtual host billing, route r1, rate_limits[0]: rate-limit action extension: the validator does not know which descriptor it sends"]
        );
    }
}
