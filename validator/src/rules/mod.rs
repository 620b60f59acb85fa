//! Layer 1: the gateway's own rules on a rendered config, and envoyproxy/ratelimit's loader on
//! `ratelimit.yaml` (its loader is Go; `ratelimit_yaml` reads files as it does, held to
//! upstream's own loader tests; a refused rules file makes the service keep its old rules).
//! Pure: values in, violations out.

mod clusters;
mod descriptors;
mod ratelimit_yaml;
mod routes;

use crate::ConfigView;
use std::fmt;

pub use ratelimit_yaml::{
    check_rules_file, load as load_rate_limit_rules, load_files as load_rate_limit_files,
    load_files_with as load_rate_limit_files_with, Level, Matched, Refusal, RuleLimit, RuleNode,
    RuleSet, RuleTree, RuleUnit, RulesFile, KNOWN_KEYS,
};

/// One broken rule: the file, the object in it (virtual host, route, cluster or descriptor
/// path), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleViolation {
    pub file: String,
    pub object: String,
    pub reason: String,
}

impl fmt::Display for RuleViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.object, self.reason)
    }
}

/// Collects violations for one file.
pub(crate) struct Findings<'a> {
    file: &'static str,
    out: &'a mut Vec<RuleViolation>,
}

impl Findings<'_> {
    pub(crate) fn add(&mut self, object: impl Into<String>, reason: impl Into<String>) {
        self.out.push(RuleViolation {
            file: self.file.to_string(),
            object: object.into(),
            reason: reason.into(),
        });
    }
}

/// Every violation in the config, in file order (clusters, routes, rate-limit rules).
pub fn validate_rules(view: &ConfigView<'_>) -> Result<(), Vec<RuleViolation>> {
    use gateway_render::contract::{CLUSTERS_FILE, RATE_LIMIT_FILE, ROUTES_FILE};
    let mut out = Vec::new();
    let cluster_names = clusters::check(
        view.clusters,
        &mut Findings {
            file: CLUSTERS_FILE,
            out: &mut out,
        },
    );
    routes::check(
        view.route_config,
        &cluster_names,
        &mut Findings {
            file: ROUTES_FILE,
            out: &mut out,
        },
    );
    let tree = ratelimit_yaml::check(
        view.ratelimit_yaml,
        &mut Findings {
            file: RATE_LIMIT_FILE,
            out: &mut out,
        },
    );
    if let Some(tree) = tree {
        let chains = descriptors::route_chains(
            view.route_config,
            &mut Findings {
                file: ROUTES_FILE,
                out: &mut out,
            },
        );
        descriptors::agree(&chains, &tree, &mut out);
    }
    // The sidecars' delivery policy, so a render they would refuse is refused here first (and
    // narrowed to the team that caused it). Addresses are judged by the registration's policy
    // before a render; here loopback is let through, as the registration may allow it.
    let delivery = gateway_render::check::Policy::new("", true);
    let jwt = || -> Result<(), gateway_render::delivery::PolicyError> {
        gateway_render::delivery::check_config(view.clusters, view.route_config, &delivery)?;
        let clusters: std::collections::BTreeSet<String> = view
            .clusters
            .iter()
            .filter_map(|c| c.get("name").and_then(serde_json::Value::as_str).map(str::to_string))
            .collect();
        let requirements = match view.jwt {
            Some(config) => gateway_render::delivery::check_jwt_config(config, &clusters)?,
            None => Default::default(),
        };
        gateway_render::delivery::check_jwt_routes(view.route_config, &requirements)
    };
    if let Err(e) = jwt() {
        out.push(RuleViolation {
            file: e.file.to_string(),
            object: e.at,
            reason: format!("{} (the delivery policy)", e.reason),
        });
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

/// A virtual host's routes, each with the label violations name it by (`…, route NAME`, or
/// `…, routes[j]` for an unnamed one).
pub(crate) fn labelled_routes<'v>(
    vh: &'v serde_json::Value,
    vh_label: &'v str,
) -> impl Iterator<Item = (&'v serde_json::Value, String)> + 'v {
    vh.get("routes")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(move |(j, route)| {
            let label = match route.get("name").and_then(serde_json::Value::as_str) {
                Some(n) => format!("{vh_label}, route {n}"),
                None => format!("{vh_label}, routes[{j}]"),
            };
            (route, label)
        })
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    pub(crate) fn run<T>(
        file: &'static str,
        f: impl FnOnce(&mut Findings<'_>) -> T,
    ) -> (T, Vec<RuleViolation>) {
        let mut out = Vec::new();
        let t = f(&mut Findings {
            file,
            out: &mut out,
        });
        (t, out)
    }
}

#[cfg(test)]
mod delivery_policy {
    use super::*;
    use gateway_render::contract::RATE_LIMIT_FILE;
    use gateway_render::{render_kill_switch, RenderConfig};
    use serde_json::json;

    /// A render the sidecars would refuse is refused at layer 1, naming the delivery policy.
    #[test]
    fn a_cluster_into_the_proxy_breaks_layer_one() {
        let kill = render_kill_switch(&RenderConfig::new("api.example.com"));
        let view = |clusters: &[serde_json::Value], rc: &serde_json::Value| {
            validate_rules(&ConfigView {
                clusters,
                route_config: rc,
                ratelimit_yaml: &kill.files[RATE_LIMIT_FILE],
                jwt: None,
            })
        };
        view(&kill.clusters, &kill.route_config).expect("the kill switch passes");
        let pipe = json!({
            "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            "name": "steal", "type": "STATIC", "connect_timeout": "1s",
            "load_assignment": {"cluster_name": "steal", "endpoints": [{"lb_endpoints": [
                {"endpoint": {"address": {"pipe": {"path": "/run/envoy/admin.sock"}}}}]}]}
        });
        let violations = view(&[pipe], &kill.route_config).expect_err("refused");
        let text: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert!(
            text.iter().any(|t| t.starts_with("clusters.json: cluster steal: endpoint address [\"pipe\"]")
                && t.ends_with("(the delivery policy)")),
            "{text:?}"
        );
    }
}
