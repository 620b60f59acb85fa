//! The service's decision for one request, pure: rules and counters in, a verdict per descriptor
//! out. Matching follows envoyproxy/ratelimit: each entry of a descriptor selects the child rule
//! keyed `key_value`, else the one keyed `key` alone (any value, counted per value); the limit
//! of the rule the last entry reaches applies; a descriptor that reaches no limit is not counted.

use crate::window::Windows;
use gateway_render::Unit;
use gateway_validator::rules::{RuleLimit, RuleNode, RuleTree};
use std::collections::BTreeMap;

/// One descriptor of a request: its entries in order.
pub type Descriptor = Vec<(String, String)>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitStatus {
    /// No rule with a limit matches: not counted.
    NoLimit,
    /// Counted (or unlimited); `over` says whether this hit went past the limit. In shadow mode
    /// a hit past the limit is reported but not refused.
    Limited {
        limit: RuleLimit,
        over: bool,
        remaining: u64,
        reset_in: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Some descriptor is over its limit (shadow-mode rules never refuse).
    pub over_limit: bool,
    pub statuses: Vec<LimitStatus>,
}

/// The rule a descriptor reaches, if it carries a limit.
pub fn find_limit<'t>(
    tree: &'t RuleTree,
    descriptor: &[(String, String)],
) -> Option<&'t RuleLimit> {
    let mut level: &BTreeMap<String, RuleNode> = &tree.children;
    let mut found = None;
    for (i, (key, value)) in descriptor.iter().enumerate() {
        let node = level
            .get(&format!("{key}_{value}"))
            .or_else(|| level.get(key.as_str()))?;
        if i + 1 == descriptor.len() {
            found = node.limit.as_ref();
        }
        if node.children.is_empty() {
            break;
        }
        level = &node.children;
    }
    found
}

/// Counts one request's descriptors, each with its hits, against `tree` at `now` (Unix seconds).
/// A request for another domain is not counted (the rules are for one domain).
pub fn decide(
    tree: &RuleTree,
    windows: &mut Windows,
    domain: &str,
    descriptors: &[(Descriptor, u64)],
    now: u64,
) -> Decision {
    let mut statuses = Vec::with_capacity(descriptors.len());
    for (descriptor, hits) in descriptors {
        let hits = *hits;
        let limit = (domain == tree.domain && !descriptor.is_empty())
            .then(|| find_limit(tree, descriptor))
            .flatten();
        statuses.push(match limit {
            None => LimitStatus::NoLimit,
            Some(limit) => count(*limit, windows, domain, descriptor, hits, now),
        });
    }
    let over_limit = statuses
        .iter()
        .any(|s| matches!(s, LimitStatus::Limited { limit, over: true, .. } if !limit.shadow_mode));
    Decision {
        over_limit,
        statuses,
    }
}

fn count(
    limit: RuleLimit,
    windows: &mut Windows,
    domain: &str,
    descriptor: &[(String, String)],
    hits: u64,
    now: u64,
) -> LimitStatus {
    let unit = match limit.unit {
        Some(unit) if !limit.unlimited => unit,
        _ => {
            return LimitStatus::Limited {
                limit,
                over: false,
                remaining: u64::MAX,
                reset_in: 0,
            }
        }
    };
    let key = cache_key(domain, descriptor);
    let counted = windows.hit(&key, unit, hits, now);
    let max = u64::from(limit.requests_per_unit);
    LimitStatus::Limited {
        limit,
        over: counted.after > max,
        remaining: max.saturating_sub(counted.after),
        reset_in: counted.reset_in,
    }
}

/// `domain_key_value_key_value…`, the service's counter key before the window suffix.
fn cache_key(domain: &str, descriptor: &[(String, String)]) -> String {
    let mut key = String::from(domain);
    for (k, v) in descriptor {
        key.push('_');
        key.push_str(k);
        key.push('_');
        key.push_str(v);
    }
    key
}

