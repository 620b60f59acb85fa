//! `gateway-ratelimit`: Envoy's rate-limit service (v3, gRPC) for local runs and tests, the way
//! moto stands in for AWS. It serves the rules files of its directory (the `ratelimit.yaml` the
//! sidecar delivers), loaded with the validator's reading of envoyproxy/ratelimit's loader (one
//! reading of what a file means), and answers as envoyproxy/ratelimit does: the same rule
//! lookup, `replaces`, `unlimited`, shadow and quota mode, fixed windows, the same statuses, an
//! error while no rules are loaded. Production runs envoyproxy/ratelimit with Redis: this
//! service keeps no state across restarts and none across replicas.

pub mod limiter;
pub mod rules;
pub mod serve;
pub mod service;
pub mod window;

pub use serve::{serve, Listen, ServeError, ServeOptions};
