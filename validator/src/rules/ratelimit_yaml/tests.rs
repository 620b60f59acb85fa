use super::*;
use crate::rules::testing::run;

fn violations(yaml: &str) -> Vec<String> {
    run("ratelimit.yaml", |f| check(yaml, f))
        .1
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn one(yaml: &str) -> String {
    let v = violations(yaml);
    assert_eq!(v.len(), 1, "expected one violation, got {v:?}");
    v[0].clone()
}

fn set(yaml: &str) -> RuleSet {
    load(yaml).unwrap_or_else(|e| panic!("{e:?}"))
}

fn entries(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const GOOD: &str = "domain: gateway\ndescriptors:\n- key: team\n  value: billing\n  descriptors:\n  - key: route\n    value: r1\n    rate_limit:\n      unit: minute\n      requests_per_unit: 100\n";

#[test]
fn a_rendered_style_file_passes_and_builds_the_tree() {
    let (tree, v) = run("ratelimit.yaml", |f| check(GOOD, f));
    assert!(v.is_empty(), "{v:?}");
    let tree = tree.expect("tree");
    let route = &tree.children["team_billing"].children["route_r1"];
    let limit = route.limit.as_ref().expect("a limit");
    assert_eq!(
        (
            limit.unit,
            limit.requests_per_unit,
            limit.unlimited,
            limit.shadow_mode
        ),
        (Some(RuleUnit::Minute), 100, false, false)
    );
    assert_eq!(route.path, "gateway.team_billing.route_r1");
}

#[test]
fn unknown_keys_at_any_level() {
    assert_eq!(
        one("domain: gateway\nextra: 1\n"),
        "ratelimit.yaml: document: config error, unknown key 'extra'"
    );
    let deep = "domain: gateway\ndescriptors:\n- key: a\n  rate_limit:\n    unit: second\n    requests_per_unit: 1\n    burst: 3\n";
    assert_eq!(
        one(deep),
        "ratelimit.yaml: document.descriptors[0].rate_limit: config error, unknown key 'burst'"
    );
}

#[test]
fn duplicate_composite_keys_among_siblings() {
    let yaml = "domain: gateway\ndescriptors:\n- key: a\n  value: x\n  rate_limit: {unit: second, requests_per_unit: 1}\n- key: a\n  value: x\n  rate_limit: {unit: second, requests_per_unit: 2}\n";
    assert_eq!(
        one(yaml),
        "ratelimit.yaml: gateway.a_x: duplicate descriptor composite key 'gateway.a_x'"
    );
    let ok = "domain: gateway\ndescriptors:\n- key: a\n  value: x\n  rate_limit: {unit: second, requests_per_unit: 1}\n- key: a\n  value: y\n  rate_limit: {unit: second, requests_per_unit: 2}\n";
    assert!(violations(ok).is_empty(), "{:?}", violations(ok));
}

#[test]
fn units_as_the_service_reads_them() {
    assert!(violations("domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: MINUTE, requests_per_unit: 1}\n").is_empty());
    assert_eq!(
        one("domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: fortnight, requests_per_unit: 1}\n"),
        "ratelimit.yaml: gateway.a: invalid rate limit unit 'fortnight'"
    );
    // The service knows weeks, months and years; the renderer writes none of them.
    let week = "domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: week, requests_per_unit: 1}\n";
    assert!(load(week).is_ok());
    assert_eq!(
        one(week),
        "ratelimit.yaml: gateway.a: the unit 'week' is accepted by envoyproxy/ratelimit but not used by the gateway's renderer"
    );
    assert_eq!(
        RuleUnit::parse("ſecond"),
        Some(RuleUnit::Second),
        "Go upper-cases ſ to S"
    );
}

#[test]
fn requests_per_unit_out_of_range_or_not_a_count() {
    let v = one("domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: hour, requests_per_unit: -1}\n");
    assert!(
        v.ends_with("line 4: cannot unmarshal !!int `-1` into uint32"),
        "{v}"
    );
    // Accepted by the service (it would refuse every request), never rendered.
    let v = one("domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unit: hour}\n");
    assert_eq!(v, "ratelimit.yaml: gateway.a: requests_per_unit 0 (every request refused) is accepted by envoyproxy/ratelimit but not used by the gateway's renderer");
}

#[test]
fn empty_or_foreign_domain() {
    assert_eq!(
        one("descriptors: []\n"),
        "ratelimit.yaml: domain: config file cannot have empty domain"
    );
    assert_eq!(
        one("domain: other\n"),
        "ratelimit.yaml: domain: is \"other\"; the proxy asks for domain \"gateway\""
    );
}

#[test]
fn a_limit_without_a_key() {
    assert_eq!(
        one("domain: gateway\ndescriptors:\n- value: x\n  rate_limit: {unit: second, requests_per_unit: 1}\n"),
        "ratelimit.yaml: gateway.descriptors[0]: descriptor has empty key"
    );
}

#[test]
fn unlimited_with_a_unit_and_lists_of_scalars() {
    let v = violations(
        "domain: gateway\ndescriptors:\n- key: a\n  rate_limit: {unlimited: true, unit: second}\n",
    );
    assert!(
        v.iter()
            .any(|v| v.ends_with("gateway.a: should not specify rate limit unit when unlimited")),
        "{v:?}"
    );
    let v = one("domain: gateway\ndescriptors:\n- just-a-string\n");
    assert!(
        v.contains("list of type other than map: just-a-string"),
        "{v}"
    );
}

#[test]
fn unparsable_yaml_is_reported() {
    let v = one("domain: [unclosed\n");
    assert!(
        v.starts_with("ratelimit.yaml: document: error loading config file: yaml: line"),
        "{v}"
    );
}

#[test]
fn features_the_service_accepts_are_named_as_such() {
    for (yaml, named) in [
        ("- key: a\n  share_threshold: true\n  value: x*\n  rate_limit: {unit: second, requests_per_unit: 1}\n", "the key 'share_threshold'"),
        ("- key: a\n  quota_mode: true\n  rate_limit: {unit: second, requests_per_unit: 1}\n", "the key 'quota_mode'"),
        ("- key: a\n  shadow_mode: true\n  rate_limit: {unit: second, requests_per_unit: 1}\n", "the key 'shadow_mode'"),
        ("- key: a\n  value_to_metric: true\n  rate_limit: {unit: second, requests_per_unit: 1}\n", "the key 'value_to_metric'"),
        ("- key: a\n  rate_limit: {unlimited: true}\n", "the key 'unlimited'"),
        ("- key: a\n  value: x*\n  rate_limit: {unit: second, requests_per_unit: 1}\n", "the wildcard 'a_x*' (a prefix match)"),
        ("- key: a\n  unit: second\n", "the key 'unit' in a descriptor (ignored there)"),
    ] {
        let yaml = format!("domain: gateway\ndescriptors:\n{yaml}");
        assert!(load(&yaml).is_ok(), "the service accepts {yaml}");
        let v = violations(&yaml);
        assert!(
            v.iter().any(|v| v.contains(&format!("{named} is accepted by envoyproxy/ratelimit but not used by the gateway's renderer"))),
            "{named}: {v:?}"
        );
        assert!(!v.iter().any(|v| v.contains("unknown key")), "{v:?}");
    }
}

#[test]
fn lookup_prefers_the_value_then_wildcards_in_file_order_then_the_key() {
    let s = set("domain: d\ndescriptors:\n- key: k\n  value: ab*\n  rate_limit: {unit: second, requests_per_unit: 1}\n- key: k\n  value: a*\n  rate_limit: {unit: second, requests_per_unit: 2}\n- key: k\n  value: abc\n  rate_limit: {unit: second, requests_per_unit: 3}\n- key: k\n  rate_limit: {unit: second, requests_per_unit: 4}\n- key: k\n  value: x*y\n  rate_limit: {unit: second, requests_per_unit: 5}\n");
    let rpu = |v: &str| {
        s.limit("d", &entries(&[("k", v)]))
            .map(|m| m.limit.requests_per_unit)
    };
    assert_eq!(rpu("abc"), Some(3));
    assert_eq!(rpu("abd"), Some(1), "the first wildcard in file order");
    assert_eq!(rpu("az"), Some(2));
    assert_eq!(rpu("zz"), Some(4));
    assert_eq!(rpu("xzy"), Some(4), "a * inside a value is literal");
    assert_eq!(rpu("x*y"), Some(5));
    assert!(s.limit("other", &entries(&[("k", "abc")])).is_none());
}

#[test]
fn lookup_stops_where_the_rules_end_and_needs_the_last_entry() {
    let s = set("domain: d\ndescriptors:\n- key: a\n  rate_limit: {unit: second, requests_per_unit: 1}\n  descriptors:\n  - key: b\n    rate_limit: {unit: second, requests_per_unit: 2}\n- key: c\n  rate_limit: {unit: second, requests_per_unit: 3}\n");
    let rpu = |e: &[(&str, &str)]| s.limit("d", &entries(e)).map(|m| m.limit.requests_per_unit);
    assert_eq!(rpu(&[("a", "1")]), Some(1));
    assert_eq!(rpu(&[("a", "1"), ("b", "2")]), Some(2));
    assert_eq!(rpu(&[("a", "1"), ("x", "2")]), None);
    assert_eq!(
        rpu(&[("c", "1"), ("x", "2")]),
        None,
        "deeper than the rules go"
    );
    assert_eq!(rpu(&[]), None);
}

#[test]
fn share_threshold_patterns_per_entry() {
    let s = set("domain: d\ndescriptors:\n- key: files\n  value: files/*\n  share_threshold: true\n  rate_limit: {unit: minute, requests_per_unit: 100}\n- key: file\n  value: test*\n  rate_limit: {unit: minute, requests_per_unit: 5}\n");
    let m = s
        .limit("d", &entries(&[("files", "files/a.pdf")]))
        .expect("matched");
    assert_eq!(m.shared, vec![Some("files/*".to_string())]);
    let m = s
        .limit("d", &entries(&[("file", "test2")]))
        .expect("matched");
    assert_eq!(
        m.shared,
        vec![None],
        "a wildcard without share_threshold counts each value"
    );
}

#[test]
fn a_set_of_files_refuses_a_domain_twice() {
    let files = [
        RulesFile {
            name: "a.yaml",
            text: "domain: d\n",
        },
        RulesFile {
            name: "b.yaml",
            text: "domain: d\n",
        },
    ];
    let refused = load_files(&files).expect_err("refused");
    assert_eq!(
        refused[0].to_string(),
        "b.yaml: duplicate domain 'd' in config file"
    );
}
