//! `gatewayctl check` on the entry-level traffic fields: a canary backend is judged like the
//! backend (the loopback switch included), and `--min-health-check-interval`
//! (`GATEWAY_MIN_HEALTH_CHECK_INTERVAL`) is the operators' lower bound on `health_check.interval`.

use crate::common;
use common::*;

const ENTRY: &str = r#"{"team": "billing", "service": "invoices-api", "host": "invoices",
  "backend": "http://10.0.0.5:8080", "protocol": "http2",
  "canary": {"backend": "http://127.0.0.1:9000", "weight": 20, "header": {"name": "x-canary", "value": "always"}},
  "health_check": {"path": "/healthz", "interval": "2s"},
  "routes": [{"path": "/invoices"}]}"#;

#[test]
fn canary_and_health_check_follow_the_operators_settings() {
    let r = check_stdin(&[], ENTRY);
    assert_eq!(r.code, 1, "stdout: {}", r.stdout);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", r.stderr);
    assert!(
        lines[0].starts_with("<stdin>: canary.backend: 127.0.0.1 is a loopback address"),
        "{}",
        r.stderr
    );
    assert_eq!(
        lines[1],
        "<stdin>: health_check.interval: is 2s; at least 5s (the operators' minimum health-check interval)"
    );
    let local = [
        "--allow-loopback-backends",
        "--min-health-check-interval",
        "2s",
    ];
    let r = check_stdin(&local, ENTRY);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(
        r.stdout.starts_with("accepted billing/invoices-api"),
        "{}",
        r.stdout
    );
    let r = check_stdin(&["--min-health-check-interval", "0s"], ENTRY);
    assert_eq!(r.code, 2, "a bad setting is a usage error: {}", r.stderr);
    assert!(
        r.stderr.contains("GATEWAY_MIN_HEALTH_CHECK_INTERVAL"),
        "{}",
        r.stderr
    );
}
