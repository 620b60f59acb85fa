//! The three validation layers a render passes before it may be published:
//! 1. gateway rules on the values (`rules`): pure;
//! 2. the empty-render guard (`empty`): pure;
//! 3. the pinned Envoy's own verdict (`envoy`): runs `envoy --mode validate` on a bootstrap that
//!    inlines the rendered config into the gateway's real listener.

mod all;
mod config;
mod empty;
mod envoy;
mod error;
pub mod rules;

pub use all::{
    validate_all, validate_all_beside, Layer, Report, ValidateOptions, ValidationFailure,
};
pub use config::{count_routes, ConfigView, ParsedConfig};
pub use empty::validate_not_empty;
pub use envoy::{
    check_envoy_version, envoy_release, find_executable, lookup_envoy, start_envoy_validation,
    validate_with_envoy, EnvoyBin, EnvoyOptions, EnvoyValidation, EnvoyVerdict, ENVOY_BIN_SETTING,
    ENVOY_ON_PATH, VALIDATE_ARGS,
};
pub use error::ValidationError;
pub use rules::{validate_rules, RuleViolation};
