//! What the validator reads: the rendered values, borrowed (`ConfigView`), or parsed from the
//! three files (`ParsedConfig`) when they come from a directory or a bundle.

use crate::ValidationError;
use gateway_render::contract::{
    CLUSTERS_FILE, CLUSTER_TYPE_URL, JWT_FILE, RATE_LIMIT_FILE, ROUTES_FILE,
    ROUTE_CONFIG_TYPE_URL, TYPED_EXTENSION_CONFIG_TYPE_URL,
};
use serde_json::Value;
use std::collections::BTreeMap;

/// A rendered config, borrowed. Resources may carry `@type` (as in the files) or not.
#[derive(Debug, Clone, Copy)]
pub struct ConfigView<'a> {
    pub clusters: &'a [Value],
    pub route_config: &'a Value,
    pub ratelimit_yaml: &'a str,
    /// The JWT filter's configuration (`jwt.json`'s resource), when the render has one.
    pub jwt: Option<&'a Value>,
}

/// A rendered config parsed from its files.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedConfig {
    pub clusters: Vec<Value>,
    pub route_config: Value,
    pub ratelimit_yaml: String,
    pub jwt: Option<Value>,
}

impl ParsedConfig {
    /// Parses `clusters.json` and `routes.json` (DiscoveryResponses) and takes `ratelimit.yaml`
    /// as text (layer 1 judges it). Errors name the file and say what Envoy would object to.
    pub fn from_files(files: &BTreeMap<String, String>) -> Result<ParsedConfig, ValidationError> {
        let get = |name: &str| {
            files.get(name).ok_or_else(|| ValidationError::Malformed {
                file: name.to_string(),
                reason: "missing".into(),
            })
        };
        let mut clusters =
            discovery_resources(CLUSTERS_FILE, get(CLUSTERS_FILE)?, CLUSTER_TYPE_URL)?;
        let routes = discovery_resources(ROUTES_FILE, get(ROUTES_FILE)?, ROUTE_CONFIG_TYPE_URL)?;
        if routes.len() != 1 {
            return Err(ValidationError::Malformed {
                file: ROUTES_FILE.into(),
                reason: format!("holds {} route configurations; the gateway's RDS subscription expects exactly one", routes.len()),
            });
        }
        let route_config = routes.into_iter().next().unwrap_or(Value::Null);
        let jwt = match files.get(JWT_FILE) {
            None => None,
            Some(text) => {
                let mut configs = discovery_resources(JWT_FILE, text, TYPED_EXTENSION_CONFIG_TYPE_URL)?;
                if configs.len() != 1 {
                    return Err(ValidationError::Malformed {
                        file: JWT_FILE.into(),
                        reason: format!("holds {} configurations; the JWT filter takes exactly one", configs.len()),
                    });
                }
                configs.pop()
            }
        };
        clusters.shrink_to_fit();
        Ok(ParsedConfig {
            clusters,
            route_config,
            ratelimit_yaml: get(RATE_LIMIT_FILE)?.clone(),
            jwt,
        })
    }

    pub fn view(&self) -> ConfigView<'_> {
        ConfigView {
            clusters: &self.clusters,
            route_config: &self.route_config,
            ratelimit_yaml: &self.ratelimit_yaml,
            jwt: self.jwt.as_ref(),
        }
    }
}

