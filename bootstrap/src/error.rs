use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The admin endpoint can change runtime (the kill switch) and drain the proxy: it must
    /// never be reachable from the network.
    #[error("admin address {0}: must be a loopback address (127.0.0.0/8 or ::1); the admin endpoint can modify runtime")]
    AdminNotLoopback(SocketAddr),
    #[error("{field}: path {path:?} is not valid UTF-8; Envoy's config needs a string path")]
    NonUtf8Path {
        field: &'static str,
        path: std::path::PathBuf,
    },
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
}
