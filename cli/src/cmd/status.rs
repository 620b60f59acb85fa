//! `gatewayctl status [TEAM/SERVICE]`: the live bundle, drift, quarantined entries and the
//! reporting proxies; or one entry's revisions and state.

use super::common::{ConfigLocation, LiveConfigArgs};
use super::live::{op_failed, print_json, readers, when, Readers};
use super::terminal::{lines, one_line};
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::registry::{ProxyReport, ProxyRows, RegistryError};
use gateway_control::operator;
use std::fmt::Write as _;

/// The live bundle: version, hash, who wrote it, drift, entries and routes
#[derive(clap::Args, Debug)]
pub struct Args {
    /// One entry, `TEAM/SERVICE`: its registered and published revisions and its state
    /// (pending, published or quarantined with stage and reason). Without it: the gateway's
    /// status and every quarantined entry.
    #[arg(value_name = "TEAM/SERVICE")]
    pub entry: Option<String>,
    #[command(flatten)]
    pub live: LiveConfigArgs,
}

/// `gatewayctl status TEAM/SERVICE` (docs/design.md#entry-status).
fn entry_status(target: &ConfigLocation, id: &str, json: bool) -> CmdResult {
    block_on(async {
        let c = readers(target).await?;
        let reg_err = |e: gateway_adapters::registry::RegistryError| CmdError::failed(gateway_adapters::error_chain(&e));
        let status = c.registry.status(id).await.map_err(reg_err)?;
        let stored = match c.registry.get(id).await {
            Ok(stored) => stored,
            // A row written around the checks that no longer parses is still registered, and
            // the reconciler quarantines it: say so, with the field that does not parse.
            Err(gateway_adapters::registry::RegistryError::Corrupt(why)) => {
                return unreadable_entry_status(id, &why, status.as_ref(), json);
            }
            Err(e) => return Err(reg_err(e)),
        };
        let Some(stored) = stored else {
            return Err(CmdError::failed(format!(
                "{id} is not registered{}",
                if status.is_some() { " (a status row remains from before it was deregistered)" } else { "" }
            )));
        };
        let status = status.unwrap_or_else(|| gateway_adapters::registry::EntryStatus {
            id: id.to_string(),
            ..Default::default()
        });
        let now = gateway_adapters::registry::proxies::unix_now();
        let serving = match c.registry.proxies().read(now).await {
            Ok(rows) => {
                warn_ignored(&rows);
                let mut cache = gateway_control::serving::BundleCache::new(&c.store);
                Ok(gateway_control::serving::live_on(&mut cache, id, &status, &rows.current).await)
            }
            Err(e) => Err(e.to_string()),
        };
        // A rollout's step and figures (docs/design.md#rollout); unreadable counts as none.
        let rollout = c.registry.rollout_view(id).await.ok().flatten().filter(|v| v.state() != "none");
        if json {
            let mut doc = status.to_json(Some(stored.revision));
            doc["rollout"] = rollout.as_ref().map_or(serde_json::Value::Null, |v| v.to_json());
            doc["held"] = serde_json::json!(operator::status(&c.registry, &c.store)
                .await
                .ok()
                .and_then(|s| s.hold()));
            doc["serving"] = match &serving {
                Ok(on) => on.to_json(now),
                Err(e) => serde_json::json!({ "error": format!("proxy reports unreadable: {e}") }),
            };
            return print_json(&doc);
        }
        let state = status.state(stored.revision);
        let held = operator::status(&c.registry, &c.store)
            .await
            .ok()
            .and_then(|s| s.hold());
        println!("entry:      {id}");
        println!("registered: revision {}", stored.revision);
        match status.revision_published {
            Some(r) => println!(
                "published:  revision {r}, first in bundle version {} ({})",
                one_line(status.version_id.as_deref().unwrap_or("?")),
                one_line(status.hash.as_deref().unwrap_or("?"))
            ),
            None => println!("published:  never"),
        }
        println!("state:      {}", state.as_str());
        if let Some(held) = &held {
            println!("held:       {}", one_line(held));
        }
        if let Some(view) = &rollout {
            println!("rollout:    {}", one_line(super::rollout::describe(view).trim_end()));
        }
        if let Some(q) = status.quarantine.as_ref().filter(|q| q.revision == stored.revision) {
            println!("stage:      {}", one_line(&q.stage));
            println!(
                "served:     {}",
                if q.kept == "previous" { "the previously published revision" } else { "nothing (left out)" }
            );
            println!("reason:     {}", lines(&q.reason).replace('\n', "\n            "));
            println!("details:    failed/quarantine/{id}/reason.txt");
        }
        match &serving {
            Err(e) => println!("serving:    unknown: proxy reports unreadable: {}", one_line(e)),
            Ok(on) if on.reporting() == 0 => println!("serving:    no proxy is reporting"),
            Ok(on) => {
                let what = match status.revision_published {
                    Some(r) => format!("revision {r} "),
                    None => String::new(),
                };
                println!("serving:    {what}{}", on.summary());
                for p in on.proxies.iter().filter(|p| !p.live) {
                    println!(
                        "  not on {}: {}",
                        one_line(&p.proxy.proxy_id),
                        one_line(p.why.as_deref().unwrap_or("does not serve it"))
                    );
                }
            }
        }
        Ok(())
    })
}

