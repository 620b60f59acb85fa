//! Numbered steps as they happen, and a failure that names the step it stopped at.

use crate::cmd::CmdError;

pub struct Progress {
    done: usize,
    total: usize,
    current: String,
}

/// Why the demo stopped: the step, the reason, and what to do about it.
#[derive(Debug)]
pub struct Failure {
    pub step: String,
    pub reason: String,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        Progress {
            done: 0,
            total,
            current: String::new(),
        }
    }

    pub fn step(&mut self, title: impl Into<String>) {
        self.done += 1;
        self.current = title.into();
        println!("[{}/{}] {}", self.done, self.total, self.current);
    }

    /// A result line under the current step.
    pub fn note(&self, line: impl AsRef<str>) {
        for l in line.as_ref().lines() {
            println!("      {l}");
        }
    }

    pub fn fail(&self, reason: impl Into<String>) -> Failure {
        Failure {
            step: format!("[{}/{}] {}", self.done, self.total, self.current),
            reason: reason.into(),
        }
    }
}

impl From<Failure> for CmdError {
    fn from(f: Failure) -> CmdError {
        CmdError::failed(format!(
            "gatewayctl demo failed at {}:\n{}",
            f.step, f.reason
        ))
    }
}
