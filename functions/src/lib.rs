//! The register and reconcile functions and the AWS adapters they share (DynamoDB registry,
//! S3 config store, CloudWatch metrics). Binaries in `src/bin` are thin; everything else is here.

pub mod aws;
pub mod logs;
pub mod metrics;
pub mod operator;
pub mod reconcile;
pub mod register;
pub mod registry;
pub mod resolve;
pub mod serving;
pub mod settings;
pub mod store;
