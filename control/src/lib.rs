//! The control plane's library: the reconcile run, the operator actions on the live config and
//! the serving view, over the AWS adapters in `gateway_adapters` (DynamoDB registry, S3 config
//! store, CloudWatch metrics). The Lambda edges (events, handlers, the runtime) are in
//! `gateway_functions`; `gatewayctl` uses this crate directly.

pub mod operator;
pub mod reconcile;
pub mod serving;

/// A value whose `Serialize` is derived (string keys, no custom failures) as JSON. With
/// serde_json's default maps its keys come out sorted, as every JSON document of the functions'
/// answers and of gatewayctl's `--json` has always been written.
pub fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Value {
    match serde_json::to_value(value) {
        Ok(v) => v,
        // Unreachable for the plain data this is used for; a document that says so beats a panic.
        Err(e) => serde_json::json!({ "error": format!("not serialisable: {e}") }),
    }
}
