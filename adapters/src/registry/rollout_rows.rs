//! The rollout rows in the table (docs/design.md#rollout): the operators' promote and abort on
//! an entry row, the view `gatewayctl rollout status` reads, and the reconciler's progress row.

use super::dynamo::{check_id, stored_entry};
use super::error::from_sdk;
use super::keys;
use super::rollout::{decision_of, Decided, Decision, RolloutView, Rollouts, ATTR_ROLLOUT_DECISION, ROLLOUTS_SK};
use super::{DynamoRegistry, RegistryError, RegistryReader, StoredEntry};
use aws_sdk_dynamodb::error::SdkError;
use gateway_render::{Problem, Rejection};
use std::collections::HashMap;

const ATTR_ROLLOUTS: &str = "rollouts";

impl DynamoRegistry {
    /// Records an operator's decision on the registered revision's rollout, under the condition
    /// that the row is still that revision (a registration in between makes it fail, named).
    pub async fn decide_rollout(&self, id: &str, decision: Decision) -> Result<Decided, RegistryError> {
        check_id(id)?;
        let Some(item) = self.get_item(keys::entry_pk(id), keys::ENTRY_SK).await? else {
            return Err(refused("id", format!("{id} is not registered")));
        };
        // A decision keeps `serving` (it only sets the share), so a decided rollout can be
        // decided again.
        let stored = stored_entry(&item)?;
        if stored.entry.serving.is_none() {
            return Err(refused(
                "id",
                format!("{id} revision {} is not being rolled out: nothing to {}", stored.revision, decision.as_str()),
            ));
        }
        let values = HashMap::from([
            (":d".to_string(), keys::s(format!("{}:{}", decision.as_str(), stored.revision))),
            (":r".to_string(), keys::n(stored.revision)),
        ]);
        let names = HashMap::from([
            ("#d".to_string(), ATTR_ROLLOUT_DECISION.to_string()),
            ("#r".to_string(), keys::ATTR_REVISION.to_string()),
        ]);
        let sent = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(keys::key(keys::entry_pk(id), keys::ENTRY_SK)))
            .update_expression("SET #d = :d")
            .condition_expression("#r = :r")
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        match sent {
            Ok(_) => Ok(Decided { id: id.to_string(), revision: stored.revision, decision }),
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => Err(RegistryError::Retryable(
                format!("{id} was registered again since revision {}; look at it and try again", stored.revision).into(),
            )),
            Err(e) => Err(from_sdk(&format!("recording {} of {id}'s rollout", decision.as_str()), e)),
        }
    }

    /// The registered revision's rollout (see [`super::RegistryReader::rollout_view`]).
    pub async fn rollout_view(&self, id: &str) -> Result<Option<RolloutView>, RegistryError> {
        self.reader().rollout_view(id).await
    }

    /// Replaces the rollout progress row.
    pub async fn put_rollouts(&self, rollouts: &Rollouts) -> Result<(), RegistryError> {
        let json = serde_json::to_string(rollouts)
            .map_err(|e| RegistryError::Corrupt(format!("rollout progress does not serialise: {e}")))?;
        self.put_state_row(ROLLOUTS_SK, [(ATTR_ROLLOUTS, keys::s(json))], "recording rollout progress")
            .await
    }
}

fn refused(field: &str, reason: String) -> RegistryError {
    RegistryError::Rejected(Rejection { problems: vec![Problem { field: field.into(), reason }] })
}

impl RegistryReader {
    /// The registered revision's rollout, from its entry row and the reconciler's progress
    /// (`None`: not registered).
    pub async fn rollout_view(&self, id: &str) -> Result<Option<RolloutView>, RegistryError> {
        check_id(id)?;
        let Some(item) = self.get_item(keys::entry_pk(id), keys::ENTRY_SK).await? else {
            return Ok(None);
        };
        // As served: a decision's share (100 or 0) shows as its state, the registered share
        // while the rollout is open.
        let StoredEntry { entry, revision, .. } = stored_entry(&item)?;
        let decision = decision_of(&item).filter(|(_, of)| *of == revision).map(|(d, _)| d);
        let progress = self.rollouts().await?.remove(id).filter(|p| p.revision == revision);
        Ok(Some(RolloutView {
            id: id.to_string(),
            revision,
            stable_revision: entry.serving.as_ref().map(|s| s.stable_revision),
            percent: entry.serving.as_ref().map(|s| s.percent),
            rollout: entry.rollout,
            decision,
            progress,
        }))
    }

    /// The rollout progress; a row that does not parse reads as none (every judged rollout then
    /// starts its current step again, which only delays it).
    pub async fn rollouts(&self) -> Result<Rollouts, RegistryError> {
        let row = self.get_item(keys::STATE_PK.to_string(), ROLLOUTS_SK).await?;
        Ok(row
            .as_ref()
            .and_then(|r| keys::get_s(r, ATTR_ROLLOUTS))
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default())
    }
}
