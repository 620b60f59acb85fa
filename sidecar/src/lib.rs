//! The delivery sidecar: polls the versioned bucket, verifies each new bundle, and delivers it
//! into Envoy's watched directories make-before-break (or, in rate-limit mode, writes the
//! rate-limit service's rules). The binary in `main.rs` only parses flags and calls `run`.

pub mod admin;
pub mod args;
pub mod deliver;
pub mod error;
pub mod files;
pub mod health;
pub mod poll;
pub mod probe;
pub mod report;
pub mod run;
pub mod source;
pub mod staged;
pub mod state;
pub mod timing;
pub mod traffic;
pub mod union;

pub use error::SidecarError;
