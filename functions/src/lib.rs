//! The register and reconcile functions and the operator actions on the live config, over the
//! AWS adapters in `gateway_adapters` (DynamoDB registry, S3 config store, CloudWatch metrics).
//! Binaries in `src/bin` are thin; everything else is here.

pub mod operator;
pub mod reconcile;
pub mod register;
pub mod serving;

/// A Lambda binary's `main`: JSON logs, then `run` (settings, clients, the runtime's loop). A bad
/// setting stops the function at init with a sentence naming the function, not a debug dump.
pub async fn lambda_main<E: std::fmt::Display>(
    function: &str,
    run: impl std::future::Future<Output = Result<(), E>>,
) {
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

/// A value whose `Serialize` is derived (string keys, no custom failures) as JSON. With
/// serde_json's default maps its keys come out sorted, as every JSON document of this crate's
/// answers and of gatewayctl's `--json` has always been written.
pub fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Value {
    match serde_json::to_value(value) {
        Ok(v) => v,
        // Unreachable for the plain data this is used for; a document that says so beats a panic.
        Err(e) => serde_json::json!({ "error": format!("not serialisable: {e}") }),
    }
}
