//! One TransactWriteItems from planned actions, and what its cancellation reasons mean.
//!
//! Every item asks for its old image on a failed condition (`ALL_OLD`): the reasons come back in
//! item order, so a failed path guard names the service holding it, a failed host guard the
//! team holding it and a failed backend claim its holder.

use super::backend::{backend_conflict, BackendClaim};
use super::error::{build_error, from_sdk};
use super::host::{HostGuard, ATTR_UNDER};
use super::keys::{self, Item};
use super::plan::{
    enclosing_host_conflict, host_conflict, inner_host_conflict, path_conflict, Action, Claims,
    Expected, HostRole,
};
use super::RegistryError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, CancellationReason, ConditionCheck, Delete, Put,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use std::collections::HashMap;

pub(crate) enum Written {
    Committed,
    /// Someone else holds what the transaction claimed.
    Conflict(RegistryError),
    /// Nothing was written; re-read and try again (the reason says why).
    Retry(String),
}

/// Cancellation codes that mean "nothing is wrong with the request, try again".
const TRANSIENT_REASONS: &[&str] = &[
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
];

pub(crate) async fn transact(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    actions: &[Action],
) -> Result<Written, RegistryError> {
    let items = actions
        .iter()
        .map(|a| item(table, a))
        .collect::<Result<Vec<_>, _>>()?;
    // The SDK retries a timed-out call with the same token, and DynamoDB answers a repeat of a
    // committed transaction with success instead of failing its now-stale conditions.
    let token = crate::retry::random_token();
    let sent = client
        .transact_write_items()
        .set_transact_items(Some(items))
        .client_request_token(token)
        .send()
        .await;
    let err = match sent {
        Ok(_) => return Ok(Written::Committed),
        Err(err) => err,
    };
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
        err.as_service_error()
    {
        return interpret(actions, cancelled.cancellation_reasons());
    }
    Err(from_sdk("writing the registration transaction", err))
}

fn interpret(actions: &[Action], reasons: &[CancellationReason]) -> Result<Written, RegistryError> {
    let mut retry: Option<String> = None;
    for (action, reason) in actions.iter().zip(reasons) {
        let code = match reason.code() {
            None | Some("None") | Some("") => continue,
            Some(code) => code,
        };
        if TRANSIENT_REASONS.contains(&code) {
            retry.get_or_insert_with(|| format!("{} was cancelled: {code}", describe(action)));
            continue;
        }
        if code != "ConditionalCheckFailed" {
            let message = reason.message().unwrap_or("");
            return Err(RegistryError::Aws(
                format!("{} was cancelled: {code} {message}", describe(action)).into(),
            ));
        }
        let old = reason.item();
        match action {
            Action::CheckGrant { team, account } => {
                return Ok(Written::Conflict(not_granted(team, account)));
            }
            Action::PutHostGuard {
                fqdn,
                claimant,
                role,
                ..
            } => {
                let team = old.and_then(|i| keys::get_s(i, keys::ATTR_TEAM));
                if let Some(team) = team.filter(|t| t != claimant) {
                    return Ok(Written::Conflict(match role {
                        HostRole::Enclosing { inner } => enclosing_host_conflict(fqdn, inner, team),
                        HostRole::Claimed | HostRole::Left => host_conflict(fqdn, team),
                    }));
                }
                if *role == HostRole::Claimed {
                    let guard = old.and_then(|i| HostGuard::from_item(i).ok());
                    if let Some((inner, team)) =
                        guard.as_ref().and_then(|g| g.foreign_under(claimant))
                    {
                        return Ok(Written::Conflict(inner_host_conflict(inner, fqdn, team)));
                    }
                }
            }
            Action::CheckHost { fqdn, team, .. } => {
                let held = old.and_then(|i| keys::get_s(i, keys::ATTR_TEAM));
                if let Some(holder) = held.filter(|t| t != team) {
                    return Ok(Written::Conflict(host_conflict(fqdn, holder)));
                }
            }
            Action::ClaimBackend {
                authority, team, ..
            } => {
                let claim = old.and_then(|i| BackendClaim::from_item(i).ok());
                if let Some(claim) = claim.filter(|c| !c.admits(team) && !c.is_stale()) {
                    return Ok(Written::Conflict(backend_conflict(
                        authority,
                        &claim.team,
                        team,
                    )));
                }
            }
            Action::PutPathGuard {
                fqdn,
                prefix,
                service,
            } => {
                if let Some(holder) = old.and_then(|i| keys::get_s(i, keys::ATTR_SERVICE)) {
                    if holder != service {
                        return Ok(Written::Conflict(path_conflict(
                            fqdn, prefix, prefix, holder,
                        )));
                    }
                }
            }
            _ => {}
        }
        retry.get_or_insert_with(|| format!("{} changed since it was read", describe(action)));
    }
    Ok(Written::Retry(retry.unwrap_or_else(|| {
        "the transaction was cancelled without a reason".to_string()
    })))
}

