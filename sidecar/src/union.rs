//! Step 1 of make-before-break: a clusters file that holds every live cluster and every new one,
//! so that both the routes Envoy runs now and the routes about to arrive find their clusters.
//! When no live cluster goes away the new clusters file is that file already, and no union is
//! written.
//!
//! Both files are read from disk one cluster at a time: first into an index (each cluster's name
//! and a digest of its canonical bytes) that decides the step, then, for a union, once more to
//! write it. The index costs a few dozen bytes a cluster; no file is held whole.

use crate::error::SidecarError;
use gateway_render::bundle::to_json_bytes;
use gateway_render::contract::{CLUSTERS_FILE, CLUSTER_TYPE_URL};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufReader, Read, Write};

/// The `version_info` of the union file, distinct from any bundle hash, so Envoy's
/// `cluster_manager.cds.version_text` says exactly when the union is in.
pub fn union_version(new_hash: &str) -> String {
    format!("union:{new_hash}")
}

/// What step 1 of make-before-break has to put in before the new routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Some live cluster goes away: the union of live and new clusters ([`write_union`], a new
    /// definition wins) goes in first, the new clusters file after the routes.
    Union,
}

/// A clusters file by cluster name: the digest of each cluster's canonical bytes, and which of
/// the file's resources it is (of two with one name the last counts, as in a map).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClustersIndex {
    by_name: BTreeMap<String, Indexed>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Indexed {
    digest: [u8; 32],
    at: usize,
}

impl ClustersIndex {
    /// Indexes the clusters file `reader` reads; `what` names it in errors.
    pub fn read(reader: impl Read, what: &str) -> Result<ClustersIndex, SidecarError> {
        let mut by_name = BTreeMap::new();
        for_each_resource(reader, what, |at, name, cluster| {
            let digest = Sha256::digest(to_json_bytes(cluster).as_bytes()).into();
            by_name.insert(name.to_string(), Indexed { digest, at });
            Ok(())
        })?;
        Ok(ClustersIndex { by_name })
    }

    fn is_last(&self, name: &str, at: usize) -> bool {
        self.by_name.get(name).is_some_and(|c| c.at == at)
    }
}

/// Compares the `live` and `new` clusters by name and definition and says what step 1 needs.
pub fn clusters_first(live: &ClustersIndex, new: &ClustersIndex) -> ClustersFirst {
    let live_as = |name: &String, cluster: &Indexed| {
        live.by_name.get(name).map(|c| c.digest) == Some(cluster.digest)
    };
    if new.by_name.iter().all(|(name, c)| live_as(name, c)) {
        return if live.by_name.len() == new.by_name.len() {
            ClustersFirst::Same
        } else {
            ClustersFirst::Nothing
        };
    }
    if live
        .by_name
        .keys()
        .all(|name| new.by_name.contains_key(name))
    {
        return ClustersFirst::NewClusters;
    }
    ClustersFirst::Union
}

/// Writes the union of the clusters files `live` and `new` (read again, their indexes given) in
/// canonical form, `version_info` `union:{new_hash}`: the live clusters the new file does not
/// name, in their order, then the new ones. Envoy keys clusters by name; the order is only
/// what makes the same two files give the same bytes.
pub fn write_union(
    live: (impl Read, &ClustersIndex),
    new: (impl Read, &ClustersIndex),
    new_hash: &str,
    out: &mut impl Write,
) -> Result<(), SidecarError> {
    let (live, live_index) = live;
    let (new, new_index) = new;
    let failed = |e: std::io::Error| SidecarError::file("the clusters union", "writing", e);
    out.write_all(b"{\n  \"resources\": [").map_err(failed)?;
    let mut first = true;
    let mut item = |cluster: &Value| -> Result<(), SidecarError> {
        out.write_all(if first { b"\n    " } else { b",\n    " })
            .map_err(failed)?;
        first = false;
        let bytes = to_json_bytes(cluster);
        // One level deeper than the top: every line after the first gains an indent.
        let body = bytes.strip_suffix('\n').unwrap_or(&bytes);
        out.write_all(body.replace('\n', "\n    ").as_bytes())
            .map_err(failed)
    };
    for_each_resource(live, "live clusters.json", |at, name, cluster| {
        let going = !new_index.by_name.contains_key(name) && live_index.is_last(name, at);
        if going {
            item(cluster)?;
        }
        Ok(())
    })?;
    for_each_resource(new, "new clusters.json", |at, name, cluster| {
        if new_index.is_last(name, at) {
            item(cluster)?;
        }
        Ok(())
    })?;
    let tail = format!(
        "{}],\n  \"type_url\": {},\n  \"version_info\": {}\n}}\n",
        if first { "" } else { "\n  " },
        Value::from(CLUSTER_TYPE_URL),
        Value::from(union_version(new_hash)),
    );
    out.write_all(tail.as_bytes()).map_err(failed)
}

