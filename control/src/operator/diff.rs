//! What changed between two bundles, per team, service and route — not a text diff.

use gateway_render::{Bundle, Entry, Route};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    EntryAdded {
        id: String,
        host: String,
        routes: usize,
    },
    EntryRemoved {
        id: String,
        host: String,
        routes: usize,
    },
    HostChanged {
        id: String,
        from: String,
        to: String,
    },
    BackendChanged {
        id: String,
        from: String,
        to: String,
    },
    RouteAdded {
        id: String,
        route: String,
    },
    RouteRemoved {
        id: String,
        route: String,
    },
    LimitsChanged {
        id: String,
        route: String,
        from: String,
        to: String,
    },
    /// `protocol`, `canary` or `health_check` changed (each shown as compact JSON, `none` when
    /// absent): a canary's weight moving is a traffic change an operator must see.
    EntryPolicyChanged {
        id: String,
        field: &'static str,
        from: String,
        to: String,
    },
    /// The route's traffic policy (timeout, retries, rewrite, headers, CORS, websocket).
    PolicyChanged {
        id: String,
        route: String,
        from: String,
        to: String,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::EntryAdded { id, host, routes } => {
                write!(f, "+ {id}: new entry on host {host} ({routes} routes)")
            }
            Change::EntryRemoved { id, host, routes } => {
                write!(
                    f,
                    "- {id}: entry removed from host {host} ({routes} routes)"
                )
            }
            Change::HostChanged { id, from, to } => write!(f, "~ {id}: host {from} -> {to}"),
            Change::BackendChanged { id, from, to } => write!(f, "~ {id}: backend {from} -> {to}"),
            Change::RouteAdded { id, route } => write!(f, "+ {id}: route {route}"),
            Change::RouteRemoved { id, route } => write!(f, "- {id}: route {route}"),
            Change::LimitsChanged {
                id,
                route,
                from,
                to,
            } => {
                write!(f, "~ {id}: route {route} limits {from} -> {to}")
            }
            Change::EntryPolicyChanged {
                id,
                field,
                from,
                to,
            } => write!(f, "~ {id}: {field} {from} -> {to}"),
            Change::PolicyChanged {
                id,
                route,
                from,
                to,
            } => {
                write!(f, "~ {id}: route {route} policy {from} -> {to}")
            }
        }
    }
}

