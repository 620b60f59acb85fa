//! envoyproxy/ratelimit's rejection rules for a rules file, checked generically on the YAML so
//! that anything the service would refuse is refused here first. The service rejects the whole
//! reload on any of these and keeps its old rules: a team's new limit would silently not apply.
//!
//! Mirrors the service's config loader: every map key must be one it knows (at any level),
//! lists hold maps, scalars are strings, integers or booleans; the domain is non-empty; each
//! descriptor has a key; `key` or `key_value` is unique among siblings; a `rate_limit` has a
//! unit of second/minute/hour/day (any case) unless unlimited.

use super::{Findings, RuleViolation};
use gateway_render::contract::{RATE_LIMIT_DOMAIN, RATE_LIMIT_FILE};
use gateway_render::Unit;
use serde_yaml::Value;
use std::collections::BTreeMap;

/// Every key the service's loader accepts, at any level.
const SERVICE_KEYS: &[&str] = &[
    "domain",
    "key",
    "value",
    "descriptors",
    "rate_limit",
    "unit",
    "requests_per_unit",
    "unlimited",
    "shadow_mode",
    "name",
    "replaces",
    "detailed_metric",
];
/// The units the gateway renders. The service knows these (case-insensitive); entries may only
/// use them.
pub const VALID_UNITS: &[&str] = &["second", "minute", "hour", "day"];

/// A rule, by the service's composite key (`gateway.team_billing.service_x.route_y`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RuleNode {
    pub path: String,
    /// The rule's limit, when it has one the service would use.
    pub limit: Option<RuleLimit>,
    /// By final key: `key` or `key_value`, as the service indexes them.
    pub children: BTreeMap<String, RuleNode>,
}

/// A rule's `rate_limit`, as the service reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleLimit {
    /// `None` only for an unlimited rule.
    pub unit: Option<Unit>,
    pub requests_per_unit: u32,
    pub unlimited: bool,
    /// Counted and reported, never refused.
    pub shadow_mode: bool,
}

/// The rules file as the service loads it: the domain and its descriptor tree.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RuleTree {
    pub domain: String,
    pub children: BTreeMap<String, RuleNode>,
}

/// Loads a rules file with the service's rules: the tree, or every reason the service would
/// refuse the whole file (it then keeps its old rules). The validator's layer 1 and the local
/// rate-limit service both load through here, so they cannot disagree on what a file means.
pub fn load(text: &str) -> Result<RuleTree, Vec<RuleViolation>> {
    let mut out = Vec::new();
    let tree = check(
        text,
        &mut Findings {
            file: RATE_LIMIT_FILE,
            out: &mut out,
        },
    );
    match tree {
        Some(tree) if out.is_empty() => Ok(tree),
        _ => Err(out),
    }
}

/// Checks the rules file; returns its rule tree when the structure could be read.
pub(crate) fn check(text: &str, f: &mut Findings<'_>) -> Option<RuleTree> {
    let doc: Value = match serde_yaml::from_str(text) {
        Ok(doc) => doc,
        Err(e) => {
            f.add("document", format!("error loading config file: {e}"));
            return None;
        }
    };
    let Value::Mapping(root) = &doc else {
        f.add(
            "document",
            "the top level must be a map with domain and descriptors",
        );
        return None;
    };
    known_keys(&doc, "document", f);
    let domain = scalar(root.get("domain")).unwrap_or_default();
    if domain.is_empty() {
        f.add("domain", "config file cannot have empty domain");
    } else if domain != RATE_LIMIT_DOMAIN {
        f.add(
            "domain",
            format!("is {domain:?}; the proxy asks for domain {RATE_LIMIT_DOMAIN:?}"),
        );
    }
    for key in root
        .keys()
        .filter_map(Value::as_str)
        .filter(|k| !matches!(*k, "domain" | "descriptors"))
    {
        if SERVICE_KEYS.contains(&key) {
            f.add(
                "document",
                format!("key '{key}' has no meaning at the top level"),
            );
        }
    }
    let mut tree = RuleTree {
        domain: domain.clone(),
        children: BTreeMap::new(),
    };
    load_descriptors(
        root.get("descriptors"),
        &format!("{domain}."),
        &mut tree.children,
        f,
    );
    Some(tree)
}

/// The service's generic pass: unknown keys anywhere, lists of non-maps, non-scalar leaves.
fn known_keys(v: &Value, at: &str, f: &mut Findings<'_>) {
    match v {
        Value::Mapping(map) => {
            for (k, child) in map {
                let Some(key) = k.as_str() else {
                    f.add(
                        at,
                        format!("config error, key is not of type string: {}", show(k)),
                    );
                    continue;
                };
                if !SERVICE_KEYS.contains(&key) {
                    f.add(at, format!("config error, unknown key '{key}'"));
                }
                known_keys(child, &format!("{at}.{key}"), f);
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                if item.is_mapping() {
                    known_keys(item, &format!("{at}[{i}]"), f);
                } else {
                    f.add(
                        at,
                        format!(
                            "config error, yaml file contains list of type other than map: {}",
                            show(item)
                        ),
                    );
                }
            }
        }
        Value::Number(n) if n.is_f64() => {
            f.add(at, format!("error checking config: {n} is not an integer"))
        }
        Value::Tagged(t) => f.add(at, format!("error checking config: tagged value {}", t.tag)),
        _ => {}
    }
}

