//! The command line (docs/design.md#sidecar); `--bucket` also reads `GATEWAY_BUCKET`.

use crate::error::SidecarError;
use clap::Parser;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "gateway-sidecar",
    about = "Polls the versioned bucket and delivers each verified bundle into Envoy's watched directories (or, with --ratelimit-dir, the rate-limit service's rules)."
)]
pub struct Args {
    /// Versioned bucket holding bundle.json.
    #[arg(long, env = "GATEWAY_BUCKET")]
    pub bucket: Option<String>,
    /// Envoy's CDS watched directory (clusters.json).
    #[arg(long)]
    pub clusters_dir: Option<PathBuf>,
    /// Envoy's RDS watched directory (routes.json).
    #[arg(long)]
    pub routes_dir: Option<PathBuf>,
    /// Envoy's admin endpoint, read for applied versions and refusals: unix:/PATH (production:
    /// unix:/run/envoy/admin.sock) or http://HOST:PORT on loopback (local runs).
    #[arg(long, default_value = "http://127.0.0.1:9901")]
    pub envoy_admin: String,
    /// Seconds between polls.
    #[arg(long, default_value_t = 15)]
    pub interval: u64,
    /// Seconds between readings of Envoy's per-service stats published to CloudWatch (Envoy mode,
    /// not with --once).
    #[arg(long, default_value_t = 60)]
    pub metrics_interval: u64,
    /// Address of the health (/healthz) and status (/status) server.
    #[arg(long, default_value = "127.0.0.1:9902")]
    pub listen: SocketAddr,
    /// Deliver the current bundle once, waiting for Envoy to apply it; exit 0, or 1 with the reason.
    #[arg(long)]
    pub once: bool,
    /// Rate-limit mode: write only ratelimit.yaml into this directory.
    #[arg(long)]
    pub ratelimit_dir: Option<PathBuf>,
    /// Where to remember the live version and hash; not inside a watched directory.
    #[arg(long)]
    pub state_file: Option<PathBuf>,
    /// Seconds to wait for Envoy to apply each step of a delivery.
    #[arg(long, default_value_t = 60)]
    pub apply_timeout: u64,
    /// GET this URL and exit 0 on a 200, else 1 (the container health check).
    #[arg(long)]
    pub probe: Option<String>,
    /// Largest bundle.json the sidecar downloads; a bigger one is refused unread (it would be
    /// held in memory whole) [default: 134217728, the reconciler's own cap]
    #[arg(long, env = "GATEWAY_MAX_BUNDLE_BYTES", value_name = "BYTES")]
    pub max_bundle_bytes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Envoy {
        clusters_dir: PathBuf,
        routes_dir: PathBuf,
        admin: String,
    },
    RateLimit {
        dir: PathBuf,
    },
}

/// The checked settings of a delivering sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub bucket: String,
    pub mode: Mode,
    pub interval: Duration,
    pub metrics_interval: Duration,
    pub listen: SocketAddr,
    pub once: bool,
    pub state_file: Option<PathBuf>,
    pub apply_timeout: Duration,
    pub max_bundle_bytes: usize,
}

