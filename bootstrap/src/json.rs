//! How bootstraps are written: the checked-in one by the renderer's canonical writer
//! (`to_pretty_json`), the validation bootstrap through `Node`, which sorts object keys
//! (byte-stable whatever map type serde_json was built with) and splices the rendered clusters
//! and route configuration in by reference, so a 50k-route config is never deep-copied.

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::Value;

/// Marks the element of `static_resources.clusters` where the rendered clusters go.
pub(crate) const CLUSTERS_PLACEHOLDER: &str = "\u{0}gateway:rendered-clusters";
/// Marks the HCM's `route_config` value where the rendered route configuration goes.
pub(crate) const ROUTE_CONFIG_PLACEHOLDER: &str = "\u{0}gateway:rendered-route-config";

/// What replaces the placeholders.
#[derive(Clone, Copy)]
pub(crate) struct Splice<'a> {
    pub clusters: &'a [Value],
    pub route_config: Option<&'a Value>,
}

/// A value on its way out. `as_resource`: the value came from a DiscoveryResponse, whose
/// resources carry `@type`; inlined into a bootstrap they are plain messages, where Envoy
/// rejects `@type` as an unknown field.
pub(crate) struct Node<'a> {
    pub value: &'a Value,
    pub splice: Splice<'a>,
    pub as_resource: bool,
}

impl<'a> Node<'a> {
    pub(crate) fn new(value: &'a Value, splice: Splice<'a>) -> Self {
        Node {
            value,
            splice,
            as_resource: false,
        }
    }

    fn child(&self, value: &'a Value) -> Node<'a> {
        Node {
            value,
            splice: self.splice,
            as_resource: false,
        }
    }
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map
                    .iter()
                    .filter(|(k, _)| !(self.as_resource && k.as_str() == "@type"))
                    .collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    match (v.as_str(), self.splice.route_config) {
                        (Some(ROUTE_CONFIG_PLACEHOLDER), Some(rc)) => out.serialize_entry(
                            k,
                            &Node {
                                value: rc,
                                splice: self.splice,
                                as_resource: true,
                            },
                        )?,
                        _ => out.serialize_entry(k, &self.child(v))?,
                    }
                }
                out.end()
            }
            Value::Array(items) => {
                let spliced = items
                    .iter()
                    .filter(|v| v.as_str() == Some(CLUSTERS_PLACEHOLDER))
                    .count();
                let len = items.len() - spliced + spliced * self.splice.clusters.len();
                let mut out = serializer.serialize_seq(Some(len))?;
                for item in items {
                    if item.as_str() == Some(CLUSTERS_PLACEHOLDER) {
                        for cluster in self.splice.clusters {
                            out.serialize_element(&Node {
                                value: cluster,
                                splice: self.splice,
                                as_resource: true,
                            })?;
                        }
                    } else {
                        out.serialize_element(&self.child(item))?;
                    }
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// Pretty JSON with sorted keys and a trailing newline: the format of the checked-in bootstrap,
/// the renderer's canonical writer.
pub use gateway_render::canonical::to_json_bytes as to_pretty_json;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_text_ends_with_newline() {
        let text = to_pretty_json(&json!({"b": 1, "a": {"d": 2, "c": 3}}));
        assert_eq!(
            text,
            "{\n  \"a\": {\n    \"c\": 3,\n    \"d\": 2\n  },\n  \"b\": 1\n}\n"
        );
    }

    #[test]
    fn placeholders_are_replaced_and_type_stripped_from_resources() {
        let skeleton = json!({"clusters": ["x", CLUSTERS_PLACEHOLDER], "hcm": {"route_config": ROUTE_CONFIG_PLACEHOLDER}});
        let clusters = [json!({"@type": "t", "name": "a"}), json!({"name": "b"})];
        let rc = json!({"@type": "t", "name": "gateway", "inner": {"@type": "kept"}});
        let splice = Splice {
            clusters: &clusters,
            route_config: Some(&rc),
        };
        let text = serde_json::to_string(&Node::new(&skeleton, splice)).expect("serialises");
        assert_eq!(
            text,
            r#"{"clusters":["x",{"name":"a"},{"name":"b"}],"hcm":{"route_config":{"inner":{"@type":"kept"},"name":"gateway"}}}"#
        );
    }
}
