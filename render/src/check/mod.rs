//! Registration checks: every rule of docs/design.md#registration-entry, all problems at once,
//! each naming its field path.
//!
//! Raw input goes through `check_entry_bytes` (size, UTF-8, strict JSON without duplicate
//! keys), then the hand-written walk of `check_entry_value`, which builds the typed `Entry`
//! only when nothing is wrong. The checked entry is canonical: methods sorted.

mod address;
mod backend;
mod cidr;
mod clients;
mod cors;
mod duration;
mod entry_policy;
mod fields;
mod header_changes;
mod host;
mod identifiers;
mod json;
mod jwt;
mod limits;
mod matches;
mod methods;
mod mirror;
mod path;
mod redirect;
mod report;
mod retries;
mod rewrite;
mod rollout;
mod spelled;
mod walk;

/// The policies the checks' unit tests judge against: loopback backends refused, or accepted.
#[cfg(test)]
mod test_policies {
    use super::Policy;

    pub fn strict() -> Policy {
        Policy::new("api.example.com", false)
    }

    pub fn local() -> Policy {
        Policy::new("api.example.com", true)
    }
}

/// How the checks' unit tests judge their tables of accepted and refused values.
#[cfg(test)]
mod test_cases {
    /// `check` passes each of `oks`.
    pub fn assert_accepted(check: impl Fn(&str) -> Result<(), String>, oks: &[&str]) {
        for ok in oks {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    /// Each `(bad, why)` is refused by `check` with a reason that contains `why` and no raw line
    /// break (a reason is quoted into one-line reports).
    pub fn assert_refused<T: std::fmt::Debug>(
        check: impl Fn(&str) -> Result<T, String>,
        cases: &[(&str, &str)],
    ) {
        for &(bad, why) in cases {
            let err = check(bad).expect_err(bad);
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(!err.contains('\n'), "{bad:?}: {err}");
        }
    }
}

pub use address::check_address;
pub use backend::{
    check_backend, check_resolved, parse_backend, Backend, BackendHost, PROXY_RESERVED_PORTS,
};
pub use cidr::{parse_cidrs, parse_domains, Cidr};
pub use duration::{
    check_timeout, envoy_duration, parse_duration, DEFAULT_MAX_ROUTE_TIMEOUT_MS,
    DEFAULT_ROUTE_TIMEOUT_MS,
};
pub use entry_policy::{
    check_cohort_header_name, check_cohort_header_value, check_health_check_interval,
    min_health_check_interval_from_value, COHORT_HEADER_VALUE_CHARSET,
    DEFAULT_MIN_HEALTH_CHECK_INTERVAL_MS, MAX_CANARY_HEADER_NAME_LEN, MAX_CANARY_HEADER_VALUE_LEN,
    MAX_BACKENDS, MAX_CANARY_WEIGHT, MAX_HEALTH_CHECK_INTERVAL_MS,
};
pub use cors::{
    check_max_age, check_origin, MAX_CORS_MAX_AGE_SECONDS, MAX_CORS_ORIGINS, MAX_CORS_PATTERN_DOMAIN_LEN,
};
pub use header_changes::{
    check_header_token, check_header_value, HEADER_NAME_CHARSET, HEADER_VALUE_CHARSET,
    MAX_CHANGED_HEADER_NAME_LEN, MAX_HEADER_CHANGES, MAX_HEADER_VALUE_BYTES,
};
pub use host::{check_host, MAX_FQDN_LEN};
pub use redirect::REDIRECT_STATUSES;
pub use rollout::{
    check_rollout_interval, min_rollout_interval_from_value, DEFAULT_MIN_ROLLOUT_INTERVAL_MS,
    MAX_ROLLOUT_INTERVAL_MS, MAX_ROLLOUT_STEPS,
};
pub use identifiers::{
    check_dns_label, check_identifier, DNS_NAME_CHARSET, IDENTIFIER_CHARSET, MAX_LABEL_LEN,
};
pub use limits::{check_header_name, MAX_BURST, MAX_HEADER_NAME_LEN, MAX_REQUESTS};
pub use matches::{
    check_query_name, check_query_value, MAX_HEADER_MATCHES, MAX_QUERY_MATCHES, MAX_QUERY_NAME_LEN,
    MAX_QUERY_VALUE_LEN, QUERY_NAME_CHARSET, QUERY_VALUE_CHARSET,
};
pub use clients::{canonical_cidr, CIDR_CHARSET, MAX_CLIENT_CIDRS};
pub use methods::{check_method, METHODS};
pub use mirror::{MAX_MIRROR_BACKENDS, MAX_MIRROR_PERCENT};
pub use path::{check_path, prefixes_overlap, same_prefix, MAX_PATH_BYTES, PATH_CHARSET};
pub use retries::{
    check_per_try_timeout, check_retry_condition, DEFAULT_MAX_RETRY_ATTEMPTS,
    GRPC_RETRY_CONDITIONS, MAX_RETRIED_STATUS_CODES, RETRIED_STATUSES, RETRY_CONDITIONS,
    RETRY_CONDITIONS_BEFORE_THE_BACKEND,
};
pub use rewrite::check_rewrite;
pub use jwt::{
    check_audience, check_claim_header, check_claim_name, check_issuer, check_jwks_uri,
    AllowedIssuer, JwtPolicy, CLAIM_NAME_CHARSET, DEFAULT_MAX_CLAIM_HEADERS,
    DEFAULT_MAX_JWKS_KEYS, DEFAULT_MAX_JWT_PROVIDERS, EC_ALGORITHMS, MAX_AUDIENCES,
    MAX_CLAIM_HEADERS, MAX_CLAIM_NAME_LEN, MAX_JWKS_KEYS, MAX_JWT_PROVIDERS, MAX_JWT_STRING_LEN,
    RSA_ALGORITHMS, MAX_X5C_CERTS, MAX_X5C_CERT_LEN,
};

use crate::entry::Entry;
use report::Problems;
use std::collections::BTreeSet;
use std::fmt;

/// Largest entry document accepted, in bytes.
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;
/// Routes per entry.
pub const MAX_ROUTES: usize = 64;
/// Limits per route.
pub const MAX_LIMITS_PER_ROUTE: usize = 8;
/// Distinct path prefixes per entry. A registration is one DynamoDB TransactWriteItems (at most
/// 100 actions): the entry, the grant check, and for the new host and (when it moves) the old one
/// the host guard plus one action per enclosing host (at most [`MAX_HOST_LABELS`] - 1), and one
/// guard per prefix claimed there or released here:
/// 1 + 1 + 2 * (1 + 3) + 2 * 45 = 100.
pub const MAX_PATH_PREFIXES: usize = 45;
/// Labels in `host` (in front of the base domain). Each enclosing host of a claimed host is one
/// action in the registration transaction (hosts inside hosts are a conflict), so the depth is
/// bounded; see [`MAX_PATH_PREFIXES`] for the budget.
pub const MAX_HOST_LABELS: usize = 4;

/// What the checks need to know about the gateway they register on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The gateway's base domain, e.g. `api.example.com`.
    pub base_domain: String,
    /// `GATEWAY_ALLOW_LOOPBACK_BACKENDS=true`: local runs and tests only. Link-local stays rejected.
    pub allow_loopback_backends: bool,
    /// `GATEWAY_BACKEND_DOMAINS`: when not empty, backend names must be under one of these.
    pub backend_domains: Vec<String>,
    /// `GATEWAY_BACKEND_CIDRS`: when not empty, backend addresses (literal or resolved) must be
    /// inside one of these.
    pub backend_cidrs: Vec<Cidr>,
    /// `GATEWAY_REQUIRE_RESOLVABLE_BACKENDS=true`: a name that does not resolve where the check
    /// runs is refused (by default it passes: private zones may resolve only inside the VPC).
    pub require_resolvable_backends: bool,
    /// `GATEWAY_MIN_HEALTH_CHECK_INTERVAL` in milliseconds: the shortest `health_check.interval`
    /// an entry may ask for (default 5 s).
    pub min_health_check_interval_ms: u64,
    /// `GATEWAY_MAX_ROUTE_TIMEOUT` in milliseconds: the largest `timeout` a route may ask for
    /// (default 60 s).
    pub max_route_timeout_ms: u64,
    /// `GATEWAY_MAX_RETRY_ATTEMPTS`: the largest `retries.attempts` a route may ask for
    /// (default 3).
    pub max_retry_attempts: u32,
    /// The operators' JWT settings: issuers whose keys may be fetched, and the bounds.
    pub jwt: JwtPolicy,
    /// `GATEWAY_MIN_ROLLOUT_INTERVAL` in milliseconds: the shortest `rollout.interval` (default
    /// 2 min).
    pub min_rollout_interval_ms: u64,
}

impl Policy {
    pub fn new(base_domain: impl Into<String>, allow_loopback_backends: bool) -> Self {
        Policy {
            base_domain: base_domain.into(),
            allow_loopback_backends,
            backend_domains: Vec::new(),
            backend_cidrs: Vec::new(),
            require_resolvable_backends: false,
            min_health_check_interval_ms: DEFAULT_MIN_HEALTH_CHECK_INTERVAL_MS,
            max_route_timeout_ms: DEFAULT_MAX_ROUTE_TIMEOUT_MS,
            max_retry_attempts: DEFAULT_MAX_RETRY_ATTEMPTS,
            jwt: JwtPolicy::default(),
            min_rollout_interval_ms: rollout::DEFAULT_MIN_ROLLOUT_INTERVAL_MS,
        }
    }

