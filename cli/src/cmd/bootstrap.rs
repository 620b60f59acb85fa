//! `gatewayctl bootstrap`: print the gateway's Envoy bootstrap (or the proxy's arguments). The
//! checked-in `bootstrap/envoy.json` and `bootstrap/envoy.args` are this command's output without
//! flags (the production shape), and a test keeps them equal.

use super::{CmdError, CmdResult};
use gateway_bootstrap::{
    gateway_bootstrap, proxy_args, to_pretty_json, AdminAddress, BootstrapParams,
    PRODUCTION_BOOTSTRAP_PATH,
};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Print the gateway's Envoy bootstrap for the given places
///
/// Without flags, print the image's bootstrap (the checked-in bootstrap/envoy.json): clusters in
/// /etc/envoy/cds, routes in /etc/envoy/rds, listen 0.0.0.0:8080, admin on the Unix socket
/// /run/envoy/admin.sock, rate-limit service 127.0.0.1:15001, 1 trusted hop. Each flag replaces
/// one of those. With `--args`, print the proxy's command-line arguments instead, one per line.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The proxy image's layout, exactly (the same as giving no flags)
    #[arg(long, conflicts_with_all = ["clusters_dir", "routes_dir", "listen", "admin", "ratelimit", "xff_num_trusted_hops"])]
    pub production: bool,
    /// Watched directory of clusters.json (CDS) [default: /etc/envoy/cds]
    #[arg(long, value_name = "DIR")]
    pub clusters_dir: Option<PathBuf>,
    /// Watched directory of routes.json (RDS); must differ from --clusters-dir [default: /etc/envoy/rds]
    #[arg(long, value_name = "DIR")]
    pub routes_dir: Option<PathBuf>,
    /// Address of the gateway listener [default: 0.0.0.0:8080]
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Envoy's admin endpoint: unix:/PATH (production) or a loopback HOST:PORT (local runs)
    /// [default: unix:/run/envoy/admin.sock]
    #[arg(long, value_name = "unix:PATH|HOST:PORT")]
    pub admin: Option<AdminAddress>,
    /// Address of the rate-limit service (gRPC), on loopback [default: 127.0.0.1:15001]
    #[arg(long, value_name = "ADDR")]
    pub ratelimit: Option<SocketAddr>,
    /// Proxies in front of Envoy that append to X-Forwarded-For: 1 for a load balancer alone,
    /// 2 for a CDN in front of it [default: 1]
    #[arg(long, value_name = "N")]
    pub xff_num_trusted_hops: Option<u32>,
    /// Print the proxy's arguments (`-c PATH --reject-unknown-dynamic-fields ...`) instead
    #[arg(long)]
    pub args: bool,
    /// With --args: the bootstrap's path [default: /etc/envoy/envoy.json]
    #[arg(long, value_name = "PATH", requires = "args")]
    pub bootstrap_path: Option<PathBuf>,
    /// With --args: add --disable-hot-restart (an Envoy launched by a script dies with it otherwise)
    #[arg(long, requires = "args")]
    pub local: bool,
}

pub fn run(args: Args) -> CmdResult {
    if args.args {
        let path = args
            .bootstrap_path
            .unwrap_or_else(|| PathBuf::from(PRODUCTION_BOOTSTRAP_PATH));
        for arg in proxy_args(&path, args.local) {
            println!("{arg}");
        }
        return Ok(());
    }
    let params = params(&args)?;
    let bootstrap = gateway_bootstrap(&params).map_err(|e| CmdError::usage(e.to_string()))?;
    print!("{}", to_pretty_json(&bootstrap));
    Ok(())
}

fn params(args: &Args) -> Result<BootstrapParams, CmdError> {
    let defaults = BootstrapParams::production();
    Ok(BootstrapParams {
        clusters_dir: args.clusters_dir.clone().unwrap_or(defaults.clusters_dir),
        routes_dir: args.routes_dir.clone().unwrap_or(defaults.routes_dir),
        listen: args.listen.unwrap_or(defaults.listen),
        admin: args.admin.clone().unwrap_or(defaults.admin),
        ratelimit: args.ratelimit.unwrap_or(defaults.ratelimit),
        xff_num_trusted_hops: args
            .xff_num_trusted_hops
            .unwrap_or(defaults.xff_num_trusted_hops),
    })
}
