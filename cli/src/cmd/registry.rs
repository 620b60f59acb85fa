//! What `register` and `deregister` share: the registry table opened as the operator, and id
//! syntax; with `init` and `list`, the error hints. AWS endpoints come from the standard SDK
//! configuration (`AWS_ENDPOINT_URL`, region, profile), so the same commands work against AWS or
//! moto.

use super::common::TableArg;
use super::CmdError;
use gateway_adapters::aws::{dynamodb_client, sdk_config};
use gateway_adapters::registry::{DynamoRegistry, RegistryError};
use gateway_render::Policy;

/// The registry, acting as the operator these credentials belong to (owner of what it writes).
pub async fn open(table: &TableArg, policy: Policy) -> Result<DynamoRegistry, CmdError> {
    let name = table.get()?;
    let conf = sdk_config().await;
    let base_domain = policy.base_domain.clone();
    Ok(DynamoRegistry::new(dynamodb_client(&conf), name, base_domain)
        .with_policy(policy)
        .with_operator(operator_principal().await))
}

/// The operator's principal (GetCallerIdentity's ARN), recorded as the owner of entries
/// `gatewayctl` writes.
pub async fn operator_principal() -> String {
    gateway_adapters::aws::caller_identity(&sdk_config().await).await
}

pub fn failed(err: RegistryError) -> CmdError {
    // An entry a stack owns: say how operators take it over.
    if let RegistryError::Conflict { what, .. } = &err {
        if let Some(id) = what.strip_prefix("entry ") {
            return CmdError::failed(format!(
                "{err}; to change it from here, first take it over: gatewayctl adopt {id} --operator"
            ));
        }
    }
    CmdError::failed(gateway_adapters::error_chain(&err))
}

pub fn is_id(id: &str) -> bool {
    matches!(id.split_once('/'), Some((team, service)) if !team.is_empty() && !service.is_empty() && !service.contains('/'))
}
