//! The gateway's Envoy bootstrap (static listener and filters, CDS and RDS from watched
//! directories), the validation bootstrap that inlines a rendered config into the same listener,
//! and the one Envoy version pin.

mod args;
mod error;
mod gateway;
mod json;
mod listener;
mod params;
mod validation;

pub use args::{proxy_args, PRODUCTION_BOOTSTRAP_PATH};
pub use error::BootstrapError;
pub use gateway::gateway_bootstrap;
pub use json::to_pretty_json;
pub use params::{
    AdminAddress, BootstrapParams, PRODUCTION_ADMIN_SOCKET, PRODUCTION_RATE_LIMIT_PORT,
};
pub use validation::{validation_bootstrap, ValidationBootstrap};

/// The Envoy release the gateway runs, validates with and tests against. `bootstrap/ENVOY_VERSION`
/// is the only place it is written; everything else reads it from here or from that file.
pub fn envoy_version() -> &'static str {
    include_str!("../ENVOY_VERSION").trim()
}
