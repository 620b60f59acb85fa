//! The sidecar crate's integration tests, one binary: each file below is a module.

mod admin_socket;
mod delivery;
mod entry_policy_live;
mod faults;
mod global_limits;
mod jwt_live;
mod make_before_break_steps;
mod observability;
mod refusals;
mod streaming;
