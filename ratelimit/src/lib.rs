//! `gateway-ratelimit`: Envoy's rate-limit service (v3, gRPC) for local runs and tests, the way
//! moto stands in for AWS. It serves the `ratelimit.yaml` the sidecar delivers, loaded with the
//! validator's loader (one set of rules for what a file means), and counts in memory with fixed
//! windows as envoyproxy/ratelimit does. Production runs envoyproxy/ratelimit with Redis: this
//! service keeps no state across restarts and none across replicas.

pub mod limiter;
pub mod rules;
pub mod serve;
pub mod service;
pub mod window;

pub use serve::{serve, Listen, ServeError, ServeOptions};
