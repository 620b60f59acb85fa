//! The operators' side of backend claims (`gatewayctl backend share`, `unshare`, `list`,
//! `migrate`; docs/design.md#ownership-and-conflicts). Like grants, these rows are written only
//! with the gateway account's own credentials; the register function only claims and releases.
//! [`BackendClaims`] holds no policy: none of this involves the entry rules or the base domain.

use super::backend::{parse_authority, BackendClaim};
use super::dynamo::RegistryReader;
use super::error::from_sdk;
use super::keys;
use super::migrate::{plan_migration, Expect, Migration};
use super::pages::scan_prefix;
use super::RegistryError;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use gateway_render::check::check_identifier;
use gateway_render::{Problem, Rejection};
use std::collections::{BTreeSet, HashMap};

/// A share as it now stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shared {
    pub authority: String,
    /// The team holding the backend.
    pub holder: String,
    /// The team it is shared with.
    pub team: String,
    /// It was shared with that team, under that holder, already: nothing changed.
    pub already: bool,
}

/// What a migration did: one step per authority in use, and the entry rows it could not read
/// (their backends are not claimed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationReport {
    pub steps: Vec<Migration>,
    pub unreadable: Vec<(String, String)>,
}

impl MigrationReport {
    /// Whether anything is left for operators: a conflict, a claim that changed meanwhile, or an
    /// entry row that could not be read.
    pub fn is_complete(&self) -> bool {
        self.unreadable.is_empty()
            && self
                .steps
                .iter()
                .all(|s| matches!(s, Migration::Claim { .. } | Migration::Claimed { .. }))
    }
}

/// Backend claims in the registry table, for operators.
#[derive(Debug, Clone)]
pub struct BackendClaims {
    reader: RegistryReader,
}

fn rejected(field: &str, reason: String) -> RegistryError {
    RegistryError::Rejected(Rejection {
        problems: vec![Problem {
            field: field.into(),
            reason,
        }],
    })
}

fn check_team(field: &str, team: &str) -> Result<(), RegistryError> {
    check_identifier(team).map_err(|why| rejected(field, format!("{team:?}: {why}")))
}

fn condition_failed(err: &SdkError<UpdateItemError>) -> bool {
    matches!(
        err.as_service_error(),
        Some(UpdateItemError::ConditionalCheckFailedException(_))
    )
}

