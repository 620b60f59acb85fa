//! The functions crate's integration tests, one binary: each file below is a module.

mod backend_resolution;
mod bounds;
mod custom_resource_wait;
mod faults;
mod lambda_binaries;
mod lambda_runtime_api;
mod quarantine;
mod quarantine_cost;
mod reconcile;
mod register_handler;
mod render_skip;
mod signing;
mod status_digest;
