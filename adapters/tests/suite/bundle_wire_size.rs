//! `bundle.json` bytes per route at 10,000 routes, canonical against gzip-compressed as
//! published. A measurement, not a check: run it with
//! `cargo test -p gateway-adapters --test bundle_wire_size -- --ignored --nocapture`; it prints
//! the table and writes it to `target/bench-bundle-wire.md` (docs/benchmarks.md).

use gateway_adapters::store::encoding::{compress, decode};
use gateway_render::{render, Bundle, Entry, Limit, Per, RenderConfig, Route, Unit};

const ENTRIES: usize = 250;
const ROUTES_PER_ENTRY: usize = 40;

/// The shape of docs/benchmarks.md's bundle-size registry: every route limited (a per-client
/// global limit or a burst), a third with methods, every backend https on a name.
fn entries() -> Vec<Entry> {
    (0..ENTRIES)
        .map(|e| Entry {
            rollout: None,
            serving: None,
            team: format!("team{e}"),
            service: format!("service{e}"),
            host: format!("host{e}"),
            backend: format!("https://service{e}.internal.example:8443"),
            protocol: Default::default(),
            canary: None,
            health_check: None,
            preserve_host: false,
            jwt: Default::default(),
            backends: vec![],
            routes: (0..ROUTES_PER_ENTRY)
                .map(|r| Route {
                    path: format!("/api/v1/resource{r}"),
                    methods: (r % 3 == 0).then(|| vec!["GET".to_string(), "POST".to_string()]),
                    limits: vec![if r % 2 == 0 {
                        Limit::Global {
                            per: Per::ClientIp,
                            header: None,
                            requests: 100,
                            every: Unit::Minute,
                        }
                    } else {
                        Limit::Burst { burst: 50 }
                    }],
                    ..Default::default()
                })
                .collect(),
        })
        .collect()
}

#[test]
#[ignore = "a measurement; run with --ignored"]
fn bytes_per_route_raw_and_compressed_at_ten_thousand_routes() {
    let entries = entries();
    let routes = ENTRIES * ROUTES_PER_ENTRY;
    let rendered = render(&entries, &RenderConfig::new("api.example.com")).expect("render");
    let raw = Bundle::new(&rendered, &entries).seal().archive(None);
    let started = std::time::Instant::now();
    let wire = compress(&raw);
    let compress_secs = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    assert_eq!(decode(wire.clone(), raw.len()).expect("decode"), raw);
    let decode_secs = started.elapsed().as_secs_f64();
    let table = format!(
        "| routes | canonical bytes | per route | gzip bytes (on the wire) | per route | ratio | gzip time | gunzip time |\n|---|---|---|---|---|---|---|---|\n| {routes} | {} | {:.0} | {} | {:.0} | {:.1}× | {compress_secs:.2} s | {decode_secs:.2} s |\n",
        raw.len(),
        raw.len() as f64 / routes as f64,
        wire.len(),
        wire.len() as f64 / routes as f64,
        raw.len() as f64 / wire.len() as f64,
    );
    println!("{table}");
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target")
        .join("bench-bundle-wire.md");
    std::fs::write(&out, &table).expect("writing the table");
}
