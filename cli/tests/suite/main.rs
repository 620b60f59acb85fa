//! The cli crate's integration tests, one binary: each file below is a module.

mod backends;
mod bootstrap;
mod check;
mod check_entry_policy;
mod common;
mod operate;
mod registry;
mod render_validate;
mod sync;
mod tenancy;
mod top;
