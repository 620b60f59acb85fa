//! `gatewayctl list`: the registered entries, as a table or one JSON document.

use super::common::{DomainArg, JsonArg, TableArg};
use super::registry::{failed, open};
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::registry::{Owner, StoredEntry};
use gateway_render::Policy;
use serde_json::json;

/// List the registered entries
#[derive(clap::Args, Debug)]
#[command(mut_arg("json", |a| a.help("One JSON document instead of a table")))]
pub struct Args {
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub domain: DomainArg,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let registry = open(&args.table, Policy::new(args.domain.get()?, false)).await;
        let snapshot = registry.list().await.map_err(failed)?;
        if args.json.json {
            let entries: Vec<_> = snapshot
                .entries
                .iter()
                .map(|s| {
                    json!({
                        "id": s.entry.id(),
                        "fqdn": s.entry.fqdn(registry.base_domain()),
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
            let doc = json!({ "entries": entries, "unreadable": unreadable });
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).map_err(|e| CmdError::failed(e.to_string()))?
            );
        } else {
            print_table(&snapshot.entries, registry.base_domain());
            for (key, why) in &snapshot.unreadable {
                eprintln!("unreadable row {key}: {why}");
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
                    Some(m) => format!("{} {}", r.path, m.join(",")),
                    None => r.path.clone(),
                })
                .collect::<Vec<_>>()
                .join("; ");
            [
                s.entry.id(),
                s.entry.fqdn(base_domain),
                routes,
                s.revision.to_string(),
                owner_cell(s.owner.as_ref()),
            ]
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