fn load_descriptors(
    list: Option<&Value>,
    parent: &str,
    level: &mut BTreeMap<String, RuleNode>,
    f: &mut Findings<'_>,
) {
    let items = match list {
        None | Some(Value::Null) => return,
        Some(Value::Sequence(items)) => items,
        Some(other) => {
            f.add(
                format!("{parent}descriptors"),
                format!(
                    "error loading config file: expected a list, found {}",
                    show(other)
                ),
            );
            return;
        }
    };
    for (i, d) in items.iter().enumerate() {
        let Value::Mapping(d) = d else { continue }; // reported by known_keys
        let key = scalar(d.get("key")).unwrap_or_default();
        if key.is_empty() {
            f.add(
                format!("{parent}descriptors[{i}]"),
                "descriptor has empty key",
            );
            continue;
        }
        let value = scalar(d.get("value")).unwrap_or_default();
        let final_key = if value.is_empty() {
            key.clone()
        } else {
            format!("{key}_{value}")
        };
        let path = format!("{parent}{final_key}");
        if level.contains_key(&final_key) {
            f.add(
                &path,
                format!("duplicate descriptor composite key '{path}'"),
            );
            continue;
        }
        for misplaced in [
            "domain",
            "unit",
            "requests_per_unit",
            "unlimited",
            "name",
            "replaces",
        ] {
            if d.contains_key(misplaced) {
                f.add(
                    &path,
                    format!(
                        "key '{misplaced}' has no meaning in a descriptor (the service ignores it)"
                    ),
                );
            }
        }
        let mut node = RuleNode {
            path: path.clone(),
            ..RuleNode::default()
        };
        let shadow_mode = d
            .get("shadow_mode")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if let Some(rl) = d.get("rate_limit") {
            node.limit = check_rate_limit(rl, &path, f).map(|limit| RuleLimit {
                shadow_mode,
                ..limit
            });
        }
        for flag in ["shadow_mode", "detailed_metric"] {
            if d.get(flag).is_some_and(|v| !v.is_bool()) {
                f.add(
                    &path,
                    format!("error loading config file: {flag} must be true or false"),
                );
            }
        }
        load_descriptors(
            d.get("descriptors"),
            &format!("{path}."),
            &mut node.children,
            f,
        );
        level.insert(final_key, node);
    }
}

/// The descriptor's limit, when it carries a usable one.
fn check_rate_limit(rl: &Value, path: &str, f: &mut Findings<'_>) -> Option<RuleLimit> {
    let Value::Mapping(rl) = rl else {
        f.add(
            path,
            format!(
                "error loading config file: rate_limit must be a map, found {}",
                show(rl)
            ),
        );
        return None;
    };
    for misplaced in [
        "domain",
        "key",
        "value",
        "descriptors",
        "rate_limit",
        "shadow_mode",
        "detailed_metric",
    ] {
        if rl.contains_key(misplaced) {
            f.add(
                path,
                format!(
                    "rate_limit: key '{misplaced}' has no meaning here (the service ignores it)"
                ),
            );
        }
    }
    let unlimited = match rl.get("unlimited") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            f.add(
                path,
                "error loading config file: rate_limit.unlimited must be true or false",
            );
            false
        }
    };
    let unit = scalar(rl.get("unit")).unwrap_or_default();
    let parsed_unit = parse_unit(&unit);
    let valid_unit = parsed_unit.is_some();
    let mut requests_per_unit = 0;
    if unlimited {
        if valid_unit {
            f.add(path, "should not specify rate limit unit when unlimited");
        }
    } else if !valid_unit {
        f.add(
            path,
            format!(
                "invalid rate limit unit '{unit}'; expected {}",
                VALID_UNITS.join(", ")
            ),
        );
    } else {
        match rl.get("requests_per_unit") {
            None => f.add(path, "rate_limit has a unit but no requests_per_unit: the service would allow 0 requests"),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(0) => f.add(path, "requests_per_unit is 0: every request would be refused"),
                Some(n) if n > u64::from(u32::MAX) => f.add(path, format!("requests_per_unit {n} does not fit uint32")),
                Some(n) => requests_per_unit = n as u32,
                None => f.add(path, format!("error loading config file: requests_per_unit {n} is not a uint32")),
            },
            Some(other) => f.add(path, format!("error loading config file: requests_per_unit {} is not a uint32", show(other))),
        }
    }
    let name = scalar(rl.get("name")).unwrap_or_default();
    for r in rl
        .get("replaces")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
    {
        let replaced = scalar(r.get("name")).unwrap_or_default();
        if replaced.is_empty() {
            f.add(path, "should not have an empty replaces entry");
        } else if replaced == name {
            f.add(path, "replaces should not contain name of same descriptor");
        }
    }
    Some(RuleLimit {
        unit: parsed_unit,
        requests_per_unit,
        unlimited,
        shadow_mode: false,
    })
}

