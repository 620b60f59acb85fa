//! What quarantining one entry among 1,000 costs, in Envoy validations and seconds, against
//! moto's server and the real Envoy. A measurement, not a check: run it with
//! `cargo test -p gateway-functions --test quarantine_cost -- --ignored --nocapture`; it prints
//! the table and writes it to `target/bench-quarantine.md` (docs/benchmarks.md).

use gateway_testkit::control as support;

use gateway_control::reconcile::{reconcile_report, Outcome, RunReport};
use std::time::Instant;
use support::{entry, Harness};

const N: usize = 1000;
const MISSING_CA: &str = "/nonexistent/ca-certificates.crt";

async fn timed(h: &Harness) -> (RunReport, f64) {
    let t = Instant::now();
    let r = reconcile_report(&h.registry, &h.store, &h.metrics, &h.cfg)
        .await
        .expect("run");
    (r, t.elapsed().as_secs_f64())
}

/// A run, timed, with its row (what it is, Envoy validations, seconds) added to `rows`.
async fn measured(
    h: &Harness,
    rows: &mut Vec<(&'static str, usize, f64)>,
    what: &'static str,
) -> RunReport {
    let (run, secs) = timed(h).await;
    rows.push((what, run.validations, secs));
    run
}

fn assert_published(run: &RunReport) {
    assert!(
        matches!(run.outcome, Outcome::Published { .. }),
        "{}",
        run.outcome
    );
}

fn bad_tls(i: usize) -> gateway_render::Entry {
    let mut e = entry(
        &format!("team{i}"),
        "svc",
        &format!("team{i}"),
        &["/a", "/tls"],
    );
    e.backend = "https://secure.internal.example:8443".into();
    e
}

#[tokio::test]
#[ignore = "a measurement; run with --ignored"]
async fn quarantine_one_entry_among_a_thousand() {
    let mut h = Harness::start().await;
    h.cfg.render.upstream_ca_file = MISSING_CA.into();
    let mut rows = Vec::new();

    // Cold: 1,000 entries, none published yet, one of them rejected by Envoy.
    for i in 0..N {
        let e = if i == 500 {
            bad_tls(i)
        } else {
            entry(&format!("team{i}"), "svc", &format!("team{i}"), &["/a"])
        };
        h.put_raw_entry(&e).await;
    }
    let cold = measured(&h, &mut rows, "first publish, 1,000 new entries, 1 bad").await;
    assert_published(&cold);
    assert_eq!(cold.quarantined.len(), 1);

    // Warm, clean: one good change among 1,000 published entries.
    h.put_raw_entry(&entry("team1", "svc", "team1", &["/a", "/b"]))
        .await;
    let clean = measured(
        &h,
        &mut rows,
        "1 good change, 1 entry still quarantined from before",
    )
    .await;
    assert_published(&clean);

    // Warm: one good change and one bad change among 1,000 published entries.
    h.put_raw_entry(&entry("team2", "svc", "team2", &["/a", "/b"]))
        .await;
    h.put_raw_entry(&bad_tls(3)).await;
    let one = measured(
        &h,
        &mut rows,
        "2 changed entries, 1 bad (+ 1 still quarantined)",
    )
    .await;
    assert_published(&one);
    assert_eq!(
        one.quarantined.len(),
        2,
        "team500 stays quarantined, team3 joins"
    );

    // Warm: only the bad entry is changed.
    h.put_raw_entry(&bad_tls(4)).await;
    measured(
        &h,
        &mut rows,
        "1 changed entry, bad (+ 2 still quarantined)",
    )
    .await;

    let mut table =
        String::from("| run (1,000 entries) | Envoy validations | seconds |\n|---|---|---|\n");
    for (what, v, s) in rows {
        table.push_str(&format!("| {what} | {v} | {s:.1} |\n"));
    }
    println!("{table}");
    let dir = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| format!("{}/../target", env!("CARGO_MANIFEST_DIR")));
    std::fs::write(std::path::Path::new(&dir).join("bench-quarantine.md"), &table).expect("write table");
}
