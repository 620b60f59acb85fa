//! The reconciler's state row, `STATE` / `PUBLISHED` (docs/design.md#registry-table): which bundle
//! version it last published. Reading and moving it involves no entry, policy or base domain, so
//! [`StateRow`] holds none; `gatewayctl restore` and `resume` use it, and every
//! [`super::DynamoRegistry`] records through one.

use super::dynamo::RegistryReader;
use super::error::from_sdk;
use super::keys;
use super::{PublishedState, PublishedStateRead, RegistryError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use std::collections::HashMap;

/// The state row alone, read and recorded.
#[derive(Debug, Clone)]
pub struct StateRow {
    reader: RegistryReader,
}

impl StateRow {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        StateRow {
            reader: RegistryReader::new(client, table),
        }
    }

    pub(crate) fn from_reader(reader: RegistryReader) -> Self {
        StateRow { reader }
    }

    /// Records a publish only if the state is still `expected` (absent when `None`), so two
    /// overlapping writers cannot both record; the loser gets [`RegistryError::StateConflict`].
    pub async fn record(
        &self,
        expected: Option<&PublishedState>,
        next: &PublishedState,
    ) -> Result<(), RegistryError> {
        let mut row = keys::key(keys::STATE_PK.to_string(), keys::STATE_SK);
        row.insert(
            keys::ATTR_VERSION_ID.into(),
            keys::s(next.version_id.as_str()),
        );
        row.insert(keys::ATTR_HASH.into(), keys::s(next.hash.as_str()));
        row.insert(keys::ATTR_PUBLISHED_AT.into(), keys::n(next.published_at));
        let put = self
            .reader
            .client()
            .put_item()
            .table_name(self.reader.table())
            .set_item(Some(row));
        let put = match expected {
            None => put
                .condition_expression("attribute_not_exists(#pk)")
                .set_expression_attribute_names(Some(keys::names(&[keys::PK]))),
            Some(state) => put
                .condition_expression("#version_id = :expected")
                .set_expression_attribute_names(Some(keys::names(&[keys::ATTR_VERSION_ID])))
                .set_expression_attribute_values(Some(HashMap::from([(
                    ":expected".to_string(),
                    keys::s(state.version_id.as_str()),
                )]))),
        };
        match put.send().await {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.as_service_error(),
                    Some(PutItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Err(RegistryError::StateConflict)
            }
            Err(e) => Err(from_sdk("recording the published state", e)),
        }
    }
}

impl PublishedStateRead for StateRow {
    async fn published_state(&self) -> Result<Option<PublishedState>, RegistryError> {
        self.reader.read_state().await
    }
}