/// As its line (`~ billing/invoices: backend http://a:80 -> http://b:80`), as `gatewayctl diff`
/// prints it.
impl Serialize for Change {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BundleDiff {
    #[serde(rename = "from")]
    pub from_hash: String,
    #[serde(rename = "to")]
    pub to_hash: String,
    pub changes: Vec<Change>,
}

impl BundleDiff {
    pub fn to_json(&self) -> Value {
        crate::to_json(self)
    }
}

fn route_key(route: &Route) -> String {
    let methods = route
        .methods
        .as_ref()
        .map(|m| m.join(","))
        .unwrap_or_else(|| "*".into());
    format!("{methods} {}", route.path)
}

fn limits_text(route: &Route) -> String {
    serde_json::to_string(&route.limits).unwrap_or_default()
}

/// The entry-level traffic fields as (name, compact JSON or `none`).
fn policy_fields(e: &Entry) -> [(&'static str, String); 3] {
    fn text<T: serde::Serialize>(v: Option<&T>) -> String {
        v.and_then(|v| serde_json::to_string(v).ok())
            .unwrap_or_else(|| "none".into())
    }
    [
        ("protocol", e.protocol.as_str().to_string()),
        ("canary", text(e.canary.as_ref())),
        ("health_check", text(e.health_check.as_ref())),
    ]
}

/// The route's policy fields as compact JSON (`{}` when it has none).
fn policy_text(route: &Route) -> String {
    let mut v = serde_json::to_value(route).unwrap_or_default();
    if let Some(map) = v.as_object_mut() {
        for key in ["path", "methods", "limits"] {
            map.remove(key);
        }
    }
    v.to_string()
}

fn by_id(bundle: &Bundle) -> BTreeMap<String, &Entry> {
    bundle.entries.iter().map(|e| (e.id(), e)).collect()
}

/// Changes from `from` to `to`, ordered by entry id then route.
pub fn diff_bundles(from: &Bundle, to: &Bundle) -> BundleDiff {
    let (old, new) = (by_id(from), by_id(to));
    let mut changes = Vec::new();
    for (id, e) in &old {
        if !new.contains_key(id) {
            changes.push(Change::EntryRemoved {
                id: id.clone(),
                host: e.host.clone(),
                routes: e.routes.len(),
            });
        }
    }
    for (id, n) in &new {
        let Some(o) = old.get(id) else {
            changes.push(Change::EntryAdded {
                id: id.clone(),
                host: n.host.clone(),
                routes: n.routes.len(),
            });
            continue;
        };
        if o.host != n.host {
            changes.push(Change::HostChanged {
                id: id.clone(),
                from: o.host.clone(),
                to: n.host.clone(),
            });
        }
        if o.backend != n.backend {
            changes.push(Change::BackendChanged {
                id: id.clone(),
                from: o.backend.clone(),
                to: n.backend.clone(),
            });
        }
        for ((field, from), (_, to)) in policy_fields(o).into_iter().zip(policy_fields(n)) {
            if from != to {
                changes.push(Change::EntryPolicyChanged {
                    id: id.clone(),
                    field,
                    from,
                    to,
                });
            }
        }
        let old_routes: BTreeMap<String, &Route> =
            o.routes.iter().map(|r| (route_key(r), r)).collect();
        let new_routes: BTreeMap<String, &Route> =
            n.routes.iter().map(|r| (route_key(r), r)).collect();
        for (key, r) in &old_routes {
            match new_routes.get(key) {
                None => changes.push(Change::RouteRemoved {
                    id: id.clone(),
                    route: key.clone(),
                }),
                Some(nr) => {
                    if nr.limits != r.limits {
                        changes.push(Change::LimitsChanged {
                            id: id.clone(),
                            route: key.clone(),
                            from: limits_text(r),
                            to: limits_text(nr),
                        });
                    }
                    let (from, to) = (policy_text(r), policy_text(nr));
                    if from != to {
                        changes.push(Change::PolicyChanged {
                            id: id.clone(),
                            route: key.clone(),
                            from,
                            to,
                        });
                    }
                }
            }
        }
        for key in new_routes.keys().filter(|k| !old_routes.contains_key(*k)) {
            changes.push(Change::RouteAdded {
                id: id.clone(),
                route: key.clone(),
            });
        }
    }
    changes.sort_by_key(|c| match c {
        Change::EntryAdded { id, .. }
        | Change::EntryRemoved { id, .. }
        | Change::HostChanged { id, .. }
        | Change::BackendChanged { id, .. }
        | Change::RouteAdded { id, .. }
        | Change::RouteRemoved { id, .. }
        | Change::LimitsChanged { id, .. }
        | Change::EntryPolicyChanged { id, .. }
        | Change::PolicyChanged { id, .. } => id.clone(),
    });
    BundleDiff {
        from_hash: from.hash.clone(),
        to_hash: to.hash.clone(),
        changes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_render::{Limit, Per, Unit};
    use std::collections::BTreeMap;

    fn entry(team: &str, service: &str, backend: &str, routes: Vec<Route>) -> Entry {
        Entry {
            team: team.into(),
            service: service.into(),
            host: team.into(),
            backend: backend.into(),
            protocol: Default::default(),
            canary: None,
            health_check: None,
            routes,
        }
    }

    fn route(path: &str, methods: Option<&[&str]>, limits: Vec<Limit>) -> Route {
        Route::new(path, methods, limits)
    }

    fn bundle(hash: &str, entries: Vec<Entry>) -> Bundle {
        Bundle {
            hash: hash.into(),
            files: BTreeMap::new(),
            entries,
        }
    }

    #[test]
    fn names_each_kind_of_change() {
        let limit = |n| Limit::Global {
            per: Per::ClientIp,
            header: None,
            requests: n,
            every: Unit::Minute,
        };
        let a = bundle(
            "sha256:a",
            vec![
                entry(
                    "billing",
                    "invoices",
                    "http://a:80",
                    vec![
                        route("/invoices", Some(&["GET"]), vec![limit(10)]),
                        route("/old", None, vec![]),
                    ],
                ),
                entry(
                    "catalog",
                    "products",
                    "http://c:80",
                    vec![route("/products", None, vec![])],
                ),
            ],
        );
        let b = bundle(
            "sha256:b",
            vec![
                entry(
                    "billing",
                    "invoices",
                    "http://b:80",
                    vec![
                        route("/invoices", Some(&["GET"]), vec![limit(20)]),
                        route("/new", None, vec![]),
                    ],
                ),
                entry(
                    "search",
                    "query",
                    "http://s:80",
                    vec![route("/q", None, vec![])],
                ),
            ],
        );
        let diff = diff_bundles(&a, &b);
        let lines: Vec<String> = diff.changes.iter().map(ToString::to_string).collect();
        assert!(
            lines.contains(&"~ billing/invoices: backend http://a:80 -> http://b:80".to_string()),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"- billing/invoices: route * /old".to_string()),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"+ billing/invoices: route * /new".to_string()),
            "{lines:#?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("~ billing/invoices: route GET /invoices limits")),
            "{lines:#?}"
        );
        assert!(
            lines.contains(
                &"- catalog/products: entry removed from host catalog (1 routes)".to_string()
            ),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"+ search/query: new entry on host search (1 routes)".to_string()),
            "{lines:#?}"
        );
        assert_eq!(lines.len(), 6, "{lines:#?}");
        assert_eq!(
            diff.to_json(),
            serde_json::json!({ "from": "sha256:a", "to": "sha256:b", "changes": lines }),
            "the JSON lists the same lines"
        );
        assert!(
            diff_bundles(&a, &a).changes.is_empty(),
            "a bundle does not differ from itself"
        );
    }

