//! The registry table itself: created if absent (local runs and tests; in AWS the gateway stack
//! owns it). Creating it needs no policy, so `gatewayctl init` does it without a registry.

use super::error::{build_error, from_sdk};
use super::keys;
use super::RegistryError;
use aws_sdk_dynamodb::operation::create_table::CreateTableError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    StreamSpecification, StreamViewType, TableStatus,
};
use std::time::Duration;

/// How long `create_table_if_absent` waits for a new table to become ACTIVE.
const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(120);

/// Creates the table (pk/sk strings, on-demand, stream NEW_AND_OLD_IMAGES) unless it exists,
/// and waits until it is ACTIVE. True when it was created now.
pub async fn create_table_if_absent(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<bool, RegistryError> {
    let key = |name: &str, kind: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .map_err(|e| build_error("the key schema", e))
    };
    let attr = |name: &str| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(|e| build_error("the attribute definitions", e))
    };
    let stream = StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(StreamViewType::NewAndOldImages)
        .build()
        .map_err(|e| build_error("the stream specification", e))?;
    let created = client
        .create_table()
        .table_name(table)
        .attribute_definitions(attr(keys::PK)?)
        .attribute_definitions(attr(keys::SK)?)
        .key_schema(key(keys::PK, KeyType::Hash)?)
        .key_schema(key(keys::SK, KeyType::Range)?)
        .billing_mode(BillingMode::PayPerRequest)
        .stream_specification(stream)
        .send()
        .await;
    let created = match created {
        Ok(_) => true,
        Err(e)
            if matches!(
                e.as_service_error(),
                Some(CreateTableError::ResourceInUseException(_))
            ) =>
        {
            false
        }
        Err(e) => return Err(from_sdk(&format!("creating table {}", table), e)),
    };
    wait_active(client, table).await?;
    Ok(created)
}

async fn wait_active(client: &aws_sdk_dynamodb::Client, table: &str) -> Result<(), RegistryError> {
    let deadline = std::time::Instant::now() + TABLE_ACTIVE_TIMEOUT;
    loop {
        let described = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| from_sdk(&format!("describing table {}", table), e))?;
        let status = described.table().and_then(|t| t.table_status());
        if status == Some(&TableStatus::Active) {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(RegistryError::Retryable(
                format!(
                    "table {} is not ACTIVE after {TABLE_ACTIVE_TIMEOUT:?} (status {status:?})",
                    table
                )
                .into(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
