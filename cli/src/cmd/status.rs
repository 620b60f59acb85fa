//! `gatewayctl seed | reconcile | status | history | diff | kill-switch | restore | resume`: the
//! operator's commands on the live config, thin over `gateway_functions::{reconcile, operator}`.

use super::common::{DomainArg, EnvoyArg, LoopbackArg};
use super::registry::TableArg;
use super::{block_on, CmdError, CmdResult};
use gateway_functions::aws::{caller_identity, dynamodb_client, sdk_config};
use gateway_functions::metrics::CloudWatchMetrics;
use gateway_functions::operator::{self, diff_bundles, load_bundle, OperatorError};
use gateway_functions::reconcile::{self, ReconcileConfig};
use gateway_functions::registry::DynamoRegistry;
use gateway_functions::store::{s3_client, ConfigStore, S3Store};
use gateway_render::contract::KILL_SWITCH_RUNTIME_KEY;
use gateway_render::{Policy, RenderConfig};
use gateway_validator::{EnvoyOptions, ValidateOptions};
use serde_json::{json, Value};
use std::io::{BufRead, IsTerminal, Write};

#[derive(clap::Args, Debug, Clone)]
pub struct BucketArg {
    /// The versioned config bucket
    #[arg(long = "bucket", env = "GATEWAY_BUCKET", value_name = "BUCKET")]
    pub bucket: String,
}

/// Where the live config is and what decides it.
#[derive(clap::Args, Debug, Clone)]
pub struct Target {
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub bucket: BucketArg,
}

#[derive(clap::Args, Debug, Clone, Copy)]
pub struct JsonArg {
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    pub json: bool,
}

/// Create the first bundle with a conditional put (never overwrites a published config)
#[derive(clap::Args, Debug)]
pub struct SeedArgs {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub domain: DomainArg,
    #[command(flatten)]
    pub loopback: LoopbackArg,
    #[command(flatten)]
    pub envoy: EnvoyArg,
}

/// One reconcile run, the same code as the Lambda; prints what it decided in one line
///
/// Exit 0 when it published, found nothing to do, kept the live config or held on drift (the
/// line says which); 1 when the render was rejected or the run failed.
#[derive(clap::Args, Debug)]
pub struct ReconcileArgs {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub domain: DomainArg,
    #[command(flatten)]
    pub loopback: LoopbackArg,
    #[command(flatten)]
    pub envoy: EnvoyArg,
    #[command(flatten)]
    pub json: JsonArg,
}

/// What the next reconcile would publish with ENTRY.json in place: checks, conflicts, render,
/// all validation layers with the pinned Envoy, the would-be hash and the per-route diff against
/// the live bundle. Writes nothing
#[derive(clap::Args, Debug)]
pub struct PreviewArgs {
    /// The candidate entry (JSON), or `-` for stdin
    #[arg(value_name = "ENTRY.json")]
    pub entry: std::path::PathBuf,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub domain: DomainArg,
    #[command(flatten)]
    pub loopback: LoopbackArg,
    #[command(flatten)]
    pub envoy: EnvoyArg,
    #[command(flatten)]
    pub json: JsonArg,
}

/// The live bundle: version, hash, who wrote it, drift, entries and routes
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// One entry, `TEAM/SERVICE`: its registered and published revisions and its state
    /// (pending, published or quarantined with stage and reason). Without it: the gateway's
    /// status and every quarantined entry.
    #[arg(value_name = "TEAM/SERVICE")]
    pub entry: Option<String>,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub json: JsonArg,
}

/// Recent bundle versions, newest first, and which was the reconciler's
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// How many versions
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub json: JsonArg,
}

/// What changed between two bundle versions, per team and route
///
/// With no versions: the reconciler's last publish → the live bundle. With one: that version →
/// the live bundle.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// From this version (default: the reconciler's last publish)
    pub from: Option<String>,
    /// To this version (default: the live bundle)
    pub to: Option<String>,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub json: JsonArg,
}

