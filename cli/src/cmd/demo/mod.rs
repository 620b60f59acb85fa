//! `gatewayctl demo [--check]`: the whole pipeline on one machine. moto's server stands in for
//! DynamoDB, S3 and CloudWatch; the reconciler runs the Lambda's code in a loop; the sidecar and
//! Envoy are the real binaries; two sample backends are served in-process. Every process it
//! starts is stopped on every way out: success, failure, Ctrl-C, SIGTERM or SIGHUP.

mod backends;
mod banner;
mod envoy;
mod http;
mod moto;
mod plan;
mod progress;
mod ratelimit;
mod reconciler;
mod running;
mod samples;
mod sidecar;
mod steps;
mod waits;

use super::{CmdError, CmdResult};
use plan::Plan;
use progress::Progress;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use running::Demo;

/// Run the whole pipeline on this machine: moto's server, signing key, table and bucket, signed seed, reconciler
/// loop, sidecar, Envoy and two sample backends; register the sample teams in examples/demo
///
/// Installs the pinned Envoy and moto into .venv when missing. Keeps running until Ctrl-C;
/// with --check, exits 0 once a request through Envoy reached each sample backend (1 with the
/// reason otherwise), stopping everything it started.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Exit 0 once the sample requests through Envoy succeed, stopping everything (for CI)
    #[arg(long)]
    pub check: bool,
    /// Envoy's listener
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:10000")]
    pub listen: SocketAddr,
    /// Envoy's admin endpoint (loopback only)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9901")]
    pub admin: SocketAddr,
    /// The sidecar's health and status server
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9902")]
    pub sidecar_listen: SocketAddr,
    /// gateway-ratelimit, the local rate-limit service Envoy asks for global limits (gRPC)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8081")]
    pub ratelimit_listen: SocketAddr,
    /// The rate-limit sidecar's health and status server
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9903")]
    pub ratelimit_sidecar_listen: SocketAddr,
    /// Port of moto's server (DynamoDB, S3, CloudWatch) on 127.0.0.1
    #[arg(long, value_name = "PORT", default_value_t = 4566)]
    pub moto_port: u16,
    /// Ports of the two sample backends on 127.0.0.1 (default: the ports in examples/demo/*.json)
    #[arg(long, value_name = "PORT,PORT", value_delimiter = ',')]
    pub backend_ports: Option<Vec<u16>>,
    /// Base domain the sample hosts are placed in front of
    #[arg(
        long,
        env = "GATEWAY_DOMAIN",
        value_name = "DOMAIN",
        default_value = "api.example.com"
    )]
    pub domain: String,
    /// Envoy binary (default: the pinned Envoy in the repository's .venv, installed when missing)
    #[arg(long, env = "ENVOY_BIN", value_name = "PATH")]
    pub envoy_bin: Option<PathBuf>,
    /// gateway-sidecar binary (default: next to this gatewayctl)
    #[arg(long, value_name = "PATH")]
    pub sidecar_bin: Option<PathBuf>,
    /// gateway-ratelimit binary (default: next to this gatewayctl)
    #[arg(long, value_name = "PATH")]
    pub ratelimit_bin: Option<PathBuf>,
    /// The repository checkout: scripts/, examples/demo/, .venv (default: the one gatewayctl was built from)
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Where config files and logs go; its demo files are replaced at start (default: REPO/.gateway/demo)
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// Seconds to wait for the sample requests through Envoy to succeed
    #[arg(long, value_name = "SECONDS", default_value_t = 90)]
    pub wait: u64,
}

pub fn run(args: Args) -> CmdResult {
    let plan = Plan::resolve(args)?;
    // The demo's main future runs on this thread, which spawns every child: on Linux the
    // children's parent-death signal is tied to it (see proc-kit/src/processes.rs).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CmdError::failed(format!("starting the async runtime: {e}")))?;
    let result = runtime.block_on(demo(plan));
    runtime.shutdown_timeout(Duration::from_secs(5));
    result
}

async fn demo(plan: Plan) -> CmdResult {
    let mut signals = Signals::new()?;
    let mut running = Demo::default();
    let mut progress = Progress::new(steps::TOTAL);
    let outcome = tokio::select! {
        up = steps::bring_up(&mut running, &plan, &mut progress) => Some(up),
        signal = signals.recv() => {
            println!("\n{signal}: stopping before the local gateway was up");
            None
        }
    };
    let result = match outcome {
        None => Err(CmdError::failed(
            "gatewayctl demo was interrupted before the local gateway was up",
        )),
        Some(Err(failure)) => Err(failure.into()),
        Some(Ok(_)) if plan.check => {
            println!("check passed: a request through Envoy reached each sample backend");
            Ok(())
        }
        Some(Ok(up)) => {
            banner::print(&plan, &up);
            keep_running(&mut running, &mut signals).await
        }
    };
    println!("stopping everything the demo started …");
    let stopped = running.stop().await;
    if !stopped.is_empty() {
        println!("stopped {}", stopped.join(", "));
    }
    result
}

/// Until a signal (exit 0) or a child's unexpected exit (exit 1, with its log).
async fn keep_running(running: &mut Demo, signals: &mut Signals) -> CmdResult {
    let watch = async {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if let Err(why) = running.processes.check_alive() {
                return why;
            }
        }
    };
    tokio::select! {
        signal = signals.recv() => {
            println!("\n{signal}");
            Ok(())
        }
        why = watch => Err(CmdError::failed(format!("the local gateway stopped: {why}"))),
    }
}

/// Ctrl-C, SIGTERM (a supervisor stopping the demo) and SIGHUP (its terminal closing).
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Signals, CmdError> {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| CmdError::failed(format!("listening for {name}: {e}")))
        };
        // Registered before the first step, so no Ctrl-C falls into a window where the default
        // action would end the demo without stopping its children.
        Ok(Signals {
            int: listen(SignalKind::interrupt(), "SIGINT")?,
            term: listen(SignalKind::terminate(), "SIGTERM")?,
            hup: listen(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "Ctrl-C",
            _ = self.term.recv() => "SIGTERM",
            _ = self.hup.recv() => "SIGHUP",
        }
    }
}
