//! One module per subcommand: `Args` (clap derive) and `run(Args) -> CmdResult`. Commands print
//! results on stdout and return reasons in a `CmdError`, which `main` prints on stderr.
//! A command that needs async I/O builds its own tokio runtime inside `run`.
//!
//! Flags several commands take are declared once in `common`. Helpers a group of commands
//! shares sit in a module of their own: `live` (the commands on the live config: clients,
//! hints, output), `registry` (the registry commands: the table opened as the operator),
//! `tenancy` (grants and owners) and `terminal` (stored text escaped for printing). `backend` is
//! a group of subcommands in a folder of its own.

pub mod adopt;
pub mod aws_hint;
pub mod backend;
pub mod bootstrap;
pub mod check;
pub mod common;
pub mod demo;
pub mod desired;
pub mod deregister;
pub mod diff;
pub mod dump;
pub mod grant;
pub mod grants;
pub mod history;
pub mod init;
pub mod kill_switch;
pub mod list;
pub mod live;
pub mod preview;
pub mod public_key;
pub mod reconcile;
pub mod register;
pub mod registry;
pub mod render;
pub mod restore;
pub mod resume;
pub mod revoke;
pub mod rollout;
pub mod seed;
pub mod status;
pub mod sync;
pub mod tenancy;
pub mod terminal;
pub mod time;
pub mod top;
pub mod validate;

/// Why a command did not succeed, and the exit code that says so.
#[derive(Debug)]
pub struct CmdError {
    pub code: u8,
    pub message: String,
}

impl CmdError {
    /// Exit 1: the input was rejected or the operation failed.
    pub fn failed(message: impl Into<String>) -> Self {
        CmdError {
            code: 1,
            message: message.into(),
        }
    }

    /// Exit 2: the command line itself is wrong.
    pub fn usage(message: impl Into<String>) -> Self {
        CmdError {
            code: 2,
            message: message.into(),
        }
    }
}

impl From<anyhow::Error> for CmdError {
    fn from(err: anyhow::Error) -> Self {
        CmdError::failed(format!("{err:#}"))
    }
}

pub type CmdResult = Result<(), CmdError>;

/// Runs an async command body on a runtime of its own (commands are one-shot).
pub fn block_on<F: std::future::Future<Output = CmdResult>>(future: F) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CmdError::failed(format!("starting the async runtime: {e}")))?;
    runtime.block_on(future)
}