/// The refusal for an account without a grant for the team: names both and the way out.
pub(crate) fn not_granted(team: &str, account: &str) -> RegistryError {
    RegistryError::Forbidden(format!(
        "account {account} is not granted team {team}; an operator of the gateway grants it with: gatewayctl grant {team} --account {account}"
    ))
}

fn describe(action: &Action) -> String {
    match action {
        Action::CheckGrant { team, account } => {
            format!("the grant of team {team} to account {account}")
        }
        Action::PutEntry { id, .. } | Action::DeleteEntry { id, .. } => format!("entry {id}"),
        Action::PutHostGuard { fqdn, .. } | Action::CheckHost { fqdn, .. } => {
            format!("host {fqdn}")
        }
        Action::PutPathGuard { fqdn, prefix, .. }
        | Action::DeletePathGuard { fqdn, prefix, .. } => {
            format!("path {prefix} on {fqdn}")
        }
        Action::ClaimBackend { authority, .. } | Action::ReleaseBackend { authority, .. } => {
            format!("backend {authority}")
        }
    }
}

fn item(table: &str, action: &Action) -> Result<TransactWriteItem, RegistryError> {
    let old = ReturnValuesOnConditionCheckFailure::AllOld;
    let item = match action {
        Action::PutEntry {
            id,
            json,
            revision,
            updated_at,
            owner,
            expected,
        } => {
            let mut row = keys::key(keys::entry_pk(id), keys::ENTRY_SK);
            row.insert(keys::ATTR_ENTRY.into(), keys::s(json.as_str()));
            row.insert(keys::ATTR_REVISION.into(), keys::n(*revision));
            row.insert(keys::ATTR_UPDATED_AT.into(), keys::n(*updated_at));
            row.insert(keys::ATTR_OWNER.into(), keys::s(owner.as_str()));
            let put = Put::builder()
                .table_name(table)
                .set_item(Some(row))
                .return_values_on_condition_check_failure(old);
            let put = match expected {
                None => put
                    .condition_expression("attribute_not_exists(#pk)")
                    .set_expression_attribute_names(Some(keys::names(&[keys::PK]))),
                Some(expected) => {
                    let (condition, values) = entry_condition(expected);
                    put.condition_expression(condition)
                        .set_expression_attribute_names(Some(keys::names(&[
                            keys::ATTR_REVISION,
                            keys::ATTR_OWNER,
                        ])))
                        .set_expression_attribute_values(Some(values))
                }
            };
            TransactWriteItem::builder()
                .put(put.build().map_err(|e| build_error("the entry put", e))?)
                .build()
        }
        Action::DeleteEntry { id, expected } => {
            let (condition, values) = entry_condition(expected);
            let delete = Delete::builder()
                .table_name(table)
                .set_key(Some(keys::key(keys::entry_pk(id), keys::ENTRY_SK)))
                .condition_expression(condition)
                .set_expression_attribute_names(Some(keys::names(&[
                    keys::ATTR_REVISION,
                    keys::ATTR_OWNER,
                ])))
                .set_expression_attribute_values(Some(values))
                .return_values_on_condition_check_failure(old)
                .build()
                .map_err(|e| build_error("the entry delete", e))?;
            TransactWriteItem::builder().delete(delete).build()
        }
        Action::CheckGrant { team, account } => {
            let check = ConditionCheck::builder()
                .table_name(table)
                .set_key(Some(keys::grant_key(team, account)))
                .condition_expression("attribute_exists(#pk)")
                .set_expression_attribute_names(Some(keys::names(&[keys::PK])))
                .build()
                .map_err(|e| build_error("the grant check", e))?;
            TransactWriteItem::builder().condition_check(check).build()
        }
        Action::PutHostGuard {
            fqdn,
            team,
            under,
            version,
            expected,
            claims,
            ..
        } => {
            let mut names = keys::names(&[keys::ATTR_VERSION, keys::ATTR_TEAM, ATTR_UNDER]);
            let mut values = HashMap::from([(":version".to_string(), keys::n(*version))]);
            let mut set = vec!["#version = :version".to_string()];
            let mut remove = Vec::new();
            match team {
                Some(team) => {
                    set.push("#team = :team".into());
                    values.insert(":team".into(), keys::s(team.as_str()));
                }
                None => remove.push("#team"),
            }
            match HostGuard::under_set(under) {
                Some(under) => {
                    set.push("#under = :under".into());
                    values.insert(":under".into(), AttributeValue::Ss(under));
                }
                None => remove.push("#under"),
            }
            // The version (and the claims counter) as read is the condition: ownership is
            // computed from a consistent read, so "unchanged since read" makes the write correct.
            let mut condition = match expected {
                None => {
                    names.insert("#pk".into(), keys::PK.into());
                    vec!["attribute_not_exists(#pk)".to_string()]
                }
                Some(v) => {
                    values.insert(":expected".into(), keys::n(*v));
                    vec!["#version = :expected".to_string()]
                }
            };
            if expected.is_some() {
                condition.extend(counter_conditions(claims, &mut names, &mut values));
            }
            let mut expression = format!("SET {}", set.join(", "));
            if !remove.is_empty() {
                expression.push_str(&format!(" REMOVE {}", remove.join(", ")));
            }
            if let Some(add) = counter_bumps(claims, &mut names, &mut values) {
                expression.push_str(&format!(" ADD {add}"));
            }
            let update = Update::builder()
                .table_name(table)
                .set_key(Some(keys::key(keys::host_pk(fqdn), keys::HOST_SK)))
                .update_expression(expression)
                .condition_expression(condition.join(" AND "))
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .return_values_on_condition_check_failure(old)
                .build()
                .map_err(|e| build_error("the host guard update", e))?;
            TransactWriteItem::builder().update(update).build()
        }
        Action::CheckHost { fqdn, team, claims } => {
            let mut names = keys::names(&[keys::ATTR_TEAM]);
            let mut values = HashMap::from([(":team".to_string(), keys::s(team.as_str()))]);
            let mut condition = vec!["#team = :team".to_string()];
            condition.extend(counter_conditions(claims, &mut names, &mut values));
            let key = Some(keys::key(keys::host_pk(fqdn), keys::HOST_SK));
            match counter_bumps(claims, &mut names, &mut values) {
                None => {
                    let check = ConditionCheck::builder()
                        .table_name(table)
                        .set_key(key)
                        .condition_expression(condition.join(" AND "))
                        .set_expression_attribute_names(Some(names))
                        .set_expression_attribute_values(Some(values))
                        .return_values_on_condition_check_failure(old)
                        .build()
                        .map_err(|e| build_error("the host guard check", e))?;
                    TransactWriteItem::builder().condition_check(check).build()
                }
                Some(add) => {
                    let update = Update::builder()
                        .table_name(table)
                        .set_key(key)
                        .update_expression(format!("ADD {add}"))
                        .condition_expression(condition.join(" AND "))
                        .set_expression_attribute_names(Some(names))
                        .set_expression_attribute_values(Some(values))
                        .return_values_on_condition_check_failure(old)
                        .build()
                        .map_err(|e| build_error("the host guard claim", e))?;
                    TransactWriteItem::builder().update(update).build()
                }
            }
        }
        Action::PutPathGuard {
            fqdn,
            prefix,
            service,
        } => {
            let mut row: Item = keys::key(keys::host_pk(fqdn), &keys::path_sk(prefix));
            row.insert(keys::ATTR_SERVICE.into(), keys::s(service.as_str()));
            let put = Put::builder()
                .table_name(table)
                .set_item(Some(row))
                .condition_expression("attribute_not_exists(#pk) OR #service = :me")
                .set_expression_attribute_names(Some(keys::names(&[keys::PK, keys::ATTR_SERVICE])))
                .expression_attribute_values(":me", keys::s(service.as_str()))
                .return_values_on_condition_check_failure(old)
                .build()
                .map_err(|e| build_error("a path guard put", e))?;
            TransactWriteItem::builder().put(put).build()
        }
        Action::DeletePathGuard {
            fqdn,
            prefix,
            service,
        } => {
            let delete = Delete::builder()
                .table_name(table)
                .set_key(Some(keys::key(keys::host_pk(fqdn), &keys::path_sk(prefix))))
                .condition_expression("#service = :me")
                .set_expression_attribute_names(Some(keys::names(&[keys::ATTR_SERVICE])))
                .expression_attribute_values(":me", keys::s(service.as_str()))
                .return_values_on_condition_check_failure(old)
                .build()
                .map_err(|e| build_error("a path guard delete", e))?;
            TransactWriteItem::builder().delete(delete).build()
        }
        Action::ClaimBackend {
            authority,
            service,
            team,
            takeover,
        } => {
            let mut values = HashMap::from([
                (":team".to_string(), keys::s(team.as_str())),
                (
                    ":svc".to_string(),
                    AttributeValue::Ss(vec![service.clone()]),
                ),
            ]);
            let (expression, condition, names) = match takeover {
                None => (
                    "SET #team = if_not_exists(#team, :team) ADD #users :svc",
                    "attribute_not_exists(#team) OR #team = :team OR contains(#shared_with, :team)",
                    keys::names(&[keys::ATTR_TEAM, keys::ATTR_USERS, keys::ATTR_SHARED_WITH]),
                ),
                Some(holder) => {
                    values.insert(":holder".into(), keys::s(holder.as_str()));
                    (
                        "SET #team = :team ADD #users :svc",
                        "#team = :holder AND attribute_not_exists(#users)",
                        keys::names(&[keys::ATTR_TEAM, keys::ATTR_USERS]),
                    )
                }
            };
            let update = Update::builder()
                .table_name(table)
                .set_key(Some(keys::backend_key(authority)))
                .update_expression(expression)
                .condition_expression(condition)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .return_values_on_condition_check_failure(old)
                .build()
                .map_err(|e| build_error("a backend claim", e))?;
            TransactWriteItem::builder().update(update).build()
        }
        Action::ReleaseBackend { authority, service } => {
            let update = Update::builder()
                .table_name(table)
                .set_key(Some(keys::backend_key(authority)))
                .update_expression("DELETE #users :svc")
                .condition_expression("contains(#users, :me)")
                .set_expression_attribute_names(Some(keys::names(&[keys::ATTR_USERS])))
                .expression_attribute_values(":svc", AttributeValue::Ss(vec![service.clone()]))
                .expression_attribute_values(":me", keys::s(service.as_str()))
                .return_values_on_condition_check_failure(old)
                .build()
                .map_err(|e| build_error("a backend release", e))?;
            TransactWriteItem::builder().update(update).build()
        }
    };
    Ok(item)
}

