//! Flags several commands share. Each is also an environment variable, the same one every
//! gateway binary reads.

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
}

impl LoopbackArg {
    pub fn allowed(&self) -> bool {
        gateway_render::check::allow_loopback_from_env_value(
            self.allow_loopback_backends.as_deref(),
        )
    }
}

/// The registration policy for these flags.
pub fn policy(domain: &DomainArg, loopback: &LoopbackArg) -> Result<Policy, CmdError> {
    Ok(Policy::new(domain.get()?, loopback.allowed()))
}

/// The pinned Envoy binary used by validation.
#[derive(Args, Debug, Clone)]
pub struct EnvoyArg {
    /// Envoy binary for `envoy --mode validate` (a name is looked up on PATH)
    #[arg(
        long = "envoy-bin",
        env = "ENVOY_BIN",
        value_name = "PATH",
        default_value = "envoy"
    )]
    pub envoy_bin: PathBuf,
}
