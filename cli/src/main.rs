//! `gatewayctl`: the operator and developer command line. Each subcommand lives in its own
//! module under `cmd/`; this file only parses and dispatches.
//!
//! Exit codes: 0 success, 1 rejected or failed (reasons on stderr), 2 usage error (clap's own
//! exit code for bad arguments, and `CmdError::usage` for arguments clap cannot judge).

mod cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "gatewayctl",
    version,
    about = "Self-service routes on the shared Envoy gateway: check, render and validate entries, print the bootstrap.",
    long_about = None,
    propagate_version = true
)]
struct Cli {
    /// On a failure, print the whole cause chain too (an AWS failure is otherwise summarised:
    /// what was tried, what it means, the next step)
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Check(cmd::check::Args),
    Render(cmd::render::Args),
    Validate(cmd::validate::Args),
    Bootstrap(cmd::bootstrap::Args),
    Init(cmd::init::Args),
    Register(cmd::register::Args),
    Deregister(cmd::deregister::Args),
    Rollout(cmd::rollout::Args),
    Sync(cmd::sync::Args),
    Dump(cmd::dump::Args),
    List(cmd::list::Args),
    Grant(cmd::grant::Args),
    /// Stop letting an AWS account register, change and delete TEAM's entries (its grant goes)
    Revoke(cmd::grant::Args),
    Grants(cmd::grants::Args),
    Adopt(cmd::adopt::Args),
    Backend(cmd::backend::Args),
    Seed(cmd::seed::Args),
    Reconcile(cmd::reconcile::Args),
    Status(cmd::status::Args),
    Preview(cmd::preview::Args),
    History(cmd::history::Args),
    PublicKey(cmd::public_key::Args),
    Diff(cmd::diff::Args),
    KillSwitch(cmd::kill_switch::Args),
    Restore(cmd::restore::Args),
    Resume(cmd::resume::Args),
    Demo(cmd::demo::Args),
    Top(cmd::top::Args),
    Completions(Completions),
}

/// Print a shell completion script (`gatewayctl completions bash > /etc/bash_completion.d/gatewayctl`)
#[derive(clap::Args, Debug)]
struct Completions {
    /// bash, zsh, fish, elvish or powershell
    #[arg(value_name = "SHELL")]
    shell: clap_complete::Shell,
}

/// Output cut short by its reader (`gatewayctl status | head`) ends the command quietly, with
/// the status a process killed by SIGPIPE has (141), instead of a panic. SIGPIPE itself stays
/// ignored: the validator writes Envoy's config through a named pipe and must see EPIPE there.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info)
    }));
}

fn completions(shell: clap_complete::Shell) -> cmd::CmdResult {
    use std::io::Write;
    let mut script = Vec::new();
    let mut command = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut command, "gatewayctl", &mut script);
    match std::io::stdout().write_all(&script) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
        Err(e) => Err(cmd::CmdError::failed(format!("writing the completion script: {e}"))),
    }
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = Cli::parse();
    let cli_verbose = cli.verbose;
    let result = match cli.command {
        Command::Check(args) => cmd::check::run(args),
        Command::Render(args) => cmd::render::run(args),
        Command::Validate(args) => cmd::validate::run(args),
        Command::Bootstrap(args) => cmd::bootstrap::run(args),
        Command::Init(args) => cmd::init::run(args),
        Command::Register(args) => cmd::register::run(args),
        Command::Deregister(args) => cmd::deregister::run(args),
        Command::Rollout(args) => cmd::rollout::run(args),
        Command::Sync(args) => cmd::sync::run(args),
        Command::Dump(args) => cmd::dump::run(args),
        Command::List(args) => cmd::list::run(args),
        Command::Grant(args) => cmd::grant::run(args),
        Command::Revoke(args) => cmd::revoke::run(args),
        Command::Grants(args) => cmd::grants::run(args),
        Command::Adopt(args) => cmd::adopt::run(args),
        Command::Backend(args) => cmd::backend::run(args),
        Command::Seed(args) => cmd::seed::run(args),
        Command::Reconcile(args) => cmd::reconcile::run(args),
        Command::Status(args) => cmd::status::run(args),
        Command::Preview(args) => cmd::preview::run(args),
        Command::History(args) => cmd::history::run(args),
        Command::PublicKey(args) => cmd::public_key::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::KillSwitch(args) => cmd::kill_switch::run(args),
        Command::Restore(args) => cmd::restore::run(args),
        Command::Resume(args) => cmd::resume::run(args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Top(args) => cmd::top::run(args),
        Command::Completions(args) => completions(args.shell),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // Errors quote stored text (rows, metadata, Envoy's answers): escaped, lines kept.
            let message = cmd::aws_hint::explain(&err.message, cli_verbose);
            eprintln!("{}", cmd::terminal::lines(&message));
            ExitCode::from(err.code)
        }
    }
}