/// Each required claim counter still as read (absent when it was absent). Counter attribute
/// names hold path segments, so they always travel as placeholders.
fn counter_conditions(
    claims: &Claims,
    names: &mut HashMap<String, String>,
    values: &mut HashMap<String, AttributeValue>,
) -> Vec<String> {
    claims
        .expect
        .iter()
        .enumerate()
        .map(|(i, (counter, read))| {
            let name = format!("#e{i}");
            names.insert(name.clone(), counter.clone());
            match read {
                None => format!("attribute_not_exists({name})"),
                Some(v) => {
                    let value = format!(":e{i}");
                    values.insert(value.clone(), keys::n(*v));
                    format!("{name} = {value}")
                }
            }
        })
        .collect()
}

/// `#b0 :one, #b1 :one...` for the counters to bump, or `None` when there are none.
fn counter_bumps(
    claims: &Claims,
    names: &mut HashMap<String, String>,
    values: &mut HashMap<String, AttributeValue>,
) -> Option<String> {
    if claims.bump.is_empty() {
        return None;
    }
    values.insert(":one".into(), keys::n(1));
    let parts: Vec<String> = claims
        .bump
        .iter()
        .enumerate()
        .map(|(i, counter)| {
            let name = format!("#b{i}");
            names.insert(name.clone(), counter.clone());
            format!("{name} :one")
        })
        .collect();
    Some(parts.join(", "))
}

