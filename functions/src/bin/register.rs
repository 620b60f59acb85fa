//! The register Lambda: clients built once from the environment, then every event goes to the
//! library handler (direct invocation, CloudFormation custom resource, or SNS-wrapped).

// The handler's future nests the SDK's and reqwest's futures deeper than rustc's default
// layout query depth.
#![recursion_limit = "256"]

use gateway_functions::registry::DynamoRegistry;
use gateway_functions::{aws, register};
use gateway_render::check::{allow_loopback_from_env_value, Policy};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let table = required("GATEWAY_TABLE", "the registry table's name")?;
    let domain = required(
        "GATEWAY_DOMAIN",
        "the gateway's base domain, e.g. api.example.com",
    )?;
    let allow_loopback = allow_loopback_from_env_value(
        std::env::var("GATEWAY_ALLOW_LOOPBACK_BACKENDS")
            .ok()
            .as_deref(),
    );
    let conf = aws::sdk_config().await;
    let registry = DynamoRegistry::new(aws::dynamodb_client(&conf), table, domain.clone())
        .with_policy(Policy::new(domain, allow_loopback));
    let http = reqwest::Client::new();
    let (registry, http) = (&registry, &http);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        register::handle(registry, http, event.payload)
            .await
            .map_err(Error::from)
    }))
    .await
}

fn required(name: &str, what: &str) -> Result<String, Error> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(format!("{name} is not set: {what}").into()),
    }
}
