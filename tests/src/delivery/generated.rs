//! A generated registry at scale (loaded straight into moto's table by the functions tests'
//! `support::load_entries`): what the memory envelope (`tests/tests/envelope.rs`) and the scale
//! bench (`tests/benches/scale.rs`) measure.

use gateway_render::bounds::Bounds;
use gateway_render::Entry;
use serde_json::json;

/// The route counts a measurement runs at: the comma-separated list in the environment
/// variable `var`, else `default`.
pub fn route_counts(var: &str, default: &str) -> Vec<usize> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .unwrap_or_else(|e| panic!("{var}: route counts, {n:?}: {e}"))
        })
        .collect()
}

/// Entry `i` of a generated registry: `routes` routes under its own prefix, every limit kind
/// spread over them, one https backend on a private address (no DNS involved). Four entries
/// share each team's host.
pub fn generated(i: usize, routes: usize) -> Entry {
    let team = i / 4;
    let routes: Vec<_> = (0..routes)
        .map(|r| {
            let path = format!("/svc{i}/r{r}");
            match r % 5 {
                0 => json!({"path": path, "methods": ["GET"],
                            "limits": [{"per": "client-ip", "requests": 100, "every": "minute"}]}),
                1 => json!({"path": path, "methods": ["POST"],
                            "limits": [{"per": "route", "requests": 100, "every": "second"},
                                       {"burst": 20}]}),
                2 => json!({"path": path,
                            "limits": [{"per": "header", "header": "x-api-key",
                                        "requests": 100, "every": "hour"}]}),
                3 => json!({"path": path, "limits": [{"burst": 5}]}),
                _ => json!({"path": path}),
            }
        })
        .collect();
    serde_json::from_value(json!({
        "team": format!("team{team}"),
        "service": format!("svc{i}"),
        "host": format!("team{team}"),
        "backend": backend_of_generated(i),
        "routes": routes,
    }))
    .expect("a generated entry parses")
}

/// A generated entry's backend: an address (nothing to resolve), or with
/// `GATEWAY_BENCH_BACKEND_NAMES=1` (`scripts/bench.sh --slow-resolver`) a name under
/// `internal.example` that every run resolves through the system resolver.
fn backend_of_generated(i: usize) -> String {
    if std::env::var("GATEWAY_BENCH_BACKEND_NAMES").as_deref() == Ok("1") {
        format!("https://b{i}.internal.example:8443")
    } else {
        format!("https://10.{}.{}.{}:8443", i / 65536 % 256, i / 256 % 256, i % 256)
    }
}

/// The registry's caps raised for a generated registry of up to a million routes, as an
/// operator raising GATEWAY_MAX_ROUTES would.
pub fn generous_bounds() -> Bounds {
    Bounds {
        max_routes: 1_000_000,
        max_clusters: 1_000_000,
        max_bundle_bytes: 1 << 30,
        ..Bounds::default()
    }
}

/// A CA file holding one certificate (the first of the system bundle): what an operator's own
/// private CA looks like to Envoy, and what infra's `upstreamCa` is for.
pub fn one_certificate_ca() -> String {
    let system = std::fs::read_to_string(gateway_render::renderer::DEFAULT_UPSTREAM_CA_FILE)
        .expect("the system CA bundle");
    let end = "-----END CERTIFICATE-----";
    let first = &system[..system.find(end).expect("a certificate") + end.len()];
    let start = first
        .find("-----BEGIN CERTIFICATE-----")
        .expect("a certificate");
    let path = std::env::temp_dir().join(crate::unique_name("one-ca"));
    std::fs::write(&path, format!("{}\n", &first[start..])).expect("write the CA file");
    path.display().to_string()
}

/// A kibibyte figure from `/proc/PID/status` (`VmRSS`, `VmHWM`).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
