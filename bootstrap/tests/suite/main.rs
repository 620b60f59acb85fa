//! The bootstrap crate's integration tests, one binary: each file below is a module.

mod checked_in;
mod doc_references;
mod envoy_validates;
mod kill_switch_live;
mod pin;
mod repo_files;
