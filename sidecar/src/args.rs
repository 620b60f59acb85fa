//! The command line (docs/design.md#sidecar); `--bucket` also reads `GATEWAY_BUCKET`.

use crate::error::SidecarError;
use clap::Parser;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "gateway-sidecar",
    version,
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
    /// Rate-limit mode: write ratelimit.yaml here first, then rename it into --ratelimit-dir.
    /// Outside that directory (envoyproxy/ratelimit loads every file of it, a temp file too)
    /// and on its file system (so the rename is atomic); created when missing, with
    /// --ratelimit-dir. Without it the temp file is a dot file inside --ratelimit-dir.
    #[arg(long, requires = "ratelimit_dir")]
    pub staging_dir: Option<PathBuf>,
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
    /// Registry table to report this proxy's delivered bundle to (Envoy mode, not with --once);
    /// without it nothing is reported.
    #[arg(long, env = "GATEWAY_TABLE")]
    pub table: Option<String>,
    /// This proxy's id in its report [default: the ECS task id, else the host name]
    #[arg(long, env = "GATEWAY_PROXY_ID")]
    pub proxy_id: Option<String>,
    /// Seconds between heartbeat reports (a delivery is reported at once).
    #[arg(long, default_value_t = 30)]
    pub report_interval: u64,
    /// Seconds a report counts for; a proxy silent for longer ages out. More than --report-interval.
    #[arg(long, default_value_t = 120)]
    pub report_ttl: u64,
    /// A public key (PEM SubjectPublicKeyInfo, as `gatewayctl public-key` writes it) whose
    /// signatures are trusted; repeatable, for rotation.
    #[arg(long = "trust-key", value_name = "FILE")]
    pub trust_keys: Vec<PathBuf>,
    /// A KMS key (id, ARN or alias) whose public key, fetched at start, is trusted; repeatable,
    /// or comma-separated in GATEWAY_TRUST_KMS_KEYS.
    #[arg(long = "trust-kms-key", env = "GATEWAY_TRUST_KMS_KEYS", value_delimiter = ',', value_name = "KEY")]
    pub trust_kms_keys: Vec<String>,
    /// Also deliver unsigned bundles (local runs, and a gateway that has no signing key yet).
    /// Never lets a wrongly signed bundle through.
    #[arg(long, env = "GATEWAY_ALLOW_UNSIGNED", num_args = 0..=1, default_missing_value = "true", value_parser = strict_bool, value_name = "true|false")]
    pub allow_unsigned: Option<bool>,
    /// The delivery policy lets endpoints on loopback through (local runs and tests), as the
    /// registration's setting of the same name.
    #[arg(long, env = "GATEWAY_ALLOW_LOOPBACK_BACKENDS", num_args = 0..=1, default_missing_value = "true", value_parser = strict_bool, value_name = "true|false")]
    pub allow_loopback_backends: Option<bool>,
    /// The networks backends may be in (CIDRs, comma-separated), as the registration's setting:
    /// the delivery policy refuses an endpoint IP outside them.
    #[arg(long, env = "GATEWAY_BACKEND_CIDRS", value_name = "CIDRS")]
    pub backend_cidrs: Option<String>,
}

/// A boolean flag or setting: `true` or `1`, `false` or `0`; anything else is refused (a
/// mistyped `GATEWAY_ALLOW_UNSIGNED=ture` must not read as either).
fn strict_bool(value: &str) -> Result<bool, String> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" | "" => Ok(false),
        other => Err(format!("{other:?} is not true, false, 1 or 0")),
    }
}

/// Longest `--report-ttl` accepted; readers cap every report at it too.
pub use gateway_adapters::registry::proxies::MAX_REPORT_TTL_SECONDS;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Envoy {
        clusters_dir: PathBuf,
        routes_dir: PathBuf,
        admin: String,
    },
    RateLimit {
        dir: PathBuf,
        /// Where the rules file is written before its rename into `dir`; `None`: inside `dir`.
        staging: Option<PathBuf>,
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
    /// Where this proxy reports what it serves; `None` when it does not.
    pub report: Option<crate::report::ReportConfig>,
    pub trust_keys: Vec<PathBuf>,
    pub trust_kms_keys: Vec<String>,
    pub allow_unsigned: bool,
    /// The delivery policy's settings (docs/design.md#delivery-policy).
    pub allow_loopback_backends: bool,
    pub backend_cidrs: Vec<gateway_render::check::Cidr>,
}

