//! The pure core: the entry model, the registration checks and the renderer. No I/O.

pub mod bounds;
pub mod bundle;
pub mod canonical;
pub mod check;
pub mod clusters;
mod config;
pub mod contract;
pub mod delivery;
pub mod entry;
pub mod jwt;
mod error;
mod hash;
pub mod kill_switch;
pub mod names;
pub mod ratelimit;
pub mod renderer;
pub mod rollout;
pub mod route_policy;
pub mod routes;
pub mod schema;
mod value;

pub use bounds::Bounds;
pub use bundle::{compute_hash, Bundle};
pub use check::{Policy, Problem, Rejection};
pub use config::RenderConfig;
pub use entry::{
    Canary, CanaryHeader, Clients, Cors, Entry, HeaderChanges, HeaderMatch, HealthCheck, Limit, Mirror, Per,
    Protocol, QueryMatch, Replace, Retries, Rewrite, RewriteTo, Rollout, Route, Serving, Unit,
    WeightedBackend,
};
pub use error::{BundleError, RenderError};
pub use kill_switch::{render_kill_switch, render_kill_switch_for};
pub use ratelimit::RateLimitConfig;
pub use renderer::{render, Rendered};
