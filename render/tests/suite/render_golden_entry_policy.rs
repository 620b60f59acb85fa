//! Golden files for the entry-level traffic fields (`protocol`, `canary`, `health_check`): the
//! exact bytes `tests/golden/entry-policy/entries` render to (a canary split with a cohort
//! header and health checks over HTTP/2 and TLS, a gRPC cutover, a health-checked HTTP/1.1
//! service). Regenerate deliberately with `UPDATE_GOLDEN=1` and review the diff.

use gateway_render::check::check_entry_bytes;
use gateway_render::{render, Policy};
use crate::support::{config, BASE_DOMAIN};
use std::path::PathBuf;

#[test]
fn entry_policy_render_matches_the_golden_files() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/entry-policy");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join("entries"))
        .expect("golden entries")
        .map(|d| d.expect("directory entry").path())
        .collect();
    paths.sort();
    let entries: Vec<_> = paths
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).expect("read entry");
            check_entry_bytes(&bytes, &Policy::new(BASE_DOMAIN, false))
                .unwrap_or_else(|r| panic!("{}:\n{r}", p.display()))
        })
        .collect();
    assert_eq!(entries.len(), 3);
    let rendered = render(&entries, &config()).expect("renders");
    let mut actual = rendered.files.clone();
    actual.insert("hash.txt".into(), format!("{}\n", rendered.hash));
    let update = std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1");
    let mut changed = Vec::new();
    for (name, text) in &actual {
        let path = dir.join(name);
        if update {
            std::fs::write(&path, text).expect("write golden file");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            changed.push(name.clone());
        }
    }
    assert!(
        changed.is_empty(),
        "rendered bytes changed in {changed:?}. If intended, run with UPDATE_GOLDEN=1 and review the diff."
    );
    // The shapes the fields promise, read from the render itself.
    let clusters = &rendered.clusters;
    let names: Vec<&str> = clusters.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "billing.invoices-api",
            "billing.invoices-api.canary",
            "billing.invoices-api.main-first",
            "billing.invoices-api.canary-first",
            "catalog.products-api",
            "catalog.search",
            "catalog.search.canary",
            "catalog.search.main-first",
            "catalog.search.canary-first",
        ]
    );
    let hc = &clusters[1]["health_checks"][0];
    assert_eq!(hc["interval"], "10s");
    assert_eq!(
        hc["http_health_check"]["host"],
        "invoices-canary.internal.example:8443"
    );
    assert_eq!(hc["http_health_check"]["codec_client_type"], "HTTP2");
    for c in clusters.iter().filter(|c| c.get("cluster_type").is_none()) {
        assert_eq!(
            c["outlier_detection"]["max_ejection_percent"], 50,
            "{}",
            c["name"]
        );
        assert!(c["circuit_breakers"]["thresholds"][0]["retry_budget"].is_object());
    }
    let vhosts = rendered.route_config["virtual_hosts"]
        .as_array()
        .expect("vhosts");
    let billing = &vhosts
        .iter()
        .find(|v| v["name"] == "invoices.api.example.com")
        .expect("billing's host")["routes"];
    assert_eq!(
        billing[0]["name"],
        "billing.invoices-api:*:/invoices/export#canary"
    );
    assert_eq!(
        billing[0]["route"]["cluster"],
        "billing.invoices-api.canary-first"
    );
    assert_eq!(
        billing[1]["route"]["weighted_clusters"]["clusters"][1]["weight"],
        10
    );
    assert_eq!(billing[1]["route"]["auto_host_rewrite"], true);
}
