//! The sample teams' entries (`examples/demo/*.json`, in file-name order): checked with the
//! registration rules, each served by its own in-process backend on the port its `backend`
//! names, or on the port `--backend-ports` gives instead.

use gateway_render::check::{check_entry, check_entry_bytes, Policy};
use gateway_render::{Entry, Limit};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

pub const SAMPLE_COUNT: usize = 2;

#[derive(Debug, Clone)]
pub struct Sample {
    pub file: PathBuf,
    pub entry: Entry,
    /// Where its backend listens (the entry's `backend` points here).
    pub backend: SocketAddr,
    /// The name its backend answers with.
    pub backend_name: String,
    /// A path of its first route, requested through Envoy to show it works.
    pub probe_path: String,
}

/// Reads and checks the samples, applying `ports` (one per sample) when given.
pub fn load(dir: &Path, policy: &Policy, ports: Option<&[u16]>) -> Result<Vec<Sample>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    if files.len() != SAMPLE_COUNT {
        return Err(format!(
            "{} holds {} entry files; the demo serves exactly {SAMPLE_COUNT} sample backends",
            dir.display(),
            files.len()
        ));
    }
    if let Some(ports) = ports {
        if ports.len() != SAMPLE_COUNT {
            return Err(format!(
                "--backend-ports takes {SAMPLE_COUNT} ports (one per sample team), got {}",
                ports.len()
            ));
        }
    }
    files
        .into_iter()
        .enumerate()
        .map(|(i, file)| load_one(file, i, policy, ports.map(|p| p[i])))
        .collect()
}

fn load_one(
    file: PathBuf,
    index: usize,
    policy: &Policy,
    port: Option<u16>,
) -> Result<Sample, String> {
    let name = file.display().to_string();
    let bytes = std::fs::read(&file).map_err(|e| format!("reading {name}: {e}"))?;
    let mut entry = check_entry_bytes(&bytes, policy).map_err(|r| {
        let problems: Vec<String> = r.problems.iter().map(|p| format!("{name}: {p}")).collect();
        problems.join("\n")
    })?;
    let file_port = loopback_port(&entry.backend).ok_or_else(|| {
        format!(
            "{name}: backend {:?} must be http://127.0.0.1:PORT so the demo can serve it",
            entry.backend
        )
    })?;
    let port = port.unwrap_or(file_port);
    entry.backend = format!("http://127.0.0.1:{port}");
    check_entry(&entry, policy).map_err(|r| format!("{name} with backend port {port}: {r}"))?;
    let probe_path = entry
        .routes
        .iter()
        .find(|r| allows_get(r.methods.as_deref()))
        .map(|r| r.path.clone())
        .ok_or_else(|| format!("{name}: no route accepts GET, so the demo cannot show it"))?;
    Ok(Sample {
        file,
        backend: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        backend_name: format!("sample-backend-{}", index + 1),
        entry,
        probe_path,
    })
}

fn allows_get(methods: Option<&[String]>) -> bool {
    methods.is_none_or(|m| m.iter().any(|m| m == "GET"))
}

/// The port of `http://127.0.0.1:PORT` (an optional trailing `/` allowed).
fn loopback_port(backend: &str) -> Option<u16> {
    let rest = backend.strip_prefix("http://127.0.0.1:")?;
    rest.trim_end_matches('/').parse().ok().filter(|p| *p != 0)
}

/// The first sample route a plain GET reaches with a limit `pick` takes a number from: the
/// sample, the route's path and that number (the banner's and the steps' examples).
pub fn first_get_route_with(
    samples: &[Sample],
    pick: impl Fn(&Limit) -> Option<u32>,
) -> Option<(&Sample, String, u32)> {
    samples.iter().find_map(|s| {
        s.entry.routes.iter().find_map(|r| {
            let get = r
                .methods
                .as_ref()
                .is_none_or(|m| m.iter().any(|m| m == "GET"));
            let n = r.limits.iter().find_map(&pick)?;
            get.then(|| (s, r.path.clone(), n))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_samples() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/demo")
    }

    #[test]
    fn the_checked_in_samples_load_with_distinct_hosts_and_ports() {
        let policy = Policy::new("api.example.com", true);
        let samples = load(&repo_samples(), &policy, None).expect("samples pass the checks");
        assert_eq!(samples.len(), SAMPLE_COUNT);
        assert_ne!(samples[0].entry.host, samples[1].entry.host);
        assert_ne!(samples[0].entry.team, samples[1].entry.team);
        assert_ne!(samples[0].backend, samples[1].backend);
        assert_eq!(samples[0].backend_name, "sample-backend-1");
    }

    #[test]
    fn backend_ports_rewrite_the_entries() {
        let policy = Policy::new("api.example.com", true);
        let samples = load(&repo_samples(), &policy, Some(&[41001, 41002])).expect("samples");
        assert_eq!(samples[0].entry.backend, "http://127.0.0.1:41001");
        assert_eq!(samples[1].backend.port(), 41002);
        let err = load(&repo_samples(), &policy, Some(&[41001])).expect_err("one port");
        assert!(err.contains("--backend-ports takes 2 ports"), "{err}");
    }

    #[test]
    fn samples_need_loopback_backends_allowed() {
        let policy = Policy::new("api.example.com", false);
        let err = load(&repo_samples(), &policy, None).expect_err("loopback refused");
        assert!(err.contains("backend"), "{err}");
    }

    #[test]
    fn only_plain_loopback_urls_are_served() {
        assert_eq!(loopback_port("http://127.0.0.1:18081"), Some(18081));
        assert_eq!(loopback_port("http://127.0.0.1:18081/"), Some(18081));
        assert_eq!(loopback_port("https://127.0.0.1:18081"), None);
        assert_eq!(loopback_port("http://10.0.0.1:80"), None);
        assert_eq!(loopback_port("http://127.0.0.1:0"), None);
    }
}
