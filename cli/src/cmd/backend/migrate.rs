//! `gatewayctl backend migrate`: claims for the backends of entries registered before claims.
//! Run it right after the upgrade: until then the next registration of an unclaimed backend
//! claims it, whichever team's it is.

use super::open;
use crate::cmd::common::TableArg;
use crate::cmd::{block_on, CmdError, CmdResult};
use gateway_adapters::registry::{Expect, Migration};
use std::collections::{BTreeMap, BTreeSet};

/// Claim the backends of entries registered before claims: each backend one team uses for that
/// team; a backend several teams use is listed with every service using it and left unclaimed
/// (exit 1) for operators to resolve. Entries are never changed; running it again is harmless
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub table: TableArg,
}

pub fn run(args: Args) -> CmdResult {
    block_on(async {
        let report = open(&args.table)
            .await?
            .migrate()
            .await
            .map_err(|e| CmdError::failed(gateway_adapters::error_chain(&e)))?;
        let mut left = Vec::new();
        let (mut claimed, mut already) = (0, 0);
        for step in &report.steps {
            println!("{}", line(step));
            match step {
                Migration::Claim { .. } => claimed += 1,
                Migration::Claimed { .. } => already += 1,
                Migration::Conflict { .. } | Migration::Changed { .. } => {
                    left.push(step.authority().to_string())
                }
            }
        }
        for (key, why) in &report.unreadable {
            println!("entry row {key} is unreadable ({why}): its backends are not claimed");
            left.push(key.clone());
        }
        println!(
            "{} backends in use: {claimed} written now, {already} already claimed, {} left for operators",
            report.steps.len(),
            left.len()
        );
        if left.is_empty() {
            Ok(())
        } else {
            Err(CmdError::failed(format!(
                "{} not migrated (each is listed above): {}",
                left.len(),
                left.join(", ")
            )))
        }
    })
}

fn line(step: &Migration) -> String {
    match step {
        Migration::Claim {
            authority,
            team,
            users,
            expect: Expect::Holder(_),
        } => format!(
            "backend {authority}: held by team {team}; users added: {}",
            join(users)
        ),
        Migration::Claim {
            authority,
            team,
            users,
            ..
        } => format!(
            "backend {authority}: claimed for team {team} ({})",
            join(users)
        ),
        Migration::Claimed { authority, team } => {
            format!("backend {authority}: already claimed by team {team}")
        }
        Migration::Conflict {
            authority,
            holder,
            users,
        } => conflict(authority, holder.as_deref(), users),
        Migration::Changed { authority } => format!(
            "backend {authority}: its claim changed while migrating (a registration claimed it meanwhile), nothing written; run gatewayctl backend migrate again"
        ),
    }
}

/// The authority, every team and service using it, and the two ways out.
fn conflict(
    authority: &str,
    holder: Option<&str>,
    users: &BTreeMap<String, BTreeSet<String>>,
) -> String {
    let using: Vec<String> = users
        .iter()
        .map(|(team, ids)| format!("{team} ({})", join(ids)))
        .collect();
    let holder_named = holder.or_else(|| users.keys().next().map(String::as_str));
    let shares: Vec<String> = users
        .keys()
        .filter(|t| Some(t.as_str()) != holder_named)
        .map(|t| match (holder, holder_named) {
            (None, Some(h)) => format!("gatewayctl backend share {authority} {t} --holder {h}"),
            _ => format!("gatewayctl backend share {authority} {t}"),
        })
        .collect();
    let held = match holder {
        Some(h) => format!("held by team {h} and used by teams it is not shared with"),
        None => "used by more than one team".to_string(),
    };
    format!(
        "backend {authority}: {held}, nothing written: {}. Either all but one team move off it, or operators name its holder and share it with the others, e.g. {}",
        using.join(", "),
        shares.join(" and ")
    )
}

fn join(ids: &BTreeSet<String>) -> String {
    ids.iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}
