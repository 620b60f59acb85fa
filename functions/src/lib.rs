//! The Lambda edges of the register and reconcile functions: the events they accept, their
//! handlers and the runtime's loop. The reconcile run, the operator actions and the serving view
//! are in `gateway_control`; binaries in `src/bin` are thin.

pub mod reconcile;
pub mod register;

pub use gateway_control::to_json;

/// A Lambda binary's `main`: JSON logs, then `run` (settings, clients, the runtime's loop). A bad
/// setting stops the function at init with a sentence naming the function, not a debug dump.
pub async fn lambda_main<E: std::fmt::Display>(
    function: &str,
    run: impl std::future::Future<Output = Result<(), E>>,
) {
    // `--version` / `--help` from a terminal (the runtime passes no arguments).
    match std::env::args().nth(1).as_deref() {
        Some("--version" | "-V") => {
            println!("{function} {}", env!("CARGO_PKG_VERSION"));
            return;
        }
        Some("--help" | "-h") => {
            println!(
                "{function}: the gateway's {function} Lambda function; it runs under the Lambda \
                 runtime (AWS_LAMBDA_RUNTIME_API) and takes its settings from the environment \
                 (docs/design.md#settings). Options: --version, --help"
            );
            return;
        }
        Some(other) => {
            eprintln!("{function}: unexpected argument {other:?}; it takes --version or --help");
            std::process::exit(2);
        }
        None => {}
    }
    gateway_adapters::logs::init_json();
    if let Err(e) = run.await {
        eprintln!("{function}: {e}");
        std::process::exit(1);
    }
}

/// What the runtime reports for an event that failed: the error type `{function}.{kind}` (what
/// logs and alarms group by) and the error's sentence.
pub fn diagnostic(
    function: &str,
    kind: &str,
    error: &impl std::error::Error,
) -> lambda_runtime::Diagnostic {
    lambda_runtime::Diagnostic {
        error_type: format!("{function}.{kind}"),
        // With its causes: the SDK's own display of a failed call names none of them.
        error_message: gateway_adapters::error_chain(error),
    }
}