/// Stop all traffic: publish the 503 bundle (level 2), or flip one proxy's runtime flag (level 1)
///
/// Level 2 goes through the bucket and every sidecar, survives restarts, and holds the
/// reconciler on drift until `gatewayctl restore` (or `resume`). Level 1 (`--runtime --admin
/// URL`) acts on one Envoy within seconds and is forgotten on restart; `--off` lifts it.
#[derive(clap::Args, Debug)]
pub struct KillSwitchArgs {
    /// Level 1: set the kill-switch runtime flag through this Envoy's admin endpoint
    #[arg(long, requires = "admin")]
    pub runtime: bool,
    /// Envoy's admin for --runtime: unix:/PATH (production: unix:/run/envoy/admin.sock, through
    /// ECS Exec) or http://127.0.0.1:9901 (local runs)
    #[arg(long, value_name = "URL")]
    pub admin: Option<String>,
    /// Lift the level-1 flag (with --runtime)
    #[arg(long, requires = "runtime")]
    pub off: bool,
    /// Do not ask for confirmation
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The config bucket (level 2)
    #[arg(long = "bucket", env = "GATEWAY_BUCKET", value_name = "BUCKET")]
    pub bucket: Option<String>,
    #[command(flatten)]
    pub domain: DomainArg,
    #[command(flatten)]
    pub json: JsonArg,
}

/// Make an earlier bundle version live again (default: the reconciler's last good publish)
#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// The version to restore (see `gatewayctl history`)
    #[arg(value_name = "VERSION")]
    pub version_id: Option<String>,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub json: JsonArg,
}

/// Accept the live bundle as the reconciler's own: clears drift; the next run publishes the registry again
#[derive(clap::Args, Debug)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub json: JsonArg,
}

struct Clients {
    registry: DynamoRegistry,
    store: S3Store,
    metrics: CloudWatchMetrics,
}

/// Clients for `target`. Commands that write a bundle version (`writes`) look up the caller's
/// principal once, so the version records who wrote it.
async fn clients(target: &Target, policy: Policy, writes: bool) -> Clients {
    let conf = sdk_config().await;
    let base_domain = policy.base_domain.clone();
    Clients {
        registry: DynamoRegistry::new(
            dynamodb_client(&conf),
            target.table.table.clone(),
            base_domain,
        )
        .with_policy(policy),
        store: store(&conf, target.bucket.bucket.clone(), writes).await,
        metrics: CloudWatchMetrics::from_conf(&conf),
    }
}

async fn store(conf: &aws_config::SdkConfig, bucket: String, writes: bool) -> S3Store {
    // A bad GATEWAY_MAX_BUNDLE_BYTES is refused by the commands that render; reading, the
    // default bound applies.
    let max = gateway_functions::settings::bounds()
        .map(|b| b.max_bundle_bytes)
        .unwrap_or(gateway_render::bounds::DEFAULT_MAX_BUNDLE_BYTES);
    let store = S3Store::new(s3_client(conf), bucket).with_max_bundle_bytes(max);
    if writes {
        store.with_identity(caller_identity(conf).await)
    } else {
        store
    }
}

fn reconcile_config(
    domain: &str,
    policy: Policy,
    envoy: &EnvoyArg,
) -> Result<ReconcileConfig, CmdError> {
    let bounds =
        gateway_functions::settings::bounds().map_err(|e| CmdError::usage(e.to_string()))?;
    Ok(ReconcileConfig {
        render: gateway_functions::settings::render_config(domain),
        policy,
        validate: ValidateOptions {
            envoy: EnvoyOptions::new(envoy.envoy_bin.clone()),
            skip_envoy: false,
        },
        backends: Default::default(),
        bounds,
        quarantine: gateway_functions::settings::quarantine()
            .map_err(|e| CmdError::usage(e.to_string()))?,
    })
}

fn op_failed(err: OperatorError) -> CmdError {
    let hint = match &err {
        OperatorError::Store(gateway_functions::store::StoreError::NotFound(_)) => {
            "\nlist the versions with `gatewayctl history`"
        }
        OperatorError::BadBundle { .. } => {
            "\nthe sidecars would refuse it too; pick another version (`gatewayctl history`)"
        }
        _ => "",
    };
    CmdError::failed(format!("{err}{hint}"))
}

fn print_json(doc: &Value) -> CmdResult {
    println!(
        "{}",
        serde_json::to_string_pretty(doc).map_err(|e| CmdError::failed(e.to_string()))?
    );
    Ok(())
}

fn when(epoch: Option<i64>) -> String {
    epoch
        .map(super::time::format_utc)
        .unwrap_or_else(|| "-".into())
}

pub fn seed(args: SeedArgs) -> CmdResult {
    let domain = args.domain.get()?.to_string();
    let policy = args.loopback.policy(&domain)?;
    let cfg = reconcile_config(&domain, policy.clone(), &args.envoy)?;
    block_on(async {
        let c = clients(&args.target, policy, true).await;
        let outcome = reconcile::seed(&c.registry, &c.store, &cfg)
            .await
            .map_err(|e| CmdError::failed(e.to_string()))?;
        println!("{outcome}");
        Ok(())
    })
}

