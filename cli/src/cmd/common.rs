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

/// A struct of operator settings, each written `field: "FLAG", "ENV", "VALUE";`: an optional
/// `--FLAG` that is also the environment variable ENV, its value named VALUE in the help.
macro_rules! settings {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident: $flag:literal, $env:literal, $value:literal;
            )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[arg(long = $flag, env = $env, value_name = $value)]
                pub $field: Option<String>,
            )*
        }
    };
}

settings! {
    /// Loopback backends are for local runs and tests; link-local stays rejected regardless.
    #[derive(Args, Debug, Clone)]
    #[command(mut_arg("allow_loopback_backends", switch))]
    #[command(mut_arg("require_resolvable_backends", switch))]
    pub struct LoopbackArg {
        /// Accept loopback and unspecified backend addresses (local runs and tests only)
        allow_loopback_backends:
            "allow-loopback-backends", "GATEWAY_ALLOW_LOOPBACK_BACKENDS", "true|false";
        /// Backend names must be under one of these domain suffixes (comma-separated; empty: any)
        backend_domains: "backend-domains", "GATEWAY_BACKEND_DOMAINS", "SUFFIX,...";
        /// Backend addresses, literal or resolved, must be in one of these CIDR blocks
        /// (comma-separated; empty: any)
        backend_cidrs: "backend-cidrs", "GATEWAY_BACKEND_CIDRS", "CIDR,...";
        /// Refuse backend names that do not resolve where the check runs
        require_resolvable_backends:
            "require-resolvable-backends", "GATEWAY_REQUIRE_RESOLVABLE_BACKENDS", "true|false";
        /// Shortest health_check.interval an entry may ask for (a duration, default 5s)
        min_health_check_interval:
            "min-health-check-interval", "GATEWAY_MIN_HEALTH_CHECK_INTERVAL", "DURATION";
        /// Largest `timeout` a route may ask for (a duration such as 60s; default 60s)
        max_route_timeout: "max-route-timeout", "GATEWAY_MAX_ROUTE_TIMEOUT", "DURATION";
        /// Largest `retries.attempts` a route may ask for (default 3)
        max_retry_attempts: "max-retry-attempts", "GATEWAY_MAX_RETRY_ATTEMPTS", "N";
    }
}

/// A `true|false` setting whose flag may also stand alone, meaning `true`.
fn switch(arg: clap::Arg) -> clap::Arg {
    arg.num_args(0..=1).default_missing_value("true")
}

impl LoopbackArg {
    /// `--allow-loopback-backends` / `GATEWAY_ALLOW_LOOPBACK_BACKENDS`; a value other than
    /// true, false, 1 or 0 is a usage error naming the flag.
    pub fn allowed(&self) -> Result<bool, CmdError> {
        gateway_render::check::allow_loopback_from_env_value(
            self.allow_loopback_backends.as_deref(),
        )
        .map_err(|e| CmdError::usage(format!("--allow-loopback-backends (GATEWAY_ALLOW_LOOPBACK_BACKENDS): {e}")))
    }

    /// The registration policy for the gateway at `domain`: loopback, the operators' backend
    /// domains and CIDRs, and whether backend names must resolve. A bad list is a usage error
    /// naming the setting.
    pub fn policy(&self, domain: &str) -> Result<Policy, CmdError> {
        let mut policy = Policy::new(domain, self.allowed()?)
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
            gateway_render::check::flag_from_env_value(self.require_resolvable_backends.as_deref())
                .map_err(|e| {
                    CmdError::usage(format!(
                        "--require-resolvable-backends (GATEWAY_REQUIRE_RESOLVABLE_BACKENDS): {e}"
                    ))
                })?;
        policy.jwt = gateway_adapters::settings::jwt_policy()
            .map_err(|e| CmdError::usage(e.to_string()))?;
        if let Some(min) = &self.min_health_check_interval {
            policy.min_health_check_interval_ms =
                gateway_render::check::min_health_check_interval_from_value(min)
                    .map_err(CmdError::usage)?;
        }
        if let Some(min) = std::env::var("GATEWAY_MIN_ROLLOUT_INTERVAL").ok().filter(|v| !v.trim().is_empty()) {
            policy.min_rollout_interval_ms =
                gateway_render::check::min_rollout_interval_from_value(&min).map_err(CmdError::usage)?;
        }
        Ok(policy)
    }
}

/// The flags the registration checks read: the base domain and the operators' backend rules.
#[derive(Args, Debug, Clone)]
pub struct PolicyArgs {
    #[command(flatten)]
    pub domain: DomainArg,
    #[command(flatten)]
    pub loopback: LoopbackArg,
}

impl PolicyArgs {
    /// The registration policy for these flags.
    pub fn policy(&self) -> Result<Policy, CmdError> {
        self.loopback.policy(self.domain.get()?)
    }
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
/// The registry table. Optional to clap so the error can name the variable and the next step.
#[derive(Args, Debug, Clone)]
pub struct TableArg {
    /// The registry table (required; `gatewayctl init` creates it)
    #[arg(long = "table", env = "GATEWAY_TABLE", value_name = "TABLE")]
    pub table: Option<String>,
}

impl TableArg {
    pub fn get(&self) -> Result<String, CmdError> {
        self.table.clone().filter(|t| !t.is_empty()).ok_or_else(|| {
            CmdError::usage(
                "the registry table is required: pass --table TABLE or set GATEWAY_TABLE (`gatewayctl init` creates it)",
            )
        })
    }
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
        self.bucket.as_deref().filter(|b| !b.is_empty()).ok_or_else(|| {
            CmdError::usage(
                "the config bucket is required: pass --bucket BUCKET or set GATEWAY_BUCKET (`gatewayctl init` creates it)",
            )
        })
    }
}

/// Where the live config is and what decides it: the registry table and the config bucket,
/// both required (each named with its variable when missing, see `get`).
#[derive(Args, Debug, Clone)]
#[command(mut_arg("bucket", |a| a.help("The versioned config bucket (required)")))]
pub struct ConfigLocation {
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub bucket: BucketArg,
}

// `--json`; a command may say what it replaces (`#[command(mut_arg("json", ..))]`). No doc
// comment here: clap would make it the about text of a command that flattens this and has none.
#[derive(Args, Debug, Clone, Copy)]
pub struct JsonArg {
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    pub json: bool,
}

/// The flags of the commands that read or act on the live config and answer in lines or one
/// JSON document (`status`, `history`, `diff`, `restore`, `resume`).
#[derive(Args, Debug, Clone)]
pub struct LiveConfigArgs {
    #[command(flatten)]
    pub target: ConfigLocation,
    #[command(flatten)]
    pub json: JsonArg,
}

impl LiveConfigArgs {
    /// Whether to answer in one JSON document.
    pub fn json(&self) -> bool {
        self.json.json
    }
}

/// The flags of the commands that list the registry table's rows (`list`, `grants`): `--json`
/// instead of a table, and the table.
#[derive(Args, Debug, Clone)]
#[command(mut_arg("json", |a| a.help("One JSON document instead of a table")))]
pub struct ListingArgs {
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub table: TableArg,
}
