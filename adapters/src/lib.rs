//! The AWS adapters every binary shares (docs/design.md#the-pipeline): the DynamoDB registry, the
//! S3 bundle store (its write side for the reconciler and operators, its read side for the
//! sidecar), CloudWatch metrics, backend name lookups, the settings read from the environment,
//! and the SDK configuration. The pipeline's crates point one way: `render` ← `validator` ←
//! these adapters ← the Lambdas (`functions`), the sidecar and `gatewayctl`.

pub mod aws;
mod chain;
pub mod logs;
pub mod metrics;
pub mod registry;
pub mod resolve;
pub mod retry;
pub mod settings;
pub mod signing;
pub mod store;

pub use chain::{body_failure, error_chain};