pub fn reconcile(args: ReconcileArgs) -> CmdResult {
    let domain = args.domain.get()?.to_string();
    let policy = args.loopback.policy(&domain)?;
    let cfg = reconcile_config(&domain, policy.clone(), &args.envoy)?;
    block_on(async {
        let c = clients(&args.target, policy, true).await;
        let outcome = reconcile::reconcile(&c.registry, &c.store, &c.metrics, &cfg)
            .await
            .map_err(|e| CmdError::failed(format!("failed: {e}")))?;
        if args.json.json {
            print_json(&outcome.to_json())?;
        } else {
            println!("{outcome}");
        }
        match outcome {
            reconcile::Outcome::Rejected { reason, .. } => Err(CmdError::failed(reason)),
            _ => Ok(()),
        }
    })
}

/// `gatewayctl preview` (docs/design.md#preview). Exit 1 when the candidate would be
/// quarantined or the run would reject.
pub fn preview(args: PreviewArgs) -> CmdResult {
    let domain = args.domain.get()?.to_string();
    let policy = args.loopback.policy(&domain)?;
    let cfg = reconcile_config(&domain, policy.clone(), &args.envoy)?;
    // The file must parse as an entry; its rule problems are the preview's verdict below.
    let (name, bytes) = super::check::read_input(&args.entry)?;
    let candidate: gateway_render::Entry = serde_json::from_slice(&bytes)
        .map_err(|e| CmdError::failed(format!("{name}: not an entry: {e}")))?;
    block_on(async {
        let c = clients(&args.target, policy, false).await;
        let p = reconcile::preview(&c.registry, &c.store, &cfg, &candidate)
            .await
            .map_err(|e| CmdError::failed(format!("failed: {e}")))?;
        let id = candidate.id();
        let verdict = p.report.quarantined.iter().find(|q| q.id == id);
        let hash = match (&p.report.outcome, &p.would_publish) {
            (_, Some(b)) => Some(b.hash.clone()),
            (reconcile::Outcome::Unchanged { hash }, None) => Some(hash.clone()),
            _ => None,
        };
        let diff = match (&p.live, &p.would_publish) {
            (Some(live), Some(next)) => Some(diff_bundles(live, next)),
            _ => None,
        };
        if args.json.json {
            print_json(&json!({
                "entry": id,
                "outcome": p.report.outcome.to_json(),
                "candidate": match verdict {
                    Some(q) => q.to_json(),
                    None => json!({"id": id, "state": "would publish"}),
                },
                "quarantined": p.report.quarantined.iter().map(|q| q.to_json()).collect::<Vec<_>>(),
                "hash": hash,
                "validations": p.report.validations,
                "diff": diff.as_ref().map(|d| d.to_json()),
            }))?;
        } else {
            match verdict {
                Some(q) => println!(
                    "{id}: would be QUARANTINED at {} ({}): {}",
                    q.stage,
                    if q.kept == reconcile::Kept::Previous { "its live version stays" } else { "left out" },
                    q.reason
                ),
                None => println!("{id}: would publish"),
            }
            println!("run:  {}", p.report.outcome);
            for q in p.report.quarantined.iter().filter(|q| q.id != id) {
                println!("also quarantined: {} ({})", q.id, q.stage);
            }
            match &hash {
                Some(h) => println!("hash: {h}"),
                None => println!("hash: none (nothing would be published)"),
            }
            if let Some(d) = &diff {
                for change in &d.changes {
                    println!("{change}");
                }
            }
        }
        if verdict.is_some() {
            return Err(CmdError::failed(format!("{id} would be quarantined")));
        }
        match p.report.outcome {
            reconcile::Outcome::Rejected { reason, .. } => Err(CmdError::failed(reason)),
            _ => Ok(()),
        }
    })
}

