//! Layer 3: the pinned Envoy's own verdict on the rendered config. The only process-running
//! code in the validator.

mod bin;
mod pipe;
mod process;
mod stderr;
mod version;

pub use bin::{find_executable, lookup_envoy, EnvoyBin, ENVOY_BIN_SETTING, ENVOY_ON_PATH};
use version::judge_release;
pub use version::{check_envoy_version, envoy_release};

use crate::{ConfigView, ValidationError};
use gateway_bootstrap::{BootstrapParams, ValidationBootstrap};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `envoy` arguments for layer 3, before the bootstrap's path.
pub const VALIDATE_ARGS: [&str; 6] = [
    "--mode",
    "validate",
    "--disable-hot-restart",
    "-l",
    "warning",
    "-c",
];

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
    /// `envoy --version`, run beside the validation; judged before its verdict.
    version: process::Running,
    started: Instant,
    timeout: Duration,
    bin: PathBuf,
    dir: tempfile::TempDir,
}

/// [`validate_with_envoy`]'s first half: starts Envoy on the validation bootstrap's pipe, writes
/// the bootstrap into it as Envoy reads it, then starts `envoy --version`;
/// [`EnvoyValidation::verdict`] judges the release, then waits for Envoy's answer.
///
/// Envoy reads the bootstrap from a named pipe: its own start-up (about 0.1 s) overlaps the
/// bootstrap's serialisation (into memory) instead of following a file written whole. The
/// release check runs while Envoy parses instead of before it starts (it costs a process start of
/// its own): no verdict is taken from an Envoy whose `--version` is not the pinned release, and
/// such a validation is killed unread.
pub fn start_envoy_validation(
    view: &ConfigView<'_>,
    opts: &EnvoyOptions,
) -> Result<EnvoyValidation, ValidationError> {
    let (bin, timeout) = (&opts.envoy_bin, opts.timeout);
    let dir = tempfile::Builder::new()
        .prefix("gateway-validate-")
        .tempdir()
        .map_err(|source| ValidationError::Io {
            what: "temp dir for the validation bootstrap".into(),
            source,
        })?;
    let bootstrap = ValidationBootstrap::new(&opts.params, view.clusters, view.route_config)?
        .with_jwt(view.jwt);
    let config = dir.path().join("validate.json");
    pipe::make(&config).map_err(|source| ValidationError::Io {
        what: format!("mkfifo {}", config.display()),
        source,
    })?;
    let started = Instant::now();
    let mut cmd = std::process::Command::new(bin);
    cmd.args(VALIDATE_ARGS).arg(&config);
    let mut running =
        process::start(cmd, dir.path(), timeout).map_err(|e| run_error(e, bin, timeout))?;
    // Serialised while Envoy starts: the pipe cannot be opened for writing before Envoy opens
    // it for reading, which it does once its own start-up is done.
    let mut bytes = Vec::with_capacity(1 << 20);
    bootstrap
        .to_writer(&mut bytes)
        .map_err(|e| ValidationError::Io {
            what: format!("serialise {}", config.display()),
            source: e.into(),
        })?;
    // `None`: Envoy exited without opening it; its verdict says why.
    if let Some(mut file) =
        pipe::open_writer(&config, &mut running).map_err(|e| run_error(e, bin, timeout))?
    {
        match file.write_all(&bytes) {
            Ok(()) => {}
            // Envoy stopped reading (it exited); its verdict says why.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(source) => {
                return Err(ValidationError::Io {
                    what: format!("write {}", config.display()),
                    source,
                })
            }
        }
        // Closing the pipe is Envoy's end of file.
        drop(file);
    }
    drop(bytes);
    let version_dir = dir.path().join("version");
    std::fs::create_dir(&version_dir).map_err(|source| ValidationError::Io {
        what: format!("create {}", version_dir.display()),
        source,
    })?;
    let mut version = std::process::Command::new(bin);
    version.arg("--version");
    let version =
        process::start(version, &version_dir, timeout).map_err(|e| run_error(e, bin, timeout))?;
    Ok(EnvoyValidation {
        running,
        version,
        started,
        timeout,
        bin: bin.clone(),
        dir,
    })
}

impl EnvoyValidation {
    /// Waits for Envoy's verdict (killed after the timeout).
    pub fn verdict(self) -> Result<EnvoyVerdict, ValidationError> {
        let EnvoyValidation {
            running,
            version,
            started,
            timeout,
            bin,
            dir,
        } = self;
        let printed = version.wait().map_err(|e| run_error(e, &bin, timeout))?;
        // On a refusal here `running` is dropped: the validation is killed, its verdict unread.
        let envoy_version = judge_release(&bin, &printed.stdout)?;
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