    /// The operators' route bounds from the settings' values (`GATEWAY_MAX_ROUTE_TIMEOUT`, a
    /// duration such as `60s`; `GATEWAY_MAX_RETRY_ATTEMPTS`, a whole number); unset or empty
    /// keeps the default. The error names the setting.
    pub fn with_route_bounds(
        mut self,
        max_route_timeout: Option<&str>,
        max_retry_attempts: Option<&str>,
    ) -> Result<Self, String> {
        if let Some(v) = max_route_timeout.map(str::trim).filter(|v| !v.is_empty()) {
            self.max_route_timeout_ms = parse_duration(v)
                .map_err(|why| format!("GATEWAY_MAX_ROUTE_TIMEOUT: {why}"))?;
        }
        if let Some(v) = max_retry_attempts.map(str::trim).filter(|v| !v.is_empty()) {
            self.max_retry_attempts = v
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| {
                    format!("GATEWAY_MAX_RETRY_ATTEMPTS: {v:?} is not a whole number from 1 to 100")
                })?;
        }
        Ok(self)
    }

    /// The operators' backend restrictions from the settings' values (comma-separated lists;
    /// empty means unrestricted). The error names the setting and the bad item.
    pub fn with_backend_rules(mut self, domains: &str, cidrs: &str) -> Result<Self, String> {
        self.backend_domains = parse_domains(domains)?;
        self.backend_cidrs = parse_cidrs(cidrs)?;
        Ok(self)
    }
}