/// `gatewayctl status TEAM/SERVICE` (docs/design.md#entry-status).
fn entry_status(target: &Target, id: &str, json: bool) -> CmdResult {
    block_on(async {
        let c = clients(target, Policy::new("", false), false).await;
        let reg_err = |e: gateway_functions::registry::RegistryError| CmdError::failed(e.to_string());
        let stored = c.registry.get(id).await.map_err(reg_err)?;
        let status = c.registry.status(id).await.map_err(reg_err)?;
        let Some(stored) = stored else {
            return Err(CmdError::failed(format!(
                "{id} is not registered{}",
                if status.is_some() { " (a status row remains from before it was deregistered)" } else { "" }
            )));
        };
        let status = status.unwrap_or_else(|| gateway_functions::registry::EntryStatus {
            id: id.to_string(),
            ..Default::default()
        });
        let now = gateway_functions::registry::proxies::unix_now();
        let serving = match c.registry.proxies().current(now).await {
            Ok(reports) => {
                let mut cache = gateway_functions::serving::BundleCache::new(&c.store);
                Ok(gateway_functions::serving::live_on(&mut cache, id, &status, &reports).await)
            }
            Err(e) => Err(e.to_string()),
        };
        if json {
            let mut doc = status.to_json(Some(stored.revision));
            doc["serving"] = match &serving {
                Ok(on) => on.to_json(now),
                Err(e) => serde_json::json!({ "error": format!("proxy reports unreadable: {e}") }),
            };
            return print_json(&doc);
        }
        let state = status.state(stored.revision);
        println!("entry:      {id}");
        println!("registered: revision {}", stored.revision);
        match status.revision_published {
            Some(r) => println!(
                "published:  revision {r}, first in bundle version {} ({})",
                status.version_id.as_deref().unwrap_or("?"),
                status.hash.as_deref().unwrap_or("?")
            ),
            None => println!("published:  never"),
        }
        println!("state:      {}", state.as_str());
        if let Some(q) = status.quarantine.as_ref().filter(|q| q.revision == stored.revision) {
            println!("stage:      {}", q.stage);
            println!(
                "served:     {}",
                if q.kept == "previous" { "the previously published revision" } else { "nothing (left out)" }
            );
            println!("reason:     {}", q.reason.replace('\n', "\n            "));
            println!("details:    failed/quarantine/{id}/reason.txt");
        }
        match &serving {
            Err(e) => println!("serving:    unknown: proxy reports unreadable: {e}"),
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
                        p.proxy.proxy_id,
                        p.why.as_deref().unwrap_or("does not serve it")
                    );
                }
            }
        }
        Ok(())
    })
}

pub fn status(args: StatusArgs) -> CmdResult {
    if let Some(id) = &args.entry {
        return entry_status(&args.target, id, args.json.json);
    }
    block_on(async {
        let c = clients(&args.target, Policy::new("", false), false).await;
        let quarantined = quarantined_entries(&c).await?;
        let s = operator::status(&c.registry, &c.store)
            .await
            .map_err(op_failed)?;
        let now = gateway_functions::registry::proxies::unix_now();
        let proxies = c.registry.proxies().current(now).await;
        if args.json.json {
            let mut doc = s.to_json();
            doc["quarantined"] = quarantined.iter().map(|(st, r)| st.to_json(Some(*r))).collect();
            doc["proxies"] = match &proxies {
                Ok(list) => list.iter().map(|p| p.to_json(now)).collect(),
                Err(e) => serde_json::json!({ "error": format!("proxy reports unreadable: {e}") }),
            };
            return print_json(&doc);
        }
        match &s.live {
            None => println!(
                "live:      none — no bundle.json in {}; run `gatewayctl seed`",
                c.store.bucket()
            ),
            Some(l) => {
                println!(
                    "live:      version {} ({})",
                    l.version_id,
                    l.hash.as_deref().unwrap_or("no hash metadata")
                );
                let by = l
                    .written_by
                    .as_deref()
                    .map(|p| format!(" ({p})"))
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
                r.version_id,
                r.hash,
                when(Some(r.published_at as i64)),
                if s.is_reconcilers() {
                    " — that is the live bundle"
                } else {
                    ""
                }
            ),
        }
        println!("entries:   {}  routes: {}", s.entries, s.routes);
        if let Some(problem) = &s.problem {
            println!("problem:   {problem}");
        }
        if s.drift {
            println!(
                "drift:     YES — the reconciler publishes nothing until the live hash matches its last publish.\n           \
                 `gatewayctl restore` puts its last good version back; `gatewayctl resume` accepts the live one."
            );
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
                    println!("  {} ({}, {}): {first}", st.id, q.stage, q.kept);
                }
            }
        }
        print_proxies(&proxies, s.live.as_ref().and_then(|l| l.hash.as_deref()), now);
        Ok(())
    })
}

