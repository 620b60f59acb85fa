//! The demo's settings, resolved and checked from the command line before anything starts:
//! addresses, the repository, the run directory and the binaries.

use super::Args;
use crate::cmd::CmdError;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

pub const TABLE: &str = "gateway-demo";
pub const BUCKET: &str = "gateway-demo-bundles";

#[derive(Debug, Clone)]
pub struct Plan {
    pub check: bool,
    pub repo: PathBuf,
    pub run_dir: PathBuf,
    pub domain: String,
    pub listen: SocketAddr,
    pub admin: SocketAddr,
    pub sidecar_listen: SocketAddr,
    pub moto: SocketAddr,
    /// Where Envoy's global limiter would call the rate-limit service. Nothing listens there:
    /// the demo does not run that service, and the limiter fails open.
    pub ratelimit: SocketAddr,
    pub ratelimit_sidecar_listen: SocketAddr,
    pub backend_ports: Option<Vec<u16>>,
    /// `--envoy-bin`/`ENVOY_BIN`; None means the repository's `.venv/bin/envoy`.
    pub envoy_bin: Option<PathBuf>,
    pub sidecar_bin: PathBuf,
    pub ratelimit_bin: PathBuf,
    pub gatewayctl: PathBuf,
    pub wait: std::time::Duration,
}

/// Where the demo writes inside its run directory. Only these are removed at start, so a
/// mistaken `--run-dir` never loses anything else.
pub struct RunFiles {
    pub clusters_dir: PathBuf,
    pub routes_dir: PathBuf,
    pub bootstrap: PathBuf,
    pub sidecar_state: PathBuf,
    /// The rate-limit sidecar delivers `ratelimit.yaml` here; gateway-ratelimit serves it.
    pub ratelimit_dir: PathBuf,
    /// Where the rate-limit sidecar writes before renaming into `ratelimit_dir` (as in
    /// production: the service reads every file of its directory).
    pub ratelimit_staging_dir: PathBuf,
    pub ratelimit_sidecar_state: PathBuf,
    pub envoy_log: PathBuf,
    pub sidecar_log: PathBuf,
    pub ratelimit_sidecar_log: PathBuf,
    pub ratelimit_log: PathBuf,
    pub moto_log: PathBuf,
    /// The bundle signing key's public key, which both sidecars trust.
    pub trust_key: PathBuf,
}

impl Plan {
    pub fn resolve(args: Args) -> Result<Plan, CmdError> {
        let repo = match args.repo {
            Some(repo) => repo,
            None => default_repo(),
        };
        let repo = std::fs::canonicalize(&repo).map_err(|e| {
            CmdError::usage(format!(
                "--repo {}: {e}; pass the repository checkout",
                repo.display()
            ))
        })?;
        if !repo.join("scripts/moto_server.py").is_file() || !repo.join("examples/demo").is_dir() {
            return Err(CmdError::usage(format!(
                "{} is not the gateway repository (no scripts/moto_server.py or examples/demo): pass --repo DIR",
                repo.display()
            )));
        }
        let run_dir = args.run_dir.unwrap_or_else(|| repo.join(".gateway/demo"));
        let run_dir = absolute(&run_dir)?;
        let exe = std::env::current_exe()
            .map_err(|e| CmdError::failed(format!("locating gatewayctl itself: {e}")))?;
        let beside_gatewayctl = |name: &str| {
            exe.parent()
                .map(|d| d.join(name))
                .unwrap_or_else(|| PathBuf::from(name))
        };
        let sidecar_bin = args
            .sidecar_bin
            .unwrap_or_else(|| beside_gatewayctl("gateway-sidecar"));
        let ratelimit_bin = args
            .ratelimit_bin
            .unwrap_or_else(|| beside_gatewayctl("gateway-ratelimit"));
        let domain = args.domain.trim().to_string();
        if domain.is_empty() {
            return Err(CmdError::usage("--domain (GATEWAY_DOMAIN) is empty"));
        }
        if !args.admin.ip().is_loopback() {
            return Err(CmdError::usage(format!(
                "--admin {}: Envoy's admin endpoint must be on loopback",
                args.admin
            )));
        }
        let moto = SocketAddr::from((Ipv4Addr::LOCALHOST, args.moto_port));
        let plan = Plan {
            check: args.check,
            repo,
            run_dir,
            domain,
            listen: args.listen,
            admin: args.admin,
            sidecar_listen: args.sidecar_listen,
            moto,
            ratelimit: args.ratelimit_listen,
            ratelimit_sidecar_listen: args.ratelimit_sidecar_listen,
            backend_ports: args.backend_ports,
            envoy_bin: args.envoy_bin.filter(|b| !b.as_os_str().is_empty()),
            sidecar_bin,
            ratelimit_bin,
            gatewayctl: exe,
            wait: std::time::Duration::from_secs(args.wait),
        };
        plan.check_distinct_ports()?;
        Ok(plan)
    }

    /// The addresses the demo binds, each with the flag that moves it.
    pub fn fixed_addresses(&self) -> Vec<(SocketAddr, &'static str, &'static str)> {
        vec![
            (self.listen, "Envoy's listener", "--listen"),
            (self.admin, "Envoy's admin endpoint", "--admin"),
            (
                self.sidecar_listen,
                "the sidecar's health server",
                "--sidecar-listen",
            ),
            (self.moto, "moto's server", "--moto-port"),
            (
                self.ratelimit,
                "the rate-limit service",
                "--ratelimit-listen",
            ),
            (
                self.ratelimit_sidecar_listen,
                "the rate-limit sidecar's health server",
                "--ratelimit-sidecar-listen",
            ),
        ]
    }

