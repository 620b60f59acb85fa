use clap::Parser;
use gateway_sidecar::args::Args;
use gateway_sidecar::{probe, run, SidecarError};
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(url) = &args.probe {
        return match probe::probe(url).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(why) => {
                eprintln!("{why}");
                ExitCode::from(1)
            }
        };
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match args.config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("gateway-sidecar: {e}");
            return ExitCode::from(2);
        }
    };
    let sdk = gateway_adapters::aws::sdk_config().await;
    let built = match run::trust(&config, &sdk).await {
        Ok(trust) => run::build(&config, &sdk, trust),
        Err(e) => Err(e),
    };
    let result = match built {
        Ok(sidecar) if config.once => run::run_once(sidecar)
            .await
            .map(|outcome| tracing::info!(?outcome, "done")),
        Ok(sidecar) => {
            let traffic = gateway_sidecar::traffic::CloudWatchTraffic::from_conf(&sdk);
            let reports = run::proxy_table(&config, &sdk);
            run::run_loop_with(sidecar, &config, run::shutdown_signal(), Some(traffic), reports)
                .await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "gateway-sidecar failed");
            eprintln!("gateway-sidecar: {e}");
            exit_code(&e)
        }
    }
}

fn exit_code(e: &SidecarError) -> ExitCode {
    match e {
        SidecarError::Usage(_) => ExitCode::from(2),
        _ => ExitCode::from(1),
    }
}
