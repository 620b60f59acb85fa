//! The route configuration's gateway rules: the RDS contract with the bootstrap, one owner per
//! host, one catch-all, every target known, and no route able to switch the kill switch off.

use super::Findings;
use gateway_render::contract::{
    CATCH_ALL_VHOST, HEALTH_CHECK_PATH, HEALTH_CHECK_ROUTE, KILL_SWITCH_FILTER, ROUTE_CONFIG_NAME,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

pub(crate) fn check(rc: &Value, clusters: &BTreeSet<&str>, f: &mut Findings<'_>) {
    let rc_name = rc.get("name").and_then(Value::as_str).unwrap_or("");
    let rc_label = format!("route configuration {rc_name:?}");
    if rc_name != ROUTE_CONFIG_NAME {
        f.add(
            &rc_label,
            format!("name must be {ROUTE_CONFIG_NAME:?}, the bootstrap's rds.route_config_name"),
        );
    }
    if rc.get("validate_clusters").and_then(Value::as_bool) != Some(true) {
        // RDS defaults it to false: a route to a missing cluster would be accepted and answer 503.
        f.add(&rc_label, "validate_clusters must be true");
    }
    no_kill_switch_override(rc, &rc_label, f);

    let Some(vhosts) = rc.get("virtual_hosts").and_then(Value::as_array) else {
        f.add(&rc_label, "virtual_hosts missing");
        return;
    };
    let mut vhost_names = BTreeSet::new();
    let mut domain_owner: BTreeMap<String, String> = BTreeMap::new();
    let mut catch_all: Option<String> = None;
    for (i, vh) in vhosts.iter().enumerate() {
        let vh_name = vh
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("virtual_hosts[{i}]"), str::to_string);
        let vh_label = format!("virtual host {vh_name}");
        if !vhost_names.insert(vh_name.clone()) {
            f.add(&vh_label, "name used by two virtual hosts");
        }
        let domains: Vec<&str> = vh
            .get("domains")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if domains.is_empty() {
            f.add(&vh_label, "no domains");
        }
        for domain in domains {
            // Envoy matches Host case-insensitively, so `A.x` and `a.x` are the same host.
            let key = domain.to_ascii_lowercase();
            if domain == "*" {
                match &catch_all {
                    Some(first) => f.add(
                        &vh_label,
                        format!("second catch-all (*) virtual host; {first} is the catch-all"),
                    ),
                    None => catch_all = Some(vh_name.clone()),
                }
            } else if domain.strip_suffix(":*").unwrap_or(domain).contains('*') {
                // `host:*` is one host on any port; any other wildcard matches many hosts.
                f.add(&vh_label, format!("domain {domain:?} is a wildcard; only the gateway's catch-all may match many hosts"));
            }
            if domain == "*" {
                continue;
            }
            match domain_owner.get(&key) {
                Some(owner) if *owner == vh_name => {
                    f.add(&vh_label, format!("domain {domain} listed twice"))
                }
                Some(owner) => f.add(
                    &vh_label,
                    format!("domain {domain} is also served by virtual host {owner}"),
                ),
                None => {
                    domain_owner.insert(key, vh_name.clone());
                }
            }
        }
        no_kill_switch_override(vh, &vh_label, f);
        for (route, route_label) in super::labelled_routes(vh, &vh_label) {
            if !is_gateway_health_check(vh, route) {
                no_kill_switch_override(route, &route_label, f);
            }
            targets_exist(route, clusters, &route_label, f);
        }
    }
}

/// The gateway's own health-check route on the catch-all: a fixed 200 to `GET /healthz`, the
/// one route the kill switch leaves alone (the load balancer must not replace killed tasks).
fn is_gateway_health_check(vh: &Value, route: &Value) -> bool {
    vh.get("name").and_then(Value::as_str) == Some(CATCH_ALL_VHOST)
        && route.get("name").and_then(Value::as_str) == Some(HEALTH_CHECK_ROUTE)
        && route.pointer("/match/path").and_then(Value::as_str) == Some(HEALTH_CHECK_PATH)
        && route
            .pointer("/direct_response/status")
            .and_then(Value::as_u64)
            == Some(200)
        && route.get("route").is_none()
}

/// The kill switch's fault filter must answer to the runtime key alone; a per-route config
/// under its name could turn it off for that route.
fn no_kill_switch_override(obj: &Value, label: &str, f: &mut Findings<'_>) {
    if obj
        .get("typed_per_filter_config")
        .and_then(|t| t.get(KILL_SWITCH_FILTER))
        .is_some()
    {
        f.add(
            label,
            format!("typed_per_filter_config overrides {KILL_SWITCH_FILTER}, the kill switch"),
        );
    }
}