    #[test]
    fn names_a_canary_weight_change_and_a_new_health_check() {
        let plain = entry(
            "billing",
            "invoices",
            "http://a:80",
            vec![route("/i", None, vec![])],
        );
        let mut canary = plain.clone();
        canary.canary = Some(gateway_render::Canary {
            backend: "http://c:80".into(),
            weight: 20,
            header: None,
        });
        let mut moved = canary.clone();
        if let Some(c) = moved.canary.as_mut() {
            c.weight = 100;
        }
        moved.health_check = Some(gateway_render::HealthCheck {
            path: "/healthz".into(),
            interval: "10s".into(),
        });
        let lines = |a: &Entry, b: &Entry| -> Vec<String> {
            diff_bundles(
                &bundle("sha256:a", vec![a.clone()]),
                &bundle("sha256:b", vec![b.clone()]),
            )
            .changes
            .iter()
            .map(ToString::to_string)
            .collect()
        };
        assert_eq!(
            lines(&plain, &canary),
            [r#"~ billing/invoices: canary none -> {"backend":"http://c:80","weight":20}"#]
        );
        assert_eq!(
            lines(&canary, &moved),
            [
                r#"~ billing/invoices: canary {"backend":"http://c:80","weight":20} -> {"backend":"http://c:80","weight":100}"#,
                r#"~ billing/invoices: health_check none -> {"path":"/healthz","interval":"10s"}"#,
            ]
        );
    }

    #[test]
    fn a_route_policy_change_is_named_with_both_policies() {
        let mut slow = route("/invoices", Some(&["GET"]), vec![]);
        let a = bundle("sha256:a", vec![entry("billing", "invoices", "http://a:80", vec![slow.clone()])]);
        slow.timeout = Some("5s".into());
        slow.websocket = true;
        let b = bundle("sha256:b", vec![entry("billing", "invoices", "http://a:80", vec![slow])]);
        let lines: Vec<String> = diff_bundles(&a, &b).changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            ["~ billing/invoices: route GET /invoices policy {} -> {\"timeout\":\"5s\",\"websocket\":true}"]
        );
    }
}
