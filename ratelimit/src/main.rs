use clap::Parser;
use gateway_ratelimit::{serve, Listen, ServeOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Envoy's rate-limit service for local runs and tests (production runs envoyproxy/ratelimit).
#[derive(Debug, Parser)]
#[command(name = "gateway-ratelimit", version)]
struct Args {
    /// Directory of rules files (the rate-limit sidecar's delivery directory); dot files are
    /// skipped, as production's service is configured to.
    #[arg(long, env = "GATEWAY_RATELIMIT_DIR")]
    config_dir: PathBuf,
    /// HOST:PORT or unix:PATH.
    #[arg(long, default_value = "127.0.0.1:8081")]
    listen: Listen,
    /// How often to look for a new rules file, in milliseconds.
    #[arg(long, default_value_t = 200)]
    reload_ms: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let options = ServeOptions {
        config_dir: args.config_dir,
        listen: args.listen,
        reload_every: Duration::from_millis(args.reload_ms.max(10)),
    };
    let shutdown = async {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    match serve(options, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gateway-ratelimit: {e}");
            ExitCode::from(1)
        }
    }
}
