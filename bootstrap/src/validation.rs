use crate::json::{Node, Splice, CLUSTERS_PLACEHOLDER};
use crate::listener::{common_top, gateway_listener, ratelimit_cluster, RouteSource};
use crate::{BootstrapError, BootstrapParams};
use serde::Serialize;
use serde_json::{json, Value};
use std::io::Write;

/// The bootstrap `envoy --mode validate` judges: the gateway's own listener and filters, with the
/// rendered clusters inlined into `static_resources` and the route configuration inlined into
/// the HCM. Validate mode only checks that `path_config_source` files exist, so inlining is the
/// only way to make Envoy parse the rendered config.
///
/// It borrows the rendered values and serialises them in place: at 50k routes a copy (or a
/// re-parse of the files) would cost more than the validation itself.
pub struct ValidationBootstrap<'a> {
    skeleton: Value,
    clusters: &'a [Value],
    route_config: &'a Value,
}

impl<'a> ValidationBootstrap<'a> {
    /// `clusters` and `route_config` are the rendered resources, with or without their `@type`
    /// (a DiscoveryResponse carries it; a bootstrap must not).
    pub fn new(
        params: &BootstrapParams,
        clusters: &'a [Value],
        route_config: &'a Value,
    ) -> Result<Self, BootstrapError> {
        let mut top = common_top(params)?;
        top.insert(
            "static_resources".into(),
            json!({
                "listeners": [gateway_listener(params, RouteSource::Inline)?],
                "clusters": [ratelimit_cluster(params), CLUSTERS_PLACEHOLDER]
            }),
        );
        Ok(ValidationBootstrap {
            skeleton: Value::Object(top),
            clusters,
            route_config,
        })
    }

    /// The JWT filter's rendered configuration (`Rendered::jwt`, a `TypedExtensionConfig`)
    /// inlined, as the proxies get it from `jwt.json`; `None` leaves the filter without providers.
    pub fn with_jwt(mut self, jwt: Option<&Value>) -> Self {
        let Some(config) = jwt.and_then(|j| j.get("typed_config")) else {
            return self;
        };
        let filters = self
            .skeleton
            .pointer_mut("/static_resources/listeners/0/filter_chains/0/filters/0/typed_config/http_filters")
            .and_then(Value::as_array_mut);
        for filter in filters.into_iter().flatten() {
            if filter.get("name").and_then(Value::as_str) == Some(gateway_render::contract::JWT_FILTER) {
                filter["typed_config"] = config.clone();
            }
        }
        self
    }

    /// Compact JSON, the fastest form for Envoy to parse.
    pub fn to_writer<W: Write>(&self, writer: W) -> serde_json::Result<()> {
        serde_json::to_writer(writer, self)
    }

    pub fn to_value(&self) -> serde_json::Result<Value> {
        serde_json::to_value(self)
    }
}

impl Serialize for ValidationBootstrap<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let splice = Splice {
            clusters: self.clusters,
            route_config: Some(self.route_config),
        };
        Node::new(&self.skeleton, splice).serialize(serializer)
    }
}

/// The validation bootstrap as a value (a copy of the rendered config; for large configs write
/// a [`ValidationBootstrap`] straight to a file instead).
pub fn validation_bootstrap(
    params: &BootstrapParams,
    clusters: &[Value],
    route_config: &Value,
) -> Result<Value, BootstrapError> {
    let vb = ValidationBootstrap::new(params, clusters, route_config)?;
    vb.to_value().map_err(|e| BootstrapError::Invalid {
        field: "rendered config",
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway_bootstrap;
    use gateway_render::contract::RATE_LIMIT_CLUSTER;

    fn listener(b: &Value) -> Value {
        b["static_resources"]["listeners"][0].clone()
    }

    #[test]
    fn same_listener_as_the_gateway_except_the_route_source() {
        let params = BootstrapParams::production();
        let rc = json!({"@type": "x", "name": "gateway", "virtual_hosts": []});
        let clusters = [json!({"@type": "x", "name": "billing-invoices"})];
        let v = validation_bootstrap(&params, &clusters, &rc).expect("valid");
        let g = gateway_bootstrap(&params).expect("valid");
        let (mut lv, mut lg) = (listener(&v), listener(&g));
        // The JWT filter: discovered from jwt.json when running, inlined when validating.
        let jwt_at = |l: &Value| {
            l["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"]
                .as_array()
                .expect("filters")
                .iter()
                .position(|f| f["name"] == gateway_render::contract::JWT_FILTER)
                .expect("the JWT filter")
        };
        let (iv, ig) = (jwt_at(&lv), jwt_at(&lg));
        assert_eq!(iv, ig);
        let hv = &mut lv["filter_chains"][0]["filters"][0]["typed_config"];
        assert_eq!(
            hv["route_config"],
            json!({"name": "gateway", "virtual_hosts": []})
        );
        hv.as_object_mut().expect("hcm").remove("route_config");
        let fv = hv["http_filters"][iv].take();
        assert_eq!(fv["typed_config"]["@type"], gateway_render::contract::JWT_AUTHN_TYPE_URL);
        assert_eq!(fv["disabled"], true);
        let hg = &mut lg["filter_chains"][0]["filters"][0]["typed_config"];
        let fg = hg["http_filters"][ig].take();
        assert!(fg["config_discovery"]["config_source"]["path_config_source"]["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("/rds/jwt/jwt.json")));
        assert_eq!(fg["disabled"], true);
        hg.as_object_mut().expect("hcm").remove("rds");
        assert_eq!(lv, lg);
        assert!(v.get("dynamic_resources").is_none());
        let names: Vec<&str> = v["static_resources"]["clusters"]
            .as_array()
            .expect("clusters")
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, [RATE_LIMIT_CLUSTER, "billing-invoices"]);
        assert!(v["static_resources"]["clusters"][1].get("@type").is_none());
    }
}