impl BackendClaims {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        BackendClaims {
            reader: RegistryReader::new(client, table),
        }
    }

    pub(crate) fn from_reader(reader: RegistryReader) -> Self {
        BackendClaims { reader }
    }

    fn client(&self) -> &aws_sdk_dynamodb::Client {
        self.reader.client()
    }

    fn table(&self) -> &str {
        self.reader.table()
    }

    /// Every claim, sorted by authority.
    pub async fn claims(&self) -> Result<Vec<BackendClaim>, RegistryError> {
        let items = scan_prefix(
            self.client(),
            self.table(),
            keys::BACKEND_PREFIX,
            &format!("scanning table {} for backend claims", self.table()),
        )
        .await?;
        let mut claims = items
            .iter()
            .map(BackendClaim::from_item)
            .collect::<Result<Vec<_>, _>>()?;
        claims.sort_by(|a, b| a.authority.cmp(&b.authority));
        Ok(claims)
    }

    /// One claim, read consistently (`authority` as an operator writes it).
    pub async fn claim(&self, authority: &str) -> Result<Option<BackendClaim>, RegistryError> {
        let authority = parse_authority(authority).map_err(|why| rejected("backend", why))?;
        super::backend::read_claim(self.client(), self.table(), &authority).await
    }

    /// Lets `team`'s services use the backend `authority` too. The backend must be claimed, or
    /// `holder` names the team to hold it (resolving a conflict the migration reported): then it
    /// may be unclaimed, already `holder`'s, or a claim nobody uses.
    pub async fn share(
        &self,
        authority: &str,
        team: &str,
        holder: Option<&str>,
    ) -> Result<Shared, RegistryError> {
        let authority = parse_authority(authority).map_err(|why| rejected("backend", why))?;
        check_team("team", team)?;
        if let Some(holder) = holder {
            check_team("holder", holder)?;
            if holder == team {
                return Err(rejected(
                    "team",
                    format!("{team} is the holder; a backend is shared with other teams"),
                ));
            }
        }
        let mut names = keys::names(&[keys::ATTR_TEAM, keys::ATTR_SHARED_WITH]);
        let mut values = HashMap::from([
            (":team".to_string(), keys::s(team)),
            (
                ":teams".to_string(),
                AttributeValue::Ss(vec![team.to_string()]),
            ),
        ]);
        let (expression, condition) = match holder {
            None => (
                "ADD #shared_with :teams",
                "attribute_exists(#team) AND #team <> :team",
            ),
            Some(holder) => {
                // DynamoDB refuses a value no expression uses.
                values.remove(":team");
                names.insert("#users".into(), keys::ATTR_USERS.into());
                values.insert(":holder".into(), keys::s(holder));
                (
                    "SET #team = :holder ADD #shared_with :teams",
                    "attribute_not_exists(#team) OR #team = :holder OR attribute_not_exists(#users)",
                )
            }
        };
        let sent = self
            .update(&authority, expression, condition, names, values)
            .await;
        let old = match sent {
            Ok(out) => out
                .attributes()
                .filter(|a| !a.is_empty())
                .map(BackendClaim::from_item)
                .transpose()?,
            Err(e) if condition_failed(&e) => {
                return Err(self.share_refused(&authority, team, holder).await)
            }
            Err(e) => {
                return Err(from_sdk(
                    &format!("sharing backend {authority} with team {team}"),
                    e,
                ))
            }
        };
        let holder = match (holder, &old) {
            (Some(h), _) => h.to_string(),
            (None, Some(old)) => old.team.clone(),
            (None, None) => String::new(),
        };
        let already = old
            .as_ref()
            .is_some_and(|o| o.team == holder && o.shared_with.contains(team));
        Ok(Shared {
            authority,
            holder,
            team: team.to_string(),
            already,
        })
    }

    /// Why a share's condition failed, from the claim as it is now.
    async fn share_refused(
        &self,
        authority: &str,
        team: &str,
        holder: Option<&str>,
    ) -> RegistryError {
        let claim = match super::backend::read_claim(self.client(), self.table(), authority).await {
            Ok(claim) => claim,
            Err(e) => return e,
        };
        match (claim, holder) {
            (None, _) => rejected(
                "backend",
                format!(
                    "{authority} is not claimed by any team: a team claims it by registering it, and gatewayctl backend migrate claims the backends of entries from before claims; or name its holder: gatewayctl backend share {authority} {team} --holder HOLDER"
                ),
            ),
            (Some(claim), None) if claim.team == team => rejected(
                "team",
                format!("{team} holds backend {authority}; a backend is shared with other teams"),
            ),
            (Some(claim), _) => RegistryError::Conflict {
                what: format!("backend {authority}"),
                holder: format!(
                    "team {} (used by {})",
                    claim.team,
                    claim.users.into_iter().collect::<Vec<_>>().join(", ")
                ),
            },
        }
    }

    /// Withdraws a share. `None` when it was not shared with `team`; otherwise the claim as it
    /// now is. The team's services already using the backend keep it (like a revoked grant's
    /// entries) until they change their backend or are deregistered; no new one may join.
    pub async fn unshare(
        &self,
        authority: &str,
        team: &str,
    ) -> Result<Option<BackendClaim>, RegistryError> {
        let authority = parse_authority(authority).map_err(|why| rejected("backend", why))?;
        check_team("team", team)?;
        let names = keys::names(&[keys::ATTR_SHARED_WITH]);
        let values = HashMap::from([
            (":team".to_string(), keys::s(team)),
            (
                ":teams".to_string(),
                AttributeValue::Ss(vec![team.to_string()]),
            ),
        ]);
        let sent = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(keys::backend_key(&authority)))
            .update_expression("DELETE #shared_with :teams")
            .condition_expression("contains(#shared_with, :team)")
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match sent {
            Ok(out) => out.attributes().map(BackendClaim::from_item).transpose(),
            Err(e) if condition_failed(&e) => Ok(None),
            Err(e) => Err(from_sdk(
                &format!("unsharing backend {authority} from team {team}"),
                e,
            )),
        }
    }

    /// Claims the backends of entries registered before claims: every authority one team uses
    /// is claimed for it (every service using it a user), under a condition that the claim is
    /// still as read, so a claim written since is never overwritten; an authority several
    /// teams use without a claim admitting them all is reported, and nothing is written for
    /// it. Running it again writes only what is still missing.
    pub async fn migrate(&self) -> Result<MigrationReport, RegistryError> {
        let snapshot = self.reader.read_all_entries().await?;
        let claims = self.claims().await?;
        let plan = plan_migration(snapshot.entries.iter().map(|s| &s.entry), &claims);
        let mut steps = Vec::with_capacity(plan.len());
        for step in plan {
            steps.push(match step {
                Migration::Claim {
                    authority,
                    team,
                    users,
                    expect,
                } => self.write_claim(authority, team, users, expect).await?,
                other => other,
            });
        }
        Ok(MigrationReport {
            steps,
            unreadable: snapshot.unreadable,
        })
    }

    async fn write_claim(
        &self,
        authority: String,
        team: String,
        users: BTreeSet<String>,
        expect: Expect,
    ) -> Result<Migration, RegistryError> {
        let names = keys::names(&[keys::ATTR_TEAM, keys::ATTR_USERS]);
        let mut values = HashMap::from([
            (":team".to_string(), keys::s(team.as_str())),
            (
                ":users".to_string(),
                AttributeValue::Ss(users.iter().cloned().collect()),
            ),
        ]);
        let condition = match &expect {
            Expect::Absent => "attribute_not_exists(#team)",
            Expect::Holder(holder) => {
                values.insert(":holder".into(), keys::s(holder.as_str()));
                "#team = :holder"
            }
            Expect::Stale(holder) => {
                values.insert(":holder".into(), keys::s(holder.as_str()));
                "#team = :holder AND attribute_not_exists(#users)"
            }
        };
        let sent = self
            .update(
                &authority,
                "SET #team = :team ADD #users :users",
                condition,
                names,
                values,
            )
            .await;
        match sent {
            Ok(_) => Ok(Migration::Claim {
                authority,
                team,
                users,
                expect,
            }),
            Err(e) if condition_failed(&e) => Ok(Migration::Changed { authority }),
            Err(e) => Err(from_sdk(
                &format!("claiming backend {authority} for team {team}"),
                e,
            )),
        }
    }

    async fn update(
        &self,
        authority: &str,
        expression: &str,
        condition: &str,
        names: HashMap<String, String>,
        values: HashMap<String, AttributeValue>,
    ) -> Result<UpdateItemOutput, SdkError<UpdateItemError>> {
        self.client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(keys::backend_key(authority)))
            .update_expression(expression)
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
    }
}
