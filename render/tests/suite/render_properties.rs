//! Properties over random valid-looking registries: the render does not depend on the order the
//! registry returned entries (or an entry lists its routes), the bundle verifies, and the
//! rate-limit actions and rules always agree.

use gateway_render::{render, Bundle, Entry, Limit, Per, Route, Unit};
use proptest::prelude::*;
use crate::support::{action_descriptors, config, rule_descriptors};

const BACKENDS: [&str; 4] = [
    "https://orders.internal.example",
    "https://orders.internal.example:8443",
    "http://10.1.2.3:8080",
    "http://[fd00::12]",
];

/// A global limit from its (kind, unit) and request count.
fn global_limit(kind: usize, unit: usize, requests: u32) -> Limit {
    let (per, header) = match kind {
        0 => (Per::ClientIp, None),
        1 => (Per::Route, None),
        2 => (Per::Header, Some("x-api-key".to_string())),
        _ => (Per::Header, Some("x-tenant".to_string())),
    };
    let every = [Unit::Second, Unit::Minute, Unit::Hour, Unit::Day][unit % 4];
    Limit::Global {
        per,
        header,
        requests,
        every,
    }
}

/// 0–2 global limits of distinct (kind, unit) and at most one burst, as the checks require.
fn limits() -> impl Strategy<Value = Vec<Limit>> {
    let globals = proptest::collection::btree_map((0usize..4, 0usize..4), 1u32..10_000, 0..3)
        .prop_map(|m| {
            m.into_iter()
                .map(|((kind, unit), requests)| global_limit(kind, unit, requests))
                .collect::<Vec<_>>()
        });
    (globals, proptest::option::of(1u32..100), 0usize..3).prop_map(|(mut limits, burst, at)| {
        if let Some(burst) = burst {
            limits.insert(at.min(limits.len()), Limit::Burst { burst });
        }
        limits
    })
}

fn methods(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|m| m.to_string()).collect())
}

/// Routes of one service: distinct path shapes under the service's own prefix (so services never
/// collide), some paths split into disjoint method sets.
fn routes(service: String) -> impl Strategy<Value = Vec<Route>> {
    proptest::collection::btree_map(0usize..5, (0usize..4, limits()), 1..5).prop_map(
        move |shapes| {
            let mut routes = Vec::new();
            for (shape, (method_mode, limits)) in shapes {
                let path = match shape {
                    0 => format!("/{service}"),
                    1 => format!("/{service}/items"),
                    2 => format!("/{service}/items/"),
                    3 => format!("/{service}/items/export"),
                    _ => format!("/{service}/v2:batch"),
                };
                let method_sets = match method_mode {
                    0 => vec![None],
                    1 => vec![methods(&["GET"])],
                    2 => vec![methods(&["DELETE", "POST"])],
                    _ => vec![
                        methods(&["GET", "HEAD"]),
                        methods(&["PATCH", "POST", "PUT"]),
                    ],
                };
                for methods in method_sets {
                    routes.push(Route {
                        path: path.clone(),
                        methods,
                        limits: limits.clone(),
                        timeout: None,
                        ..Default::default()
                    });
                }
            }
            routes
        },
    )
}

/// 1–3 teams, each with 1–3 services on one or two hosts of its own.
fn registry() -> impl Strategy<Value = Vec<Entry>> {
    proptest::collection::vec(
        proptest::collection::vec((any::<bool>(), 0usize..BACKENDS.len()), 1..4),
        1..4,
    )
    .prop_flat_map(|teams| {
        let mut strategies = Vec::new();
        for (t, services) in teams.into_iter().enumerate() {
            for (s, (second_host, backend)) in services.into_iter().enumerate() {
                let team = format!("team{t}");
                let service = format!("svc{s}");
                let host = if second_host {
                    format!("{team}-b")
                } else {
                    team.clone()
                };
                strategies.push(routes(service.clone()).prop_map(move |routes| Entry {
                    rollout: None,
                    serving: None,
                    team: team.clone(),
                    service: service.clone(),
                    host: host.clone(),
                    backend: BACKENDS[backend].to_string(),
                    protocol: Default::default(),
                    canary: None,
                    health_check: None,
                    preserve_host: false,
                    jwt: Default::default(),
                    backends: vec![],
                    routes,
                }));
            }
        }
        strategies
    })
}

