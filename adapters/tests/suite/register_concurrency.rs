//! What registering one team's services on one host costs one at a time against four at once,
//! against moto's server. A measurement, not a check: run it with
//! `cargo test -p gateway-adapters --test register_concurrency -- --ignored --nocapture`; it
//! prints the table and writes it to `target/bench-register.md` (docs/benchmarks.md).

use gateway_testkit::registry as registry_support;

use gateway_adapters::registry::{DynamoRegistry, RegisterOutcome};
use gateway_render::bounds::Totals;
use gateway_render::Entry;
use registry_support::{entry, registry};
use std::sync::Arc;
use std::time::Instant;

const SERVICES: usize = 40;
const WORKERS: usize = 4;

/// Registers `entries` with `workers` tasks, each taking every `workers`-th entry in turn; the
/// wall time in seconds. Every registration must create its entry.
async fn register_all(reg: &Arc<DynamoRegistry>, entries: &[Entry], workers: usize) -> f64 {
    let started = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let reg = reg.clone();
            let mine: Vec<Entry> = entries.iter().skip(w).step_by(workers).cloned().collect();
            tokio::spawn(async move {
                for e in mine {
                    let outcome = reg.register(&e).await;
                    assert!(
                        matches!(outcome, Ok(RegisterOutcome::Created { .. })),
                        "{}: {outcome:?}",
                        e.id()
                    );
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("worker");
    }
    started.elapsed().as_secs_f64()
}

/// The path of the `i`th service.
type PathOf = fn(usize) -> String;

fn services(host: &str, path: impl Fn(usize) -> String) -> Vec<Entry> {
    (0..SERVICES)
        .map(|i| entry("billing", &format!("svc{i}"), host, &[&path(i)]))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement; run with --ignored"]
async fn one_at_a_time_against_four_at_once() {
    let scenarios: [(&str, PathOf); 2] = [
        ("`/svcN` (a first segment each)", |i| format!("/svc{i}")),
        ("`/api/svcN` (one shared first segment)", |i| {
            format!("/api/svc{i}")
        }),
    ];
    let mut table =
        String::from("| paths | one at a time | 4 at once | ratio |\n|---|---|---|---|\n");
    for (name, path) in scenarios {
        let mut secs = Vec::new();
        for workers in [1, WORKERS] {
            let reg = Arc::new(registry().await);
            // The host is claimed before timing, as it is when a team onboards onto its host, and
            // the reconciler's run after it has recorded the totals registrations are judged
            // against (docs/design.md#registry-totals).
            let anchor = entry("billing", "anchor", "onboard", &["/anchor"]);
            reg.register(&anchor).await.expect("anchor");
            reg.put_totals(&Totals::of([&anchor]))
                .await
                .expect("totals");
            let entries = services("onboard", path);
            secs.push(register_all(&reg, &entries, workers).await);
            assert_eq!(reg.list().await.expect("list").entries.len(), SERVICES + 1);
        }
        table.push_str(&format!(
            "| {name} | {:.2} s | {:.2} s | {:.2}× |\n",
            secs[0],
            secs[1],
            secs[1] / secs[0]
        ));
    }
    println!("{SERVICES} services of one team on one host:\n{table}");
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target")
        .join("bench-register.md");
    std::fs::write(&out, &table).expect("writing the table");
}
