//! `gatewayctl check`, offline: a valid entry is accepted; a bad one is rejected with every
//! problem on its own line naming the field; loopback backends, backend names by what they
//! resolve to, the operators' domains and CIDRs and route bounds are enforced from flags or the
//! environment; a missing domain or bad list is a usage error.
use crate::common;
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
    let r = check_stdin(&[], bad);
    assert_eq!(r.code, 1, "stdout: {}", r.stdout);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert!(lines.len() >= 3, "{}", r.stderr);
    assert!(
        lines.iter().all(|l| l.starts_with("<stdin>: ")),
        "{}",
        r.stderr
    );
    for field in ["<stdin>: team: ", "<stdin>: backend: ", "<stdin>: routes"] {
        assert!(
            lines.iter().any(|l| l.starts_with(field)),
            "{field}: {}",
            r.stderr
        );
    }
}

#[test]
fn loopback_backends_need_the_flag_or_the_variable() {
    let one = r#"{"team": "shipping", "service": "tracker", "host": "track", "backend": "http://127.0.0.1:9000", "routes": [{"path": "/track"}]}"#;
    let r = check_stdin(&[], one);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("backend"), "{}", r.stderr);
    let r = check_stdin(&["--allow-loopback-backends"], one);
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
    r.assert_exit_naming(2, &["--domain", "GATEWAY_DOMAIN"]);
}

#[test]
fn an_unreadable_file_fails_naming_it() {
    let r = run(&[
        "check",
        "/nonexistent/entry.json",
        "--domain",
        "api.example.com",
    ]);
    r.assert_exit_naming(1, &["/nonexistent/entry.json"]);
}

fn with_backend(backend: &str) -> String {
    serde_json::json!({"team": "billing", "service": "invoices-api", "host": "invoices",
        "backend": backend, "routes": [{"path": "/invoices"}]})
    .to_string()
}

/// Names in /etc/hosts that lead to loopback (other than localhost, refused by its name).
fn loopback_names_in_etc_hosts() -> Vec<String> {
    std::fs::read_to_string("/etc/hosts")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("127.") || l.starts_with("::1"))
        .flat_map(|l| {
            l.split_whitespace()
                .skip(1)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|n| {
            !n.starts_with('#')
                && n != "localhost"
                && !n.ends_with(".localhost")
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        })
        .collect()
}

#[test]
fn a_backend_name_is_judged_by_what_it_resolves_to() {
    // localhost resolves through /etc/hosts on every machine; --require-resolvable makes sure
    // the lookup really happened for a name that does not.
    for name in loopback_names_in_etc_hosts() {
        let backend = with_backend(&format!("http://{name}:9901"));
        let r = check_stdin(&[], &backend);
        assert_eq!(r.code, 1, "{name}: {}", r.stdout);
        assert!(
            r.stderr
                .contains(&format!("<stdin>: backend: {name} resolves to 127."))
                || r.stderr
                    .contains(&format!("<stdin>: backend: {name} resolves to ::1")),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains("loopback"), "{}", r.stderr);
        // Local runs allow loopback.
        let ok = check_stdin(&["--allow-loopback-backends"], &backend);
        assert_eq!(ok.code, 0, "{}", ok.stderr);
    }
    let nowhere = with_backend("http://no-such-name.invalid");
    let r = check_stdin(&[], &nowhere);
    assert_eq!(
        r.code, 0,
        "an unresolvable name passes by default: {}",
        r.stderr
    );
    let mut must = check_command(&[]);
    must.env("GATEWAY_REQUIRE_RESOLVABLE_BACKENDS", "true");
    let r = run_command_with_stdin(must, &nowhere);
    r.assert_exit_naming(
        1,
        &[
            "no-such-name.invalid does not resolve",
            "GATEWAY_REQUIRE_RESOLVABLE_BACKENDS",
        ],
    );
}

#[test]
fn operator_domains_and_cidrs_are_enforced_and_bad_lists_are_usage_errors() {
    // (flag, its value, the entry's backend, exit code, what stderr names)
    let cases = [
        (
            "--backend-domains",
            "corp.example",
            "https://invoices.other.example",
            1,
            "GATEWAY_BACKEND_DOMAINS: corp.example",
        ),
        (
            "--backend-cidrs",
            "10.0.0.0/8",
            "http://192.168.1.1",
            1,
            "GATEWAY_BACKEND_CIDRS: 10.0.0.0/8",
        ),
        (
            "--backend-cidrs",
            "10.0.0.0/99",
            "http://10.1.1.1",
            2,
            "GATEWAY_BACKEND_CIDRS",
        ),
    ];
    for (flag, value, backend, code, named) in cases {
        let r = check_stdin(&[flag, value], &with_backend(backend));
        assert_eq!(r.code, code, "{flag} {value}: {}", r.stderr);
        assert!(r.stderr.contains(named), "{}", r.stderr);
    }
}

#[test]
fn operator_route_bounds_come_from_flags_or_environment() {
    let entry = serde_json::json!({"team": "billing", "service": "invoices-api", "host": "invoices",
        "backend": "https://invoices.internal.example",
        "routes": [{"path": "/invoices", "methods": ["GET"], "timeout": "90s",
                    "retries": {"attempts": 5, "on": ["5xx"]}}]})
    .to_string();
    let r = check_stdin(&[], &entry);
    r.assert_exit_naming(
        1,
        &[
            "routes[0].timeout: is 90s; at most 60s (the operators' maximum route timeout)",
            "routes[0].retries.attempts: is 5; at most 3 (the operators' maximum retry attempts)",
        ],
    );
    let mut raised = check_command(&["--max-retry-attempts", "5"]);
    raised.env("GATEWAY_MAX_ROUTE_TIMEOUT", "2m");
    let r = run_command_with_stdin(raised, &entry);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = check_stdin(&["--max-route-timeout", "1h"], &entry);
    assert_eq!(r.code, 2, "a bad bound is a usage error: {}", r.stderr);
    assert!(r.stderr.contains("GATEWAY_MAX_ROUTE_TIMEOUT"), "{}", r.stderr);
}
