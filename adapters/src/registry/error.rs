//! The registry's one error type, and how SDK failures map onto it: transient ones (throttling,
//! 5xx, timeouts, dropped connections) become `Retryable`, never a conflict.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
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
    Retryable(#[source] Cause),
    /// Another reconcile run recorded its publish first.
    #[error("the published state changed since it was read: another reconcile run recorded first")]
    StateConflict,
    /// Any other SDK failure (or a transaction cancelled for a reason the registry does not act on).
    #[error("{0}")]
    Aws(#[source] Cause),
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

/// What went wrong, said once (`doing X: the SDK's whole error context`), and the error that
/// caused it, when there was one, kept so `source()` chains reach the SDK error. Its Display is
/// the text alone: the registry's messages read the same with or without a cause behind them.
#[derive(Debug)]
pub struct Cause {
    text: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Cause {
    /// A failure described by `text`, caused by `source`.
    pub fn new(
        text: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Cause {
        Cause {
            text: text.into(),
            source: Some(Box::new(source)),
        }
    }

    /// What went wrong, as the message says it.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// A failure the registry found itself (a table never became ACTIVE, a write lost every round):
/// no error lies behind it.
impl From<String> for Cause {
    fn from(text: String) -> Cause {
        Cause { text, source: None }
    }
}

impl From<&str> for Cause {
    fn from(text: &str) -> Cause {
        Cause::from(text.to_string())
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
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
    // A missing table is a person's next step, not a stack of SDK context.
    if let SdkError::ServiceError(ctx) = &err {
        if ctx.err().code() == Some("ResourceNotFoundException") {
            let text = format!(
                "{doing}: the table does not exist (DynamoDB ResourceNotFoundException): create it with `gatewayctl init`, or check GATEWAY_TABLE, the region and AWS_ENDPOINT_URL"
            );
            return RegistryError::Aws(Cause::new(text, err));
        }
    }
    let cause = Cause::new(format!("{doing}: {}", crate::error_chain(&err)), err);
    if transient {
        RegistryError::Retryable(cause)
    } else {
        RegistryError::Aws(cause)
    }
}

pub(crate) fn build_error(what: &str, err: aws_sdk_dynamodb::error::BuildError) -> RegistryError {
    RegistryError::Aws(Cause::new(format!("building {what}: {err}"), err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use std::error::Error;

    #[test]
    fn a_transient_sdk_failure_keeps_its_text_and_its_cause() {
        let sdk: SdkError<GetItemError> = SdkError::timeout_error("deadline passed");
        let expected = format!(
            "temporarily unable to complete: reading entry a/b: {}",
            crate::error_chain(&sdk)
        );
        let err = from_sdk("reading entry a/b", sdk);
        assert!(err.is_retryable());
        assert_eq!(err.kind(), "retryable");
        assert_eq!(err.to_string(), expected);
        let cause = err
            .source()
            .and_then(|c| c.source())
            .expect("the SDK error");
        assert!(cause.downcast_ref::<SdkError<GetItemError>>().is_some());
    }

    #[test]
    fn a_failure_the_registry_found_itself_has_no_cause_behind_it() {
        let err = RegistryError::Aws("a put was cancelled: ValidationError".into());
        assert_eq!(err.kind(), "aws");
        assert_eq!(err.to_string(), "a put was cancelled: ValidationError");
        assert!(err.source().and_then(|c| c.source()).is_none());
    }
}