/// `status TEAM/SERVICE` for a registered row that does not parse.
fn unreadable_entry_status(
    id: &str,
    why: &str,
    status: Option<&gateway_adapters::registry::EntryStatus>,
    json: bool,
) -> CmdResult {
    let quarantine = status.and_then(|s| s.quarantine.as_ref());
    let state = if quarantine.is_some() { "quarantined" } else { "pending" };
    if json {
        let mut doc = match status {
            Some(s) => s.to_json(None),
            None => serde_json::json!({ "id": id }),
        };
        doc["state"] = serde_json::json!(state);
        doc["unreadable"] = serde_json::json!(why);
        return print_json(&doc);
    }
    println!("entry:      {id}");
    println!("registered: a row that does not parse: {why}");
    if let Some(r) = status.and_then(|s| s.revision_published) {
        println!("published:  revision {r}");
    }
    println!("state:      {state}");
    match quarantine {
        Some(q) => {
            println!("stage:      {}", q.stage);
            println!(
                "served:     {}",
                if q.kept == "previous" { "the previously published revision" } else { "nothing (left out)" }
            );
            println!("reason:     {}", q.reason.replace('\n', "\n            "));
            println!("details:    failed/quarantine/{id}/reason.txt");
        }
        None => println!("reason:     the next reconcile run quarantines it until it is registered again"),
    }
    Ok(())
}

pub fn run(args: Args) -> CmdResult {
    if let Some(id) = &args.entry {
        return entry_status(&args.live.target, id, args.live.json());
    }
    block_on(async {
        let c = readers(&args.live.target).await?;
        let quarantined = quarantined_entries(&c).await?;
        let s = operator::status(&c.registry, &c.store)
            .await
            .map_err(op_failed)?;
        let now = gateway_adapters::registry::proxies::unix_now();
        let proxies = c.registry.proxies().read(now).await;
        if let Ok(rows) = &proxies {
            warn_ignored(rows);
        }
        let proxies = proxies.map(|rows| rows.current);
        if args.live.json() {
            let mut doc = s.to_json();
            doc["held"] = serde_json::json!(s.hold());
            doc["quarantined"] = quarantined.iter().map(|(st, r)| st.to_json(Some(*r))).collect();
            doc["proxies"] = match &proxies {
                Ok(list) => list.iter().map(|p| p.to_json(now)).collect(),
                Err(e) => serde_json::json!({ "error": format!("proxy reports unreadable: {e}") }),
            };
            return print_json(&doc);
        }
        match &s.live {
            // A HEAD of an object in a bucket that does not exist is a 404 too: say which it is.
            None if !c.store.bucket_exists().await.map_err(op_failed_store)? => {
                return Err(CmdError::failed(format!(
                    "bucket {} does not exist: create it with `gatewayctl init --bucket {}`, or check GATEWAY_BUCKET, the region and AWS_ENDPOINT_URL",
                    one_line(c.store.bucket()),
                    one_line(c.store.bucket())
                )))
            }
            None => println!(
                "live:      none — no bundle.json in {}; run `gatewayctl seed`",
                c.store.bucket()
            ),
            Some(l) => {
                println!(
                    "live:      version {} ({})",
                    one_line(&l.version_id),
                    one_line(l.hash.as_deref().unwrap_or("no hash metadata"))
                );
                let by = l
                    .written_by
                    .as_deref()
                    .map(|p| format!(" ({})", one_line(p)))
                    .unwrap_or_default();
                println!(
                    "written:   {} by {}{by}",
                    when(l.last_modified),
                    l.writer.as_str()
                );
            }
        }
        match &s.recorded {
            None => println!("reconciler: has recorded no publish yet"),
            Some(r) => println!(
                "reconciler: last published version {} ({}) at {}{}",
                one_line(&r.version_id),
                one_line(&r.hash),
                when(Some(r.published_at as i64)),
                if s.is_reconcilers() {
                    " — that is the live bundle"
                } else {
                    ""
                }
            ),
        }
        println!("entries:   {}  routes: {}", s.entries, s.routes);
        if let Some(signature) = &s.signature {
            println!("signature: {}", one_line(signature));
        }
        if let Some(problem) = &s.problem {
            println!("problem:   {}", one_line(problem));
        }
        if let Some(held) = s.hold() {
            println!("drift:     YES — {held}");
        } else {
            println!("drift:     no");
        }
        if quarantined.is_empty() {
            println!("quarantined: none");
        } else {
            println!("quarantined: {}", quarantined.len());
            for (st, _) in &quarantined {
                if let Some(q) = &st.quarantine {
                    let first = q.reason.lines().next().unwrap_or_default();
                    println!(
                        "  {} ({}, {}): {}",
                        one_line(&st.id),
                        one_line(&q.stage),
                        one_line(&q.kept),
                        one_line(first)
                    );
                }
            }
        }
        print!(
            "{}",
            proxies_text(&proxies, s.live.as_ref().and_then(|l| l.hash.as_deref()), now)
        );
        Ok(())
    })
}

