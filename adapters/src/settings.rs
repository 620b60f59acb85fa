//! The environment every binary reads (each is also a flag in `gatewayctl`): `GATEWAY_TABLE`,
//! `GATEWAY_BUCKET`, `GATEWAY_DOMAIN`, `ENVOY_BIN`, `GATEWAY_ALLOW_LOOPBACK_BACKENDS`, and
//! `GATEWAY_UPSTREAM_CA_FILE` for the renderer.

use gateway_render::check::{allow_loopback_from_env_value, flag_from_env_value, Policy};

#[derive(Debug, thiserror::Error)]
#[error("{name} is not set: {what}")]
pub struct MissingSetting {
    pub name: &'static str,
    pub what: &'static str,
}

/// Reads one required variable.
pub fn required(name: &'static str, what: &'static str) -> Result<String, MissingSetting> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(MissingSetting { name, what }),
    }
}

pub fn table() -> Result<String, MissingSetting> {
    required("GATEWAY_TABLE", "the registry table's name")
}

pub fn bucket() -> Result<String, MissingSetting> {
    required("GATEWAY_BUCKET", "the versioned config bucket's name")
}

pub fn domain() -> Result<String, MissingSetting> {
    required(
        "GATEWAY_DOMAIN",
        "the gateway's base domain, e.g. api.example.com",
    )
}

/// The registration policy from `GATEWAY_ALLOW_LOOPBACK_BACKENDS`, `GATEWAY_BACKEND_DOMAINS`,
/// `GATEWAY_BACKEND_CIDRS`, `GATEWAY_REQUIRE_RESOLVABLE_BACKENDS`, `GATEWAY_MAX_ROUTE_TIMEOUT` and
/// `GATEWAY_MAX_RETRY_ATTEMPTS`. A bad list stops the
/// function at init, naming the setting.
pub fn policy(domain: &str) -> Result<Policy, InvalidSetting> {
    let var = |name: &str| std::env::var(name).ok();
    policy_from(domain, &var)
}

