//! The pure core: the entry model, the registration checks and the renderer. No I/O.

pub mod bundle;
pub mod check;
pub mod contract;
pub mod entry;

pub use check::{Policy, Problem, Rejection};
pub use entry::{Entry, Limit, Per, Route, Unit};
