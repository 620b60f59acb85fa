//! Step 1 of make-before-break: a clusters file that holds every live cluster and every new one,
//! so that both the routes Envoy runs now and the routes about to arrive find their clusters.

use crate::error::SidecarError;
use gateway_render::bundle::to_json_bytes;
use gateway_render::contract::{CLUSTERS_FILE, CLUSTER_TYPE_URL};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The `version_info` of the union file, distinct from any bundle hash, so Envoy's
/// `cluster_manager.cds.version_text` says exactly when the union is in.
pub fn union_version(new_hash: &str) -> String {
    format!("union:{new_hash}")
}

/// The union of `live` and `new` clusters by name (a new definition wins), or `None` when every
/// new cluster is already live exactly as defined: then the new routes need nothing added first.
pub fn union_clusters(live: &[u8], new: &str, new_hash: &str) -> Result<Option<String>, SidecarError> {
    let live = resources_by_name(live, "live clusters.json")?;
    let new = resources_by_name(new.as_bytes(), "new clusters.json")?;
    if new.iter().all(|(name, cluster)| live.get(name) == Some(cluster)) {
        return Ok(None);
    }
    let mut union = live;
    union.extend(new);
    let resources: Vec<Value> = union.into_values().collect();
    let doc = json!({ "resources": resources, "type_url": CLUSTER_TYPE_URL, "version_info": union_version(new_hash) });
    Ok(Some(to_json_bytes(&doc)))
}

fn resources_by_name(bytes: &[u8], what: &str) -> Result<BTreeMap<String, Value>, SidecarError> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| SidecarError::Json(what.to_string(), e.to_string()))?;
    let mut out = BTreeMap::new();
    let resources = doc
        .get("resources")
        .and_then(Value::as_array)
        .ok_or_else(|| SidecarError::Json(what.to_string(), format!("{CLUSTERS_FILE} has no resources list")))?;
    for (i, resource) in resources.iter().enumerate() {
        let name = resource
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| SidecarError::Json(what.to_string(), format!("resources[{i}] has no name")))?;
        out.insert(name.to_string(), resource.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(clusters: &[(&str, u16)], version: &str) -> String {
        let resources: Vec<Value> = clusters
            .iter()
            .map(|(name, port)| json!({ "@type": CLUSTER_TYPE_URL, "name": name, "port": port }))
            .collect();
        to_json_bytes(&json!({ "resources": resources, "type_url": CLUSTER_TYPE_URL, "version_info": version }))
    }

    #[test]
    fn union_keeps_live_clusters_and_new_definitions_win() {
        let live = file(&[("a", 1), ("b", 2)], "sha256:old");
        let new = file(&[("b", 3), ("c", 4)], "sha256:new");
        let union = union_clusters(live.as_bytes(), &new, "sha256:new")
            .expect("valid")
            .expect("c is new");
        let doc: Value = serde_json::from_str(&union).expect("json");
        let names: Vec<(&str, u64)> = doc["resources"]
            .as_array()
            .expect("list")
            .iter()
            .map(|r| (r["name"].as_str().expect("name"), r["port"].as_u64().expect("port")))
            .collect();
        assert_eq!(names, [("a", 1), ("b", 3), ("c", 4)]);
        assert_eq!(doc["version_info"], "union:sha256:new");
    }

    #[test]
    fn no_union_needed_when_new_clusters_are_all_live() {
        let live = file(&[("a", 1), ("b", 2)], "sha256:old");
        let new = file(&[("a", 1)], "sha256:new");
        assert_eq!(
            union_clusters(live.as_bytes(), &new, "sha256:new").expect("valid"),
            None
        );
    }

    #[test]
    fn a_changed_definition_needs_a_union() {
        let live = file(&[("a", 1)], "sha256:old");
        let new = file(&[("a", 2)], "sha256:new");
        assert!(union_clusters(live.as_bytes(), &new, "sha256:new")
            .expect("valid")
            .is_some());
    }

    #[test]
    fn unreadable_live_file_is_an_error_that_names_it() {
        let err = union_clusters(b"{", &file(&[], "v"), "v").expect_err("bad json");
        assert!(err.to_string().contains("live clusters.json"), "{err}");
    }
}
