//! Layer 3: the pinned Envoy's own verdict on the rendered config. The only process-running
//! code in the validator.

mod bin;
mod process;
mod stderr;
mod version;

pub use bin::{find_executable, lookup_envoy, EnvoyBin, ENVOY_BIN_SETTING, ENVOY_ON_PATH};
pub use version::{check_envoy_version, envoy_release};

use crate::{ConfigView, ValidationError};
use gateway_bootstrap::{BootstrapParams, ValidationBootstrap};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How to run Envoy for validation.
#[derive(Debug, Clone)]
pub struct EnvoyOptions {
    /// The binary (`lookup_envoy`); a bare name is looked up on PATH.
    pub envoy_bin: PathBuf,
    /// The listener and filters to validate against: the production ones. Validate mode binds
    /// nothing and reads no watched files, so production addresses and paths are safe.
    pub params: BootstrapParams,
    /// Kill Envoy after this long. Validating 50k routes takes about 8 s.
    pub timeout: Duration,
}

impl EnvoyOptions {
    pub fn new(envoy_bin: impl Into<PathBuf>) -> Self {
        EnvoyOptions {
            envoy_bin: envoy_bin.into(),
            params: BootstrapParams::production(),
            timeout: Duration::from_secs(300),
        }
    }

    /// `ENVOY_BIN`, else `envoy` on PATH (`lookup_envoy` without a flag or a checkout).
    pub fn from_env() -> Self {
        EnvoyOptions::new(lookup_envoy(None, None).path())
    }
}

/// Envoy accepted the config.
#[derive(Debug, Clone)]
pub struct EnvoyVerdict {
    /// The release that judged it (always the pinned one).
    pub envoy_version: String,
    pub elapsed: Duration,
    /// Whatever Envoy printed at warning level (deprecations and the like).
    pub warnings: String,
}

/// Writes the validation bootstrap (the gateway's listener and filters with the rendered
/// clusters and routes inlined) and runs `envoy --mode validate` on it. Refuses to judge with an
/// Envoy other than the pinned release.
pub fn validate_with_envoy(
    view: &ConfigView<'_>,
    opts: &EnvoyOptions,
) -> Result<EnvoyVerdict, ValidationError> {
    start_envoy_validation(view, opts)?.verdict()
}

/// `envoy --mode validate` started on a config and not yet waited for. Dropping it kills Envoy
/// (a caller that refuses the config on other grounds meanwhile does not wait for a verdict).
pub struct EnvoyValidation {
    // Declared before `dir`: Envoy is stopped before its scratch directory goes.
    running: process::Running,
    envoy_version: String,
    started: Instant,
    timeout: Duration,
    bin: PathBuf,
    dir: tempfile::TempDir,
}

/// [`validate_with_envoy`]'s first half: checks the release, writes the validation bootstrap and
/// starts Envoy on it; [`EnvoyValidation::verdict`] waits for Envoy's answer.
pub fn start_envoy_validation(
    view: &ConfigView<'_>,
    opts: &EnvoyOptions,
) -> Result<EnvoyValidation, ValidationError> {
    let envoy_version = check_envoy_version(&opts.envoy_bin)?;
    let dir = tempfile::Builder::new()
        .prefix("gateway-validate-")
        .tempdir()
        .map_err(|source| ValidationError::Io {
            what: "temp dir for the validation bootstrap".into(),
            source,
        })?;
    let config = dir.path().join("validate.json");
    let io = |what: &str| {
        let what = format!("{what} {}", config.display());
        move |source| ValidationError::Io { what, source }
    };
    let bootstrap = ValidationBootstrap::new(&opts.params, view.clusters, view.route_config)?;
    let file = std::fs::File::create(&config).map_err(io("create"))?;
    let mut writer = BufWriter::new(file);
    bootstrap
        .to_writer(&mut writer)
        .map_err(|e| ValidationError::Io {
            what: format!("write {}", config.display()),
            source: e.into(),
        })?;
    writer.flush().map_err(io("write"))?;
    drop(writer);

    let started = Instant::now();
    let mut cmd = std::process::Command::new(&opts.envoy_bin);
    cmd.args([
        "--mode",
        "validate",
        "--disable-hot-restart",
        "-l",
        "warning",
        "-c",
    ])
    .arg(&config);
    let running = process::start(cmd, dir.path(), opts.timeout)
        .map_err(|e| run_error(e, &opts.envoy_bin, opts.timeout))?;
    Ok(EnvoyValidation {
        running,
        envoy_version,
        started,
        timeout: opts.timeout,
        bin: opts.envoy_bin.clone(),
        dir,
    })
}

impl EnvoyValidation {
    /// Waits for Envoy's verdict (killed after the timeout).
    pub fn verdict(self) -> Result<EnvoyVerdict, ValidationError> {
        let EnvoyValidation {
            running,
            envoy_version,
            started,
            timeout,
            bin,
            dir,
        } = self;
        let run = running.wait().map_err(|e| run_error(e, &bin, timeout))?;
        drop(dir);
        if run.success {
            return Ok(EnvoyVerdict {
                envoy_version,
                elapsed: started.elapsed(),
                warnings: run.stderr,
            });
        }
        let full = format!("{}{}", run.stderr, run.stdout);
        Err(ValidationError::EnvoyRejected {
            exit: run.exit,
            summary: stderr::summary(&full),
            stderr: full,
        })
    }
}

fn run_error(e: process::RunError, bin: &std::path::Path, timeout: Duration) -> ValidationError {
    match e {
        process::RunError::Spawn(source) => ValidationError::EnvoyMissing {
            bin: bin.to_path_buf(),
            pinned: gateway_bootstrap::envoy_version(),
            source,
        },
        process::RunError::Io(source) => ValidationError::Io {
            what: "run envoy --mode validate".into(),
            source,
        },
        process::RunError::Timeout => ValidationError::EnvoyTimeout {
            seconds: timeout.as_secs(),
        },
    }
}
