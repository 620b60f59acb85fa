//! The register and reconcile functions and the operator actions on the live config, over the
//! AWS adapters in `gateway_adapters` (DynamoDB registry, S3 config store, CloudWatch metrics).
//! Binaries in `src/bin` are thin; everything else is here.

pub mod operator;
pub mod reconcile;
pub mod register;
pub mod serving;
