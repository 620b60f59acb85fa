//! What `grant`, `revoke`, `grants` and `adopt` share: who may act for which team, and who owns
//! an entry (docs/design.md, "Trust boundaries"). Operators only: these commands write the
//! registry table with the gateway account's own credentials; the register function never
//! changes grants.

use super::common::TableArg;
use super::{CmdError, CmdResult};
use gateway_adapters::aws::{dynamodb_client, sdk_config};
use gateway_adapters::registry::{is_account_id, Tenancy};

pub fn check_account(account: &str) -> CmdResult {
    if is_account_id(account) {
        Ok(())
    } else {
        Err(CmdError::usage(format!(
            "--account {account:?} is not an AWS account id (12 digits)"
        )))
    }
}

/// Grants and owners in the table: no base domain, no policy (neither involves them).
pub async fn open(table: &TableArg) -> Result<Tenancy, CmdError> {
    let name = table.get()?;
    Ok(Tenancy::new(dynamodb_client(&sdk_config().await), name))
}
