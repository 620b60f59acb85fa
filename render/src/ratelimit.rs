//! Global limits, both sides: the descriptors a route's rate-limit actions send, and the
//! envoyproxy/ratelimit rule tree that counts them. Both are built from `descriptor_chain`, so
//! a request can never carry a descriptor that no rule matches (which would leave it unlimited).

use crate::contract::RATE_LIMIT_DOMAIN;
use crate::entry::{Entry, Limit, Per, Route, Unit};
use crate::names;
use crate::error::RenderError;
use crate::value::object;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `ratelimit.yaml`. Only the keys envoyproxy/ratelimit knows: it rejects a whole reload on an
/// unknown key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    pub domain: String,
    #[serde(default)]
    pub descriptors: Vec<Descriptor>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Descriptor {
    pub key: String,
    /// Absent: every distinct value (each client address, each header value) gets its own counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub descriptors: Vec<Descriptor>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    pub unit: Unit,
    pub requests_per_unit: u32,
}

/// One step of a descriptor: what the route action emits and what the rule tree matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A fixed key and value (`generic_key`): team, service, route.
    Fixed { key: &'static str, value: String },
    /// The client address Envoy derives, masked (`masked_remote_address`): one counter per IPv4
    /// address and per IPv6 prefix ([`RenderConfig::client_ipv6_prefix`]).
    ClientAddress,
    /// A request header's value; one counter per value. A request without the header sends no
    /// descriptor for this limit and so is not counted by it.
    Header { name: String },
}

/// The descriptor key Envoy's `masked_remote_address` action emits; fixed by Envoy. Its value
/// is the masked address with its length (`192.0.2.7/32`, `2001:db8:1:2::/64`).
pub const REMOTE_ADDRESS_KEY: &str = "masked_remote_address";
/// The descriptor key our `request_headers` actions emit.
pub const HEADER_KEY: &str = "header";

impl Step {
    pub fn key(&self) -> &str {
        match self {
            Step::Fixed { key, .. } => key,
            Step::ClientAddress => REMOTE_ADDRESS_KEY,
            Step::Header { .. } => HEADER_KEY,
        }
    }

    /// The value a rule matches on; `None` = any value, one counter each.
    pub fn value(&self) -> Option<&str> {
        match self {
            Step::Fixed { value, .. } => Some(value),
            Step::ClientAddress | Step::Header { .. } => None,
        }
    }

    /// The Envoy rate-limit action that emits this step; an IPv6 client is counted by its
    /// `ipv6_prefix` (a client owns a whole prefix, usually a /64: counting each address would
    /// give it 2^64 buckets).
    pub fn action(&self, ipv6_prefix: u8) -> Value {
        match self {
            Step::Fixed { key, value } => {
                json!({ "generic_key": { "descriptor_key": key, "descriptor_value": value } })
            }
            Step::ClientAddress => json!({ "masked_remote_address": {
                "v4_prefix_mask_len": 32, "v6_prefix_mask_len": ipv6_prefix
            } }),
            Step::Header { name } => {
                json!({ "request_headers": { "header_name": name, "descriptor_key": HEADER_KEY } })
            }
        }
    }
}

/// The descriptor of the limit at `limit_index` of `route`: team → service → route →
/// (client address | header value), or stopping at route for `per: route`.
/// `None` for a burst limit, which is local to each Envoy and has no descriptor.
pub fn descriptor_chain(
    entry: &Entry,
    route: &Route,
    limit_index: usize,
) -> Result<Option<(Vec<Step>, RateLimit)>, RenderError> {
    let Some(limit) = route.limits.get(limit_index) else {
        return Ok(None);
    };
    let Limit::Global {
        per,
        header,
        requests,
        every,
    } = limit
    else {
        return Ok(None);
    };
    let mut steps = vec![
        Step::Fixed {
            key: "team",
            value: entry.team.clone(),
        },
        Step::Fixed {
            key: "service",
            value: entry.service.clone(),
        },
        Step::Fixed {
            key: "route",
            value: names::route_descriptor_value(route, limit_index),
        },
    ];
    match per {
        Per::Route => {}
        Per::ClientIp => steps.push(Step::ClientAddress),
        Per::Header => match header {
            Some(name) => steps.push(Step::Header { name: name.clone() }),
            None => {
                return Err(RenderError::Limit {
                    entry: entry.id(),
                    route: names::route_key(route),
                    index: limit_index,
                    reason: "per: header without a header name".into(),
                })
            }
        },
    }
    Ok(Some((
        steps,
        RateLimit {
            unit: *every,
            requests_per_unit: *requests,
        },
    )))
}

/// Every (descriptor, limit) of a route, in `limits` order.
pub fn route_chains(
    entry: &Entry,
    route: &Route,
) -> Result<Vec<(Vec<Step>, RateLimit)>, RenderError> {
    let mut chains = Vec::new();
    for i in 0..route.limits.len() {
        if let Some(chain) = descriptor_chain(entry, route, i)? {
            chains.push(chain);
        }
    }
    Ok(chains)
}

/// The route's `rate_limits`: one entry per global limit, its actions emitting the chain.
pub fn route_rate_limits(
    entry: &Entry,
    route: &Route,
    ipv6_prefix: u8,
) -> Result<Vec<Value>, RenderError> {
    Ok(route_chains(entry, route)?
        .iter()
        .map(|(steps, _)| {
            let actions = steps.iter().map(|s| s.action(ipv6_prefix)).collect();
            object([("actions", actions)])
        })
        .collect())
}

