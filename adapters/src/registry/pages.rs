//! Reading many rows of the registry table: every page of a consistent scan or query, whatever
//! DynamoDB's page size, so no caller stops at the first megabyte.

use super::error::from_sdk;
use super::keys::{self, Item};
use super::RegistryError;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::operation::scan::ScanOutput;
use std::future::Future;

/// Every item whose partition key begins with `prefix` (entries, grants, status rows), read with
/// a consistent scan. `doing` names the read in an error (`scanning table T for grants`).
pub(crate) async fn scan_prefix(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    prefix: &str,
    doing: &str,
) -> Result<Vec<Item>, RegistryError> {
    every_page(doing, |start| {
        client
            .scan()
            .table_name(table)
            .consistent_read(true)
            .filter_expression("begins_with(#pk, :prefix)")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_values(":prefix", keys::s(prefix))
            .set_exclusive_start_key(start)
            .send()
    })
    .await
}

/// Every item in partition `pk` (a host's guards), or only those whose sort key begins with
/// `sk_prefix` (the proxy reports), read with a consistent query. `doing` names the read in an
/// error.
pub(crate) async fn query_partition(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: &str,
    sk_prefix: Option<&str>,
    doing: &str,
) -> Result<Vec<Item>, RegistryError> {
    every_page(doing, |start| {
        let query = match sk_prefix {
            None => client.query().key_condition_expression("#pk = :pk"),
            Some(prefix) => client
                .query()
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", keys::SK)
                .expression_attribute_values(":prefix", keys::s(prefix)),
        };
        query
            .table_name(table)
            .consistent_read(true)
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_values(":pk", keys::s(pk))
            .set_exclusive_start_key(start)
            .send()
    })
    .await
}

/// One page of a scan or a query: its items, and the key to start the next page after.
trait Page {
    fn items(&self) -> &[Item];
    fn last_key(&self) -> Option<&Item>;
}

impl Page for ScanOutput {
    fn items(&self) -> &[Item] {
        ScanOutput::items(self)
    }
    fn last_key(&self) -> Option<&Item> {
        self.last_evaluated_key()
    }
}

impl Page for QueryOutput {
    fn items(&self) -> &[Item] {
        QueryOutput::items(self)
    }
    fn last_key(&self) -> Option<&Item> {
        self.last_evaluated_key()
    }
}

/// The items of every page `read` returns, starting each after the last key of the one before,
/// until a page comes back without one (an empty last key ends the read too).
async fn every_page<P, E, F, Fut>(doing: &str, mut read: F) -> Result<Vec<Item>, RegistryError>
where
    P: Page,
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    F: FnMut(Option<Item>) -> Fut,
    Fut: Future<Output = Result<P, SdkError<E>>>,
{
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = read(start.take()).await.map_err(|e| from_sdk(doing, e))?;
        items.extend_from_slice(page.items());
        match page.last_key() {
            Some(k) if !k.is_empty() => start = Some(k.clone()),
            _ => return Ok(items),
        }
    }
}
