//! `gatewayctl bootstrap`: print the gateway's Envoy bootstrap (or the proxy's arguments). The
//! checked-in `bootstrap/envoy.json` and `bootstrap/envoy.args` are this command's output with
//! `--production`, and a test keeps them equal.

use super::{CmdError, CmdResult};
use gateway_bootstrap::{
    gateway_bootstrap, proxy_args, to_pretty_json, BootstrapParams, PRODUCTION_BOOTSTRAP_PATH,
};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Print the gateway's Envoy bootstrap for the given places
///
/// With `--production`, print the image's bootstrap (the checked-in bootstrap/envoy.json);
/// otherwise --clusters-dir, --routes-dir, --listen and --admin are required. With `--args`,
/// print the proxy's command-line arguments instead, one per line.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The proxy image's layout: clusters in /etc/envoy/cds, routes in /etc/envoy/rds, listen
    /// 0.0.0.0:8080, admin 127.0.0.1:9901, rate-limit service 127.0.0.1:8081, 2 trusted hops
    #[arg(long, conflicts_with_all = ["clusters_dir", "routes_dir", "listen", "admin", "ratelimit", "xff_num_trusted_hops"])]
    pub production: bool,
    /// Watched directory of clusters.json (CDS)
    #[arg(long, value_name = "DIR", required_unless_present_any = ["production", "args"])]
    pub clusters_dir: Option<PathBuf>,
    /// Watched directory of routes.json (RDS); must differ from --clusters-dir
    #[arg(long, value_name = "DIR", required_unless_present_any = ["production", "args"])]
    pub routes_dir: Option<PathBuf>,
    /// Address of the gateway listener
    #[arg(long, value_name = "ADDR", required_unless_present_any = ["production", "args"])]
    pub listen: Option<SocketAddr>,
    /// Address of Envoy's admin endpoint; must be loopback
    #[arg(long, value_name = "ADDR", required_unless_present_any = ["production", "args"])]
    pub admin: Option<SocketAddr>,
    /// Address of the rate-limit service (gRPC) [default: 127.0.0.1:8081]
    #[arg(long, value_name = "ADDR")]
    pub ratelimit: Option<SocketAddr>,
    /// Proxies in front of Envoy that append to X-Forwarded-For [default: 2]
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
    if args.production {
        return Ok(defaults);
    }
    let missing = |flag: &str| CmdError::usage(format!("{flag} is required without --production"));
    Ok(BootstrapParams {
        clusters_dir: args
            .clusters_dir
            .clone()
            .ok_or_else(|| missing("--clusters-dir"))?,
        routes_dir: args
            .routes_dir
            .clone()
            .ok_or_else(|| missing("--routes-dir"))?,
        listen: args.listen.ok_or_else(|| missing("--listen"))?,
        admin: args.admin.ok_or_else(|| missing("--admin"))?,
        ratelimit: args.ratelimit.unwrap_or(defaults.ratelimit),
        xff_num_trusted_hops: args
            .xff_num_trusted_hops
            .unwrap_or(defaults.xff_num_trusted_hops),
    })
}