fn shuffled(entries: Vec<Entry>) -> impl Strategy<Value = (Vec<Entry>, Vec<Entry>)> {
    let original = entries.clone();
    let reordered = Just(entries).prop_shuffle().prop_flat_map(|entries| {
        entries
            .into_iter()
            .map(|e| {
                let Entry {
                    team,
                    service,
                    host,
                    backend,
                    routes,
                    ..
                } = e;
                Just(routes).prop_shuffle().prop_map(move |routes| Entry {
                    rollout: None,
                    serving: None,
                    team: team.clone(),
                    service: service.clone(),
                    host: host.clone(),
                    backend: backend.clone(),
                    protocol: Default::default(),
                    canary: None,
                    health_check: None,
                    preserve_host: false,
                    jwt: Default::default(),
                    backends: vec![],
                    routes,
                })
            })
            .collect::<Vec<_>>()
    });
    (Just(original), reordered)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn render_is_independent_of_entry_and_route_order((original, reordered) in registry().prop_flat_map(shuffled)) {
        let cfg = config();
        let a = render(&original, &cfg).expect("a valid registry renders");
        let b = render(&reordered, &cfg).expect("a valid registry renders");
        prop_assert_eq!(&a.hash, &b.hash);
        prop_assert_eq!(&a.files, &b.files);
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(Bundle::new(&a, &original).seal().archive(None), Bundle::new(&b, &original).seal().archive(None));
        prop_assert_eq!(a.route_count, original.iter().map(|e| e.routes.len()).sum::<usize>());
    }

    #[test]
    fn every_render_verifies_and_actions_match_rules(entries in registry()) {
        // The generator stays inside what the registration checks accept.
        let policy = gateway_render::Policy::new(crate::support::BASE_DOMAIN, false);
        for entry in &entries {
            let value = serde_json::to_value(entry).expect("entry serialises");
            let checked = gateway_render::check::check_entry_value(&value, &policy);
            prop_assert_eq!(checked.as_ref(), Ok(entry), "{}", serde_json::to_string(entry).unwrap_or_default());
        }
        let rendered = render(&entries, &config()).expect("a valid registry renders");
        let bundle = Bundle::parse(&Bundle::new(&rendered, &entries).seal().archive(None)).expect("bundle parses");
        prop_assert!(bundle.verify().is_ok(), "{:?}", bundle.verify());
        let actions = action_descriptors(&rendered.route_config);
        let rules = rule_descriptors(&rendered.files["ratelimit.yaml"]);
        prop_assert_eq!(&actions, &rules);
        let global = entries.iter().flat_map(|e| &e.routes).flat_map(|r| &r.limits).filter(|l| matches!(l, Limit::Global { .. })).count();
        prop_assert_eq!(actions.len(), global);
    }

    #[test]
    fn routes_in_a_virtual_host_never_get_less_specific_then_more(entries in registry()) {
        let rendered = render(&entries, &config()).expect("a valid registry renders");
        for vhost in rendered.route_config["virtual_hosts"].as_array().expect("virtual_hosts") {
            let keys: Vec<(usize, bool)> = vhost["routes"].as_array().expect("routes").iter().map(|r| {
                let m = &r["match"];
                // An exact path (the catch-all's health check) is more specific than any prefix.
                let path = m.get("path_separated_prefix").or_else(|| m.get("prefix")).or_else(|| m.get("path")).and_then(|p| p.as_str()).expect("a path match");
                (path.len(), m.get("headers").is_none())
            }).collect();
            for pair in keys.windows(2) {
                let ((len_a, any_a), (len_b, any_b)) = (pair[0], pair[1]);
                prop_assert!(len_a > len_b || (len_a == len_b && (!any_a || any_b)), "{:?} before {:?} in {}", pair[0], pair[1], vhost["name"]);
            }
        }
    }
}
