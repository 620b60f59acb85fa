//! The registry's one error type, and how SDK failures map onto it: transient ones (throttling,
//! 5xx, timeouts, dropped connections) become `Retryable`, never a conflict.

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use gateway_render::Rejection;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The entry failed the registration checks; nothing was written.
    #[error("{0}")]
    Rejected(Rejection),
    /// Another team holds the host, or another service holds (or nests with) a path prefix.
    #[error("{what} is held by {holder}")]
    Conflict { what: String, holder: String },
    /// The caller's account is not granted the entry's team (the message names both).
    #[error("{0}")]
    Forbidden(String),
    /// Throttling, an outage or a lost race that persisted through every retry: try again later.
    #[error("temporarily unable to complete: {0}")]
    Retryable(String),
    /// Another reconcile run recorded its publish first.
    #[error("the published state changed since it was read: another reconcile run recorded first")]
    StateConflict,
    #[error("{0}")]
    Aws(String),
    /// A stored row the registry cannot interpret (missing attribute, unparseable entry JSON).
    #[error("corrupt registry row: {0}")]
    Corrupt(String),
}

impl RegistryError {
    /// A short, stable name for callers' JSON answers and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            RegistryError::Rejected(_) => "rejected",
            RegistryError::Conflict { .. } => "conflict",
            RegistryError::Forbidden(_) => "forbidden",
            RegistryError::Retryable(_) => "retryable",
            RegistryError::StateConflict => "state-conflict",
            RegistryError::Aws(_) => "aws",
            RegistryError::Corrupt(_) => "corrupt",
        }
    }

    /// Whether the caller may simply try again later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, RegistryError::Retryable(_))
    }
}

/// DynamoDB error codes that mean "slow down or try again", whatever the HTTP status.
const TRANSIENT_CODES: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TransactionInProgressException",
    "InternalServerError",
    "ServiceUnavailable",
];

/// Classifies an SDK failure after the SDK's own retries gave up.
pub(crate) fn from_sdk<E>(doing: &str, err: SdkError<E>) -> RegistryError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let transient = match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        SdkError::ServiceError(ctx) => {
            ctx.raw().status().is_server_error()
                || ctx
                    .err()
                    .code()
                    .is_some_and(|c| TRANSIENT_CODES.contains(&c))
        }
        _ => false,
    };
    let text = format!("{doing}: {}", DisplayErrorContext(&err));
    if transient {
        RegistryError::Retryable(text)
    } else {
        RegistryError::Aws(text)
    }
}

pub(crate) fn build_error(what: &str, err: aws_sdk_dynamodb::error::BuildError) -> RegistryError {
    RegistryError::Aws(format!("building {what}: {err}"))
}
