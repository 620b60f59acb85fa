//! The validator crate's integration tests, one binary: each file below is a module.

mod common;
mod independent_bootstrap;
mod layers;
mod ratelimit_peer;
mod rendered_values_read_back;
mod route_policy_layers;
