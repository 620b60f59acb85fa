//! The environment every binary reads (each is also a flag in `gatewayctl`): `GATEWAY_TABLE`,
//! `GATEWAY_BUCKET`, `GATEWAY_DOMAIN`, `ENVOY_BIN`, `GATEWAY_ALLOW_LOOPBACK_BACKENDS`.

use gateway_render::check::{allow_loopback_from_env_value, Policy};
use std::path::PathBuf;

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

/// `ENVOY_BIN`, default `envoy` on PATH.
pub fn envoy_bin() -> PathBuf {
    std::env::var_os("ENVOY_BIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("envoy"))
}

pub fn policy(domain: &str) -> Policy {
    let allow = std::env::var("GATEWAY_ALLOW_LOOPBACK_BACKENDS").ok();
    Policy::new(domain, allow_loopback_from_env_value(allow.as_deref()))
}
