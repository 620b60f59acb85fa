//! Kill switch level 2: a bundle whose routes answer 503 to every request on every host (the
//! live entries' routes kept as matches only, so the access log still names their team). It goes
//! out through the same bucket and sidecar as any bundle and survives proxy restarts; restoring
//! the previous bundle version undoes it.

use crate::config::RenderConfig;
use crate::names;
use crate::ratelimit;
use crate::renderer::{assemble, Rendered};
use crate::routes::{
    answering_route, catch_all_virtual_host, json_error_body, route_config_resource, route_match,
    specificity_key, team_host,
};
use crate::{Entry, Route};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub const KILL_SWITCH_MESSAGE: &str = "gateway kill switch engaged";

/// Zero clusters, one `*` virtual host answering a JSON 503, and rate-limit rules with the
/// domain and no descriptors (the rate-limit service refuses a file without a domain).
pub fn render_kill_switch(cfg: &RenderConfig) -> Rendered {
    render_kill_switch_for(cfg, &[])
}

/// [`render_kill_switch`] that keeps, for each host of `entries`, a virtual host whose routes
/// match as the entries' routes do and answer the same 503: every request is still stopped, and
/// the access log keeps the team and service of the route the request was for. Nothing is
/// forwarded anywhere (no cluster, no limit, no policy), so what the entries hold cannot make
/// the switch fail; with no entries it is the catch-all alone.
pub fn render_kill_switch_for(cfg: &RenderConfig, entries: &[Entry]) -> Rendered {
    let body = json_error_body(KILL_SWITCH_MESSAGE);
    let mut hosts: BTreeMap<String, Vec<(&Entry, &Route)>> = BTreeMap::new();
    for entry in entries {
        let routes = hosts.entry(entry.fqdn(&cfg.base_domain)).or_default();
        routes.extend(entry.routes.iter().map(|r| (entry, r)));
    }
    let mut virtual_hosts = Vec::with_capacity(hosts.len() + 1);
    for (fqdn, mut routes) in hosts {
        routes.sort_by_cached_key(|(e, r)| specificity_key(e, r));
        let team = routes.first().map(|(e, _)| e.team.clone()).unwrap_or_default();
        let mut stopped: Vec<Value> = routes
            .iter()
            .map(|(e, r)| {
                answering_route(
                    &names::route_name(e, r),
                    route_match(r),
                    (&e.team, &e.service),
                    503,
                    &body,
                )
            })
            .collect();
        stopped.push(answering_route(
            &names::fallback_route_name(&fqdn),
            json!({ "prefix": "/" }),
            (&team, ""),
            503,
            &body,
        ));
        virtual_hosts.push(team_host(&fqdn, stopped));
    }
    virtual_hosts.push(catch_all_virtual_host(503, &body));
    let route_config = route_config_resource(virtual_hosts);
    // Direct answers only: serialising them cannot fail.
    assemble(Vec::new(), route_config, ratelimit::empty_rules(), 0)
        .expect("the kill-switch render holds only direct answers")
}