/// The reporting proxies: what each serves and how old its report is
/// (docs/design.md#proxy-reports).
fn print_proxies(
    proxies: &Result<Vec<gateway_functions::registry::ProxyReport>, gateway_functions::registry::RegistryError>,
    live_hash: Option<&str>,
    now: u64,
) {
    let list = match proxies {
        Err(e) => return println!("proxies:   unknown: proxy reports unreadable: {e}"),
        Ok(list) if list.is_empty() => {
            return println!("proxies:   none reporting")
        }
        Ok(list) => list,
    };
    let on_live = list.iter().filter(|p| Some(p.hash.as_str()) == live_hash).count();
    println!("proxies:   {} reporting, {on_live} on the live bundle", list.len());
    for p in list {
        let lag = p
            .lag_seconds
            .map(|l| format!(", lag {l}s"))
            .unwrap_or_default();
        println!(
            "  {}  {}  version {}  delivered {}{lag}  reported {}s ago{}",
            p.proxy_id,
            p.hash,
            p.version_id,
            when(Some(p.delivered_at as i64)),
            now.saturating_sub(p.reported_at),
            if Some(p.hash.as_str()) == live_hash { "" } else { "  (not the live bundle)" }
        );
    }
}

/// Status rows whose registered revision is the quarantined one, with that revision.
async fn quarantined_entries(
    c: &Clients,
) -> Result<Vec<(gateway_functions::registry::EntryStatus, u64)>, CmdError> {
    let reg_err = |e: gateway_functions::registry::RegistryError| CmdError::failed(e.to_string());
    let statuses = c.registry.statuses().await.map_err(reg_err)?;
    let listed = c.registry.list().await.map_err(reg_err)?;
    let mut out = Vec::new();
    for stored in listed.entries {
        if let Some(st) = statuses.get(&stored.entry.id()) {
            if st.state(stored.revision) == gateway_functions::registry::EntryState::Quarantined {
                out.push((st.clone(), stored.revision));
            }
        }
    }
    // Unreadable rows are quarantined at revision 0.
    for (key, _) in listed.unreadable {
        let id = key.strip_prefix("ENTRY#").unwrap_or(&key);
        if let Some(st) = statuses.get(id).filter(|s| s.state(0) == gateway_functions::registry::EntryState::Quarantined) {
            out.push((st.clone(), 0));
        }
    }
    Ok(out)
}

pub fn history(args: HistoryArgs) -> CmdResult {
    block_on(async {
        let c = clients(&args.target, Policy::new("", false), false).await;
        let items = operator::history(&c.registry, &c.store, args.limit)
            .await
            .map_err(op_failed)?;
        if args.json.json {
            return print_json(&Value::Array(items.iter().map(|i| i.to_json()).collect()));
        }
        println!(
            "{:<34}  {:<20}  {:<12}  {:>6}  {:<19}  NOTE",
            "VERSION", "WRITTEN (UTC)", "BY", "ROUTES", "HASH"
        );
        for i in &items {
            let mut notes = Vec::new();
            if i.is_live {
                notes.push("live");
            }
            if i.is_reconcilers_last {
                notes.push("reconciler's last publish");
            }
            if i.deleted {
                notes.push("delete marker");
            }
            let hash = i
                .hash
                .as_deref()
                .map(|h| h.chars().take(19).collect::<String>())
                .unwrap_or_else(|| "-".into());
            println!(
                "{:<34}  {:<20}  {:<12}  {:>6}  {:<19}  {}",
                i.version_id,
                when(i.last_modified),
                i.writer.as_str(),
                i.routes
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "-".into()),
                hash,
                notes.join(", ")
            );
        }
        Ok(())
    })
}

pub fn diff(args: DiffArgs) -> CmdResult {
    block_on(async {
        let c = clients(&args.target, Policy::new("", false), false).await;
        let from = match args.from {
            Some(v) => v,
            None => gateway_functions::registry::Registry::read_state(&c.registry)
                .await
                .map_err(|e| CmdError::failed(e.to_string()))?
                .map(|s| s.version_id)
                .ok_or_else(|| {
                    CmdError::failed(
                        "the reconciler has recorded no publish yet; name two versions",
                    )
                })?,
        };
        let to = match args.to {
            Some(v) => v,
            None => c
                .store
                .head_live()
                .await
                .map_err(|e| CmdError::failed(e.to_string()))?
                .map(|l| l.version_id)
                .ok_or_else(|| CmdError::failed("there is no live bundle.json"))?,
        };
        let a = load_bundle(&c.store, &from).await.map_err(op_failed)?;
        let b = load_bundle(&c.store, &to).await.map_err(op_failed)?;
        let d = diff_bundles(&a, &b);
        if args.json.json {
            let mut doc = d.to_json();
            doc["from_version"] = json!(from);
            doc["to_version"] = json!(to);
            return print_json(&doc);
        }
        println!("{from} ({}) -> {to} ({})", d.from_hash, d.to_hash);
        if d.changes.is_empty() {
            if d.from_hash == d.to_hash {
                println!("no changes");
            } else {
                println!("no entry changes (the rendered files differ: a kill-switch bundle or a renderer change)");
            }
        }
        for change in &d.changes {
            println!("{change}");
        }
        Ok(())
    })
}