/// The resources of a DiscoveryResponse, each checked to be of `type_url`.
fn discovery_resources(
    file: &str,
    text: &str,
    type_url: &str,
) -> Result<Vec<Value>, ValidationError> {
    let malformed = |reason: String| ValidationError::Malformed {
        file: file.to_string(),
        reason,
    };
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| malformed(format!("Unable to parse JSON as proto (invalid JSON: {e})")))?;
    let Value::Object(mut doc) = doc else {
        return Err(malformed(
            "Unable to parse JSON as proto: a DiscoveryResponse is a JSON object".into(),
        ));
    };
    if let Some(t) = doc.get("type_url") {
        if t.as_str() != Some(type_url) {
            return Err(malformed(format!("type_url is {t}, expected {type_url}")));
        }
    }
    let resources = match doc.remove("resources") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(malformed(format!(
                "resources: expected a list, found {}",
                kind(&other)
            )))
        }
        None => Vec::new(),
    };
    for (i, r) in resources.iter().enumerate() {
        match r.get("@type").and_then(Value::as_str) {
            Some(t) if t == type_url => {}
            Some(t) => {
                return Err(malformed(format!(
                    "resources[{i}]: @type is {t}, expected {type_url}"
                )))
            }
            None => {
                return Err(malformed(format!(
                    "resources[{i}]: missing @type (a DiscoveryResponse resource is an Any)"
                )))
            }
        }
    }
    Ok(resources)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Team routes in a route configuration: routes that forward to a cluster or redirect. The
/// gateway's own routes (a host's not-found fallback, the catch-all, a kill-switch 503) answer
/// directly and are not counted, matching the renderer's `route_count`.
pub fn count_routes(route_config: &Value) -> usize {
    route_config
        .get("virtual_hosts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|vh| {
            vh.get("routes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter(|r| r.get("route").is_some() || r.get("redirect").is_some())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn files(clusters: &str, routes: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (CLUSTERS_FILE.to_string(), clusters.to_string()),
            (ROUTES_FILE.to_string(), routes.to_string()),
            (RATE_LIMIT_FILE.to_string(), "domain: gateway\n".to_string()),
        ])
    }

    fn routes_doc() -> String {
        json!({"resources": [{"@type": ROUTE_CONFIG_TYPE_URL, "name": "gateway"}]}).to_string()
    }

    #[test]
    fn parses_discovery_responses() {
        let clusters = json!({"resources": [{"@type": CLUSTER_TYPE_URL, "name": "a"}], "type_url": CLUSTER_TYPE_URL});
        let parsed = ParsedConfig::from_files(&files(&clusters.to_string(), &routes_doc()))
            .expect("valid files");
        assert_eq!(parsed.clusters.len(), 1);
        assert_eq!(parsed.view().route_config["name"], "gateway");
    }

    #[test]
    fn invalid_json_names_the_file() {
        let err = ParsedConfig::from_files(&files("{", &routes_doc())).expect_err("broken JSON");
        assert!(
            err.to_string()
                .starts_with("clusters.json: Unable to parse JSON"),
            "{err}"
        );
    }

    #[test]
    fn wrong_resource_type_names_the_index() {
        let clusters = json!({"resources": [{"@type": ROUTE_CONFIG_TYPE_URL, "name": "a"}]});
        let err = ParsedConfig::from_files(&files(&clusters.to_string(), &routes_doc()))
            .expect_err("wrong type");
        assert!(
            err.to_string()
                .contains("clusters.json: resources[0]: @type"),
            "{err}"
        );
    }

    #[test]
    fn missing_file_is_named() {
        let mut f = files("{}", &routes_doc());
        f.remove(RATE_LIMIT_FILE);
        let err = ParsedConfig::from_files(&f).expect_err("missing file");
        assert_eq!(err.to_string(), "ratelimit.yaml: missing");
    }

    #[test]
    fn two_route_configurations_are_refused() {
        let routes = json!({"resources": [{"@type": ROUTE_CONFIG_TYPE_URL, "name": "a"}, {"@type": ROUTE_CONFIG_TYPE_URL, "name": "b"}]});
        let err =
            ParsedConfig::from_files(&files("{}", &routes.to_string())).expect_err("two configs");
        assert!(err.to_string().contains("exactly one"), "{err}");
    }

    #[test]
    fn only_forwarding_routes_are_counted() {
        let rc = json!({"virtual_hosts": [
            {"name": "billing", "routes": [{"route": {"cluster": "a"}}, {"route": {"cluster": "b"}}, {"direct_response": {"status": 404}}]},
            {"name": "gateway-catch-all", "routes": [{"direct_response": {"status": 404}}]}
        ]});
        assert_eq!(count_routes(&rc), 2);
    }
}