    fn check_distinct_ports(&self) -> Result<(), CmdError> {
        let mut seen: Vec<(u16, &str)> = Vec::new();
        let backends = self
            .backend_ports
            .iter()
            .flatten()
            .map(|p| (*p, "--backend-ports"));
        let fixed = self.fixed_addresses();
        for (port, flag) in fixed.iter().map(|(a, _, f)| (a.port(), *f)).chain(backends) {
            if let Some((_, other)) = seen.iter().find(|(p, _)| *p == port) {
                return Err(CmdError::usage(format!(
                    "port {port} is given to both {other} and {flag}; each needs its own"
                )));
            }
            seen.push((port, flag));
        }
        Ok(())
    }

    pub fn files(&self) -> RunFiles {
        let d = &self.run_dir;
        RunFiles {
            clusters_dir: d.join("cds"),
            routes_dir: d.join("rds"),
            bootstrap: d.join("envoy.json"),
            sidecar_state: d.join("sidecar-state.json"),
            ratelimit_dir: d.join("ratelimit"),
            ratelimit_staging_dir: d.join("ratelimit-staging"),
            ratelimit_sidecar_state: d.join("ratelimit-sidecar-state.json"),
            envoy_log: d.join("envoy.log"),
            sidecar_log: d.join("sidecar.log"),
            ratelimit_sidecar_log: d.join("ratelimit-sidecar.log"),
            ratelimit_log: d.join("ratelimit.log"),
            moto_log: d.join("moto.log"),
            trust_key: d.join("bundle-signing-key.pem"),
        }
    }

    pub fn python(&self) -> PathBuf {
        gateway_proc_kit::venv_python(&self.repo)
    }

    pub fn default_envoy(&self) -> PathBuf {
        gateway_proc_kit::venv_envoy(&self.repo)
    }

    /// `path` relative to the repository when inside it (shorter to read and to paste there).
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.repo)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.display().to_string())
    }
}

impl RunFiles {
    /// Removes what a previous run left and creates the watched directories.
    pub fn prepare(&self, run_dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(run_dir)
            .map_err(|e| format!("creating {}: {e}", run_dir.display()))?;
        for dir in [
            &self.clusters_dir,
            &self.routes_dir,
            &self.ratelimit_dir,
            &self.ratelimit_staging_dir,
        ] {
            if dir.exists() {
                std::fs::remove_dir_all(dir)
                    .map_err(|e| format!("removing {}: {e}", dir.display()))?;
            }
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        for file in [
            &self.trust_key,
            &self.bootstrap,
            &self.sidecar_state,
            &self.ratelimit_sidecar_state,
            &self.envoy_log,
            &self.sidecar_log,
            &self.ratelimit_sidecar_log,
            &self.ratelimit_log,
            &self.moto_log,
        ] {
            match std::fs::remove_file(file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("removing {}: {e}", file.display())),
            }
        }
        Ok(())
    }
}

/// The checkout this binary was built from.
fn default_repo() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

fn absolute(path: &Path) -> Result<PathBuf, CmdError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let cwd = std::env::current_dir()
        .map_err(|e| CmdError::failed(format!("reading the current directory: {e}")))?;
    Ok(cwd.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn resolve(argv: &[&str]) -> Result<Plan, CmdError> {
        let cli = Cli::try_parse_from(std::iter::once("demo").chain(argv.iter().copied()))
            .map_err(|e| CmdError::usage(e.to_string()))?;
        Plan::resolve(cli.args)
    }

    #[test]
    fn defaults_are_the_documented_addresses_in_this_repository() {
        let plan = resolve(&["--domain", "api.example.com"]).expect("defaults resolve");
        assert_eq!(plan.listen.to_string(), "127.0.0.1:10000");
        assert_eq!(plan.admin.to_string(), "127.0.0.1:9901");
        assert_eq!(plan.run_dir, plan.repo.join(".gateway/demo"));
        assert!(plan.repo.join("examples/demo").is_dir());
        assert!(!plan.check);
    }

    #[test]
    fn one_port_for_two_things_is_a_usage_error_naming_both_flags() {
        let err = resolve(&["--listen", "127.0.0.1:9901"]).expect_err("same as --admin");
        assert_eq!(err.code, 2);
        assert!(
            err.message.contains("--listen") && err.message.contains("--admin"),
            "{}",
            err.message
        );
        let err = resolve(&["--backend-ports", "4566,18082"]).expect_err("moto's port");
        assert!(err.message.contains("--backend-ports"), "{}", err.message);
    }

    #[test]
    fn a_non_loopback_admin_is_refused() {
        let err = resolve(&["--admin", "0.0.0.0:9901"]).expect_err("admin on all interfaces");
        assert_eq!(err.code, 2);
        assert!(err.message.contains("loopback"), "{}", err.message);
    }

    #[test]
    fn prepare_removes_only_the_demo_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let plan = resolve(&["--run-dir", &dir.path().display().to_string()]).expect("plan");
        let files = plan.files();
        std::fs::create_dir_all(&files.clusters_dir).expect("cds");
        std::fs::write(files.clusters_dir.join("clusters.json"), "{}").expect("stale file");
        std::fs::write(&files.envoy_log, "old log").expect("old log");
        std::fs::write(dir.path().join("keep.txt"), "mine").expect("other file");
        files.prepare(&plan.run_dir).expect("prepare");
        assert!(files.clusters_dir.is_dir() && files.routes_dir.is_dir());
        assert!(!files.clusters_dir.join("clusters.json").exists());
        assert!(!files.envoy_log.exists());
        assert!(dir.path().join("keep.txt").exists(), "other files stay");
    }
}
