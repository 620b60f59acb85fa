//! The register Lambda: clients built once from the environment, then every event goes to the
//! library handler (direct invocation, CloudFormation custom resource, or SNS-wrapped).

// The handler's future nests the SDK's and reqwest's futures deeper than rustc's default
// layout query depth.
#![recursion_limit = "256"]

use gateway_functions::registry::DynamoRegistry;
use gateway_functions::{aws, logs, register, settings};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    logs::init_json();
    let table = settings::table()?;
    let domain = settings::domain()?;
    let policy = settings::policy(&domain);
    let conf = aws::sdk_config().await;
    let registry =
        DynamoRegistry::new(aws::dynamodb_client(&conf), table, domain.clone()).with_policy(policy);
    let http = reqwest::Client::new();
    let (registry, http) = (&registry, &http);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        register::handle(registry, http, event.payload)
            .await
            .map_err(Error::from)
    }))
    .await
}
