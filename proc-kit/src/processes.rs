//! Long-running children (`gatewayctl demo` starts moto's server, the sidecars, Envoy), each
//! owned by a guard that stops it: explicitly in reverse start order on every way out, by
//! SIGKILL if a guard is dropped without that, and by the kernel (parent-death signal) if the
//! process that started them is killed.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::process::{Child, ChildStdin, Command};

/// How long a child gets to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

pub struct Managed {
    name: &'static str,
    child: Child,
    /// moto's server exits when this pipe closes (`--exit-with-stdin`).
    stdin: Option<ChildStdin>,
    log: PathBuf,
    exited: Option<ExitStatus>,
}

impl Managed {
    /// Spawns `cmd` with stdout and stderr appended to `log`, in its own process group (so the
    /// terminal's Ctrl-C reaches only the demo, which then stops its children in order).
    pub fn spawn(
        name: &'static str,
        mut cmd: Command,
        log: &Path,
        keep_stdin: bool,
    ) -> Result<Managed, String> {
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .map_err(|e| format!("opening {}: {e}", log.display()))
        };
        cmd.stdout(open()?)
            .stderr(open()?)
            .stdin(if keep_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true)
            .process_group(0);
        die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("could not start {name}: {e}"))?;
        let stdin = child.stdin.take();
        Ok(Managed {
            name,
            child,
            stdin,
            log: log.to_path_buf(),
            exited: None,
        })
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The exit status if the process has ended (it is reaped here).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    /// The last `lines` lines of the process's log, for a failure message.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }

    /// SIGTERM, then SIGKILL after the grace period; returns once the process is reaped.
    pub async fn stop(&mut self) {
        drop(self.stdin.take());
        if self.exited().is_some() {
            return;
        }
        if let Some(pid) = self.child.id() {
            terminate(pid);
        }
        match tokio::time::timeout(STOP_GRACE, self.child.wait()).await {
            Ok(Ok(status)) => self.exited = Some(status),
            _ => {
                let _ = self.child.kill().await;
            }
        }
    }
}

/// Every child started, in start order.
#[derive(Default)]
pub struct Processes {
    children: Vec<Managed>,
}

impl Processes {
    pub fn add(&mut self, child: Managed) {
        self.children.push(child);
    }

    /// The first child that is no longer running, with a reason naming it and its log's tail.
    pub fn check_alive(&mut self) -> Result<(), String> {
        for child in &mut self.children {
            if let Some(status) = child.exited() {
                return Err(format!(
                    "{} exited unexpectedly ({status}); the last lines of {}:\n{}",
                    child.name(),
                    child.log().display(),
                    child.log_tail(20)
                ));
            }
        }
        Ok(())
    }

    /// Stops every child, the last started first (Envoy before the sidecar before moto's server).
    pub async fn stop_all(&mut self) -> Vec<&'static str> {
        let mut stopped = Vec::new();
        while let Some(mut child) = self.children.pop() {
            child.stop().await;
            stopped.push(child.name());
        }
        stopped
    }
}

pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    all[start..]
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn terminate(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) with a pid this process spawned and has not reaped yet.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// On Linux the kernel sends SIGTERM to the child when the demo dies, even by SIGKILL, so no
/// Envoy or sidecar outlives it. The signal follows the spawning thread: children are spawned
/// from the thread that drives the demo's main future, which lives as long as the process.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    // SAFETY: getpid before the fork; prctl, getppid and the comparison are async-signal-safe.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() != parent {
                return Err(std::io::Error::other(
                    "the demo exited while starting a child",
                ));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}
