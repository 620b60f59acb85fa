//! The registry totals row (`STATE` / `TOTALS`): routes, clusters and entries per team as the
//! reconciler last counted them (docs/design.md#registry-totals). Written by the reconciler only,
//! when the count changed; the register path reads it to judge one entry's growth against the
//! bounds without reading the whole table.

use super::error::from_sdk;
use super::keys::{self, get_n, Item};
use super::{DynamoRegistry, RegistryError, RegistryReader};
use aws_sdk_dynamodb::types::AttributeValue;
use gateway_render::bounds::Totals;
use std::collections::HashMap;

/// The totals row's sort key, under the reconciler's `STATE` partition key (its role may write
/// there; the register function's may read it).
pub const TOTALS_SK: &str = "TOTALS";
const ATTR_ROUTES: &str = "routes";
const ATTR_CLUSTERS: &str = "clusters";
/// A map of team → entries.
const ATTR_TEAMS: &str = "teams";

fn to_item(totals: &Totals) -> Item {
    let mut row = keys::key(keys::STATE_PK.to_string(), TOTALS_SK);
    row.insert(ATTR_ROUTES.into(), keys::n(totals.routes as u64));
    row.insert(ATTR_CLUSTERS.into(), keys::n(totals.clusters as u64));
    let teams: HashMap<String, AttributeValue> = totals
        .entries_per_team
        .iter()
        .map(|(team, n)| (team.clone(), keys::n(*n as u64)))
        .collect();
    row.insert(ATTR_TEAMS.into(), AttributeValue::M(teams));
    row
}

/// `None` for a row missing any count: the register path then counts on a full read, which is
/// always exact, rather than trusting half a row.
fn from_item(item: &Item) -> Option<Totals> {
    let count = |v: &AttributeValue| v.as_n().ok()?.parse::<usize>().ok();
    let teams = item.get(ATTR_TEAMS)?.as_m().ok()?;
    let mut entries_per_team = std::collections::BTreeMap::new();
    for (team, n) in teams {
        entries_per_team.insert(team.clone(), count(n)?);
    }
    Some(Totals {
        routes: get_n(item, ATTR_ROUTES)? as usize,
        clusters: get_n(item, ATTR_CLUSTERS)? as usize,
        entries_per_team,
    })
}

impl RegistryReader {
    /// The totals the reconciler last recorded, read consistently; `None` before its first run
    /// (or for a row it cannot read).
    pub async fn totals(&self) -> Result<Option<Totals>, RegistryError> {
        let row = self.get_item(keys::STATE_PK.to_string(), TOTALS_SK).await?;
        Ok(row.as_ref().and_then(from_item))
    }
}

impl DynamoRegistry {
    /// Records the registry's totals (the reconciler's, after it counted them).
    pub async fn put_totals(&self, totals: &Totals) -> Result<(), RegistryError> {
        self.client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(to_item(totals)))
            .send()
            .await
            .map_err(|e| from_sdk("recording the registry totals", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_back_as_written_and_half_a_row_reads_as_none() {
        let totals = Totals {
            routes: 12,
            clusters: 4,
            entries_per_team: [("billing".to_string(), 3), ("shop".to_string(), 1)].into(),
        };
        let row = to_item(&totals);
        assert_eq!(from_item(&row), Some(totals));
        let mut half = row.clone();
        half.remove(ATTR_TEAMS);
        assert_eq!(from_item(&half), None);
        let mut bad = row;
        bad.insert(
            ATTR_TEAMS.into(),
            AttributeValue::M([("billing".to_string(), keys::s("three"))].into()),
        );
        assert_eq!(from_item(&bad), None);
    }
}