impl Args {
    pub fn config(self) -> Result<Config, SidecarError> {
        let usage = |s: &str| SidecarError::Usage(s.to_string());
        let bucket = self
            .bucket
            .filter(|b| !b.is_empty())
            .ok_or_else(|| usage("--bucket (or GATEWAY_BUCKET) is required"))?;
        let mode = match (self.ratelimit_dir, self.clusters_dir, self.routes_dir) {
            (Some(dir), None, None) => Mode::RateLimit { dir },
            (Some(_), _, _) => {
                return Err(usage(
                    "--ratelimit-dir excludes --clusters-dir and --routes-dir",
                ))
            }
            (None, Some(clusters_dir), Some(routes_dir)) => {
                if same_dir(&clusters_dir, &routes_dir) {
                    return Err(usage(
                        "--clusters-dir and --routes-dir must differ: CDS and RDS watch separate directories",
                    ));
                }
                if let Err(e) = self
                    .envoy_admin
                    .parse::<gateway_envoy_admin::AdminEndpoint>()
                {
                    return Err(SidecarError::Usage(format!("--envoy-admin: {e}")));
                }
                Mode::Envoy {
                    clusters_dir,
                    routes_dir,
                    admin: self.envoy_admin,
                }
            }
            (None, _, _) => {
                return Err(usage(
                    "give --clusters-dir and --routes-dir, or --ratelimit-dir",
                ))
            }
        };
        if self.interval == 0 {
            return Err(usage("--interval must be at least 1 second"));
        }
        if self.metrics_interval == 0 {
            return Err(usage("--metrics-interval must be at least 1 second"));
        }
        if self.apply_timeout == 0 {
            return Err(usage("--apply-timeout must be at least 1 second"));
        }
        if let Some(state) = &self.state_file {
            let parent = state
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let watched: Vec<&PathBuf> = match &mode {
                Mode::Envoy {
                    clusters_dir,
                    routes_dir,
                    ..
                } => vec![clusters_dir, routes_dir],
                Mode::RateLimit { dir } => vec![dir],
            };
            if let Some(dir) = watched.into_iter().find(|d| same_dir(parent, d)) {
                return Err(SidecarError::Usage(format!(
                    "--state-file {} is inside the watched directory {}: a move into it makes the consumer reload",
                    state.display(),
                    dir.display()
                )));
            }
        }
        let max_bundle_bytes =
            gateway_render::Bounds::from_values(None, None, None, self.max_bundle_bytes.as_deref())
                .map_err(|e| SidecarError::Usage(format!("--max-bundle-bytes: {e}")))?
                .max_bundle_bytes;
        Ok(Config {
            max_bundle_bytes,
            bucket,
            mode,
            interval: Duration::from_secs(self.interval),
            metrics_interval: Duration::from_secs(self.metrics_interval),
            listen: self.listen,
            once: self.once,
            state_file: self.state_file,
            apply_timeout: Duration::from_secs(self.apply_timeout),
        })
    }
}

/// Same directory, resolving symlinks and `..` when the paths exist.
fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, SidecarError> {
        let mut all = vec!["gateway-sidecar"];
        all.extend_from_slice(args);
        Args::try_parse_from(all)
            .map_err(|e| SidecarError::Usage(e.to_string()))?
            .config()
    }

    #[test]
    fn envoy_mode_with_defaults() {
        let c = parse(&[
            "--bucket",
            "b",
            "--clusters-dir",
            "/c",
            "--routes-dir",
            "/r",
        ])
        .expect("valid");
        assert_eq!(c.interval, Duration::from_secs(15));
        assert_eq!(c.metrics_interval, Duration::from_secs(60));
        assert_eq!(c.apply_timeout, Duration::from_secs(60));
        assert_eq!(
            c.mode,
            Mode::Envoy {
                clusters_dir: "/c".into(),
                routes_dir: "/r".into(),
                admin: "http://127.0.0.1:9901".into()
            }
        );
    }

    #[test]
    fn ratelimit_mode_excludes_envoy_dirs() {
        let c = parse(&["--bucket", "b", "--ratelimit-dir", "/rl"]).expect("valid");
        assert_eq!(c.mode, Mode::RateLimit { dir: "/rl".into() });
        let err = parse(&[
            "--bucket",
            "b",
            "--ratelimit-dir",
            "/rl",
            "--clusters-dir",
            "/c",
        ])
        .expect_err("mixed");
        assert!(
            err.to_string().contains("--ratelimit-dir excludes"),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_state_file_in_a_watched_directory() {
        let err = parse(&[
            "--bucket",
            "b",
            "--clusters-dir",
            "/c",
            "--routes-dir",
            "/r",
            "--state-file",
            "/r/state.json",
        ])
        .expect_err("inside /r");
        assert!(err.to_string().contains("watched directory /r"), "{err}");
        assert!(parse(&[
            "--bucket",
            "b",
            "--clusters-dir",
            "/c",
            "--routes-dir",
            "/r",
            "--state-file",
            "/var/state.json"
        ])
        .is_ok());
    }

    #[test]
    fn refuses_one_directory_for_both_and_a_missing_bucket() {
        assert!(parse(&[
            "--bucket",
            "b",
            "--clusters-dir",
            "/x",
            "--routes-dir",
            "/x"
        ])
        .is_err());
        assert!(parse(&["--bucket", "", "--clusters-dir", "/c", "--routes-dir", "/r"]).is_err());
        assert!(parse(&["--bucket", "b", "--clusters-dir", "/c"]).is_err());
    }
}