/// The unit of a counted status, for the protocol's `current_limit`.
pub fn limit_unit(limit: &RuleLimit) -> Option<Unit> {
    limit.unit.filter(|_| !limit.unlimited)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_validator::rules::load_rate_limit_rules;

    const RULES: &str = "\
domain: gateway
descriptors:
- key: team
  value: billing
  descriptors:
  - key: service
    value: invoices
    descriptors:
    - key: route
      value: r1
      rate_limit: {unit: minute, requests_per_unit: 2}
      descriptors:
      - key: remote_address
        rate_limit: {unit: second, requests_per_unit: 1}
    - key: route
      value: r2
      descriptors:
      - key: header
        rate_limit: {unit: hour, requests_per_unit: 1}
    - key: route
      value: shadow
      shadow_mode: true
      rate_limit: {unit: day, requests_per_unit: 1}
    - key: route
      value: free
      rate_limit: {unlimited: true}
";

    /// Every descriptor with the same hits.
    fn decide(
        t: &RuleTree,
        w: &mut Windows,
        domain: &str,
        ds: &[Descriptor],
        hits: u64,
        now: u64,
    ) -> Decision {
        let ds: Vec<(Descriptor, u64)> = ds.iter().map(|d| (d.clone(), hits)).collect();
        super::decide(t, w, domain, &ds, now)
    }

    fn tree() -> RuleTree {
        load_rate_limit_rules(RULES).unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn d(pairs: &[(&str, &str)]) -> Descriptor {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn route(r: &str) -> Descriptor {
        d(&[("team", "billing"), ("service", "invoices"), ("route", r)])
    }

    fn with(mut base: Descriptor, k: &str, v: &str) -> Descriptor {
        base.push((k.into(), v.into()));
        base
    }

    #[test]
    fn a_route_limit_refuses_past_its_quota() {
        let (t, mut w) = (tree(), Windows::default());
        let over = |w: &mut Windows| decide(&t, w, "gateway", &[route("r1")], 1, 60).over_limit;
        assert!(!over(&mut w));
        assert!(!over(&mut w));
        assert!(over(&mut w), "third request in the minute");
        let next_minute = decide(&t, &mut w, "gateway", &[route("r1")], 1, 120);
        assert!(!next_minute.over_limit);
    }

    #[test]
    fn wildcard_values_count_each_value_separately() {
        let (t, mut w) = (tree(), Windows::default());
        let ip = |v: &str| with(route("r1"), "remote_address", v);
        assert!(!decide(&t, &mut w, "gateway", &[ip("10.0.0.1")], 1, 7).over_limit);
        assert!(decide(&t, &mut w, "gateway", &[ip("10.0.0.1")], 1, 7).over_limit);
        assert!(!decide(&t, &mut w, "gateway", &[ip("10.0.0.2")], 1, 7).over_limit);
    }

    #[test]
    fn the_strictest_of_several_descriptors_decides() {
        let (t, mut w) = (tree(), Windows::default());
        let both = [route("r1"), with(route("r1"), "remote_address", "10.0.0.9")];
        let first = decide(&t, &mut w, "gateway", &both, 1, 60);
        assert!(!first.over_limit);
        // The per-client limit (1 a second) is spent; the route's (2 a minute) is not.
        let second = decide(&t, &mut w, "gateway", &both, 1, 60);
        assert!(second.over_limit);
        assert!(matches!(
            second.statuses[0],
            LimitStatus::Limited {
                over: false,
                remaining: 0,
                ..
            }
        ));
        assert!(matches!(
            second.statuses[1],
            LimitStatus::Limited { over: true, .. }
        ));
    }

    #[test]
    fn descriptors_that_reach_no_limit_are_not_counted() {
        let (t, mut w) = (tree(), Windows::default());
        for desc in [
            route("r2"),                     // an intermediate rule without a limit
            route("unknown"),                // no such route
            d(&[("team", "other")]),         // no such team
            with(route("r1"), "extra", "x"), // deeper than the rules go
            Vec::new(),
        ] {
            let decision = decide(&t, &mut w, "gateway", std::slice::from_ref(&desc), 1, 1);
            assert_eq!(decision.statuses, vec![LimitStatus::NoLimit], "{desc:?}");
        }
        assert!(w.is_empty());
        let other_domain = decide(&t, &mut w, "elsewhere", &[route("r1")], 1, 1);
        assert_eq!(other_domain.statuses, vec![LimitStatus::NoLimit]);
    }

    #[test]
    fn shadow_mode_counts_without_refusing_and_unlimited_never_counts() {
        let (t, mut w) = (tree(), Windows::default());
        decide(&t, &mut w, "gateway", &[route("shadow")], 1, 1);
        let second = decide(&t, &mut w, "gateway", &[route("shadow")], 1, 1);
        assert!(!second.over_limit);
        assert!(matches!(
            second.statuses[0],
            LimitStatus::Limited { over: true, .. }
        ));
        for _ in 0..5 {
            assert!(!decide(&t, &mut w, "gateway", &[route("free")], 1, 1).over_limit);
        }
    }

    #[test]
    fn hits_addend_counts_that_many() {
        let (t, mut w) = (tree(), Windows::default());
        assert!(decide(&t, &mut w, "gateway", &[route("r1")], 3, 60).over_limit);
    }
}