/// Reads the value of `GATEWAY_ALLOW_LOOPBACK_BACKENDS` (the caller reads the environment; this
/// library does not), as [`flag_from_env_value`] does.
pub fn allow_loopback_from_env_value(value: Option<&str>) -> Result<bool, String> {
    flag_from_env_value(value)
}

/// A boolean setting (`GATEWAY_REQUIRE_RESOLVABLE_BACKENDS`, …): exactly `true` or `1` is on;
/// unset, empty, `false` or `0` is off; anything else (`TRUE`, `yes`, ` true`) is refused, so a
/// typo is an error naming the value rather than a silent default.
pub fn flag_from_env_value(value: Option<&str>) -> Result<bool, String> {
    match value {
        Some("true" | "1") => Ok(true),
        None | Some("" | "false" | "0") => Ok(false),
        Some(other) => Err(format!("{other:?} is not true, false, 1 or 0")),
    }
}

/// One problem with an entry: the field path (`routes[1].limits[0].every`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// Every problem found in an entry, in the order the walk meets them: at each level unknown
/// fields first, then the known fields in schema order, array items by index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Rejection {
    pub problems: Vec<Problem>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl From<Problems> for Rejection {
    fn from(p: Problems) -> Self {
        Rejection { problems: p.0 }
    }
}