fn targets_exist(route: &Value, clusters: &BTreeSet<&str>, label: &str, f: &mut Findings<'_>) {
    let Some(action) = route.get("route") else {
        return;
    };
    let mut check = |name: &str| {
        if !clusters.contains(name) {
            f.add(label, format!("cluster {name} is not in clusters.json"));
        }
    };
    if let Some(name) = action.get("cluster").and_then(Value::as_str) {
        check(name);
    }
    for wc in action
        .get("weighted_clusters")
        .and_then(|w| w.get("clusters"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = wc.get("name").and_then(Value::as_str) {
            check(name);
        }
    }
    if action.get("cluster_header").is_some() || action.get("cluster_specifier_plugin").is_some() {
        f.add(label, "target chosen at request time (cluster_header / cluster_specifier_plugin) cannot be validated");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::run;
    use serde_json::json;

    fn rc(vhosts: Value) -> Value {
        json!({"name": ROUTE_CONFIG_NAME, "validate_clusters": true, "virtual_hosts": vhosts})
    }

    fn violations(rc: &Value, clusters: &[&str]) -> Vec<String> {
        let clusters: BTreeSet<&str> = clusters.iter().copied().collect();
        run("routes.json", |f| check(rc, &clusters, f))
            .1
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn vh(name: &str, domains: &[&str], cluster: &str) -> Value {
        json!({"name": name, "domains": domains, "routes": [{"name": format!("{name}-r"), "match": {"prefix": "/"}, "route": {"cluster": cluster}}]})
    }

    #[test]
    fn a_clean_config_has_no_violations() {
        let rc = rc(json!([
            vh("billing", &["invoices.api.example.com"], "c1"),
            vh("catch", &["*"], "c1")
        ]));
        assert_eq!(violations(&rc, &["c1"]), Vec::<String>::new());
    }

    #[test]
    fn name_and_validate_clusters_are_the_contract() {
        let rc = json!({"name": "other", "virtual_hosts": []});
        assert_eq!(
            violations(&rc, &[]),
            [
                "routes.json: route configuration \"other\": name must be \"gateway\", the bootstrap's rds.route_config_name",
                "routes.json: route configuration \"other\": validate_clusters must be true",
            ]
        );
    }

    #[test]
    fn a_domain_in_two_virtual_hosts_is_a_violation() {
        let rc = rc(json!([
            vh("billing", &["x.api.example.com"], "c1"),
            vh("shipping", &["X.api.example.com"], "c1")
        ]));
        assert_eq!(
            violations(&rc, &["c1"]),
            ["routes.json: virtual host shipping: domain X.api.example.com is also served by virtual host billing"]
        );
    }

    #[test]
    fn two_catch_alls_and_wildcards_are_violations() {
        let config = rc(json!([
            vh("a", &["*"], "c1"),
            vh("b", &["*"], "c1"),
            vh("c", &["*.api.example.com"], "c1")
        ]));
        let v = violations(&config, &["c1"]);
        assert!(
            v.iter().any(|s| s
                .contains("virtual host b: second catch-all (*) virtual host; a is the catch-all")),
            "{v:?}"
        );
        assert!(
            v.iter()
                .any(|s| s.contains("virtual host c: domain \"*.api.example.com\" is a wildcard")),
            "{v:?}"
        );
        let any_port = rc(json!([vh(
            "a",
            &["x.api.example.com", "x.api.example.com:*"],
            "c1"
        )]));
        assert_eq!(violations(&any_port, &["c1"]), Vec::<String>::new());
    }

    #[test]
    fn a_route_to_a_missing_cluster_is_a_violation() {
        let rc = rc(json!([vh("billing", &["x.api.example.com"], "gone")]));
        assert_eq!(
            violations(&rc, &["c1"]),
            ["routes.json: virtual host billing, route billing-r: cluster gone is not in clusters.json"]
        );
    }

    #[test]
    fn kill_switch_overrides_are_violations_at_every_level() {
        let mut v = vh("billing", &["x.api.example.com"], "c1");
        v["typed_per_filter_config"] = json!({KILL_SWITCH_FILTER: {}});
        v["routes"][0]["typed_per_filter_config"] = json!({KILL_SWITCH_FILTER: {}});
        let found = violations(&rc(json!([v])), &["c1"]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains(
            "virtual host billing: typed_per_filter_config overrides gateway.kill_switch"
        ));
        assert!(found[1].contains("virtual host billing, route billing-r: typed_per_filter_config"));
    }

    #[test]
    fn only_the_catch_alls_health_check_may_leave_the_kill_switch() {
        let rendered = gateway_render::render_kill_switch(&gateway_render::RenderConfig::new(
            "api.example.com",
        ));
        assert_eq!(
            violations(&rendered.route_config, &[]),
            Vec::<String>::new()
        );
        // The same route under a team's virtual host, or routing to a cluster, is a violation.
        let health = rendered.route_config["virtual_hosts"][0]["routes"][0].clone();
        let mut team = vh("billing", &["x.api.example.com"], "c1");
        team["routes"] = json!([health.clone()]);
        let found = violations(&rc(json!([team])), &["c1"]);
        assert!(
            found
                .iter()
                .any(|v| v.contains("overrides gateway.kill_switch")),
            "{found:?}"
        );
        let mut sneaky = rendered.route_config.clone();
        sneaky["virtual_hosts"][0]["routes"][0]["route"] = json!({"cluster": "c1"});
        let found = violations(&sneaky, &["c1"]);
        assert!(
            found
                .iter()
                .any(|v| v.contains("overrides gateway.kill_switch")),
            "{found:?}"
        );
    }
}
