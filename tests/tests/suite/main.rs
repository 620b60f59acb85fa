//! The tests crate's integration tests, one binary: each file below is a module.

mod demo;
mod envelope;
mod exposure_live;
mod no_dropped_requests;
mod pipeline;
mod proxy_reports;
mod rollout_live;
mod route_policy_live;
