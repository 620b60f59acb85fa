//! The adapters crate's integration tests, one binary: each file below is a module.

mod backend_claims;
mod bundle_wire_size;
mod register_bounds;
mod register_concurrency;
mod registry_dynamo;
mod registry_faults;
mod registry_race;
mod registry_reader;
mod status_rows;
mod store_read;
mod store_s3;
