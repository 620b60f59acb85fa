//! The service's behaviours, each from envoyproxy/ratelimit's documented semantics (its README
//! at the pinned commit: "Descriptor list definition", "Rate limit definition", "Replaces",
//! "ShadowMode", "Sharing thresholds for wildcard matches", "Including detailed metrics",
//! "Request Fields") and, where the README is silent, its code (`shouldRateLimitWorker`,
//! `GetResponseDescriptorStatus`), one table row per behaviour.

use super::*;
use gateway_validator::rules::load_rate_limit_rules;

const RULES: &str = "\
domain: gateway
descriptors:
- key: route
  value: r1
  rate_limit: {unit: minute, requests_per_unit: 2}
- key: remote_address
  rate_limit: {unit: second, requests_per_unit: 1}
- key: user
  rate_limit: {name: per_user, unit: minute, requests_per_unit: 1}
- key: endpoint
  value: upload
  rate_limit: {replaces: [{name: per_user}], unit: minute, requests_per_unit: 3}
- key: vip
  rate_limit: {unlimited: true, replaces: [{name: per_user}]}
- key: free
  rate_limit: {unlimited: true}
- key: path
  value: /api/*
  rate_limit: {unit: minute, requests_per_unit: 1}
- key: file
  value: f/*
  share_threshold: true
  rate_limit: {unit: minute, requests_per_unit: 2}
- key: shadow
  shadow_mode: true
  rate_limit: {unit: minute, requests_per_unit: 1}
- key: quota
  quota_mode: true
  rate_limit: {unit: minute, requests_per_unit: 1}
- key: both
  shadow_mode: true
  quota_mode: true
  rate_limit: {unit: minute, requests_per_unit: 1}
- key: detailed
  detailed_metric: true
  rate_limit: {unit: minute, requests_per_unit: 1}
- key: weekly
  rate_limit: {unit: week, requests_per_unit: 1}
- key: team
  value: billing
  descriptors:
  - key: service
    rate_limit: {unit: hour, requests_per_unit: 5}
";

fn rules() -> RuleSet {
    load_rate_limit_rules(RULES).unwrap_or_else(|e| panic!("{e:?}"))
}

fn request(domain: &str, descriptors: &[&[(&str, &str)]], hits: u32) -> Request {
    Request {
        domain: domain.into(),
        descriptors: descriptors
            .iter()
            .map(|entries| RequestDescriptor {
                entries: entries
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..RequestDescriptor::default()
            })
            .collect(),
        hits_addend: hits,
    }
}

/// A status as the table writes it: `-` not limited, `unlimited`, or the answer (`ok`, `OVER`,
/// `SHADOW` for over but OK in shadow mode, `QUOTA` for over but OK in quota mode) with what is
/// left of the limit, and `@N` for the seconds until the window resets (none in quota mode).
fn shown(s: &Status) -> String {
    match s {
        Status::NotLimited => "-".into(),
        Status::Unlimited => "unlimited".into(),
        Status::Counted(c) => {
            let code = if s.over_limit() {
                "OVER"
            } else if c.shadowed {
                "SHADOW"
            } else if c.quota {
                "QUOTA"
            } else {
                "ok"
            };
            let reset = c.reset_in.map(|r| format!(" @{r}")).unwrap_or_default();
            format!("{code} {}/{}{reset}", c.remaining, c.requests_per_unit)
        }
    }
}

fn run(rules: Option<&RuleSet>, w: &mut Windows, req: &Request, now: u64) -> String {
    match decide(rules, w, req, now) {
        Ok(d) => {
            let overall = if d.over_limit() { "OVER_LIMIT" } else { "OK" };
            let each: Vec<String> = d.statuses.iter().map(shown).collect();
            format!("{overall}: {}", each.join(" | "))
        }
        Err(e) => format!("error: {e}"),
    }
}

/// One request of a row: its descriptors, `hits_addend`, the time, and the answer.
struct Step {
    domain: &'static str,
    descriptors: &'static [&'static [(&'static str, &'static str)]],
    hits: u32,
    now: u64,
    answer: &'static str,
}

const fn step(
    descriptors: &'static [&'static [(&'static str, &'static str)]],
    now: u64,
    answer: &'static str,
) -> Step {
    Step {
        domain: "gateway",
        descriptors,
        hits: 0,
        now,
        answer,
    }
}

struct Row {
    behaviour: &'static str,
    /// Where envoyproxy/ratelimit says so.
    source: &'static str,
    steps: &'static [Step],
}

const TABLE: &[Row] = &[
    Row {
        behaviour: "a limit allows requests_per_unit in its window, then answers OVER_LIMIT until the window ends",
        source: "README: Rate limit definition; fixed windows on the unit (cache_key.go)",
        steps: &[
            step(&[&[("route", "r1")]], 120, "OK: ok 1/2 @60"),
            step(&[&[("route", "r1")]], 150, "OK: ok 0/2 @30"),
            step(&[&[("route", "r1")]], 179, "OVER_LIMIT: OVER 0/2 @1"),
            step(&[&[("route", "r1")]], 180, "OK: ok 1/2 @60"),
        ],
    },
    Row {
        behaviour: "a rule with a key and no value counts each value apart",
        source: "README: Descriptor list definition",
        steps: &[
            step(&[&[("remote_address", "10.0.0.1")]], 7, "OK: ok 0/1 @1"),
            step(&[&[("remote_address", "10.0.0.1")]], 7, "OVER_LIMIT: OVER 0/1 @1"),
            step(&[&[("remote_address", "10.0.0.2")]], 7, "OK: ok 0/1 @1"),
        ],
    },
    Row {
        behaviour: "a limit another matched rule replaces is neither applied nor counted",
        source: "README: Replaces; constructLimitsToCheck",
        steps: &[
            step(&[&[("user", "alice")], &[("endpoint", "upload")]], 60, "OK: - | ok 2/3 @60"),
            step(&[&[("user", "alice")], &[("endpoint", "upload")]], 60, "OK: - | ok 1/3 @60"),
            // alice's own limit was untouched by the replaced requests.
            step(&[&[("user", "alice")]], 60, "OK: ok 0/1 @60"),
            step(&[&[("user", "alice")]], 60, "OVER_LIMIT: OVER 0/1 @60"),
        ],
    },
    Row {
        behaviour: "an unlimited rule is never counted, answers OK with all remaining, and still replaces",
        source: "README: Descriptor list definition (unlimited); shouldRateLimitWorker",
        steps: &[
            step(&[&[("free", "x")]], 1, "OK: unlimited"),
            step(&[&[("free", "x")]], 1, "OK: unlimited"),
            step(&[&[("user", "bob")], &[("vip", "yes")]], 1, "OK: - | unlimited"),
            step(&[&[("user", "bob")], &[("vip", "yes")]], 1, "OK: - | unlimited"),
        ],
    },
    Row {
        behaviour: "a value ending in * matches by prefix, each matching value counted apart",
        source: "README: Descriptor list definition (wildcard); GetLimit",
        steps: &[
            step(&[&[("path", "/api/a")]], 60, "OK: ok 0/1 @60"),
            step(&[&[("path", "/api/a")]], 60, "OVER_LIMIT: OVER 0/1 @60"),
            step(&[&[("path", "/api/b")]], 60, "OK: ok 0/1 @60"),
            step(&[&[("path", "/other")]], 60, "OK: -"),
        ],
    },
    Row {
        behaviour: "with share_threshold every value a wildcard matches shares one counter",
        source: "README: Sharing thresholds for wildcard matches",
        steps: &[
            step(&[&[("file", "f/a")]], 60, "OK: ok 1/2 @60"),
            step(&[&[("file", "f/b")]], 60, "OK: ok 0/2 @60"),
            step(&[&[("file", "f/c")]], 60, "OVER_LIMIT: OVER 0/2 @60"),
        ],
    },
    Row {
        behaviour: "a shadow-mode limit counts and knows it is over, but answers OK",
        source: "README: ShadowMode; GetResponseDescriptorStatus",
        steps: &[
            step(&[&[("shadow", "x")]], 60, "OK: ok 0/1 @60"),
            step(&[&[("shadow", "x")]], 60, "OK: SHADOW 0/1 @60"),
            step(&[&[("shadow", "x")], &[("route", "r1")]], 60, "OK: SHADOW 0/1 @60 | ok 1/2 @60"),
        ],
    },
    Row {
        behaviour: "a quota-mode limit over its limit answers OK with the limit and nothing left, no reset",
        source: "shouldRateLimitWorker (quota mode); shadow mode decides first",
        steps: &[
            step(&[&[("quota", "x")]], 60, "OK: ok 0/1 @60"),
            step(&[&[("quota", "x")]], 60, "OK: QUOTA 0/1"),
            step(&[&[("both", "x")]], 60, "OK: ok 0/1 @60"),
            step(&[&[("both", "x")]], 60, "OK: SHADOW 0/1 @60"),
        ],
    },
    Row {
        behaviour: "any over-limit descriptor makes the answer OVER_LIMIT; each reports its own limit",
        source: "shouldRateLimitWorker (finalCode)",
        steps: &[
            step(&[&[("route", "r1")], &[("remote_address", "10.0.0.9")]], 60, "OK: ok 1/2 @60 | ok 0/1 @1"),
            step(&[&[("route", "r1")], &[("remote_address", "10.0.0.9")]], 60, "OVER_LIMIT: ok 0/2 @60 | OVER 0/1 @1"),
        ],
    },
    Row {
        behaviour: "a descriptor must end on a rule with a limit: shorter, deeper or unknown is not limited",
        source: "GetLimit (request depth must match the config's)",
        steps: &[
            step(&[&[("team", "billing")]], 1, "OK: -"),
            step(&[&[("team", "billing"), ("service", "s")]], 1, "OK: ok 4/5 @3599"),
            step(&[&[("team", "billing"), ("service", "s"), ("extra", "x")]], 1, "OK: -"),
            step(&[&[("route", "r1"), ("extra", "x")]], 1, "OK: -"),
            step(&[&[("team", "other")]], 1, "OK: -"),
            step(&[&[]], 1, "OK: -"),
        ],
    },
    Row {
        behaviour: "a domain without rules is not limited",
        source: "GetLimit (domain_not_found)",
        steps: &[Step {
            domain: "elsewhere",
            descriptors: &[&[("route", "r1")]],
            hits: 0,
            now: 1,
            answer: "OK: -",
        }],
    },
    Row {
        behaviour: "detailed_metric only names statistics: the answers are a plain limit's",
        source: "README: Including detailed metrics for unspecified values",
        steps: &[
            step(&[&[("detailed", "a")]], 60, "OK: ok 0/1 @60"),
            step(&[&[("detailed", "a")]], 60, "OVER_LIMIT: OVER 0/1 @60"),
            step(&[&[("detailed", "b")]], 60, "OK: ok 0/1 @60"),
        ],
    },
    Row {
        behaviour: "a week is counted from the epoch's week boundary",
        source: "UnitToDivider (WEEK = 7 days)",
        steps: &[
            step(&[&[("weekly", "x")]], 604_799, "OK: ok 0/1 @1"),
            step(&[&[("weekly", "x")]], 604_800, "OK: ok 0/1 @604800"),
        ],
    },
    Row {
        behaviour: "hits_addend counts that many hits",
        source: "README: Request Fields (hits_addend)",
        steps: &[Step {
            domain: "gateway",
            descriptors: &[&[("route", "r1")]],
            hits: 3,
            now: 60,
            answer: "OVER_LIMIT: OVER 0/2 @60",
        }],
    },
    Row {
        behaviour: "an empty domain or no descriptors is an error, not an answer",
        source: "shouldRateLimitWorker (checkServiceErr)",
        steps: &[
            Step {
                domain: "",
                descriptors: &[&[("route", "r1")]],
                hits: 0,
                now: 1,
                answer: "error: rate limit domain must not be empty",
            },
            step(&[], 1, "error: rate limit descriptor list must not be empty"),
        ],
    },
];

#[test]
fn every_behaviour_answers_as_envoyproxy_ratelimit_documents() {
    let rules = rules();
    let mut failures = Vec::new();
    for row in TABLE {
        let mut w = Windows::default();
        for (i, s) in row.steps.iter().enumerate() {
            let got = run(
                Some(&rules),
                &mut w,
                &request(s.domain, s.descriptors, s.hits),
                s.now,
            );
            if got != s.answer {
                failures.push(format!(
                    "{} ({}), request {}: expected {:?}, got {got:?}",
                    row.behaviour,
                    row.source,
                    i + 1,
                    s.answer
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn no_rules_loaded_is_an_error_for_every_request() {
    let mut w = Windows::default();
    assert_eq!(
        run(
            None,
            &mut w,
            &request("gateway", &[&[("route", "r1")]], 0),
            1
        ),
        "error: no rate limit configuration loaded"
    );
    // An empty set of rules is loaded: nothing is limited.
    let empty = RuleSet::default();
    assert_eq!(
        run(
            Some(&empty),
            &mut w,
            &request("gateway", &[&[("route", "r1")]], 0),
            1
        ),
        "OK: -"
    );
}

#[test]
fn a_descriptor_hits_addend_overrides_the_requests_and_zero_only_looks() {
    let rules = rules();
    let mut w = Windows::default();
    let mut req = request("gateway", &[&[("route", "r1")]], 5);
    req.descriptors[0].hits_addend = Some(1);
    assert_eq!(run(Some(&rules), &mut w, &req, 60), "OK: ok 1/2 @60");
    req.descriptors[0].hits_addend = Some(0);
    assert_eq!(run(Some(&rules), &mut w, &req, 60), "OK: ok 1/2 @60");
}

#[test]
fn a_limit_sent_with_the_descriptor_applies_when_the_domain_has_rules() {
    let rules = rules();
    let mut w = Windows::default();
    let mut req = request("gateway", &[&[("anything", "x")]], 0);
    req.descriptors[0].limit_override = Some((1, 2));
    assert_eq!(run(Some(&rules), &mut w, &req, 60), "OK: ok 0/1 @60");
    assert_eq!(
        run(Some(&rules), &mut w, &req, 60),
        "OVER_LIMIT: OVER 0/1 @60"
    );
    req.domain = "elsewhere".into();
    assert_eq!(run(Some(&rules), &mut w, &req, 60), "OK: -");
}

#[test]
fn nothing_is_counted_for_descriptors_no_limit_applies_to() {
    let rules = rules();
    let mut w = Windows::default();
    for d in [
        &[("team", "billing")][..],
        &[("free", "x")],
        &[("nothing", "x")],
    ] {
        run(Some(&rules), &mut w, &request("gateway", &[d], 0), 1);
    }
    run(
        Some(&rules),
        &mut w,
        &request("gateway", &[&[("user", "a")], &[("vip", "v")]], 0),
        1,
    );
    assert!(w.is_empty(), "{} counters", w.len());
}
