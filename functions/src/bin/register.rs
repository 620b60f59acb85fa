//! The register Lambda: clients built once from the environment, then every event, typed as a
//! direct invocation, a CloudFormation custom resource event or SNS-wrapped ones, goes to the
//! library handler.

// The handler's future nests the SDK's and reqwest's futures deeper than rustc's default
// layout query depth.
#![recursion_limit = "256"]

use gateway_adapters::registry::DynamoRegistry;
use gateway_adapters::{aws, settings};
use gateway_functions::register;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use register::RegisterEvent;

#[tokio::main]
async fn main() {
    gateway_functions::lambda_main("register", run()).await
}

async fn run() -> Result<(), Error> {
    let table = settings::table()?;
    let domain = settings::domain()?;
    let policy = settings::policy(&domain)?;
    let conf = aws::sdk_config().await;
    let mut registry = DynamoRegistry::new(aws::dynamodb_client(&conf), table, domain.clone())
        .with_policy(policy)
        .with_bounds(settings::bounds()?)
        .with_publish_wait(settings::publish_wait()?, std::time::Duration::from_secs(2));
    // `waitFor: serving` reads the bundles the proxies report; without the bucket it is refused.
    if let Ok(bucket) = settings::bucket() {
        registry = registry.with_bundles(gateway_adapters::store::S3Store::new(
            gateway_adapters::store::s3_client(&conf),
            bucket,
        ));
    }
    let http = register::ResponseClient::new()?;
    // The gateway's own account: what a direct invoke is trusted as (only principals of this
    // account can invoke the function directly). Without it the function cannot decide whom to
    // trust, so a failure stops it at init.
    let account = aws::caller_account(&conf).await?;
    tracing::info!(account = %account, "register function trusts direct invokes as this account");
    let (registry, http, account) = (&registry, &http, account.as_str());
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<RegisterEvent>| async move {
            register::handle(registry, http, account, event.payload)
                .await
                .map_err(|e| gateway_functions::diagnostic("Register", e.kind(), &e))
        },
    ))
    .await
}