fn policy_from(
    domain: &str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Policy, InvalidSetting> {
    let flag = |name: &str| {
        flag_from_env_value(var(name).as_deref()).map_err(|e| InvalidSetting(format!("{name}: {e}")))
    };
    let allow = allow_loopback_from_env_value(var("GATEWAY_ALLOW_LOOPBACK_BACKENDS").as_deref())
        .map_err(|e| InvalidSetting(format!("GATEWAY_ALLOW_LOOPBACK_BACKENDS: {e}")))?;
    let mut policy = Policy::new(domain, allow)
        .with_backend_rules(
            &var("GATEWAY_BACKEND_DOMAINS").unwrap_or_default(),
            &var("GATEWAY_BACKEND_CIDRS").unwrap_or_default(),
        )
        .and_then(|p| {
            p.with_route_bounds(
                var("GATEWAY_MAX_ROUTE_TIMEOUT").as_deref(),
                var("GATEWAY_MAX_RETRY_ATTEMPTS").as_deref(),
            )
        })
        .map_err(InvalidSetting)?;
    policy.require_resolvable_backends = flag("GATEWAY_REQUIRE_RESOLVABLE_BACKENDS")?;
    policy.jwt = jwt_policy_from(var)?;
    if let Some(min) = var("GATEWAY_MIN_HEALTH_CHECK_INTERVAL") {
        policy.min_health_check_interval_ms =
            gateway_render::check::min_health_check_interval_from_value(&min)
                .map_err(InvalidSetting)?;
    }
    if let Some(min) = var("GATEWAY_MIN_ROLLOUT_INTERVAL").filter(|v| !v.trim().is_empty()) {
        policy.min_rollout_interval_ms =
            gateway_render::check::min_rollout_interval_from_value(&min).map_err(InvalidSetting)?;
    }
    Ok(policy)
}

/// The operators' JWT settings: `GATEWAY_JWT_ISSUERS` (issuers whose keys Envoy may fetch, each
/// `ISSUER` or `ISSUER|JWKS_URL_PREFIX`, comma-separated), `GATEWAY_MAX_JWT_PROVIDERS`,
/// `GATEWAY_MAX_JWKS_KEYS`, `GATEWAY_MAX_CLAIM_HEADERS`.
pub fn jwt_policy() -> Result<gateway_render::check::JwtPolicy, InvalidSetting> {
    let var = |name: &str| std::env::var(name).ok();
    jwt_policy_from(&var)
}

fn jwt_policy_from(
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<gateway_render::check::JwtPolicy, InvalidSetting> {
    gateway_render::check::JwtPolicy::from_values(
        var("GATEWAY_JWT_ISSUERS").as_deref(),
        var("GATEWAY_MAX_JWT_PROVIDERS").as_deref(),
        var("GATEWAY_MAX_JWKS_KEYS").as_deref(),
        var("GATEWAY_MAX_CLAIM_HEADERS").as_deref(),
    )
    .map_err(InvalidSetting)
}

/// `GATEWAY_MAX_ENTRIES_PER_TEAM`, `GATEWAY_MAX_ROUTES`, `GATEWAY_MAX_CLUSTERS`,
/// `GATEWAY_MAX_BUNDLE_BYTES` (defaults in `gateway_render::bounds`).
pub fn bounds() -> Result<gateway_render::Bounds, InvalidSetting> {
    let var = |name: &str| std::env::var(name).ok();
    gateway_render::Bounds::from_values(
        var("GATEWAY_MAX_ENTRIES_PER_TEAM").as_deref(),
        var("GATEWAY_MAX_ROUTES").as_deref(),
        var("GATEWAY_MAX_CLUSTERS").as_deref(),
        var("GATEWAY_MAX_BUNDLE_BYTES").as_deref(),
    )
    .map_err(InvalidSetting)
}

/// `GATEWAY_PUBLISH_WAIT_SECONDS`: how long the custom resource waits for its entry to publish
/// (default 240; keep it below the register function's timeout).
pub fn publish_wait() -> Result<std::time::Duration, InvalidSetting> {
    match std::env::var("GATEWAY_PUBLISH_WAIT_SECONDS").ok().filter(|v| !v.trim().is_empty()) {
        None => Ok(std::time::Duration::from_secs(
            crate::registry::DEFAULT_PUBLISH_WAIT_SECONDS,
        )),
        Some(v) => v
            .trim()
            .parse::<u64>()
            .map(std::time::Duration::from_secs)
            .map_err(|_| {
                InvalidSetting(format!(
                    "GATEWAY_PUBLISH_WAIT_SECONDS: {v:?} is not a whole number of seconds"
                ))
            }),
    }
}

/// How backend names' answers are kept and asked for (`crate::resolve::ResolveCaching`):
/// `GATEWAY_RESOLVE_CACHE_SECONDS` (how long an answer is used as it is, default 300; 0 asks
/// every run) and `GATEWAY_RESOLVE_QUERIES_PER_SECOND` (1–1000, default 800, below a VPC
/// resolver's 1,024 packets per second per interface).
pub fn resolve_caching() -> Result<crate::resolve::ResolveCaching, InvalidSetting> {
    resolve_caching_from(&|name| std::env::var(name).ok())
}

fn resolve_caching_from(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::resolve::ResolveCaching, InvalidSetting> {
    let mut c = crate::resolve::ResolveCaching::default();
    let whole = |name: &str, max: u64| -> Result<Option<u64>, InvalidSetting> {
        match env(name).filter(|v| !v.trim().is_empty()) {
            None => Ok(None),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(n) if n <= max => Ok(Some(n)),
                _ => Err(InvalidSetting(format!("{name}: {v:?} is not a whole number from 0 to {max}"))),
            },
        }
    };
    if let Some(secs) = whole("GATEWAY_RESOLVE_CACHE_SECONDS", 86_400)? {
        c.fresh_for = std::time::Duration::from_secs(secs);
        c.stale_for = c.stale_for.max(c.fresh_for);
    }
    match whole("GATEWAY_RESOLVE_QUERIES_PER_SECOND", 1000)? {
        Some(0) => {
            return Err(InvalidSetting(
                "GATEWAY_RESOLVE_QUERIES_PER_SECOND: 0 would never ask; 1 to 1000".into(),
            ))
        }
        Some(qps) => c.queries_per_second = qps as u32,
        None => {}
    }
    Ok(c)
}

/// A setting whose value cannot be used; the message names it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSetting(pub String);

/// The render settings: the base domain and, from `GATEWAY_UPSTREAM_CA_FILE`, the CA bundle that
/// https backends' certificates are validated against (default: the system bundle). Envoy parses
/// that file once per TLS cluster, on the proxies and in validation alike: a bundle holding only
/// the CAs the backends chain to makes large configs much cheaper (docs/benchmarks.md). The path
/// must exist on the proxies and in the reconciler's image. Also the operators' bounds on what
/// one client may hold: `GATEWAY_CLIENT_IPV6_PREFIX` (the prefix an IPv6 client is counted by in
/// `per: client-ip` limits, 32–128, default 64) and `GATEWAY_MAX_WEBSOCKET_DURATION` (the longest
/// life of a websocket connection, a duration from 1 s to 24 h, default 60m).
pub fn render_config(domain: &str) -> Result<gateway_render::RenderConfig, InvalidSetting> {
    render_config_from(domain, &|name| std::env::var(name).ok())
}

fn render_config_from(
    domain: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<gateway_render::RenderConfig, InvalidSetting> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let mut cfg = gateway_render::RenderConfig::new(domain);
    if let Some(ca) = set("GATEWAY_UPSTREAM_CA_FILE") {
        cfg.upstream_ca_file = ca;
    }
    if let Some(v) = set("GATEWAY_CLIENT_IPV6_PREFIX") {
        cfg.client_ipv6_prefix = match v.trim().parse::<u8>() {
            Ok(n) if (32..=128).contains(&n) => n,
            _ => {
                return Err(InvalidSetting(format!(
                    "GATEWAY_CLIENT_IPV6_PREFIX: {v:?} is not a prefix length from 32 to 128"
                )))
            }
        };
    }
    if let Some(v) = set("GATEWAY_MAX_WEBSOCKET_DURATION") {
        let ms = gateway_render::check::parse_duration(v.trim())
            .map_err(|e| InvalidSetting(format!("GATEWAY_MAX_WEBSOCKET_DURATION: {e}")))?;
        if ms % 1_000 != 0 || !(1_000..=86_400_000).contains(&ms) {
            return Err(InvalidSetting(format!(
                "GATEWAY_MAX_WEBSOCKET_DURATION: {v:?} must be whole seconds from 1s to 1440m"
            )));
        }
        cfg.max_websocket_seconds = ms / 1_000;
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::{policy_from, render_config_from};

    /// An environment holding only `pairs`.
    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_boolean_setting_takes_only_its_documented_values() {
        for name in ["GATEWAY_ALLOW_LOOPBACK_BACKENDS", "GATEWAY_REQUIRE_RESOLVABLE_BACKENDS"] {
            let one = move |n: &str| (n == name).then(|| "1".to_string());
            let on = policy_from("api.example.com", &one).expect("valid");
            assert!(on.allow_loopback_backends || on.require_resolvable_backends, "{name}");
            let yes = move |n: &str| (n == name).then(|| "yes".to_string());
            let e = policy_from("api.example.com", &yes).expect_err(name);
            assert_eq!(e.to_string(), format!("{name}: \"yes\" is not true, false, 1 or 0"));
        }
    }

    #[test]
    fn backend_rules_come_from_the_environment_and_bad_lists_name_the_setting() {
        let p = policy_from(
            "api.example.com",
            &env(&[
                ("GATEWAY_BACKEND_DOMAINS", "internal.example"),
                ("GATEWAY_BACKEND_CIDRS", "10.0.0.0/8"),
                ("GATEWAY_REQUIRE_RESOLVABLE_BACKENDS", "true"),
            ]),
        )
        .expect("valid");
        assert_eq!(p.backend_domains, ["internal.example"]);
        assert_eq!(p.backend_cidrs.len(), 1);
        assert!(p.require_resolvable_backends && !p.allow_loopback_backends);
        let unset = policy_from("api.example.com", &env(&[])).expect("valid");
        assert_eq!(unset.min_health_check_interval_ms, 5_000);
        let short = policy_from(
            "api.example.com",
            &env(&[("GATEWAY_MIN_HEALTH_CHECK_INTERVAL", "1s")]),
        )
        .expect("valid");
        assert_eq!(short.min_health_check_interval_ms, 1_000);
        let e = policy_from(
            "api.example.com",
            &env(&[("GATEWAY_MIN_HEALTH_CHECK_INTERVAL", "0s")]),
        )
        .expect_err("bad");
        assert!(e.to_string().contains("GATEWAY_MIN_HEALTH_CHECK_INTERVAL"), "{e}");
        assert!(unset.backend_domains.is_empty() && !unset.require_resolvable_backends);
        let e = policy_from(
            "api.example.com",
            &env(&[("GATEWAY_BACKEND_CIDRS", "10.0.0.0/33")]),
        )
        .expect_err("bad");
        assert!(e.to_string().starts_with("GATEWAY_BACKEND_CIDRS:"), "{e}");
    }

    #[test]
    fn jwt_settings_come_from_the_environment_and_bad_values_name_the_setting() {
        let p = policy_from(
            "api.example.com",
            &env(&[("GATEWAY_JWT_ISSUERS", "https://id.example.com/, https://other.example.com|https://keys.example.com/"), ("GATEWAY_MAX_JWKS_KEYS", "3")]),
        )
        .expect("valid");
        assert_eq!(p.jwt.issuers.len(), 2);
        assert_eq!(p.jwt.issuers[0].jwks_prefix, "https://id.example.com/");
        assert_eq!(p.jwt.max_keys, 3);
        for (name, value) in [
            ("GATEWAY_JWT_ISSUERS", "id.example.com"),
            ("GATEWAY_MAX_JWT_PROVIDERS", "0"),
            ("GATEWAY_MAX_CLAIM_HEADERS", "lots"),
        ] {
            let pairs: &'static [(&'static str, &'static str)] = Box::leak(Box::new([(name, value)]));
            let err = policy_from("api.example.com", &env(pairs)).expect_err(value);
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn route_bounds_come_from_the_environment_and_bad_values_name_the_setting() {
        let unset = policy_from("api.example.com", &env(&[])).expect("valid");
        assert_eq!((unset.max_route_timeout_ms, unset.max_retry_attempts), (60_000, 3));
        let set = policy_from(
            "api.example.com",
            &env(&[("GATEWAY_MAX_ROUTE_TIMEOUT", "2m"), ("GATEWAY_MAX_RETRY_ATTEMPTS", "5")]),
        )
        .expect("valid");
        assert_eq!((set.max_route_timeout_ms, set.max_retry_attempts), (120_000, 5));
        for (name, bad) in [
            ("GATEWAY_MAX_ROUTE_TIMEOUT", "60"),
            ("GATEWAY_MAX_ROUTE_TIMEOUT", "1h"),
            ("GATEWAY_MAX_RETRY_ATTEMPTS", "0"),
            ("GATEWAY_MAX_RETRY_ATTEMPTS", "many"),
        ] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(vec![(name, bad)].into_boxed_slice());
            let e = policy_from("api.example.com", &env(pairs)).expect_err(bad);
            assert!(e.to_string().starts_with(&format!("{name}:")), "{e}");
        }
    }

    #[test]
    fn the_upstream_ca_file_is_the_system_bundle_unless_set() {
        let default = render_config_from("api.example.com", &env(&[])).expect("defaults");
        assert_eq!(default, gateway_render::RenderConfig::new("api.example.com"));
        let blank = render_config_from("api.example.com", &env(&[("GATEWAY_UPSTREAM_CA_FILE", " ")]));
        assert_eq!(blank.expect("blank").upstream_ca_file, default.upstream_ca_file);
        let set = render_config_from(
            "api.example.com",
            &env(&[("GATEWAY_UPSTREAM_CA_FILE", "/etc/gateway/backend-cas.pem")]),
        )
        .expect("set");
        assert_eq!(set.upstream_ca_file, "/etc/gateway/backend-cas.pem");
        assert_eq!(set.base_domain, "api.example.com");
    }

    #[test]
    fn client_bounds_come_from_the_environment_and_bad_values_name_the_setting() {
        let d = render_config_from("x.example", &env(&[])).expect("defaults");
        assert_eq!((d.client_ipv6_prefix, d.max_websocket_seconds), (64, 3_600));
        let set = render_config_from(
            "x.example",
            &env(&[("GATEWAY_CLIENT_IPV6_PREFIX", "56"), ("GATEWAY_MAX_WEBSOCKET_DURATION", "10m")]),
        )
        .expect("set");
        assert_eq!((set.client_ipv6_prefix, set.max_websocket_seconds), (56, 600));
        for (name, bad) in [
            ("GATEWAY_CLIENT_IPV6_PREFIX", "129"),
            ("GATEWAY_CLIENT_IPV6_PREFIX", "16"),
            ("GATEWAY_CLIENT_IPV6_PREFIX", "/64"),
            ("GATEWAY_MAX_WEBSOCKET_DURATION", "1500ms"),
            ("GATEWAY_MAX_WEBSOCKET_DURATION", "1441m"),
            ("GATEWAY_MAX_WEBSOCKET_DURATION", "forever"),
        ] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(vec![(name, bad)].into_boxed_slice());
            let e = render_config_from("x.example", &env(pairs)).expect_err(bad);
            assert!(e.0.starts_with(name), "{e}");
        }
    }

    #[test]
    fn resolve_caching_takes_its_two_settings_and_names_a_bad_one() {
        use super::resolve_caching_from;
        let d = resolve_caching_from(&env(&[])).expect("defaults");
        assert_eq!(d, crate::resolve::ResolveCaching::default());
        let c = resolve_caching_from(&env(&[
            ("GATEWAY_RESOLVE_CACHE_SECONDS", "0"),
            ("GATEWAY_RESOLVE_QUERIES_PER_SECOND", "50"),
        ]))
        .expect("valid");
        assert_eq!((c.fresh_for.as_secs(), c.queries_per_second), (0, 50));
        for (bad, name) in [
            (&[("GATEWAY_RESOLVE_QUERIES_PER_SECOND", "0")], "GATEWAY_RESOLVE_QUERIES_PER_SECOND"),
            (&[("GATEWAY_RESOLVE_QUERIES_PER_SECOND", "5000")], "GATEWAY_RESOLVE_QUERIES_PER_SECOND"),
            (&[("GATEWAY_RESOLVE_CACHE_SECONDS", "-1")], "GATEWAY_RESOLVE_CACHE_SECONDS"),
        ] {
            let e = resolve_caching_from(&env(bad)).expect_err("refused");
            assert!(e.0.starts_with(name), "{e}");
        }
    }
}
