//! Runs a process with a deadline. Output goes to files, not pipes, so a chatty process can
//! never block on a full pipe while we wait for it. A process started and not waited for is
//! killed when its handle is dropped (a caller that stops early never leaves it running).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Finished {
    pub success: bool,
    /// The exit code, or the signal that ended it.
    pub exit: String,
    pub stdout: String,
    pub stderr: String,
}

pub(crate) enum RunError {
    Spawn(std::io::Error),
    Io(std::io::Error),
    Timeout,
}

/// A started process, its output going to files in its scratch directory.
pub(crate) struct Running {
    child: Child,
    deadline: Instant,
    out_path: PathBuf,
    err_path: PathBuf,
    waited: bool,
}

pub(crate) fn start(
    mut cmd: Command,
    scratch: &Path,
    timeout: Duration,
) -> Result<Running, RunError> {
    let out_path = scratch.join("stdout.txt");
    let err_path = scratch.join("stderr.txt");
    let out = std::fs::File::create(&out_path).map_err(RunError::Io)?;
    let err = std::fs::File::create(&err_path).map_err(RunError::Io)?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(RunError::Spawn)?;
    Ok(Running {
        child,
        deadline: Instant::now() + timeout,
        out_path,
        err_path,
        waited: false,
    })
}

impl Running {
    /// Whether the process has exited; an error once it is past its deadline.
    pub(crate) fn exited(&mut self) -> Result<bool, RunError> {
        if self.child.try_wait().map_err(RunError::Io)?.is_some() {
            return Ok(true);
        }
        if Instant::now() >= self.deadline {
            return Err(RunError::Timeout);
        }
        Ok(false)
    }

    /// Waits until the process exits (killed at the deadline) and reads what it printed.
    pub(crate) fn wait(mut self) -> Result<Finished, RunError> {
        let status = loop {
            if let Some(status) = self.child.try_wait().map_err(RunError::Io)? {
                break status;
            }
            if Instant::now() >= self.deadline {
                return Err(RunError::Timeout);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        self.waited = true;
        let read = |p: &Path| {
            std::fs::read(p)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(RunError::Io)
        };
        let exit = match status.code() {
            Some(code) => code.to_string(),
            None => format!("{status}"),
        };
        Ok(Finished {
            success: status.success(),
            exit,
            stdout: read(&self.out_path)?,
            stderr: read(&self.err_path)?,
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.waited {
            // Best effort: the process may have exited on its own meanwhile.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