/// Checks raw input (a JSON document of at most `MAX_ENTRY_BYTES`) and returns the checked entry.
pub fn check_entry_bytes(input: &[u8], policy: &Policy) -> Result<Entry, Rejection> {
    let mut problems = Problems::default();
    if input.len() > MAX_ENTRY_BYTES {
        problems.push(
            "entry",
            format!("is {} bytes; at most {MAX_ENTRY_BYTES}", input.len()),
        );
        return Err(problems.into());
    }
    let Some(value) = json::parse(input, &mut problems) else {
        return Err(problems.into());
    };
    walked(&value, policy, problems)
}

/// Checks a parsed JSON value. Its compact JSON form must fit `MAX_ENTRY_BYTES` too.
pub fn check_entry_value(value: &serde_json::Value, policy: &Policy) -> Result<Entry, Rejection> {
    let mut problems = Problems::default();
    let size = serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len());
    if size > MAX_ENTRY_BYTES {
        problems.push(
            "entry",
            format!("is {size} bytes as compact JSON; at most {MAX_ENTRY_BYTES}"),
        );
    }
    walked(value, policy, problems)
}

/// Re-checks an entry that is already typed (one read back from the registry): the same rules,
/// so an entry stored under older rules or written around the register function is caught.
pub fn check_entry(entry: &Entry, policy: &Policy) -> Result<(), Rejection> {
    let as_json = |e: &Entry| {
        serde_json::to_value(e).map_err(|e| Rejection {
            problems: vec![Problem {
                field: "entry".into(),
                reason: format!("cannot be written as JSON: {e}"),
            }],
        })
    };
    let Some(serving) = &entry.serving else {
        return check_entry_value(&as_json(entry)?, policy).map(|_| ());
    };
    // A stored rollout (docs/design.md#rollout): the registered revision without what the
    // registry added, and the stable revision beside it, each by the same rules.
    let mut candidate = entry.clone();
    candidate.serving = None;
    let mut problems = match check_entry_value(&as_json(&candidate)?, policy) {
        Ok(_) => Vec::new(),
        Err(r) => r.problems,
    };
    if let Err(r) = check_entry_value(&as_json(&serving.stable)?, policy) {
        problems.extend(r.problems.into_iter().map(|p| Problem {
            field: format!("serving.stable.{}", p.field),
            reason: p.reason,
        }));
    }
    if (serving.stable.team.as_str(), serving.stable.service.as_str(), serving.stable.host.as_str())
        != (entry.team.as_str(), entry.service.as_str(), entry.host.as_str())
    {
        problems.push(Problem {
            field: "serving.stable".into(),
            reason: "is another entry's or on another host; a rollout serves two revisions of one entry on one host".into(),
        });
    }
    if serving.percent > 100 {
        problems.push(Problem { field: "serving.percent".into(), reason: format!("is {}; at most 100", serving.percent) });
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Rejection { problems })
    }
}

fn walked(
    value: &serde_json::Value,
    policy: &Policy,
    mut problems: Problems,
) -> Result<Entry, Rejection> {
    match walk::entry(value, policy, &mut problems) {
        Some(entry) if problems.is_empty() => Ok(entry),
        _ => Err(problems.into()),
    }
}

/// The distinct path prefixes an entry claims (one guard row each).
/// The guard keys an entry's routes claim on its host ([`guard_key`]): each prefix, each exact
/// path after `=` (`=/healthz`), so an exact path and the same prefix are different claims that
/// nest, and either with `~` and a digest when the route has header or query conditions.
pub fn path_prefixes(entry: &Entry) -> BTreeSet<String> {
    // A rollout keeps both revisions' guards until it ends (docs/design.md#rollout).
    let stable = entry.serving.iter().flat_map(|s| s.stable.routes.iter());
    entry.routes.iter().chain(stable).map(guard_key).collect()
}

/// The guard key of one route: its prefix, or `=` and its exact path, and with header or query
/// conditions `~` and their digest (the route name's, `names::match_key`): services of a team
/// may share a path when their conditions differ, as Gateway API's routes may.
pub fn guard_key(route: &crate::entry::Route) -> String {
    crate::names::match_key(route)
}

