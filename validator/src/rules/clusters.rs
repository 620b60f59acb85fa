use super::Findings;
use gateway_render::contract::RATE_LIMIT_CLUSTER;
use serde_json::Value;
use std::collections::BTreeSet;

/// Cluster names are unique (CDS rejects the whole file otherwise) and never the bootstrap's
/// own rate-limit cluster. Returns the names, for the routes' targets.
pub(crate) fn check<'a>(clusters: &'a [Value], f: &mut Findings<'_>) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    for (i, cluster) in clusters.iter().enumerate() {
        let Some(name) = cluster
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            f.add(format!("resources[{i}]"), "cluster has no name");
            continue;
        };
        if name == RATE_LIMIT_CLUSTER {
            f.add(
                format!("cluster {name}"),
                "name is reserved for the bootstrap's rate-limit service cluster",
            );
        }
        if !names.insert(name) {
            f.add(format!("cluster {name}"), "defined twice");
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::run;
    use serde_json::json;

    #[test]
    fn duplicate_and_reserved_names_are_violations() {
        let clusters = [
            json!({"name": "a"}),
            json!({"name": "a"}),
            json!({"name": RATE_LIMIT_CLUSTER}),
            json!({}),
        ];
        let (names, v) = run("clusters.json", |f| check(&clusters, f));
        assert_eq!(names.len(), 2);
        let text: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "clusters.json: cluster a: defined twice",
                "clusters.json: cluster ratelimit: name is reserved for the bootstrap's rate-limit service cluster",
                "clusters.json: resources[3]: cluster has no name",
            ]
        );
    }
}
