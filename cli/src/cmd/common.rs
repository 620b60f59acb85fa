//! Flags several commands share, each declared once here. Each is also an environment variable,
//! the same one every gateway binary reads.

use super::CmdError;
use clap::Args;
use gateway_render::Policy;
use std::path::PathBuf;

/// The gateway's base domain. Required, with no default: a wrong default would render every
/// host under a domain nobody serves. Optional to clap so the error can name the variable.
#[derive(Args, Debug, Clone)]
pub struct DomainArg {
    /// Base domain team hosts are placed in front of (`invoices` → `invoices.<DOMAIN>`); required
    #[arg(long = "domain", env = "GATEWAY_DOMAIN", value_name = "DOMAIN")]
    pub domain: Option<String>,
}

impl DomainArg {
    pub fn get(&self) -> Result<&str, CmdError> {
        self.domain.as_deref().filter(|d| !d.is_empty()).ok_or_else(|| {
            CmdError::usage(
                "the gateway's base domain is required: pass --domain DOMAIN or set GATEWAY_DOMAIN (e.g. api.example.com)",
            )
        })
    }
}

/// Loopback backends are for local runs and tests; link-local stays rejected regardless.
#[derive(Args, Debug, Clone)]
pub struct LoopbackArg {
    /// Accept loopback and unspecified backend addresses (local runs and tests only)
    #[arg(
        long = "allow-loopback-backends",
        env = "GATEWAY_ALLOW_LOOPBACK_BACKENDS",
        value_name = "true|false",
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub allow_loopback_backends: Option<String>,
    /// Backend names must be under one of these domain suffixes (comma-separated; empty: any)
    #[arg(
        long = "backend-domains",
        env = "GATEWAY_BACKEND_DOMAINS",
        value_name = "SUFFIX,..."
    )]
    pub backend_domains: Option<String>,
    /// Backend addresses, literal or resolved, must be in one of these CIDR blocks
    /// (comma-separated; empty: any)
    #[arg(
        long = "backend-cidrs",
        env = "GATEWAY_BACKEND_CIDRS",
        value_name = "CIDR,..."
    )]
    pub backend_cidrs: Option<String>,
    /// Refuse backend names that do not resolve where the check runs
    #[arg(
        long = "require-resolvable-backends",
        env = "GATEWAY_REQUIRE_RESOLVABLE_BACKENDS",
        value_name = "true|false",
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub require_resolvable_backends: Option<String>,
    /// Shortest health_check.interval an entry may ask for (a duration, default 5s)
    #[arg(
        long = "min-health-check-interval",
        env = "GATEWAY_MIN_HEALTH_CHECK_INTERVAL",
        value_name = "DURATION"
    )]
    pub min_health_check_interval: Option<String>,
    /// Largest `timeout` a route may ask for (a duration such as 60s; default 60s)
    #[arg(
        long = "max-route-timeout",
        env = "GATEWAY_MAX_ROUTE_TIMEOUT",
        value_name = "DURATION"
    )]
    pub max_route_timeout: Option<String>,
    /// Largest `retries.attempts` a route may ask for (default 3)
    #[arg(
        long = "max-retry-attempts",
        env = "GATEWAY_MAX_RETRY_ATTEMPTS",
        value_name = "N"
    )]
    pub max_retry_attempts: Option<String>,
}

impl LoopbackArg {
    pub fn allowed(&self) -> bool {
        gateway_render::check::allow_loopback_from_env_value(
            self.allow_loopback_backends.as_deref(),
        )
    }

    /// The registration policy for the gateway at `domain`: loopback, the operators' backend
    /// domains and CIDRs, and whether backend names must resolve. A bad list is a usage error
    /// naming the setting.
    pub fn policy(&self, domain: &str) -> Result<Policy, CmdError> {
        let mut policy = Policy::new(domain, self.allowed())
            .with_backend_rules(
                self.backend_domains.as_deref().unwrap_or(""),
                self.backend_cidrs.as_deref().unwrap_or(""),
            )
            .and_then(|p| {
                p.with_route_bounds(
                    self.max_route_timeout.as_deref(),
                    self.max_retry_attempts.as_deref(),
                )
            })
            .map_err(CmdError::usage)?;
        policy.require_resolvable_backends =
            gateway_render::check::flag_from_env_value(self.require_resolvable_backends.as_deref());
        if let Some(min) = &self.min_health_check_interval {
            policy.min_health_check_interval_ms =
                gateway_render::check::min_health_check_interval_from_value(min)
                    .map_err(CmdError::usage)?;
        }
        Ok(policy)
    }
}

/// The registration policy for these flags.
pub fn policy(domain: &DomainArg, loopback: &LoopbackArg) -> Result<Policy, CmdError> {
    loopback.policy(domain.get()?)
}

/// The pinned Envoy binary used by validation.
#[derive(Args, Debug, Clone)]
pub struct EnvoyArg {
    /// Envoy binary for `envoy --mode validate` (a name is looked up on PATH)
    #[arg(
        long = "envoy-bin",
        env = "ENVOY_BIN",
        value_name = "PATH",
        default_value = gateway_validator::ENVOY_ON_PATH
    )]
    pub envoy_bin: PathBuf,
}

impl EnvoyArg {
    /// The flag, else `ENVOY_BIN`, else `envoy` on PATH: the validator's one lookup
    /// (`lookup_envoy`), with clap supplying the setting and the default.
    pub fn bin(&self) -> PathBuf {
        gateway_validator::lookup_envoy(Some(&self.envoy_bin), None).path()
    }
}
/// The registry table.
#[derive(Args, Debug, Clone)]
pub struct TableArg {
    /// The registry table
    #[arg(long = "table", env = "GATEWAY_TABLE", value_name = "TABLE")]
    pub table: String,
}

/// The versioned config bucket. Optional here; a command that always needs it requires it
/// (`ConfigLocation`), and a command may say in its own words what it does with it
/// (`#[command(mut_arg("bucket", ..))]`).
#[derive(Args, Debug, Clone)]
pub struct BucketArg {
    /// The versioned config bucket
    #[arg(long = "bucket", env = "GATEWAY_BUCKET", value_name = "BUCKET")]
    pub bucket: Option<String>,
}

impl BucketArg {
    pub fn get(&self) -> Result<&str, CmdError> {
        self.bucket.as_deref().ok_or_else(|| {
            CmdError::usage("the config bucket is required: pass --bucket or set GATEWAY_BUCKET")
        })
    }
}

/// Where the live config is and what decides it: the registry table and the config bucket,
/// both required.
#[derive(Args, Debug, Clone)]
#[command(mut_arg("bucket", |a| a.required(true)))]
pub struct ConfigLocation {
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub bucket: BucketArg,
}

#[derive(Args, Debug, Clone, Copy)]
pub struct JsonArg {
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    pub json: bool,
}
