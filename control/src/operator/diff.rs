//! What changed between two bundles, per team, service, route and field — not a text diff.
//!
//! Entries in a bundle are canonical (the registration checks sort every set: methods, retry
//! conditions, status codes, removed headers, CORS lists), so comparing values compares
//! behaviour: a reordering a team writes is no change.

use gateway_render::{Bundle, Entry, Route};
use serde::ser::SerializeMap;
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
    RouteAdded {
        id: String,
        route: String,
    },
    RouteRemoved {
        id: String,
        route: String,
    },
    /// One field of an entry (`route: None`: `backend`, `canary.weight`, …) or of one of its
    /// routes (`timeout`, `retries.on`, `request_headers.add.x-env`, `limits`, …) changed.
    /// `field` is the dotted path; values are the field's text (strings as they are, anything
    /// else compact JSON), `none` when absent.
    Changed {
        id: String,
        route: Option<String>,
        field: String,
        from: String,
        to: String,
    },
}

impl Change {
    /// `entry-added`, `entry-removed`, `route-added`, `route-removed` or `changed`.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::EntryAdded { .. } => "entry-added",
            Change::EntryRemoved { .. } => "entry-removed",
            Change::RouteAdded { .. } => "route-added",
            Change::RouteRemoved { .. } => "route-removed",
            Change::Changed { .. } => "changed",
        }
    }

    pub fn id(&self) -> &str {
        match self {
            Change::EntryAdded { id, .. }
            | Change::EntryRemoved { id, .. }
            | Change::RouteAdded { id, .. }
            | Change::RouteRemoved { id, .. }
            | Change::Changed { id, .. } => id,
        }
    }
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
            Change::RouteAdded { id, route } => write!(f, "+ {id}: route {route}"),
            Change::RouteRemoved { id, route } => write!(f, "- {id}: route {route}"),
            Change::Changed {
                id,
                route: None,
                field,
                from,
                to,
            } => write!(f, "~ {id}: {field} {from} -> {to}"),
            Change::Changed {
                id,
                route: Some(route),
                field,
                from,
                to,
            } => write!(f, "~ {id}: route {route} {field} {from} -> {to}"),
        }
    }
}

/// As an object: `line` (as `gatewayctl diff` prints it), `kind`, `id`, and the variant's
/// fields (`host` and `routes`; `route`; `route` when a route's, `field`, `from`, `to`).
impl Serialize for Change {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("line", &self.to_string())?;
        map.serialize_entry("kind", self.kind())?;
        map.serialize_entry("id", self.id())?;
        match self {
            Change::EntryAdded { host, routes, .. } | Change::EntryRemoved { host, routes, .. } => {
                map.serialize_entry("host", host)?;
                map.serialize_entry("routes", routes)?;
            }
            Change::RouteAdded { route, .. } | Change::RouteRemoved { route, .. } => {
                map.serialize_entry("route", route)?;
            }
            Change::Changed {
                route,
                field,
                from,
                to,
                ..
            } => {
                if let Some(route) = route {
                    map.serialize_entry("route", route)?;
                }
                map.serialize_entry("field", field)?;
                map.serialize_entry("from", from)?;
                map.serialize_entry("to", to)?;
            }
        }
        map.end()
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
    format!("{methods} {}", gateway_render::names::match_key(route))
}

/// `value`'s leaves as dotted paths under `prefix`; an array is one leaf (its order is the
/// canonical one), an empty object none.
fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&path, v, out);
            }
        }
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// The fields of `value` (an entry or a route) but `skip`, as dotted paths and their text.
fn fields<T: Serialize>(value: &T, skip: &[&str]) -> BTreeMap<String, String> {
    let mut v = serde_json::to_value(value).unwrap_or_default();
    if let Some(map) = v.as_object_mut() {
        for key in skip {
            map.remove(*key);
        }
    }
    let mut out = BTreeMap::new();
    flatten("", &v, &mut out);
    out
}

/// One [`Change::Changed`] per field whose text differs, in field order.
fn field_changes(
    id: &str,
    route: Option<&str>,
    from: BTreeMap<String, String>,
    to: BTreeMap<String, String>,
    changes: &mut Vec<Change>,
) {
    let mut names: Vec<&String> = from.keys().chain(to.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let (a, b) = (from.get(name), to.get(name));
        if a != b {
            let none = || "none".to_string();
            changes.push(Change::Changed {
                id: id.to_string(),
                route: route.map(str::to_string),
                field: name.clone(),
                from: a.cloned().unwrap_or_else(none),
                to: b.cloned().unwrap_or_else(none),
            });
        }
    }
}

