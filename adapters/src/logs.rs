//! Structured logs for the Lambdas: JSON lines CloudWatch Logs can query. `RUST_LOG` overrides
//! the level; without it, `info`, so every run's decision is logged (tracing's own default would
//! show errors only).

use tracing_subscriber::EnvFilter;

pub fn init_json() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .init();
}
