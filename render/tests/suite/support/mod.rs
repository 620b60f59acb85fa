//! Shared by the render tests: the sample entries, a render of them, and the golden files.

pub mod envoy;

use gateway_render::{render, Entry, RenderConfig, Rendered};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const BASE_DOMAIN: &str = "api.example.com";

pub fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/entries")
}

/// The sample entries in `examples/entries`, in file-name order, each through the registration
/// checks (as the registry would hold them), without the loopback allowance.
pub fn example_entries() -> Vec<Entry> {
    let dir = examples_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|d| d.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 3,
        "expected the sample entries in {}",
        dir.display()
    );
    paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p)
                .unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
            let policy = gateway_render::Policy::new(BASE_DOMAIN, false);
            gateway_render::check::check_entry_bytes(text.as_bytes(), &policy).unwrap_or_else(
                |rejection| panic!("{} is rejected by the checks:\n{rejection}", p.display()),
            )
        })
        .collect()
}

pub fn config() -> RenderConfig {
    RenderConfig::new(BASE_DOMAIN)
}

pub fn render_examples() -> Rendered {
    render(&example_entries(), &config()).expect("the sample entries render")
}

/// One descriptor as a list of (key, value), `None` where any value is counted separately.
pub type DescriptorPath = Vec<(String, Option<String>)>;

/// The descriptors the rendered routes' rate-limit actions emit, read back from the route
/// configuration Value (not from the code that built it).
pub fn action_descriptors(route_config: &serde_json::Value) -> Vec<DescriptorPath> {
    let mut out = Vec::new();
    for vhost in route_config["virtual_hosts"]
        .as_array()
        .expect("virtual_hosts")
    {
        for route in vhost["routes"].as_array().expect("routes") {
            let Some(limits) = route["route"]["rate_limits"].as_array() else {
                continue;
            };
            for limit in limits {
                let path = limit["actions"]
                    .as_array()
                    .expect("actions")
                    .iter()
                    .map(|action| {
                        if let Some(g) = action.get("generic_key") {
                            (
                                g["descriptor_key"].as_str().expect("key").to_string(),
                                Some(g["descriptor_value"].as_str().expect("value").to_string()),
                            )
                        } else if action.get("masked_remote_address").is_some() {
                            ("masked_remote_address".to_string(), None)
                        } else if let Some(h) = action.get("request_headers") {
                            (h["descriptor_key"].as_str().expect("key").to_string(), None)
                        } else {
                            panic!("unexpected rate-limit action {action}")
                        }
                    })
                    .collect();
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The rule paths that carry a limit in `ratelimit.yaml`, read back from the file's text.
pub fn rule_descriptors(ratelimit_yaml: &str) -> Vec<DescriptorPath> {
    fn walk(
        prefix: &DescriptorPath,
        descriptors: &[gateway_render::ratelimit::Descriptor],
        out: &mut Vec<DescriptorPath>,
    ) {
        for d in descriptors {
            let mut path = prefix.clone();
            path.push((d.key.clone(), d.value.clone()));
            if d.rate_limit.is_some() {
                out.push(path.clone());
            }
            walk(&path, &d.descriptors, out);
        }
    }
    let config: gateway_render::RateLimitConfig =
        serde_yaml::from_str(ratelimit_yaml).expect("ratelimit.yaml parses");
    let mut out = Vec::new();
    walk(&Vec::new(), &config.descriptors, &mut out);
    out.sort();
    out
}

/// `tests/golden/NAME`.
pub fn golden_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// A render's files as the golden directory holds them: the files and `hash.txt`.
pub fn expected_files(rendered: &Rendered) -> BTreeMap<String, String> {
    let mut files = rendered.files.clone();
    files.insert("hash.txt".into(), format!("{}\n", rendered.hash));
    files
}

/// Fails naming each file whose bytes differ from `dir`'s (the first differing line of each);
/// with `UPDATE_GOLDEN=1` writes them instead.
pub fn check_golden(dir: &Path, actual: &BTreeMap<String, String>) {
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::create_dir_all(dir).expect("create golden dir");
        for (name, text) in actual {
            std::fs::write(dir.join(name), text).expect("write golden file");
        }
        return;
    }
    let mut failures = Vec::new();
    for (name, text) in actual {
        let path = dir.join(name);
        let expected = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{}: cannot read ({e})", path.display()));
                continue;
            }
        };
        if expected != *text {
            let line = expected
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(expected.lines().count().min(text.lines().count()));
            failures.push(format!(
                "{}: differs from the render, first at line {}:\n  golden: {:?}\n  render: {:?}",
                path.display(),
                line + 1,
                expected.lines().nth(line).unwrap_or("<end of file>"),
                text.lines().nth(line).unwrap_or("<end of file>"),
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "rendered bytes changed. If the change is intended, run with UPDATE_GOLDEN=1 and review the diff.\n{}",
        failures.join("\n")
    );
}
