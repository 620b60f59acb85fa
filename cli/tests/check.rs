mod common;
use common::*;

#[test]
fn accepts_a_valid_entry() {
    let dir = tempfile::tempdir().expect("temp dir");
    let entry = write(dir.path(), "billing.json", BILLING);
    let r = run(&["check", s(&entry), "--domain", "api.example.com"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(
        r.stdout.starts_with("accepted billing/invoices-api"),
        "{}",
        r.stdout
    );
}

#[test]
fn rejects_with_every_problem_one_per_line_from_stdin() {
    let bad =
        r#"{"team": "Billing", "service": "x", "host": "h", "backend": "ftp://x", "routes": []}"#;
    let r = run_with_stdin(&["check", "-", "--domain", "api.example.com"], bad);
    assert_eq!(r.code, 1, "stdout: {}", r.stdout);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert!(lines.len() >= 3, "{}", r.stderr);
    assert!(
        lines.iter().all(|l| l.starts_with("<stdin>: ")),
        "{}",
        r.stderr
    );
    assert!(
        lines.iter().any(|l| l.starts_with("<stdin>: team: ")),
        "{}",
        r.stderr
    );
    assert!(
        lines.iter().any(|l| l.starts_with("<stdin>: backend: ")),
        "{}",
        r.stderr
    );
    assert!(
        lines.iter().any(|l| l.starts_with("<stdin>: routes")),
        "{}",
        r.stderr
    );
}

#[test]
fn loopback_backends_need_the_flag_or_the_variable() {
    let one = r#"{"team": "shipping", "service": "tracker", "host": "track", "backend": "http://127.0.0.1:9000", "routes": [{"path": "/track"}]}"#;
    let r = run_with_stdin(&["check", "-", "--domain", "api.example.com"], one);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("backend"), "{}", r.stderr);
    let r = run_with_stdin(
        &[
            "check",
            "-",
            "--domain",
            "api.example.com",
            "--allow-loopback-backends",
        ],
        one,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut cmd = command(&["check", "-"]);
    cmd.env("GATEWAY_DOMAIN", "api.example.com")
        .env("GATEWAY_ALLOW_LOOPBACK_BACKENDS", "true");
    let r = run_command_with_stdin(cmd, one);
    assert!(
        r.code == 0,
        "GATEWAY_ALLOW_LOOPBACK_BACKENDS=true must allow it"
    );
}

#[test]
fn a_missing_domain_is_a_usage_error() {
    let r = run_with_stdin(&["check", "-"], BILLING);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--domain") && r.stderr.contains("GATEWAY_DOMAIN"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_unreadable_file_fails_naming_it() {
    let r = run(&[
        "check",
        "/nonexistent/entry.json",
        "--domain",
        "api.example.com",
    ]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("/nonexistent/entry.json"), "{}", r.stderr);
}