/// Calls `f` with each of the file's resources (its index, name and definition), one at a time.
fn for_each_resource(
    reader: impl Read,
    what: &str,
    f: impl FnMut(usize, &str, &Value) -> Result<(), SidecarError>,
) -> Result<(), SidecarError> {
    let mut each = Each {
        what,
        f,
        failed: None,
    };
    let mut de = serde_json::Deserializer::from_reader(BufReader::new(reader));
    let read = de
        .deserialize_map(Top(&mut each))
        .and_then(|found| de.end().map(|()| found));
    if let Some(e) = each.failed {
        return Err(e);
    }
    match read {
        Ok(true) => Ok(()),
        Ok(false) => Err(SidecarError::Json(
            what.to_string(),
            format!("{CLUSTERS_FILE} has no resources list"),
        )),
        Err(e) => Err(SidecarError::Json(what.to_string(), e.to_string())),
    }
}

struct Each<'w, F> {
    what: &'w str,
    f: F,
    /// The callback's own error, which stopped the read.
    failed: Option<SidecarError>,
}

/// The top-level object: `true` when it has a `resources` list (anything else there is an
/// error that says what it found).
struct Top<'e, 'w, F>(&'e mut Each<'w, F>);

impl<'de, F> Visitor<'de> for Top<'_, '_, F>
where
    F: FnMut(usize, &str, &Value) -> Result<(), SidecarError>,
{
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a clusters file (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "resources" {
                found = map.next_value_seed(Resources(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// The `resources` list, each item handed to the callback.
struct Resources<'e, 'w, F>(&'e mut Each<'w, F>);

impl<'de, F> DeserializeSeed<'de> for Resources<'_, '_, F>
where
    F: FnMut(usize, &str, &Value) -> Result<(), SidecarError>,
{
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_seq(ResourceList(self.0))
    }
}

struct ResourceList<'e, 'w, F>(&'e mut Each<'w, F>);

impl<'de, F> Visitor<'de> for ResourceList<'_, '_, F>
where
    F: FnMut(usize, &str, &Value) -> Result<(), SidecarError>,
{
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {CLUSTERS_FILE} resources list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let each = self.0;
        let mut at = 0;
        while let Some(cluster) = seq.next_element::<Value>()? {
            let Some(name) = cluster.get("name").and_then(Value::as_str) else {
                each.failed = Some(SidecarError::Json(
                    each.what.to_string(),
                    format!("resources[{at}] has no name"),
                ));
                return Err(serde::de::Error::custom("stopped"));
            };
            if let Err(e) = (each.f)(at, name, &cluster) {
                each.failed = Some(e);
                return Err(serde::de::Error::custom("stopped"));
            }
            at += 1;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The step for two files in memory, and the union when there is one.
    fn step(
        live: &str,
        new: &str,
        hash: &str,
    ) -> Result<(ClustersFirst, Option<String>), SidecarError> {
        let live_index = ClustersIndex::read(live.as_bytes(), "live clusters.json")?;
        let new_index = ClustersIndex::read(new.as_bytes(), "new clusters.json")?;
        let first = clusters_first(&live_index, &new_index);
        if first != ClustersFirst::Union {
            return Ok((first, None));
        }
        let mut out = Vec::new();
        write_union(
            (live.as_bytes(), &live_index),
            (new.as_bytes(), &new_index),
            hash,
            &mut out,
        )?;
        Ok((first, Some(String::from_utf8(out).expect("UTF-8"))))
    }

    fn file(clusters: &[(&str, u16)], version: &str) -> String {
        let resources: Vec<Value> = clusters
            .iter()
            .map(|(name, port)| json!({ "@type": CLUSTER_TYPE_URL, "name": name, "port": port }))
            .collect();
        to_json_bytes(
            &json!({ "resources": resources, "type_url": CLUSTER_TYPE_URL, "version_info": version }),
        )
    }

    /// Each cluster's name and port, in the file's order.
    fn names_and_ports(doc: &Value) -> Vec<(&str, u64)> {
        doc["resources"]
            .as_array()
            .expect("list")
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().expect("name"),
                    r["port"].as_u64().expect("port"),
                )
            })
            .collect()
    }

    /// What goes first when the live clusters are `live` and the new bundle's are `new`.
    fn first_step(live: &[(&str, u16)], new: &[(&str, u16)]) -> ClustersFirst {
        let (live, new) = (file(live, "sha256:old"), file(new, "sha256:new"));
        step(&live, &new, "sha256:new").expect("valid").0
    }

    #[test]
    fn union_keeps_live_clusters_and_new_definitions_win() {
        let live = file(&[("a", 1), ("b", 2)], "sha256:old");
        let new = file(&[("b", 3), ("c", 4)], "sha256:new");
        let (ClustersFirst::Union, Some(union)) = step(&live, &new, "sha256:new").expect("valid")
        else {
            panic!("a goes away and c is new: a union");
        };
        let doc: Value = serde_json::from_str(&union).expect("json");
        assert_eq!(union, to_json_bytes(&doc), "written in canonical form");
        let names = names_and_ports(&doc);
        assert_eq!(names, [("a", 1), ("b", 3), ("c", 4)]);
        assert_eq!(doc["version_info"], "union:sha256:new");
    }

    #[test]
    fn no_union_needed_when_new_clusters_are_all_live() {
        assert_eq!(
            first_step(&[("a", 1), ("b", 2)], &[("a", 1)]),
            ClustersFirst::Nothing
        );
    }

    #[test]
    fn identical_clusters_are_the_same_whatever_the_version() {
        assert_eq!(
            first_step(&[("a", 1), ("b", 2)], &[("a", 1), ("b", 2)]),
            ClustersFirst::Same
        );
    }

    #[test]
    fn no_union_when_no_cluster_goes_away() {
        assert_eq!(
            first_step(&[("a", 1), ("b", 2)], &[("a", 1), ("b", 2), ("c", 3)]),
            ClustersFirst::NewClusters
        );
    }

    #[test]
    fn a_changed_definition_of_a_kept_cluster_needs_no_union() {
        // The new file holds every live name; a changed definition wins in a union anyway, so
        // the union would be the new file.
        assert_eq!(
            first_step(&[("a", 1)], &[("a", 2)]),
            ClustersFirst::NewClusters
        );
    }

    #[test]
    fn a_cluster_going_away_needs_a_union() {
        let live = file(&[("a", 1), ("b", 2)], "sha256:old");
        let new = file(&[("a", 9), ("c", 3), ("a", 2)], "sha256:new");
        let (first, union) = step(&live, &new, "sha256:new").expect("valid");
        assert_eq!(first, ClustersFirst::Union);
        // The live cluster going away first, then the new ones; of one name the last counts,
        // as in a map.
        let doc: Value = serde_json::from_str(&union.expect("a union")).expect("json");
        let names = names_and_ports(&doc);
        assert_eq!(names, [("b", 2), ("c", 3), ("a", 2)]);
        let empty = file(&[], "sha256:old");
        let (_, union) = step(&live, &empty, "sha256:new").expect("valid");
        assert_eq!(union, None, "no new cluster: nothing to add first");
    }

    #[test]
    fn unreadable_live_file_is_an_error_that_names_it() {
        let err = step("{", &file(&[], "v"), "v").expect_err("bad json");
        assert!(err.to_string().contains("live clusters.json"), "{err}");
    }
}