fn confirm(question: &str) -> Result<bool, CmdError> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(CmdError::usage(format!(
            "{question} — refusing without a terminal to confirm; pass --yes"
        )));
    }
    eprint!("{question} [y/N] ");
    std::io::stderr().flush().ok();
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|e| CmdError::failed(e.to_string()))?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

pub fn kill_switch(args: KillSwitchArgs) -> CmdResult {
    if args.runtime {
        let admin = args.admin.clone().unwrap_or_default();
        let endpoint: gateway_envoy_admin::AdminEndpoint =
            admin
                .parse()
                .map_err(|e: gateway_envoy_admin::AdminError| {
                    CmdError::usage(format!("--admin: {e}"))
                })?;
        let value = if args.off { 0 } else { 100 };
        return block_on(async move {
            let path = format!("/runtime_modify?{KILL_SWITCH_RUNTIME_KEY}={value}");
            let client = gateway_envoy_admin::AdminClient::new(endpoint.clone());
            let resp = client
                .post(&path)
                .await
                .map_err(|e| CmdError::failed(format!("{e}\nis Envoy's admin listening there?")))?;
            if !resp.is_success() {
                return Err(CmdError::failed(format!(
                    "{endpoint}{path}: Envoy answered {}",
                    resp.status
                )));
            }
            let state = if value == 100 {
                "ON: every request answers 503"
            } else {
                "off"
            };
            if args.json.json {
                print_json(&json!({"level": 1, "admin": admin, "kill_switch": value == 100}))
            } else {
                println!(
                    "kill switch (level 1) on {admin}: {state}; forgotten when this Envoy restarts"
                );
                Ok(())
            }
        });
    }
    let bucket = args.bucket.clone().ok_or_else(|| {
        CmdError::usage("the config bucket is required: pass --bucket or set GATEWAY_BUCKET")
    })?;
    let domain = args.domain.get()?.to_string();
    if !args.yes && !confirm(&format!("Publish the kill-switch bundle to {bucket}? Every request on every proxy will answer 503"))? {
        return Err(CmdError::failed("not confirmed; nothing published"));
    }
    block_on(async move {
        let conf = sdk_config().await;
        let store = store(&conf, bucket, true).await;
        let (version, hash) = operator::kill_switch(&store, &RenderConfig::new(domain))
            .await
            .map_err(op_failed)?;
        if args.json.json {
            print_json(&json!({"level": 2, "version_id": version, "hash": hash}))
        } else {
            println!(
                "kill switch (level 2) published as version {version} ({hash}); the sidecars deliver it within one poll.\n\
                 The reconciler now holds on drift. Undo with `gatewayctl restore`."
            );
            Ok(())
        }
    })
}

pub fn restore(args: RestoreArgs) -> CmdResult {
    block_on(async {
        let c = clients(&args.target, Policy::new("", false), true).await;
        let (version, hash) = operator::restore(&c.registry, &c.store, args.version_id.as_deref())
            .await
            .map_err(op_failed)?;
        if args.json.json {
            return print_json(&json!({"version_id": version, "hash": hash}));
        }
        println!("restored {hash} as version {version}; the sidecars deliver it within one poll");
        Ok(())
    })
}

pub fn resume(args: ResumeArgs) -> CmdResult {
    block_on(async {
        let c = clients(&args.target, Policy::new("", false), false).await;
        let state = operator::resume(&c.registry, &c.store)
            .await
            .map_err(op_failed)?;
        if args.json.json {
            return print_json(&json!({"version_id": state.version_id, "hash": state.hash}));
        }
        println!(
            "accepted version {} ({}) as the reconciler's; the next run publishes the registry's render if it differs",
            state.version_id, state.hash
        );
        Ok(())
    })
}
