//! The loader against envoyproxy/ratelimit's own loader tests: every file of its test/config at
//! the commit production pins (3fb702589d36ba7cb46ca33ba462a13e35ffc048), read from
//! `../shared/ratelimit-peer` (upstream's data, not copied here), must get the verdict
//! upstream's test/config/config_test.go gives it at that commit, with upstream's own message,
//! and the accepted files must answer that test's lookups the same way. The expectations below
//! are written from reading config_test.go; the files a later upstream added or changed
//! (config-head) get the pinned loader's verdict, which the comments set against HEAD's.

use gateway_validator::rules::{
    check_rules_file, load_rate_limit_files_with, Refusal, RuleSet, RuleUnit, RulesFile,
};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn peer_dir(which: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/ratelimit-peer")
        .join(which);
    assert!(
        dir.is_dir(),
        "{} is missing: this test needs envoyproxy/ratelimit's loader test configs in \
         shared/ratelimit-peer/{which} beside the repository",
        dir.display()
    );
    dir
}

fn read(which: &str, name: &str) -> String {
    let path = peer_dir(which).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// What upstream expects of a load.
enum Verdict {
    Accepted,
    /// `FILE: REASON`, exactly as config_test.go's `expectConfigPanic` has it.
    Refused(&'static str),
}

struct Case {
    /// Which folder, and the files loaded together, in order (config_test.go's `loadFile`s).
    dir: &'static str,
    files: &'static [&'static str],
    /// `NewRateLimitConfigImpl`'s last argument (MERGE_DOMAIN_CONFIG; production's is false).
    merge: bool,
    verdict: Verdict,
    /// Where the expectation comes from.
    source: &'static str,
}

const PIN: &str = "config-3fb70258";
const HEAD: &str = "config-head";

const CASES: &[Case] = &[
    Case { dir: PIN, files: &["basic_config.yaml"], merge: false, verdict: Verdict::Accepted, source: "TestBasicConfig" },
    Case { dir: PIN, files: &["basic_config.yaml", "duplicate_domain.yaml"], merge: false, verdict: Verdict::Refused("duplicate_domain.yaml: duplicate domain 'test-domain' in config file"), source: "TestDuplicateDomain" },
    Case { dir: PIN, files: &["duplicate_domain.yaml"], merge: false, verdict: Verdict::Accepted, source: "its only defect is sharing basic_config.yaml's domain" },
    Case { dir: PIN, files: &["duplicate_key.yaml"], merge: false, verdict: Verdict::Refused("duplicate_key.yaml: duplicate descriptor composite key 'test-domain.key1_value1'"), source: "TestDuplicateKey" },
    Case { dir: PIN, files: &["empty_domain.yaml"], merge: false, verdict: Verdict::Refused("empty_domain.yaml: config file cannot have empty domain"), source: "TestEmptyDomain" },
    Case { dir: PIN, files: &["empty_key.yaml"], merge: false, verdict: Verdict::Refused("empty_key.yaml: descriptor has empty key"), source: "TestEmptyKey" },
    Case { dir: PIN, files: &["merge_domain_key1.yaml", "merge_domain_key2.yaml"], merge: true, verdict: Verdict::Accepted, source: "TestDomainMerge" },
    Case { dir: PIN, files: &["merge_domain_key1.yaml", "merge_domain_key2.yaml"], merge: false, verdict: Verdict::Refused("merge_domain_key2.yaml: duplicate domain 'test-domain' in config file"), source: "loadConfig without MERGE_DOMAIN_CONFIG, as production runs" },
    Case { dir: PIN, files: &["merge_domain_key1.yaml", "merge_domain_key1.yaml"], merge: true, verdict: Verdict::Refused("merge_domain_key1.yaml: duplicate descriptor composite key 'test-domain.key1_value1'"), source: "TestDuplicateKeyDomainMerge" },
    Case { dir: PIN, files: &["bad_limit_unit.yaml"], merge: false, verdict: Verdict::Refused("bad_limit_unit.yaml: invalid rate limit unit 'foo'"), source: "TestBadLimitUnit" },
    Case { dir: PIN, files: &["replaces_self.yaml"], merge: false, verdict: Verdict::Refused("replaces_self.yaml: replaces should not contain name of same descriptor"), source: "TestReplacesSelf" },
    Case { dir: PIN, files: &["replaces_empty.yaml"], merge: false, verdict: Verdict::Refused("replaces_empty.yaml: should not have an empty replaces entry"), source: "TestReplacesEmpty" },
    Case { dir: PIN, files: &["bad_yaml.yaml"], merge: false, verdict: Verdict::Refused("bad_yaml.yaml: error loading config file: yaml: line 2: found unexpected end of stream"), source: "TestBadYaml" },
    Case { dir: PIN, files: &["misspelled_key.yaml"], merge: false, verdict: Verdict::Refused("misspelled_key.yaml: config error, unknown key 'ratelimit'"), source: "TestMisspelledKey" },
    Case { dir: PIN, files: &["misspelled_key2.yaml"], merge: false, verdict: Verdict::Refused("misspelled_key2.yaml: config error, unknown key 'requestsperunit'"), source: "TestMisspelledKey" },
    Case { dir: PIN, files: &["non_string_key.yaml"], merge: false, verdict: Verdict::Refused("non_string_key.yaml: config error, key is not of type string: 0.25"), source: "TestNonStringKey" },
    Case { dir: PIN, files: &["non_map_list.yaml"], merge: false, verdict: Verdict::Refused("non_map_list.yaml: config error, yaml file contains list of type other than map: a"), source: "TestNonMapList" },
    Case { dir: PIN, files: &["unlimited_with_unit.yaml"], merge: false, verdict: Verdict::Refused("unlimited_with_unit.yaml: should not specify rate limit unit when unlimited"), source: "TestUnlimitedWithRateLimitUnit" },
    Case { dir: PIN, files: &["shadowmode_config.yaml"], merge: false, verdict: Verdict::Accepted, source: "TestShadowModeConfig" },
    Case { dir: PIN, files: &["wildcard.yaml"], merge: false, verdict: Verdict::Accepted, source: "TestWildcardConfig" },
    Case { dir: PIN, files: &["share_threshold.yaml"], merge: false, verdict: Verdict::Accepted, source: "TestShareThreshold" },
    // Upstream HEAD accepts `metadata` (it added the key after the pin); the pinned loader's
    // validKeys does not list it.
    Case { dir: HEAD, files: &["metadata.yaml"], merge: false, verdict: Verdict::Refused("metadata.yaml: config error, unknown key 'metadata'"), source: "the pinned validKeys (HEAD's TestMetadata accepts it)" },
    // HEAD reads `foo*bar*baz` as a multi-part wildcard; the pinned loader only knows a
    // trailing `*`, so it is an ordinary value there (see the lookups below).
    Case { dir: HEAD, files: &["wildcard.yaml"], merge: false, verdict: Verdict::Accepted, source: "TestWildcardConfig (both commits accept it)" },
];

fn load(case: &Case) -> Result<RuleSet, Vec<Refusal>> {
    let texts: Vec<String> = case.files.iter().map(|f| read(case.dir, f)).collect();
    let files: Vec<RulesFile<'_>> = case
        .files
        .iter()
        .zip(&texts)
        .map(|(name, text)| RulesFile { name, text })
        .collect();
    load_rate_limit_files_with(&files, case.merge)
}

#[test]
fn every_peer_file_gets_upstreams_verdict() {
    let mut table = Vec::new();
    let mut wrong = Vec::new();
    for case in CASES {
        let got = load(case);
        let (expected, ok) = match (&case.verdict, &got) {
            (Verdict::Accepted, Ok(_)) => ("accepted".to_string(), true),
            (Verdict::Refused(msg), Err(refusals)) => {
                (format!("refused: {msg}"), refusals[0].to_string() == *msg)
            }
            (Verdict::Accepted, Err(_)) => ("accepted".to_string(), false),
            (Verdict::Refused(msg), Ok(_)) => (format!("refused: {msg}"), false),
        };
        let shown = match &got {
            Ok(_) => "accepted".to_string(),
            Err(refusals) => format!("refused: {}", refusals[0]),
        };
        let gateway = match case.files {
            [single] => {
                let findings = check_rules_file(&read(case.dir, single));
                if findings.is_empty() {
                    "passes layer 1".to_string()
                } else {
                    format!(
                        "layer 1: {} finding(s), first: {}",
                        findings.len(),
                        findings[0]
                    )
                }
            }
            _ => String::new(),
        };
        table.push(format!(
            "{}/{} (merge {}) | {} | {} | {} | {}",
            case.dir,
            case.files.join(" + "),
            case.merge,
            expected,
            shown,
            case.source,
            gateway
        ));
        if !ok {
            wrong.push(format!(
                "{}: expected {expected}, got {shown}",
                case.files.join(" + ")
            ));
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_file_in_the_peer_folders_has_a_case() {
    for dir in [PIN, HEAD] {
        let on_disk: BTreeSet<String> = std::fs::read_dir(peer_dir(dir))
            .expect("listing the peer folder")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".yaml"))
            .collect();
        let covered: BTreeSet<String> = CASES
            .iter()
            .filter(|c| c.dir == dir)
            .flat_map(|c| c.files.iter().map(|f| f.to_string()))
            .collect();
        assert_eq!(
            on_disk, covered,
            "files of {dir} without a case, or cases without a file"
        );
    }
}

/// `(key, value)` pairs.
fn d(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn accepted(dir: &str, file: &str) -> RuleSet {
    let text = read(dir, file);
    load_rate_limit_files_with(
        &[RulesFile {
            name: file,
            text: &text,
        }],
        false,
    )
    .unwrap_or_else(|e| panic!("{file}: {e:?}"))
}

#[test]
fn basic_config_lookups() {
    let s = accepted(PIN, "basic_config.yaml");
    let limit = |entries: &[(&str, &str)]| {
        s.limit("test-domain", &d(entries))
            .map(|m| (m.limit.requests_per_unit, m.limit.unit, m.limit.unlimited))
    };
    assert!(s.limit("foo_domain", &[]).is_none());
    assert!(s.limit("test-domain", &[]).is_none());
    for none in [
        &[("key1", "something")][..],
        &[("key1", "value1")],
        &[("key2", "value2"), ("subkey", "subvalue")],
        &[("key5", "value5"), ("subkey5", "subvalue")],
        &[("key2", "value3")],
    ] {
        assert_eq!(limit(none), None, "{none:?}");
    }
    assert_eq!(
        limit(&[("key1", "value1"), ("subkey1", "something")]),
        Some((5, Some(RuleUnit::Second), false))
    );
    assert_eq!(
        limit(&[("key1", "value1"), ("subkey1", "subvalue1")]),
        Some((10, Some(RuleUnit::Second), false))
    );
    assert_eq!(
        limit(&[("key2", "something")]),
        Some((20, Some(RuleUnit::Minute), false))
    );
    assert_eq!(
        limit(&[("key2", "value2")]),
        Some((30, Some(RuleUnit::Minute), false))
    );
    assert_eq!(
        limit(&[("key3", "foo")]),
        Some((1, Some(RuleUnit::Hour), false))
    );
    assert_eq!(
        limit(&[("key4", "foo")]),
        Some((1, Some(RuleUnit::Day), false))
    );
    let key4 = s
        .limit("test-domain", &d(&[("key4", "foo")]))
        .expect("key4");
    assert_eq!(key4.limit.name, "key4_rate_limit");
    assert!(s
        .limit("test-domain", &d(&[("key3", "foo")]))
        .expect("key3")
        .limit
        .name
        .is_empty());
    assert_eq!(
        limit(&[("key6", "foo")]).map(|l| l.2),
        Some(true),
        "unlimited"
    );
    let key7 = s
        .limit("test-domain", &d(&[("key7", "unspecified_value")]))
        .expect("key7");
    assert_eq!(
        (key7.limit.requests_per_unit, key7.limit.detailed_metric),
        (70, true)
    );
}

#[test]
fn domain_merge_lookups() {
    let texts = [
        read(PIN, "merge_domain_key1.yaml"),
        read(PIN, "merge_domain_key2.yaml"),
    ];
    let s = load_rate_limit_files_with(
        &[
            RulesFile {
                name: "merge_domain_key1.yaml",
                text: &texts[0],
            },
            RulesFile {
                name: "merge_domain_key2.yaml",
                text: &texts[1],
            },
        ],
        true,
    )
    .expect("merged");
    let rpu = |e: &[(&str, &str)]| {
        s.limit("test-domain", &d(e))
            .map(|m| m.limit.requests_per_unit)
    };
    assert_eq!(rpu(&[("key1", "value1")]), Some(10));
    assert_eq!(rpu(&[("key2", "value2")]), Some(20));
}

#[test]
fn shadow_mode_lookups() {
    let s = accepted(PIN, "shadowmode_config.yaml");
    let shadow = |e: &[(&str, &str)]| {
        s.limit("test-domain", &d(e))
            .map(|m| (m.limit.requests_per_unit, m.limit.shadow_mode))
    };
    assert_eq!(
        shadow(&[("key1", "value1"), ("subkey1", "something")]),
        Some((5, false))
    );
    assert_eq!(
        shadow(&[("key1", "value1"), ("subkey1", "subvalue1")]),
        Some((10, true))
    );
    assert_eq!(shadow(&[("key2", "something")]), Some((20, true)));
    assert_eq!(shadow(&[("key2", "value2")]), Some((30, false)));
}

fn wildcard_lookups(dir: &str) {
    let s = accepted(dir, "wildcard.yaml");
    let path = |e: &[(&str, &str)]| s.limit("test-domain", &d(e)).map(|m| m.path.to_string());
    assert_eq!(
        path(&[("noVal", "foo1")]).as_deref(),
        Some("test-domain.noVal")
    );
    assert_eq!(
        path(&[("noVal", "foo2")]).as_deref(),
        Some("test-domain.noVal")
    );
    assert_eq!(
        path(&[("wild", "foo1")]).as_deref(),
        Some("test-domain.wild_foo*")
    );
    assert_eq!(
        path(&[("wild", "foo2")]).as_deref(),
        Some("test-domain.wild_foo*")
    );
    assert_eq!(
        path(&[("nestedWild", "val1"), ("wild", "goo2")]).as_deref(),
        Some("test-domain.nestedWild_val1.wild_goo*")
    );
    assert_eq!(path(&[("wild", "bar")]), None);
    assert_eq!(path(&[("noWild", "foo1")]), None, "no eager match");
    assert_eq!(
        path(&[("midWildcard", "barab")]),
        None,
        "a * inside a value is no wildcard"
    );
    assert_eq!(path(&[("midWild", "barab")]), None);
    // Pinned: counted per value (no share_threshold), one counter each.
    let one = s
        .limit("test-domain", &d(&[("wild", "foo1")]))
        .expect("matched");
    assert_eq!(one.shared, vec![None]);
}

#[test]
fn wildcard_lookups_at_the_pin() {
    wildcard_lookups(PIN);
}

#[test]
fn wildcard_lookups_of_heads_file_with_the_pinned_loader() {
    wildcard_lookups(HEAD);
    let s = accepted(HEAD, "wildcard.yaml");
    // HEAD matches foo123bar456baz to multiWild_foo*bar*baz; the pinned loader needs the
    // value itself.
    assert!(s
        .limit("test-domain", &d(&[("multiWild", "foo123bar456baz")]))
        .is_none());
    assert!(s
        .limit("test-domain", &d(&[("multiWild", "foo*bar*baz")]))
        .is_some());
}

#[test]
fn share_threshold_lookups() {
    let s = accepted(PIN, "share_threshold.yaml");
    let m = |e: &[(&str, &str)]| {
        s.limit("test-domain", &d(e))
            .unwrap_or_else(|| panic!("{e:?}"))
    };
    let pat = |v: &[Option<&str>]| v.iter().map(|p| p.map(String::from)).collect::<Vec<_>>();
    for value in ["files/a.pdf", "files/b.csv", "files/c.txt"] {
        let hit = m(&[("files", value)]);
        assert_eq!(
            (hit.limit.requests_per_unit, hit.shared.clone()),
            (100, pat(&[Some("files/*")]))
        );
    }
    assert_eq!(
        m(&[("route", "api/v1"), ("method", "GET")]).shared,
        pat(&[Some("api/*"), None])
    );
    let svc = m(&[("service", "svc/user"), ("endpoint", "get")]);
    assert_eq!(svc.shared, pat(&[Some("svc/*"), None]));
    assert!(svc.limit.detailed_metric);
    let nested = m(&[("nested", "parent"), ("files", "nested/file1.txt")]);
    assert_eq!(
        (nested.limit.requests_per_unit, nested.shared),
        (200, pat(&[None, Some("nested/*")]))
    );
    let both = m(&[("files", "top/file1.txt"), ("files", "nested/file1.txt")]);
    assert_eq!(
        (both.limit.requests_per_unit, both.shared),
        (300, pat(&[Some("top/*"), Some("nested/*")]))
    );
    assert_eq!(
        m(&[("path", "path/foo"), ("file", "file/doc1"), ("type", "pdf")]).shared,
        pat(&[Some("path/*"), None, None])
    );
    assert_eq!(
        m(&[
            ("user", "user/alice"),
            ("resource", "res/file1"),
            ("action", "read")
        ])
        .shared,
        pat(&[Some("user/*"), Some("res/*"), None])
    );
    let explicit = m(&[("file", "test1")]);
    assert_eq!(
        (explicit.limit.requests_per_unit, explicit.shared),
        (50, pat(&[None]))
    );
    for value in ["test2", "test23", "test123"] {
        let hit = m(&[("file", value)]);
        assert_eq!(
            (hit.limit.requests_per_unit, hit.shared),
            (100, pat(&[Some("test*")]))
        );
    }
}