pub use crate::names::path_key;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{Limit, Per, Route, Unit};

    fn policy() -> Policy {
        Policy::new("api.example.com", false)
    }

    #[test]
    fn env_value_enables_loopback_only_for_true_or_1_and_refuses_the_undocumented() {
        assert_eq!(allow_loopback_from_env_value(Some("true")), Ok(true));
        assert_eq!(allow_loopback_from_env_value(Some("1")), Ok(true));
        for off in [None, Some(""), Some("false"), Some("0")] {
            assert_eq!(allow_loopback_from_env_value(off), Ok(false), "{off:?}");
        }
        for bad in ["TRUE", "yes", " true", "no"] {
            let err = allow_loopback_from_env_value(Some(bad)).unwrap_err();
            assert_eq!(err, format!("{bad:?} is not true, false, 1 or 0"));
        }
    }

    #[test]
    fn rejection_prints_one_problem_per_line() {
        let r = Rejection {
            problems: vec![
                Problem {
                    field: "host".into(),
                    reason: "bad".into(),
                },
                Problem {
                    field: "routes[0].path".into(),
                    reason: "worse".into(),
                },
            ],
        };
        assert_eq!(r.to_string(), "host: bad\nroutes[0].path: worse");
    }

    #[test]
    fn oversized_input_is_refused_before_parsing() {
        let big = vec![b'x'; MAX_ENTRY_BYTES + 1];
        let r = check_entry_bytes(&big, &policy()).expect_err("big");
        assert_eq!(r.problems.len(), 1);
        assert_eq!(
            r.problems[0].to_string(),
            "entry: is 65537 bytes; at most 65536"
        );
    }

    #[test]
    fn oversized_value_is_refused() {
        let mut v = serde_json::json!({"team": "a"});
        v["pad"] = serde_json::Value::String("x".repeat(MAX_ENTRY_BYTES));
        let r = check_entry_value(&v, &policy()).expect_err("big");
        assert_eq!(r.problems[0].field, "entry");
        assert!(r.problems[0].reason.contains("at most 65536"));
    }

    #[test]
    fn methods_come_back_sorted_and_typed_recheck_agrees() {
        let input = br#"{"team":"billing","service":"invoices-api","host":"invoices",
            "backend":"https://invoices.internal.example:8443",
            "routes":[{"path":"/invoices","methods":["POST","GET"],
                       "limits":[{"burst":20},{"per":"header","header":"x-api-key","requests":10,"every":"hour"}]}]}"#;
        let e = check_entry_bytes(input, &policy()).expect("valid");
        assert_eq!(
            e.routes[0],
            Route {
                path: "/invoices".into(),
                methods: Some(vec!["GET".into(), "POST".into()]),
                limits: vec![
                    Limit::Burst { burst: 20 },
                    Limit::Global {
                        per: Per::Header,
                        header: Some("x-api-key".into()),
                        requests: 10,
                        every: Unit::Hour
                    },
                ],
                timeout: None,
                ..Default::default()
            }
        );
        assert_eq!(check_entry(&e, &policy()), Ok(()));
    }

    #[test]
    fn typed_recheck_catches_what_the_types_allow() {
        let mut e = check_entry_bytes(
            br#"{"team":"billing","service":"s","host":"h","backend":"http://b","routes":[{"path":"/"}]}"#,
            &policy(),
        )
        .expect("valid");
        e.host = "Bad Host".into();
        e.routes[0].limits.push(Limit::Burst { burst: 0 });
        let r = check_entry(&e, &policy()).expect_err("bad");
        let fields: Vec<&str> = r.problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["host", "routes[0].limits[0].burst"]);
    }

    #[test]
    fn path_prefixes_are_distinct() {
        let e = check_entry_bytes(
            br#"{"team":"t","service":"s","host":"h","backend":"http://b",
                 "routes":[{"path":"/a","methods":["GET"]},{"path":"/a","methods":["POST"]},{"path":"/b"}]}"#,
            &policy(),
        )
        .expect("valid");
        assert_eq!(
            path_prefixes(&e),
            BTreeSet::from(["/a".to_string(), "/b".to_string()])
        );
    }
}