/// The entry row is as read: same revision, same owner (or none, on rows from before owners).
fn entry_condition(expected: &Expected) -> (&'static str, HashMap<String, AttributeValue>) {
    let mut values = HashMap::from([(":expected".to_string(), keys::n(expected.revision))]);
    match &expected.owner {
        Some(owner) => {
            values.insert(":owner".to_string(), keys::s(owner.as_str()));
            ("#revision = :expected AND #owner = :owner", values)
        }
        None => (
            "#revision = :expected AND attribute_not_exists(#owner)",
            values,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;

    fn reason(code: &str, attr: Option<(&str, &str)>) -> CancellationReason {
        let mut r = CancellationReason::builder().code(code);
        if let Some((k, v)) = attr {
            r = r.item(k, AttributeValue::S(v.into()));
        }
        r.build()
    }

    fn actions() -> Vec<Action> {
        vec![
            Action::PutEntry {
                id: "billing/a".into(),
                json: "{}".into(),
                revision: 2,
                updated_at: 1,
                owner: "operator:ops".into(),
                expected: Some(Expected {
                    revision: 1,
                    owner: Some("operator:ops".into()),
                }),
            },
            Action::PutHostGuard {
                fqdn: "h.example.com".into(),
                team: Some("billing".into()),
                under: Default::default(),
                version: 4,
                expected: Some(3),
                claimant: "billing".into(),
                role: HostRole::Claimed,
                claims: Default::default(),
            },
            Action::PutPathGuard {
                fqdn: "h.example.com".into(),
                prefix: "/a".into(),
                service: "billing/a".into(),
            },
        ]
    }

    fn outcome(reasons: &[CancellationReason]) -> String {
        match interpret(&actions(), reasons) {
            Ok(Written::Committed) => "committed".into(),
            Ok(Written::Conflict(e)) => format!("conflict: {e}"),
            Ok(Written::Retry(why)) => format!("retry: {why}"),
            Err(e) => format!("error {}: {e}", e.kind()),
        }
    }

    /// The outcome when only the entry's own item fails, with `code`.
    fn entry_failed(code: &str) -> String {
        outcome(&[
            reason(code, None),
            reason("None", None),
            reason("None", None),
        ])
    }

    /// The outcome when only the host guard's condition fails, the guard now held by `team`.
    fn host_guard_failed(team: &str) -> String {
        outcome(&[
            reason("None", None),
            reason("ConditionalCheckFailed", Some(("team", team))),
            reason("None", None),
        ])
    }

    #[test]
    fn a_host_held_by_another_team_is_a_conflict_naming_it() {
        let got = host_guard_failed("payments");
        assert_eq!(got, "conflict: host h.example.com is held by payments");
    }

    #[test]
    fn an_enclosing_host_another_team_took_or_a_missing_grant_is_named() {
        let actions = vec![
            Action::CheckGrant {
                team: "billing".into(),
                account: "222222222222".into(),
            },
            Action::PutHostGuard {
                fqdn: "x.example.com".into(),
                team: None,
                under: Default::default(),
                version: 2,
                expected: Some(1),
                claimant: "billing".into(),
                role: HostRole::Enclosing {
                    inner: "a.x.example.com".into(),
                },
                claims: Default::default(),
            },
        ];
        let got = interpret(
            &actions,
            &[
                reason("None", None),
                reason("ConditionalCheckFailed", Some(("team", "payments"))),
            ],
        );
        assert!(matches!(&got, Ok(Written::Conflict(e))
            if e.to_string() == "host x.example.com (enclosing a.x.example.com) is held by payments"));
        let got = interpret(
            &actions,
            &[reason("ConditionalCheckFailed", None), reason("None", None)],
        );
        assert!(matches!(&got, Ok(Written::Conflict(e))
            if e.kind() == "forbidden" && e.to_string().starts_with("account 222222222222 is not granted team billing")));
        // The claimed host gained another team's host inside it since it was read.
        let claimed = vec![Action::PutHostGuard {
            fqdn: "x.example.com".into(),
            team: Some("billing".into()),
            under: Default::default(),
            version: 2,
            expected: Some(1),
            claimant: "billing".into(),
            role: HostRole::Claimed,
            claims: Default::default(),
        }];
        let inner = CancellationReason::builder()
            .code("ConditionalCheckFailed")
            .item("version", AttributeValue::N("2".into()))
            .item(
                "under",
                AttributeValue::Ss(vec!["a.x.example.com payments".into()]),
            )
            .build();
        let got = interpret(&claimed, &[inner]);
        assert!(matches!(&got, Ok(Written::Conflict(e))
            if e.to_string() == "host a.x.example.com (inside x.example.com) is held by payments"));
    }

    #[test]
    fn a_path_held_by_another_service_is_a_conflict_naming_it() {
        let got = outcome(&[
            reason("None", None),
            reason("ConditionalCheckFailed", Some(("team", "billing"))),
            reason("ConditionalCheckFailed", Some(("service", "billing/b"))),
        ]);
        assert_eq!(
            got,
            "conflict: path /a on h.example.com is held by billing/b"
        );
    }

    #[test]
    fn a_version_race_within_the_team_is_retried() {
        let got = host_guard_failed("billing");
        assert_eq!(got, "retry: host h.example.com changed since it was read");
    }

    #[test]
    fn throttled_or_conflicting_items_are_retried_never_a_conflict() {
        for code in TRANSIENT_REASONS {
            let got = entry_failed(code);
            assert!(
                got.starts_with("retry: entry billing/a was cancelled"),
                "{code}: {got}"
            );
        }
    }

    #[test]
    fn other_cancellations_are_errors() {
        let got = entry_failed("ValidationError");
        assert!(
            got.starts_with("error aws: entry billing/a was cancelled: ValidationError"),
            "{got}"
        );
    }

    #[test]
    fn a_backend_claim_that_failed_names_its_holder_unless_it_was_a_race() {
        let claim = vec![Action::ClaimBackend {
            authority: "invoices.internal.example:8443".into(),
            service: "intruder/api".into(),
            team: "intruder".into(),
            takeover: None,
        }];
        let failed = |users: &[&str], shared: &[&str]| {
            let mut r = CancellationReason::builder()
                .code("ConditionalCheckFailed")
                .item(
                    "pk",
                    AttributeValue::S("BACKEND#invoices.internal.example:8443".into()),
                )
                .item("team", AttributeValue::S("alpha".into()));
            if !users.is_empty() {
                r = r.item(
                    "users",
                    AttributeValue::Ss(users.iter().map(|u| u.to_string()).collect()),
                );
            }
            if !shared.is_empty() {
                r = r.item(
                    "shared_with",
                    AttributeValue::Ss(shared.iter().map(|t| t.to_string()).collect()),
                );
            }
            match interpret(&claim, &[r.build()]) {
                Ok(Written::Conflict(e)) => format!("conflict: {e}"),
                Ok(Written::Retry(why)) => format!("retry: {why}"),
                other => format!("{:?}", other.map(|_| ())),
            }
        };
        assert_eq!(
            failed(&["alpha/invoices"], &[]),
            "conflict: backend invoices.internal.example:8443 is held by team alpha (operators can share it: gatewayctl backend share invoices.internal.example:8443 intruder)"
        );
        // Released since the read (free to take over), or shared since: read again.
        assert_eq!(
            failed(&[], &[]),
            "retry: backend invoices.internal.example:8443 changed since it was read"
        );
        assert!(failed(&["alpha/invoices"], &["intruder"]).starts_with("retry: "));
    }
}