/// A unit as the service reads it (any case).
fn parse_unit(unit: &str) -> Option<Unit> {
    [Unit::Second, Unit::Minute, Unit::Hour, Unit::Day]
        .into_iter()
        .find(|u| u.as_str().eq_ignore_ascii_case(unit))
}

/// A scalar as the service's Go YAML decoder reads it into a string field.
fn scalar(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn show(v: &Value) -> String {
    serde_yaml::to_string(v)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::run;

    fn violations(yaml: &str) -> Vec<String> {
        run("ratelimit.yaml", |f| check(yaml, f))
            .1
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn one(yaml: &str) -> String {
        let v = violations(yaml);
        assert_eq!(v.len(), 1, "expected one violation, got {v:?}");
        v[0].clone()
    }

    const GOOD: &str = "domain: gateway\ndescriptors:\n- key: team\n  value: billing\n  descriptors:\n  - key: route\n    value: r1\n    rate_limit:\n      unit: minute\n      requests_per_unit: 100\n";

    #[test]
    fn a_rendered_style_file_passes_and_builds_the_tree() {
        let (tree, v) = run("ratelimit.yaml", |f| check(GOOD, f));
        assert!(v.is_empty(), "{v:?}");
        let tree = tree.expect("tree");
        let route = &tree.children["team_billing"].children["route_r1"];
        assert_eq!(
            route.limit,
            Some(RuleLimit {
                unit: Some(Unit::Minute),
                requests_per_unit: 100,
                unlimited: false,
                shadow_mode: false,
            })
        );
        assert_eq!(route.path, "gateway.team_billing.route_r1");
    }

    #[test]
    fn unknown_keys_at_any_level() {
        assert_eq!(
            one("domain: gateway\nextra: 1\n"),
            "ratelimit.yaml: document: config error, unknown key 'extra'"
        );
        let deep = "domain: gateway\ndescriptors:\n- key: a\n  rate_limit:\n    unit: second\n    requests_per_unit: 1\n    burst: 3\n";
        assert_eq!(
            one(deep),
            "ratelimit.yaml: document.descriptors[0].rate_limit: config error, unknown key 'burst'"
        );
    }

    #[test]
    fn duplicate_composite_keys_among_siblings() {
        let yaml = "domain: gateway\ndescriptors:\n- key: a\n  value: x\n  rate_limit: {unit: second, requests_per_unit: 1}\n- key: a\n  value: x\n  rate_limit: {unit: second, requests_per_unit: 2}\n";
        assert_eq!(
            one(yaml),
            "ratelimit.yaml: gateway.a_x: duplicate descriptor composite key 'gateway.a_x'"
        );
        // Same key, different value: distinct rules.
        let ok = "domain: gateway\ndescriptors:\n- key: a\n  value: x\n  rate_limit: {unit: second, requests_per_unit: 1}\n- key: a\n  value: y\n  rate_limit: {unit: second, requests_per_unit: 2}\n";
        assert!(violations(ok).is_empty());
    }

    #[test]
    fn units_are_checked_case_insensitively() {
        assert!(violations("domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: MINUTE, requests_per_unit: 1}\n").is_empty());
        assert_eq!(
            one("domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: fortnight, requests_per_unit: 1}\n"),
            "ratelimit.yaml: gateway.a: invalid rate limit unit 'fortnight'; expected second, minute, hour, day"
        );
    }

    #[test]
    fn requests_per_unit_is_required_with_a_unit() {
        let v = one("domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: hour}\n");
        assert!(
            v.contains("gateway.a: rate_limit has a unit but no requests_per_unit"),
            "{v}"
        );
        let v = one("domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: hour, requests_per_unit: -1}\n");
        assert!(v.contains("is not a uint32"), "{v}");
    }

    #[test]
    fn empty_or_foreign_domain() {
        assert_eq!(
            one("descriptors: []\n"),
            "ratelimit.yaml: domain: config file cannot have empty domain"
        );
        assert_eq!(
            one("domain: other\n"),
            "ratelimit.yaml: domain: is \"other\"; the proxy asks for domain \"gateway\""
        );
    }

    #[test]
    fn a_limit_without_a_key() {
        assert_eq!(
            one("domain: gateway\ndescriptors:\n- value: x\n  rate_limit: {unit: second, requests_per_unit: 1}\n"),
            "ratelimit.yaml: gateway.descriptors[0]: descriptor has empty key"
        );
    }

    #[test]
    fn unlimited_with_a_unit_and_lists_of_scalars() {
        let v = one("domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unlimited: true, unit: second}\n");
        assert!(
            v.ends_with("should not specify rate limit unit when unlimited"),
            "{v}"
        );
        let v = one("domain: gateway\ndescriptors:\n- just-a-string\n");
        assert!(v.contains("list of type other than map"), "{v}");
    }

    #[test]
    fn unparsable_yaml_is_reported() {
        let v = one("domain: [unclosed\n");
        assert!(
            v.starts_with("ratelimit.yaml: document: error loading config file:"),
            "{v}"
        );
    }
}
