//! SDK configuration from the standard environment (region, credentials, profile and
//! `AWS_ENDPOINT_URL`), so the same binaries run against AWS or a local emulator.

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use std::time::Duration;

/// Attempts per DynamoDB call, including the first. The SDK's standard mode retries throttling,
/// 5xx answers, timeouts and connection failures with exponential backoff and full jitter.
pub const DYNAMODB_MAX_ATTEMPTS: u32 = 5;
/// The first retry waits up to this long (jittered), doubling each attempt.
const DYNAMODB_INITIAL_BACKOFF: Duration = Duration::from_millis(50);
const DYNAMODB_MAX_BACKOFF: Duration = Duration::from_secs(2);
/// A register call runs inside a Lambda answering CloudFormation: a hung connection must turn
/// into a retryable error long before the function's own timeout.
const DYNAMODB_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
const DYNAMODB_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// S3: a connect, every attempt (a HEAD, a PUT of up to the bundle cap, the headers of a GET) and
/// the whole call are bounded, so a stalled bucket fails the run or the sidecar's round, named,
/// instead of waiting for the Lambda's own timeout. A GET's body is bounded by the SDK's stalled
/// stream protection (no bytes for its grace period) and by the reader's own deadline.
pub fn s3_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(2))
        .operation_attempt_timeout(Duration::from_secs(30))
        .operation_timeout(Duration::from_secs(75))
        .build()
}

/// CloudWatch and STS are off every critical path (metrics, the principal a bundle records):
/// a few seconds at most, then the caller goes on without them.
pub fn side_call_timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(2))
        .operation_attempt_timeout(Duration::from_secs(3))
        .operation_timeout(Duration::from_secs(6))
        .build()
}

/// At most this long for a side call (metrics, identity) whatever the SDK does: it can never
/// delay a publish or a delivery by more.
pub const SIDE_CALL_BUDGET: Duration = Duration::from_secs(8);

fn sts_client(config: &SdkConfig) -> aws_sdk_sts::Client {
    aws_sdk_sts::Client::from_conf(
        aws_sdk_sts::config::Builder::from(config)
            .timeout_config(side_call_timeouts())
            .build(),
    )
}

/// The SDK configuration every binary uses, read from the environment once.
pub async fn sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).load().await
}

/// A DynamoDB client with the registry's retry and timeout settings.
pub fn dynamodb_client(config: &SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(dynamodb_config(config).build())
}

/// The registry's DynamoDB settings, open for a test to adjust (e.g. fewer attempts).
pub fn dynamodb_config(config: &SdkConfig) -> aws_sdk_dynamodb::config::Builder {
    aws_sdk_dynamodb::config::Builder::from(config)
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(DYNAMODB_MAX_ATTEMPTS)
                .with_initial_backoff(DYNAMODB_INITIAL_BACKOFF)
                .with_max_backoff(DYNAMODB_MAX_BACKOFF),
        )
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(DYNAMODB_CONNECT_TIMEOUT)
                .operation_attempt_timeout(DYNAMODB_ATTEMPT_TIMEOUT)
                .build(),
        )
}

/// The principal these credentials act as (`GetCallerIdentity`), recorded on every bundle
/// version this process writes so `gatewayctl status` and `history` can say who wrote it.
/// A lookup failure is not fatal: the bundle says why instead.
pub async fn caller_identity(config: &SdkConfig) -> String {
    let call = sts_client(config).get_caller_identity().send();
    let Ok(answer) = tokio::time::timeout(SIDE_CALL_BUDGET, call).await else {
        return format!(
            "unknown principal (GetCallerIdentity gave no answer within {}s)",
            SIDE_CALL_BUDGET.as_secs()
        );
    };
    match answer {
        Ok(out) => out.arn().unwrap_or("unknown principal").to_string(),
        // Object metadata travels as an HTTP header: printable ASCII only.
        Err(e) => format!(
            "unknown principal ({})",
            crate::error_chain(&e)
        )
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(200)
        .collect(),
    }
}

/// The account these credentials belong to (`GetCallerIdentity`). Unlike [`caller_identity`],
/// a failure is fatal: the register function cannot decide whom to trust without it.
pub async fn caller_account(config: &SdkConfig) -> Result<String, CallerAccountError> {
    let out = sts_client(config)
        .get_caller_identity()
        .send()
        .await
        .map_err(|e| CallerAccountError::Sts(Box::new(e)))?;
    match out.account() {
        Some(account) if crate::registry::is_account_id(account) => Ok(account.to_string()),
        other => Err(CallerAccountError::NoAccount(format!("{other:?}"))),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CallerAccountError {
    #[error("GetCallerIdentity failed, so the function's own account is unknown: {}", crate::error_chain(.0.as_ref()))]
    Sts(
        #[source]
        Box<
            aws_sdk_sts::error::SdkError<
                aws_sdk_sts::operation::get_caller_identity::GetCallerIdentityError,
            >,
        >,
    ),
    #[error("GetCallerIdentity answered without a 12-digit account ({0})")]
    NoAccount(String),
}
