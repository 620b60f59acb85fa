//! A value the renderer writes reaches envoyproxy/ratelimit as the same text. The renderer's
//! YAML (serde_yaml, YAML 1.2) leaves plain what YAML 1.1 reads otherwise (`yes`, `1_000`,
//! `2001-12-14`); the service's decoder (yaml.v2) still puts a scalar's own text in a text
//! field, and quotes keep numbers that would fail its first pass (`08` is a float there) text.

use gateway_render::ratelimit::{to_yaml, Descriptor, RateLimitConfig};
use gateway_validator::rules::{check_rules_file, load_rate_limit_rules};

const TRICKY: &[&str] = &[
    "08",
    "y",
    "yes",
    "no",
    "on",
    "off",
    "n",
    "1e3",
    "1e400",
    "9223372036854775808",
    "0755",
    "1_000",
    ".5",
    "+1",
    "2001-12-14",
    "~",
    "null",
    "Null",
    "NULL",
    "1.5",
    "0x10",
    "0o7",
    "0b11",
    "-",
    "<<",
    "*x",
    "&a",
    "!x",
    "@x",
    "%x",
    "a: b",
    "123",
    "GET:/x#0",
    "a b",
    "'",
    "\"",
];

#[test]
fn every_tricky_value_reads_back_as_its_text() {
    for value in TRICKY {
        let config = RateLimitConfig {
            domain: "gateway".into(),
            descriptors: vec![Descriptor {
                key: "team".into(),
                value: Some(value.to_string()),
                rate_limit: None,
                descriptors: Vec::new(),
            }],
        };
        let yaml = to_yaml(&config).expect("renders");
        let set =
            load_rate_limit_rules(&yaml).unwrap_or_else(|e| panic!("{value:?}: {e:?}\n{yaml}"));
        let keys: Vec<&String> = set.domains["gateway"].children.keys().collect();
        assert_eq!(keys, [&format!("team_{value}")], "{yaml}");
        let findings = check_rules_file(&yaml);
        assert!(findings.is_empty(), "{value:?}: {findings:?}\n{yaml}");
    }
}
