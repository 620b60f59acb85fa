//! Render and validation cost at 1k, 10k and 50k routes, with `envoy --mode validate` on the same
//! config as the yardstick. A bench binary, not a test: it prints a markdown table (median of a
//! few runs) and writes it to `target/bench-render.md`.
//!
//! `cargo bench -p gateway-validator --bench render [-- ROUTES...]`; needs the pinned Envoy
//! (`ENVOY_BIN` or `envoy` on PATH).

use gateway_bootstrap::{BootstrapParams, ValidationBootstrap};
use gateway_render::{render, Entry, Limit, Per, RenderConfig, Route, Unit};
use gateway_validator::{validate_rules, validate_with_envoy, ConfigView, EnvoyOptions};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const ROUTES_PER_SERVICE: usize = 10;
const SERVICES_PER_TEAM: usize = 4;

/// A registry of `routes` routes: teams with several services sharing the team's host, each
/// service owning its own prefix, and every limit kind spread over the routes.
fn registry(routes: usize) -> Vec<Entry> {
    let services = routes.div_ceil(ROUTES_PER_SERVICE);
    (0..services)
        .map(|s| {
            let team = s / SERVICES_PER_TEAM;
            let routes = (0..ROUTES_PER_SERVICE)
                .map(|r| {
                    let (methods, limits) = match r % 5 {
                        0 => (
                            Some(vec!["GET".to_string()]),
                            vec![global(Per::ClientIp, None, Unit::Minute)],
                        ),
                        1 => (
                            Some(vec!["POST".to_string()]),
                            vec![
                                global(Per::Route, None, Unit::Second),
                                Limit::Burst { burst: 20 },
                            ],
                        ),
                        2 => (
                            None,
                            vec![global(Per::Header, Some("x-api-key"), Unit::Hour)],
                        ),
                        3 => (None, vec![Limit::Burst { burst: 5 }]),
                        _ => (None, vec![]),
                    };
                    Route {
                        path: format!("/svc{s}/r{r}"),
                        methods,
                        limits,
                        timeout: None,
                        ..Default::default()
                    }
                })
                .collect();
            Entry {
                rollout: None,
                serving: None,
                team: format!("team{team}"),
                service: format!("svc{s}"),
                host: format!("team{team}"),
                backend: format!("https://svc{s}.team{team}.internal.example:8443"),
                protocol: Default::default(),
                canary: None,
                health_check: None,
                preserve_host: false,
                jwt: Default::default(),
                backends: vec![],
                routes,
            }
        })
        .collect()
}

fn global(per: Per, header: Option<&str>, every: Unit) -> Limit {
    Limit::Global {
        per,
        header: header.map(str::to_string),
        requests: 100,
        every,
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut samples = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        let out = f();
        samples.push(start.elapsed());
        // The previous run's result is freed here, outside the timed span.
        last = Some(out);
    }
    (median(samples), last.expect("at least one run"))
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1_000, 10_000, 50_000]
    } else {
        sizes
    };
    let envoy = EnvoyOptions::from_env();
    gateway_validator::check_envoy_version(&envoy.envoy_bin)
        .unwrap_or_else(|e| panic!("the bench needs the pinned Envoy: {e}"));
    let cfg = RenderConfig::new("api.example.com");
    let params = BootstrapParams::production();

    let mut table = String::from(
        "| routes | entries | render + hash | validation bootstrap (build + serialise) | bootstrap size | layer 1 rules | envoy --mode validate |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for routes in sizes {
        let entries = registry(routes);
        let runs = if routes >= 50_000 { 3 } else { 5 };
        let (t_render, rendered) = time(runs, || {
            render(&entries, &cfg).expect("the generated registry renders")
        });
        let (t_bootstrap, size) = time(runs, || {
            let mut out = Vec::with_capacity(64 << 20);
            ValidationBootstrap::new(&params, &rendered.clusters, &rendered.route_config)
                .expect("production params")
                .to_writer(&mut out)
                .expect("serialises");
            out.len()
        });
        let view = ConfigView {
            clusters: &rendered.clusters,
            route_config: &rendered.route_config,
            ratelimit_yaml: &rendered.files[gateway_render::contract::RATE_LIMIT_FILE],
            jwt: rendered.jwt.as_ref(),
        };
        let (t_rules, rules) = time(runs, || validate_rules(&view));
        if let Err(v) = rules {
            panic!(
                "layer 1 rejected the generated registry: {:?}",
                &v[..v.len().min(5)]
            );
        }
        let (t_envoy, verdict) = time(3, || validate_with_envoy(&view, &envoy));
        if let Err(e) = verdict {
            panic!("envoy rejected the generated registry: {e}");
        }
        let row = format!(
            "| {} | {} | {} | {} | {:.1} MB | {} | {} |\n",
            rendered.route_count,
            entries.len(),
            secs(t_render),
            secs(t_bootstrap),
            size as f64 / 1e6,
            secs(t_rules),
            secs(t_envoy)
        );
        eprint!("{row}");
        table.push_str(&row);
    }
    println!("\n{table}");
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let file = dir.join("bench-render.md");
    let text = format!(
        "# Render and validation cost\n\nMedian of 5 runs (3 at 50k routes; 3 for Envoy), release build, Envoy {}.\n\n{table}",
        gateway_bootstrap::envoy_version()
    );
    match std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&file, text)) {
        Ok(()) => println!("written to {}", file.display()),
        Err(e) => eprintln!("{}: cannot write: {e}", file.display()),
    }
}
