//! Tenancy: which AWS account may act for which team, and who owns an entry (docs/design.md,
//! "Trust boundaries"). Neither involves the base domain or the entry rules, so [`Tenancy`] holds
//! no policy.
//!
//! Grants: one row per grant, `GRANT#{team}` / `ACCOUNT#{account}`, written only by operators
//! (`gatewayctl grant`/`revoke`). A registration from an account checks its grant twice: read
//! first (a clear refusal without touching the guards), and as a ConditionCheck inside the
//! registration transaction (so a revoke that lands in between wins).

use super::dynamo::{check_id, RegistryReader};
use super::error::from_sdk;
use super::keys;
use super::pages::scan_prefix;
use super::write::not_granted;
use super::{Owner, RegistryError};
use aws_sdk_dynamodb::types::ReturnValue;
use gateway_render::check::check_identifier;
use gateway_render::{Problem, Rejection};
use std::time::{SystemTime, UNIX_EPOCH};

/// One grant as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grant {
    pub team: String,
    pub account: String,
    pub granted_by: String,
    /// Unix seconds.
    pub granted_at: u64,
}

/// An AWS account id: exactly 12 digits.
pub fn is_account_id(account: &str) -> bool {
    account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit())
}

fn check_grant_input(team: &str, account: &str) -> Result<(), RegistryError> {
    let mut problems = Vec::new();
    if let Err(reason) = check_identifier(team) {
        problems.push(Problem {
            field: "team".into(),
            reason,
        });
    }
    if !is_account_id(account) {
        problems.push(Problem {
            field: "account".into(),
            reason: format!("{account:?} is not an AWS account id (12 digits)"),
        });
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(RegistryError::Rejected(Rejection { problems }))
    }
}

/// Grants and entry owners in the registry table, changed by operators (`gatewayctl grant`,
/// `revoke`, `grants`, `adopt`); the register function only reads grants
/// ([`super::DynamoRegistry::tenancy`]).
#[derive(Debug, Clone)]
pub struct Tenancy {
    reader: RegistryReader,
}

impl Tenancy {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Tenancy {
            reader: RegistryReader::new(client, table),
        }
    }

    pub(crate) fn from_reader(reader: RegistryReader) -> Self {
        Tenancy { reader }
    }

    fn client(&self) -> &aws_sdk_dynamodb::Client {
        self.reader.client()
    }

    fn table(&self) -> &str {
        self.reader.table()
    }

    /// Grants `account` the right to register `team`'s entries. True when it is new.
    pub async fn grant(
        &self,
        team: &str,
        account: &str,
        granted_by: &str,
    ) -> Result<bool, RegistryError> {
        check_grant_input(team, account)?;
        let mut row = keys::grant_key(team, account);
        row.insert(keys::ATTR_GRANTED_BY.into(), keys::s(granted_by));
        let at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        row.insert(keys::ATTR_GRANTED_AT.into(), keys::n(at));
        let out = self
            .client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(row))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| from_sdk(&format!("granting team {team} to account {account}"), e))?;
        Ok(out.attributes().is_none_or(|a| a.is_empty()))
    }

    /// Revokes a grant. True when there was one. Entries the account registered stay (and stay
    /// owned by their stacks); the account can no longer change them.
    pub async fn revoke(&self, team: &str, account: &str) -> Result<bool, RegistryError> {
        check_grant_input(team, account)?;
        let out = self
            .client()
            .delete_item()
            .table_name(self.table())
            .set_key(Some(keys::grant_key(team, account)))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| from_sdk(&format!("revoking team {team} from account {account}"), e))?;
        Ok(out.attributes().is_some_and(|a| !a.is_empty()))
    }

    /// Every grant, sorted by team then account.
    pub async fn grants(&self) -> Result<Vec<Grant>, RegistryError> {
        let items = scan_prefix(
            self.client(),
            self.table(),
            keys::GRANT_PREFIX,
            &format!("scanning table {} for grants", self.table()),
        )
        .await?;
        let mut grants = Vec::new();
        for item in &items {
            let pk = keys::need_s(item, keys::PK)?;
            let sk = keys::need_s(item, keys::SK)?;
            let (Some(team), Some(account)) = (
                pk.strip_prefix(keys::GRANT_PREFIX),
                sk.strip_prefix(keys::ACCOUNT_PREFIX),
            ) else {
                continue;
            };
            grants.push(Grant {
                team: team.to_string(),
                account: account.to_string(),
                granted_by: keys::get_s(item, keys::ATTR_GRANTED_BY)
                    .unwrap_or("")
                    .to_string(),
                granted_at: keys::get_n(item, keys::ATTR_GRANTED_AT).unwrap_or(0),
            });
        }
        grants.sort_by(|a, b| (&a.team, &a.account).cmp(&(&b.team, &b.account)));
        Ok(grants)
    }

    /// Whether `account` is granted `team` (a consistent read).
    pub async fn is_granted(&self, team: &str, account: &str) -> Result<bool, RegistryError> {
        let key = keys::grant_key(team, account);
        let pk = keys::get_s(&key, keys::PK).unwrap_or_default().to_string();
        let sk = keys::get_s(&key, keys::SK).unwrap_or_default().to_string();
        Ok(self.reader.get_item(pk, &sk).await?.is_some())
    }

    /// Hands an entry to a new owner (operators only: `gatewayctl adopt`). The entry itself is
    /// unchanged; the owner is replaced under a condition that the row still exists. Returns the
    /// previous owner.
    pub async fn adopt(&self, id: &str, owner: &Owner) -> Result<Option<Owner>, RegistryError> {
        check_id(id)?;
        let updated = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(keys::key(keys::entry_pk(id), keys::ENTRY_SK)))
            .update_expression("SET #owner = :owner")
            .condition_expression("attribute_exists(#pk)")
            .set_expression_attribute_names(Some(keys::names(&[keys::ATTR_OWNER, keys::PK])))
            .expression_attribute_values(":owner", keys::s(owner.encode()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await;
        match updated {
            Ok(out) => Ok(out
                .attributes()
                .and_then(|a| keys::get_s(a, keys::ATTR_OWNER))
                .and_then(Owner::decode)),
            Err(e)
                if matches!(
                    e.as_service_error(),
                    Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Err(RegistryError::Rejected(Rejection {
                    problems: vec![Problem {
                        field: "id".into(),
                        reason: format!("{id} is not registered"),
                    }],
                }))
            }
            Err(e) => Err(from_sdk(&format!("handing {id} to {owner}"), e)),
        }
    }

    /// `Forbidden`, naming the team and the account, unless the grant exists.
    pub(crate) async fn require_grant(
        &self,
        team: &str,
        account: &str,
    ) -> Result<(), RegistryError> {
        if self.is_granted(team, account).await? {
            Ok(())
        } else {
            Err(not_granted(team, account))
        }
    }
}