/// Rows of the proxy partition that are not reports, one warning each on stderr (the sort key
/// is untrusted text, printed escaped).
fn warn_ignored(rows: &ProxyRows) {
    for row in &rows.ignored {
        eprintln!(
            "warning: proxy report row {} ignored: {}",
            one_line(&row.sort_key),
            one_line(&row.why)
        );
    }
}

/// The reporting proxies: what each serves and how old its report is
/// (docs/design.md#proxy-reports). Every stored value is printed escaped.
fn proxies_text(
    proxies: &Result<Vec<ProxyReport>, RegistryError>,
    live_hash: Option<&str>,
    now: u64,
) -> String {
    let list = match proxies {
        Err(e) => return format!("proxies:   unknown: proxy reports unreadable: {}\n", one_line(&e.to_string())),
        Ok(list) if list.is_empty() => return "proxies:   none reporting\n".into(),
        Ok(list) => list,
    };
    let on_live = list.iter().filter(|p| Some(p.hash.as_str()) == live_hash).count();
    let mut out = format!("proxies:   {} reporting, {on_live} on the live bundle\n", list.len());
    for p in list {
        let lag = p
            .lag_seconds
            .map(|l| format!(", lag {l}s"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}  {}  version {}  delivered {}{lag}  reported {}s ago{}",
            one_line(&p.proxy_id),
            one_line(&p.hash),
            one_line(&p.version_id),
            when(Some(p.delivered_at as i64)),
            now.saturating_sub(p.reported_at),
            if Some(p.hash.as_str()) == live_hash { "" } else { "  (not the live bundle)" }
        );
    }
    out
}

/// Status rows whose registered revision is the quarantined one, with that revision.
async fn quarantined_entries(
    c: &Readers,
) -> Result<Vec<(gateway_adapters::registry::EntryStatus, u64)>, CmdError> {
    let reg_err = |e: gateway_adapters::registry::RegistryError| CmdError::failed(gateway_adapters::error_chain(&e));
    let statuses = c.registry.statuses().await.map_err(reg_err)?;
    let listed = c.registry.list().await.map_err(reg_err)?;
    let mut out = Vec::new();
    for stored in listed.entries {
        if let Some(st) = statuses.get(&stored.entry.id()) {
            if st.state(stored.revision) == gateway_adapters::registry::EntryState::Quarantined {
                out.push((st.clone(), stored.revision));
            }
        }
    }
    // Unreadable rows are quarantined at revision 0.
    for (key, _) in listed.unreadable {
        let id = key.strip_prefix("ENTRY#").unwrap_or(&key);
        if let Some(st) = statuses.get(id).filter(|s| s.state(0) == gateway_adapters::registry::EntryState::Quarantined) {
            out.push((st.clone(), 0));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(id: &str, hash: &str) -> ProxyReport {
        ProxyReport {
            proxy_id: id.into(),
            hash: hash.into(),
            version_id: "v1".into(),
            delivered_at: 0,
            lag_seconds: None,
            reported_at: 90,
            expires_at: 200,
        }
    }

    #[test]
    fn forged_proxy_values_print_escaped_on_their_own_line() {
        // Values a row may hold when it was written around the reader's checks.
        let forged = report("task\u{1b}[2J\nproxy-x  sha256:live", "sha256:x\u{1b}]0;owned\u{7}");
        let text = proxies_text(&Ok(vec![report("task-1", "sha256:live"), forged]), Some("sha256:live"), 100);
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "one line per proxy: {text}");
        assert_eq!(lines[0], "proxies:   2 reporting, 1 on the live bundle");
        assert!(lines[1].starts_with("  task-1  sha256:live  version v1"), "{text}");
        assert!(
            lines[2].starts_with("  task\\u{1b}[2J\\u{a}proxy-x  sha256:live  sha256:x\\u{1b}]0;owned\\u{7}  version v1"),
            "{text}"
        );
        assert!(lines[2].ends_with("(not the live bundle)"), "{text}");
    }

    #[test]
    fn no_proxies_and_unreadable_reports_say_so() {
        assert_eq!(proxies_text(&Ok(vec![]), None, 0), "proxies:   none reporting\n");
    }
}

fn op_failed_store(e: gateway_adapters::store::StoreError) -> CmdError {
    CmdError::failed(gateway_adapters::error_chain(&e))
}
