//! Where the service listens (`HOST:PORT` or `unix:PATH`) and the server itself.

use crate::rules::{watch, LiveRules};
use crate::service::Limiter;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitServiceServer;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = String;

    fn from_str(s: &str) -> Result<Listen, String> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("unix: needs a socket path (unix:/run/ratelimit.sock)".into());
            }
            return Ok(Listen::Unix(PathBuf::from(path)));
        }
        s.parse().map(Listen::Tcp).map_err(|_| {
            format!("{s:?} is neither HOST:PORT (an IP address and port) nor unix:PATH")
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("listening on {at}: {source}")]
    Bind {
        at: String,
        #[source]
        source: std::io::Error,
    },
    #[error("serving gRPC: {0}")]
    Grpc(#[source] tonic::transport::Error),
}

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub config_dir: PathBuf,
    pub listen: Listen,
    /// How often the rules file is looked at.
    pub reload_every: Duration,
}

/// Serves until `shutdown` completes. Binds before returning the future's first poll result, so
/// a bind failure is an error, not a hang.
pub async fn serve(
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let rules = LiveRules::default();
    let watcher = tokio::spawn(watch(
        options.config_dir.clone(),
        rules.clone(),
        options.reload_every,
    ));
    let server = tonic::transport::Server::builder()
        .add_service(RateLimitServiceServer::new(Limiter::new(rules)));
    let result = match &options.listen {
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| ServeError::Bind {
                    at: addr.to_string(),
                    source,
                })?;
            tracing::info!(listen = %addr, config_dir = %options.config_dir.display(), "serving rate limits");
            server
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    shutdown,
                )
                .await
        }
        Listen::Unix(path) => {
            // A socket left by an earlier run would make bind fail.
            let _ = std::fs::remove_file(path);
            let listener =
                tokio::net::UnixListener::bind(path).map_err(|source| ServeError::Bind {
                    at: format!("unix:{}", path.display()),
                    source,
                })?;
            tracing::info!(listen = %format!("unix:{}", path.display()), config_dir = %options.config_dir.display(), "serving rate limits");
            let served = server
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::UnixListenerStream::new(listener),
                    shutdown,
                )
                .await;
            let _ = std::fs::remove_file(path);
            served
        }
    };
    watcher.abort();
    result.map_err(ServeError::Grpc)
}