/// A rule tree under construction: sorted by (key, value) so the YAML is byte-stable.
#[derive(Default)]
struct Node {
    rate_limit: Option<RateLimit>,
    children: BTreeMap<(String, Option<String>), Node>,
}

impl Node {
    fn into_descriptors(self) -> Vec<Descriptor> {
        self.children
            .into_iter()
            .map(|((key, value), node)| {
                let rate_limit = node.rate_limit.clone();
                Descriptor {
                    key,
                    value,
                    rate_limit,
                    descriptors: node.into_descriptors(),
                }
            })
            .collect()
    }
}

/// The rule tree for all entries. Refuses two limits landing on the same rule, which
/// envoyproxy/ratelimit would reject as a duplicate key (it would keep its old rules).
pub fn rule_tree<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
) -> Result<RateLimitConfig, RenderError> {
    let mut root = Node::default();
    for entry in entries {
        for route in &entry.routes {
            for (steps, rate_limit) in route_chains(entry, route)? {
                let mut node = &mut root;
                for step in &steps {
                    node = node
                        .children
                        .entry((step.key().to_string(), step.value().map(str::to_string)))
                        .or_default();
                }
                if node.rate_limit.is_some() {
                    return Err(RenderError::DuplicateRule {
                        entry: entry.id(),
                        route: names::route_key(route),
                        path: steps
                            .iter()
                            .map(|s| format!("{}={}", s.key(), s.value().unwrap_or("*")))
                            .collect::<Vec<_>>()
                            .join(" > "),
                    });
                }
                node.rate_limit = Some(rate_limit);
            }
        }
    }
    Ok(RateLimitConfig {
        domain: RATE_LIMIT_DOMAIN.to_string(),
        descriptors: root.into_descriptors(),
    })
}

/// The rules file with no rules: the kill switch's, which still names the domain.
pub fn empty_rules() -> RateLimitConfig {
    RateLimitConfig {
        domain: RATE_LIMIT_DOMAIN.to_string(),
        descriptors: Vec::new(),
    }
}

/// `ratelimit.yaml`'s bytes.
pub fn to_yaml(config: &RateLimitConfig) -> Result<String, RenderError> {
    serde_yaml::to_string(config).map_err(|e| RenderError::Serialize {
        file: crate::contract::RATE_LIMIT_FILE,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        serde_json::from_value(json!({
            "team": "billing", "service": "invoices-api", "host": "invoices",
            "backend": "https://invoices.internal.example:8443",
            "routes": [
                { "path": "/invoices", "methods": ["POST"],
                  "limits": [ { "per": "route", "requests": 500, "every": "minute" }, { "burst": 20 },
                              { "per": "client-ip", "requests": 5, "every": "second" } ] },
                { "path": "/invoices/export",
                  "limits": [ { "per": "header", "header": "x-api-key", "requests": 10, "every": "hour" } ] }
            ]
        }))
        .unwrap()
    }

    #[test]
    fn chains_run_team_service_route_then_the_counted_thing() {
        let e = entry();
        let (steps, rl) = descriptor_chain(&e, &e.routes[0], 2).unwrap().unwrap();
        let keys: Vec<_> = steps
            .iter()
            .map(|s| (s.key().to_string(), s.value().map(str::to_string)))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("team".into(), Some("billing".into())),
                ("service".into(), Some("invoices-api".into())),
                ("route".into(), Some("POST:/invoices#2".into())),
                ("masked_remote_address".into(), None),
            ]
        );
        assert_eq!(
            rl,
            RateLimit {
                unit: Unit::Second,
                requests_per_unit: 5
            }
        );
        assert!(
            descriptor_chain(&e, &e.routes[0], 1).unwrap().is_none(),
            "burst has no descriptor"
        );
        let (steps, _) = descriptor_chain(&e, &e.routes[0], 0).unwrap().unwrap();
        assert_eq!(steps.len(), 3, "per: route stops at the route");
    }

    #[test]
    fn header_limit_without_header_is_refused() {
        let mut e = entry();
        e.routes[1].limits[0] = Limit::Global {
            per: Per::Header,
            header: None,
            requests: 1,
            every: Unit::Hour,
        };
        let err = descriptor_chain(&e, &e.routes[1], 0)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("billing/invoices-api") && err.contains("header"),
            "{err}"
        );
    }

    #[test]
    fn rule_tree_is_one_branch_per_team_and_service_and_yaml_has_only_known_keys() {
        let e = entry();
        let tree = rule_tree(&[e]).unwrap();
        assert_eq!(tree.domain, "gateway");
        assert_eq!(tree.descriptors.len(), 1);
        let service = &tree.descriptors[0].descriptors[0];
        assert_eq!(service.value.as_deref(), Some("invoices-api"));
        assert_eq!(
            service.descriptors.len(),
            3,
            "three global limits, three route nodes"
        );
        let yaml = to_yaml(&tree).unwrap();
        for line in yaml.lines() {
            let key = line
                .trim_start()
                .trim_start_matches("- ")
                .split(':')
                .next()
                .unwrap_or("");
            assert!(
                [
                    "domain",
                    "descriptors",
                    "key",
                    "value",
                    "rate_limit",
                    "unit",
                    "requests_per_unit"
                ]
                .contains(&key),
                "unknown key in line {line:?}"
            );
        }
        let back: RateLimitConfig = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(back, tree);
    }

    #[test]
    fn duplicate_rule_is_refused() {
        let e = entry();
        let err = rule_tree(&[e.clone(), e]).unwrap_err().to_string();
        assert!(err.contains("billing/invoices-api"), "{err}");
    }
}
