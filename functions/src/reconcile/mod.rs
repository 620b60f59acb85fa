//! The reconcile function's edge: the events that wake it and the handler that runs
//! `gateway_control::reconcile` for them.

mod event;
mod handler;

pub use event::ReconcileEvent;
pub use handler::handle;
