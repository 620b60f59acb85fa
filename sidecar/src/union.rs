//! Step 1 of make-before-break: a clusters file that holds every live cluster and every new one,
//! so that both the routes Envoy runs now and the routes about to arrive find their clusters.
//! When no live cluster goes away the new clusters file is that file already, and no union is
//! written.

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

/// What step 1 of make-before-break has to put in before the new routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClustersFirst {
    /// The new clusters are the live ones, name for name and definition for definition: no
    /// cluster step is needed, the clusters file (only its `version_info` differs) can go in
    /// with the routes.
    Same,
    /// Every new cluster is already live exactly as defined, some live ones go away: the new
    /// routes need nothing added first, and the new clusters file goes in after them.
    Nothing,
    /// No live cluster goes away (the new names are a superset of the live ones): the new
    /// clusters file itself is the union, so it goes in first and nothing follows the routes.
    NewClusters,
    /// Some live cluster goes away: this union of live and new clusters (a new definition wins)
    /// goes in first, the new clusters file after the routes.
    Union(String),
}

/// Compares the `live` and `new` clusters by name and definition and says what step 1 needs.
pub fn clusters_first(
    live: &[u8],
    new: &str,
    new_hash: &str,
) -> Result<ClustersFirst, SidecarError> {
    let live = resources_by_name(live, "live clusters.json")?;
    let new = resources_by_name(new.as_bytes(), "new clusters.json")?;
    if new
        .iter()
        .all(|(name, cluster)| live.get(name) == Some(cluster))
    {
        return Ok(if live.len() == new.len() {
            ClustersFirst::Same
        } else {
            ClustersFirst::Nothing
        });
    }
    if live.keys().all(|name| new.contains_key(name)) {
        return Ok(ClustersFirst::NewClusters);
    }
    let mut union = live;
    union.extend(new);
    let resources: Vec<Value> = union.into_values().collect();
    let doc = json!({ "resources": resources, "type_url": CLUSTER_TYPE_URL, "version_info": union_version(new_hash) });
    Ok(ClustersFirst::Union(to_json_bytes(&doc)))
}

fn resources_by_name(bytes: &[u8], what: &str) -> Result<BTreeMap<String, Value>, SidecarError> {
    let doc: Value = serde_json::from_slice(bytes)
        .map_err(|e| SidecarError::Json(what.to_string(), e.to_string()))?;
    let mut out = BTreeMap::new();
    let resources = doc
        .get("resources")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            SidecarError::Json(
                what.to_string(),
                format!("{CLUSTERS_FILE} has no resources list"),
            )
        })?;
    for (i, resource) in resources.iter().enumerate() {
        let name = resource
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                SidecarError::Json(what.to_string(), format!("resources[{i}] has no name"))
            })?;
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
        to_json_bytes(
            &json!({ "resources": resources, "type_url": CLUSTER_TYPE_URL, "version_info": version }),
        )
    }

    #[test]
    fn union_keeps_live_clusters_and_new_definitions_win() {
        let live = file(&[("a", 1), ("b", 2)], "sha256:old");
        let new = file(&[("b", 3), ("c", 4)], "sha256:new");
        let ClustersFirst::Union(union) =
            clusters_first(live.as_bytes(), &new, "sha256:new").expect("valid")
        else {
            panic!("a goes away and c is new: a union");
        };
        let doc: Value = serde_json::from_str(&union).expect("json");
        let names: Vec<(&str, u64)> = doc["resources"]
            .as_array()
            .expect("list")
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().expect("name"),
                    r["port"].as_u64().expect("port"),
                )
            })
            .collect();
        assert_eq!(names, [("a", 1), ("b", 3), ("c", 4)]);
        assert_eq!(doc["version_info"], "union:sha256:new");
    }

    #[test]
    fn no_union_needed_when_new_clusters_are_all_live() {
        let live = file(&[("a", 1), ("b", 2)], "sha256:old");
        let new = file(&[("a", 1)], "sha256:new");
        assert_eq!(
            clusters_first(live.as_bytes(), &new, "sha256:new").expect("valid"),
            ClustersFirst::Nothing
        );
    }

    #[test]
    fn identical_clusters_are_the_same_whatever_the_version() {
        let live = file(&[("a", 1), ("b", 2)], "sha256:old");
        let new = file(&[("a", 1), ("b", 2)], "sha256:new");
        assert_eq!(
            clusters_first(live.as_bytes(), &new, "sha256:new").expect("valid"),
            ClustersFirst::Same
        );
    }

    #[test]
    fn no_union_when_no_cluster_goes_away() {
        let live = file(&[("a", 1), ("b", 2)], "sha256:old");
        let new = file(&[("a", 1), ("b", 2), ("c", 3)], "sha256:new");
        assert_eq!(
            clusters_first(live.as_bytes(), &new, "sha256:new").expect("valid"),
            ClustersFirst::NewClusters
        );
    }

    #[test]
    fn a_changed_definition_of_a_kept_cluster_needs_no_union() {
        // The new file holds every live name; a changed definition wins in a union anyway, so
        // the union would be the new file.
        let live = file(&[("a", 1)], "sha256:old");
        let new = file(&[("a", 2)], "sha256:new");
        assert_eq!(
            clusters_first(live.as_bytes(), &new, "sha256:new").expect("valid"),
            ClustersFirst::NewClusters
        );
    }

    #[test]
    fn a_cluster_going_away_needs_a_union() {
        let live = file(&[("a", 1), ("b", 2)], "sha256:old");
        let new = file(&[("a", 2), ("c", 3)], "sha256:new");
        assert!(matches!(
            clusters_first(live.as_bytes(), &new, "sha256:new").expect("valid"),
            ClustersFirst::Union(_)
        ));
    }

    #[test]
    fn unreadable_live_file_is_an_error_that_names_it() {
        let err = clusters_first(b"{", &file(&[], "v"), "v").expect_err("bad json");
        assert!(err.to_string().contains("live clusters.json"), "{err}");
    }
}