fn by_id(entries: &[Entry]) -> BTreeMap<String, &Entry> {
    entries.iter().map(|e| (e.id(), e)).collect()
}

/// Changes from `from` to `to`, ordered by entry id, then entry fields, removed, changed and
/// added routes.
pub fn diff_bundles(from: &Bundle, to: &Bundle) -> BundleDiff {
    BundleDiff {
        from_hash: from.hash.clone(),
        to_hash: to.hash.clone(),
        changes: diff_entries(&from.entries, &to.entries),
    }
}

/// Changes from the entries `from` to the entries `to` (each set keyed by `team/service`), as
/// [`diff_bundles`] orders them.
pub fn diff_entries(from: &[Entry], to: &[Entry]) -> Vec<Change> {
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
        let entry_skip = ["team", "service", "routes"];
        field_changes(
            id,
            None,
            fields(o, &entry_skip),
            fields(n, &entry_skip),
            &mut changes,
        );
        let old_routes: BTreeMap<String, &Route> =
            o.routes.iter().map(|r| (route_key(r), r)).collect();
        let new_routes: BTreeMap<String, &Route> =
            n.routes.iter().map(|r| (route_key(r), r)).collect();
        let route_skip = ["path", "methods"];
        for (key, r) in &old_routes {
            match new_routes.get(key) {
                None => changes.push(Change::RouteRemoved {
                    id: id.clone(),
                    route: key.clone(),
                }),
                Some(nr) => field_changes(
                    id,
                    Some(key),
                    fields(r, &route_skip),
                    fields(nr, &route_skip),
                    &mut changes,
                ),
            }
        }
        for key in new_routes.keys().filter(|k| !old_routes.contains_key(*k)) {
            changes.push(Change::RouteAdded {
                id: id.clone(),
                route: key.clone(),
            });
        }
    }
    changes.sort_by(|a, b| a.id().cmp(b.id()));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_render::{Limit, Per, Unit};
    use std::collections::BTreeMap;

    fn entry(team: &str, service: &str, backend: &str, routes: Vec<Route>) -> Entry {
        Entry {
            rollout: None,
            serving: None,
            team: team.into(),
            service: service.into(),
            host: team.into(),
            backend: backend.into(),
            protocol: Default::default(),
            canary: None,
            health_check: None,
            preserve_host: false,
            jwt: Default::default(),
            backends: vec![],
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
        let json = diff.to_json();
        let json_lines: Vec<&str> = json["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .filter_map(|c| c["line"].as_str())
            .collect();
        assert_eq!(json_lines, lines, "the JSON carries the same lines");
        let limits = json["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .find(|c| c["field"] == "limits")
            .expect("the limits change");
        assert_eq!(limits["kind"], "changed");
        assert_eq!(limits["id"], "billing/invoices");
        assert_eq!(limits["route"], "GET /invoices");
        assert!(limits["from"].as_str().unwrap_or_default().contains("10"), "{limits}");
        assert!(limits["to"].as_str().unwrap_or_default().contains("20"), "{limits}");
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
            [
                "~ billing/invoices: canary.backend none -> http://c:80",
                "~ billing/invoices: canary.weight none -> 20",
            ]
        );
        assert_eq!(
            lines(&canary, &moved),
            [
                "~ billing/invoices: canary.weight 20 -> 100",
                "~ billing/invoices: health_check.interval none -> 10s",
                "~ billing/invoices: health_check.path none -> /healthz",
            ]
        );
    }

    #[test]
    fn a_route_policy_change_is_named_field_by_field() {
        let mut slow = route("/invoices", Some(&["GET"]), vec![]);
        slow.retries = Some(gateway_render::Retries {
            attempts: 2,
            on: vec!["5xx".into(), "connect-failure".into()],
            status_codes: vec![],
            per_try_timeout: None,
        });
        let a = bundle("sha256:a", vec![entry("billing", "invoices", "http://a:80", vec![slow.clone()])]);
        slow.timeout = Some("5s".into());
        slow.websocket = true;
        if let Some(r) = slow.retries.as_mut() {
            r.attempts = 3;
        }
        let b = bundle("sha256:b", vec![entry("billing", "invoices", "http://a:80", vec![slow])]);
        let lines: Vec<String> = diff_bundles(&a, &b).changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "~ billing/invoices: route GET /invoices retries.attempts 2 -> 3",
                "~ billing/invoices: route GET /invoices timeout none -> 5s",
                "~ billing/invoices: route GET /invoices websocket none -> true",
            ]
        );
    }
}
