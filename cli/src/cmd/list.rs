//! `gatewayctl list`: the registered entries, as a table or one JSON document.

use super::common::{DomainArg, ListingArgs};
use super::live::print_json;
use super::registry::failed;
use super::terminal::one_line;
use super::{block_on, CmdResult};
use gateway_adapters::aws::{dynamodb_client, sdk_config};
use gateway_adapters::registry::{Owner, RegistryReader, StoredEntry};
use serde_json::json;

/// List the registered entries
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub listing: ListingArgs,
    #[command(flatten)]
    pub domain: DomainArg,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        // Listing reads: no policy, no operator; the domain only spells each entry's host.
        let domain = args.domain.get()?;
        let conf = sdk_config().await;
        let registry =
            RegistryReader::new(dynamodb_client(&conf), args.listing.table.get()?);
        let snapshot = registry.list().await.map_err(failed)?;
        if args.listing.json.json {
            let entries: Vec<_> = snapshot
                .entries
                .iter()
                .map(|s| {
                    json!({
                        "id": s.entry.id(),
                        "fqdn": s.entry.fqdn(domain),
                        "revision": s.revision,
                        "updated_at": s.updated_at,
                        "owner": owner_json(s.owner.as_ref()),
                        "entry": s.entry,
                    })
                })
                .collect();
            let unreadable: Vec<_> = snapshot
                .unreadable
                .iter()
                .map(|(key, why)| json!({ "key": key, "why": why }))
                .collect();
            print_json(&json!({ "entries": entries, "unreadable": unreadable }))?;
        } else {
            print_table(&snapshot.entries, domain);
            for (key, why) in &snapshot.unreadable {
                eprintln!("unreadable row {}: {}", one_line(key), one_line(why));
            }
        }
        Ok(())
    })
}

fn owner_json(owner: Option<&Owner>) -> serde_json::Value {
    match owner {
        Some(Owner::Stack {
            stack_id,
            logical_id,
        }) => json!({ "kind": "stack", "stack": stack_id, "resource": logical_id }),
        Some(Owner::Operator { principal }) => {
            json!({ "kind": "operator", "principal": principal })
        }
        None => serde_json::Value::Null,
    }
}

fn owner_cell(owner: Option<&Owner>) -> String {
    match owner {
        Some(Owner::Stack {
            stack_id,
            logical_id: Some(l),
        }) => format!("{stack_id} {l}"),
        Some(Owner::Stack {
            stack_id,
            logical_id: None,
        }) => stack_id.clone(),
        Some(Owner::Operator { principal }) => format!("operator {principal}"),
        None => "-".to_string(),
    }
}

fn print_table(entries: &[StoredEntry], base_domain: &str) {
    let rows: Vec<[String; 5]> = entries
        .iter()
        .map(|s| {
            let routes = s
                .entry
                .routes
                .iter()
                .map(|r| match &r.methods {
                    Some(m) => format!("{} {}", gateway_render::names::match_key(r), m.join(",")),
                    None => gateway_render::names::match_key(r),
                })
                .collect::<Vec<_>>()
                .join("; ");
            // A row written around the register function holds whatever text it was given.
            [
                s.entry.id(),
                s.entry.fqdn(base_domain),
                routes,
                s.revision.to_string(),
                owner_cell(s.owner.as_ref()),
            ]
            .map(|cell| one_line(&cell).into_owned())
        })
        .collect();
    let header = ["ID", "HOST", "ROUTES", "REVISION", "OWNER"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        println!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
    }
}
