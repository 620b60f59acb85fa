//! Runs a process with a deadline. Output goes to files, not pipes, so a chatty process can
//! never block on a full pipe while we wait for it.

use std::path::Path;
use std::process::{Command, Stdio};
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

pub(crate) fn run(
    mut cmd: Command,
    scratch: &Path,
    timeout: Duration,
) -> Result<Finished, RunError> {
    let out_path = scratch.join("stdout.txt");
    let err_path = scratch.join("stderr.txt");
    let out = std::fs::File::create(&out_path).map_err(RunError::Io)?;
    let err = std::fs::File::create(&err_path).map_err(RunError::Io)?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(RunError::Spawn)?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(RunError::Io)? {
            break status;
        }
        if Instant::now() >= deadline {
            // Best effort: the process may have exited between the two calls.
            let _ = child.kill();
            let _ = child.wait();
            return Err(RunError::Timeout);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
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
        stdout: read(&out_path)?,
        stderr: read(&err_path)?,
    })
}