impl Args {
    pub fn config(self) -> Result<Config, SidecarError> {
        let usage = |s: &str| SidecarError::Usage(s.to_string());
        let report = self.report_config(self.ratelimit_dir.is_none())?;
        let bucket = self
            .bucket
            .filter(|b| !b.is_empty())
            .ok_or_else(|| usage("--bucket (or GATEWAY_BUCKET) is required"))?;
        let mode = match (self.ratelimit_dir, self.clusters_dir, self.routes_dir) {
            (Some(dir), None, None) => {
                if let Some(staging) = &self.staging_dir {
                    if same_dir(staging, &dir) || within(staging, &dir) {
                        return Err(SidecarError::Usage(format!(
                            "--staging-dir {} is inside --ratelimit-dir {}: the rate-limit service would read the half-written file",
                            staging.display(),
                            dir.display()
                        )));
                    }
                }
                Mode::RateLimit {
                    dir,
                    staging: self.staging_dir,
                }
            }
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
                Mode::RateLimit { dir, .. } => vec![dir],
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
        let trust_kms_keys: Vec<String> = self
            .trust_kms_keys
            .into_iter()
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .collect();
        let allow_unsigned = self.allow_unsigned.unwrap_or(false);
        if self.trust_keys.is_empty() && trust_kms_keys.is_empty() && !allow_unsigned {
            return Err(usage(
                "no --trust-key or --trust-kms-key: the sidecar delivers only bundles signed by a key it trusts (--allow-unsigned for local runs)",
            ));
        }
        let backend_cidrs = match self.backend_cidrs.as_deref() {
            Some(list) if !list.trim().is_empty() => gateway_render::check::parse_cidrs(list)
                .map_err(|e| SidecarError::Usage(format!("--backend-cidrs (GATEWAY_BACKEND_CIDRS): {e}")))?,
            _ => Vec::new(),
        };
        Ok(Config {
            trust_keys: self.trust_keys,
            trust_kms_keys,
            allow_unsigned,
            allow_loopback_backends: self.allow_loopback_backends.unwrap_or(false),
            backend_cidrs,
            max_bundle_bytes,
            bucket,
            mode,
            interval: Duration::from_secs(self.interval),
            metrics_interval: Duration::from_secs(self.metrics_interval),
            listen: self.listen,
            once: self.once,
            state_file: self.state_file,
            apply_timeout: Duration::from_secs(self.apply_timeout),
            report,
        })
    }

    /// Reporting is on in Envoy mode when a table is named, and off with `--once` (the process
    /// exits right after its one delivery) and in rate-limit mode (not a proxy).
    fn report_config(
        &self,
        envoy_mode: bool,
    ) -> Result<Option<crate::report::ReportConfig>, SidecarError> {
        let usage = |s: String| SidecarError::Usage(s);
        let Some(table) = self.table.as_ref().filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        if self.once || !envoy_mode {
            return Ok(None);
        }
        if self.report_interval == 0 {
            return Err(usage("--report-interval must be at least 1 second".into()));
        }
        // A report that counts for hours would keep a dead proxy in every "live on N of M" and
        // hold up `waitFor: serving` deploys for as long.
        if self.report_ttl > MAX_REPORT_TTL_SECONDS {
            return Err(usage(format!(
                "--report-ttl ({}) is more than {MAX_REPORT_TTL_SECONDS} seconds: a silent proxy would count for that long",
                self.report_ttl
            )));
        }
        if self.report_ttl <= self.report_interval {
            return Err(usage(format!(
                "--report-ttl ({}) must be more than --report-interval ({}): a proxy would age out between its reports",
                self.report_ttl, self.report_interval
            )));
        }
        let proxy_id = match self.proxy_id.as_ref().filter(|p| !p.is_empty()) {
            Some(id) => id.clone(),
            None => crate::report::default_proxy_id().ok_or_else(|| {
                usage("--proxy-id (or GATEWAY_PROXY_ID): no ECS task id or host name to default to".into())
            })?,
        };
        gateway_adapters::registry::proxies::check_proxy_id(&proxy_id)
            .map_err(|why| usage(format!("--proxy-id {proxy_id:?} {why}")))?;
        Ok(Some(crate::report::ReportConfig {
            table: table.clone(),
            proxy_id,
            interval: Duration::from_secs(self.report_interval),
            ttl: Duration::from_secs(self.report_ttl),
        }))
    }
}

/// Same directory, resolving symlinks and `..` when the paths exist.
fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

/// Whether `inner` is below `outer` (by their paths, resolved where they exist).
fn within(inner: &Path, outer: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(inner).starts_with(canon(outer))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `args` with a key to trust (read only when the sidecar starts, not here).
    fn parse(args: &[&str]) -> Result<Config, SidecarError> {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--trust-key", "/keys/bundles.pem"]);
        parse_as_given(&all)
    }

    fn parse_as_given(args: &[&str]) -> Result<Config, SidecarError> {
        let mut all = vec!["gateway-sidecar"];
        all.extend_from_slice(args);
        Args::try_parse_from(all)
            .map_err(|e| SidecarError::Usage(e.to_string()))?
            .config()
    }

    #[test]
    fn a_sidecar_trusting_no_key_refuses_to_start_unless_unsigned_bundles_are_allowed() {
        let dirs = ["--bucket", "b", "--clusters-dir", "/c", "--routes-dir", "/r"];
        match parse_as_given(&dirs) {
            Err(SidecarError::Usage(m)) => {
                assert!(m.starts_with("no --trust-key or --trust-kms-key"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        let mut lenient = dirs.to_vec();
        lenient.push("--allow-unsigned");
        let c = parse_as_given(&lenient).expect("allowed");
        assert!(c.allow_unsigned && c.trust_keys.is_empty());
        let mut kms = dirs.to_vec();
        kms.extend(["--trust-kms-key", "arn:aws:kms:r:1:key/a, alias/b"]);
        let c = parse_as_given(&kms).expect("kms keys");
        assert_eq!(c.trust_kms_keys, ["arn:aws:kms:r:1:key/a", "alias/b"]);
        assert!(!c.allow_unsigned);
        // Only the documented values: a typo is refused, not read as either.
        for (value, expected) in [("true", Some(true)), ("1", Some(true)), ("false", Some(false)), ("0", Some(false)), ("yes", None), ("ture", None)] {
            let mut with = dirs.to_vec();
            let flag = format!("--allow-unsigned={value}");
            with.push(&flag);
            match (parse_as_given(&with), expected) {
                (Ok(c), Some(e)) => assert_eq!(c.allow_unsigned, e, "{value}"),
                (Err(SidecarError::Usage(m)), Some(false)) => {
                    assert!(m.starts_with("no --trust-key"), "{value}: {m}")
                }
                (Err(SidecarError::Usage(m)), None) => {
                    assert!(m.contains("is not true, false, 1 or 0"), "{value}: {m}")
                }
                (other, e) => panic!("{value}: expected {e:?}, got {other:?}"),
            }
        }
    }

    /// Envoy mode with its two directories, and `extra` after them.
    fn parse_envoy_mode(extra: &[&str]) -> Result<Config, SidecarError> {
        let mut all = vec!["--bucket", "b", "--clusters-dir", "/c", "--routes-dir", "/r"];
        all.extend_from_slice(extra);
        parse(&all)
    }

    #[test]
    fn envoy_mode_with_defaults() {
        let c = parse_envoy_mode(&[]).expect("valid");
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
    fn reporting_needs_a_table_and_envoy_mode() {
        let with = parse_envoy_mode;
        let c = with(&["--table", "t", "--proxy-id", "task-1"]).expect("valid");
        let report = c.report.expect("reporting on");
        assert_eq!(report.proxy_id, "task-1");
        assert_eq!(report.interval, Duration::from_secs(30));
        assert_eq!(report.ttl, Duration::from_secs(120));
        assert!(with(&["--table", "t", "--proxy-id", "p", "--once"]).expect("valid").report.is_none());
        let rl = parse(&["--bucket", "b", "--ratelimit-dir", "/rl", "--table", "t"]).expect("valid");
        assert!(rl.report.is_none());
        let err = with(&["--table", "t", "--proxy-id", "p", "--report-ttl", "30"]).expect_err("ttl");
        assert!(err.to_string().contains("--report-ttl"), "{err}");
        let err = with(&["--table", "t", "--proxy-id", "p", "--report-ttl", "86400"]).expect_err("ttl");
        assert!(err.to_string().contains("more than 3600"), "{err}");
        let err = with(&["--table", "t", "--proxy-id", "a b"]).expect_err("id");
        assert!(err.to_string().contains("--proxy-id"), "{err}");
    }

    #[test]
    fn a_staging_dir_goes_beside_the_ratelimit_dir() {
        let c = parse(&[
            "--bucket",
            "b",
            "--ratelimit-dir",
            "/data/ratelimit/config",
            "--staging-dir",
            "/data/ratelimit/staging",
        ])
        .expect("valid");
        assert_eq!(
            c.mode,
            Mode::RateLimit {
                dir: "/data/ratelimit/config".into(),
                staging: Some("/data/ratelimit/staging".into())
            }
        );
        for inside in ["/data/ratelimit/config", "/data/ratelimit/config/.staging"] {
            let err = parse(&[
                "--bucket",
                "b",
                "--ratelimit-dir",
                "/data/ratelimit/config",
                "--staging-dir",
                inside,
            ])
            .expect_err("inside the watched directory");
            assert!(err.to_string().contains("is inside --ratelimit-dir"), "{err}");
        }
        let err = parse(&[
            "--bucket",
            "b",
            "--clusters-dir",
            "/c",
            "--routes-dir",
            "/r",
            "--staging-dir",
            "/s",
        ])
        .expect_err("rate-limit mode only");
        assert!(err.to_string().contains("--ratelimit-dir"), "{err}");
    }

    #[test]
    fn ratelimit_mode_excludes_envoy_dirs() {
        let c = parse(&["--bucket", "b", "--ratelimit-dir", "/rl"]).expect("valid");
        assert_eq!(
            c.mode,
            Mode::RateLimit {
                dir: "/rl".into(),
                staging: None
            }
        );
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
        let err = parse_envoy_mode(&["--state-file", "/r/state.json"]).expect_err("inside /r");
        assert!(err.to_string().contains("watched directory /r"), "{err}");
        assert!(parse_envoy_mode(&["--state-file", "/var/state.json"]).is_ok());
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
