//! `gatewayctl preview ENTRY.json|DIR`: what `register` would answer and what the next reconcile
//! would publish with the candidates in place. Writes nothing.

use super::common::JsonArg;
use super::desired::{duplicates, one_line as joined, read_entries};
use super::live::{clients, print_json, RunArgs};
use super::registry::{failed, open};
use super::terminal::{lines, one_line};
use super::{block_on, CmdError, CmdResult};
use gateway_control::operator::{diff_bundles, BundleDiff};
use gateway_control::reconcile::{self, Kept, Outcome, Preview};
use gateway_render::Entry;
use serde_json::{json, Value};

/// What `register` would answer for ENTRY.json (or each file in DIR), then what the next
/// reconcile would publish with them in place: the register function's checks and its guard
/// conflicts read from the live table (host, path prefix, backend, owner), then the run itself
/// (render, quarantine, all validation layers with the pinned Envoy), the would-be hash and the
/// per-field diff against the live bundle. Writes nothing
///
/// Exit 0 when `register` would accept every candidate and the run would publish them (or change
/// nothing); 1 when `register` would refuse one (the same message it prints), a candidate would
/// be quarantined, or the run would be rejected or held.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The candidate entry (JSON), `-` for stdin, or a directory of entry files
    #[arg(value_name = "ENTRY.json|DIR")]
    pub entry: std::path::PathBuf,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub json: JsonArg,
}

/// `register`'s answer for one candidate: `would be created|updated|unchanged (revision N)` or
/// refused with its message.
struct Verdict {
    file: String,
    id: Option<String>,
    register: Result<(String, u64), String>,
}

impl Verdict {
    fn to_json(&self) -> Value {
        let register = match &self.register {
            Ok((outcome, revision)) => json!({"verdict": outcome, "revision": revision}),
            Err(reason) => json!({"verdict": "refused", "reason": reason}),
        };
        json!({"file": self.file, "id": self.id, "register": register})
    }
}

/// `gatewayctl preview` (docs/design.md#preview).
pub fn run(args: Args) -> CmdResult {
    let (policy, cfg) = args.run.config()?;
    let files = read_entries(&args.entry, &policy)?;
    let twice = duplicates(&files);
    if !twice.is_empty() {
        return Err(CmdError::failed(twice.join("\n")));
    }
    // Without the pinned Envoy the run cannot be judged: say so before anything else.
    gateway_validator::check_envoy_version(&cfg.validate.envoy.envoy_bin).map_err(|e| {
        CmdError::failed(format!(
            "preview cannot judge the run without the pinned Envoy: {e}"
        ))
    })?;
    block_on(async {
        let registry = open(&args.run.target.table, policy.clone()).await?;
        let mut verdicts = Vec::new();
        let mut candidates: Vec<Entry> = Vec::new();
        for file in &files {
            let (id, register) = match &file.entry {
                Err(why) => (None, Err(why.clone())),
                Ok(entry) => {
                    let answer = match registry.plan_register(entry).await {
                        Ok(o) => Ok((format!("would be {}", o.as_str()), o.revision())),
                        Err(e) => Err(failed(e).message),
                    };
                    if answer.is_ok() {
                        candidates.push(entry.clone());
                    }
                    (Some(entry.id()), answer)
                }
            };
            verdicts.push(Verdict {
                file: file.shown.clone(),
                id,
                register,
            });
        }
        let refused: Vec<&Verdict> = verdicts.iter().filter(|v| v.register.is_err()).collect();
        if !refused.is_empty() {
            // As `register` would answer: nothing is run past the refusal.
            if args.json.json {
                print_json(&json!({
                    "entries": verdicts.iter().map(Verdict::to_json).collect::<Vec<_>>(),
                    "outcome": null,
                    "hash": null,
                }))?;
            } else {
                print_register_verdicts(&verdicts);
            }
            let message = refused
                .iter()
                .filter_map(|v| v.register.as_ref().err())
                .cloned()
                .collect::<Vec<_>>()
                .join("\n");
            return Err(CmdError::failed(message));
        }
        let c = clients(&args.run.target, policy, false).await?;
        let p = reconcile::preview(&c.registry, &c.store, &cfg, &candidates)
            .await
            .map_err(|e| {
                CmdError::failed(format!("failed: {}", gateway_adapters::error_chain(&e)))
            })?;
        report(&args, &verdicts, &candidates, &p)
    })
}

fn print_register_verdicts(verdicts: &[Verdict]) {
    for v in verdicts {
        let who = v.id.as_deref().unwrap_or(&v.file);
        match &v.register {
            Ok((outcome, revision)) => {
                println!("{who}: register: {outcome} (revision {revision})")
            }
            Err(reason) => println!("{who}: register: refused: {}", joined(reason)),
        }
    }
}

/// The would-be hash: the bundle the run would publish, or the live one when nothing changes.
fn would_be_hash(p: &Preview) -> Option<String> {
    match (&p.report.outcome, &p.would_publish) {
        (_, Some(b)) => Some(b.hash.clone()),
        (Outcome::Unchanged { hash }, None) => Some(hash.clone()),
        _ => None,
    }
}

/// What the run would do, in preview's words (nothing is written, so no version or `failed/`
/// object is named).
fn run_line(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Published { hash, routes, .. } => {
            format!("would publish {hash} ({routes} routes)")
        }
        Outcome::Unchanged { hash } => format!("nothing would change ({hash} is live)"),
        Outcome::Rejected { stage, reason, .. } => {
            format!("would be rejected at {stage}: {}", lines(reason))
        }
        other => other.to_string(),
    }
}

/// Why nothing the candidates change would go out, when the run would not publish.
fn held(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Published { .. } | Outcome::Unchanged { .. } => None,
        Outcome::Rejected { stage, .. } => Some(format!("the run would be rejected at {stage}")),
        Outcome::HeldDrift { .. } => Some("every publish is held (drift)".into()),
        Outcome::KeptLive { reason } => Some(format!("the live config would be kept: {reason}")),
    }
}

fn report(args: &Args, verdicts: &[Verdict], candidates: &[Entry], p: &Preview) -> CmdResult {
    let hash = would_be_hash(p);
    let diff: Option<BundleDiff> = match (&p.live, &p.would_publish) {
        (Some(live), Some(next)) => Some(diff_bundles(live, next)),
        // Nothing would change: no change to list.
        (Some(live), None) if matches!(p.report.outcome, Outcome::Unchanged { .. }) => {
            Some(diff_bundles(live, live))
        }
        _ => None,
    };
    let blocked = held(&p.report.outcome);
    let quarantined = |id: &str| p.report.quarantined.iter().find(|q| q.id == id);
    let publish_json = |id: &str| match (quarantined(id), &blocked) {
        (Some(q), _) => q.to_json(),
        (None, Some(why)) => json!({"id": id, "state": "would not publish", "reason": why}),
        (None, None) => json!({"id": id, "state": "would publish"}),
    };
    if args.json.json {
        let entries: Vec<Value> = verdicts
            .iter()
            .map(|v| {
                let mut doc = v.to_json();
                if let Some(id) = &v.id {
                    doc["publish"] = publish_json(id);
                }
                doc
            })
            .collect();
        let mut doc = json!({
            "entries": entries,
            "outcome": p.report.outcome.to_json(),
            "quarantined": p.report.quarantined.iter().map(|q| q.to_json()).collect::<Vec<_>>(),
            "hash": hash,
            "validations": p.report.validations,
            "diff": diff.as_ref().map(|d| d.to_json()),
        });
        if let [only] = candidates {
            doc["entry"] = json!(only.id());
            doc["candidate"] = publish_json(&only.id());
        }
        print_json(&doc)?;
    } else {
        print_register_verdicts(verdicts);
        for e in candidates {
            let id = e.id();
            match (quarantined(&id), &blocked) {
                (Some(q), _) => println!(
                    "{id}: would be QUARANTINED at {} ({}): {}",
                    q.stage,
                    if q.kept == Kept::Previous {
                        "its live version stays"
                    } else {
                        "left out"
                    },
                    lines(&q.reason)
                ),
                (None, Some(why)) => println!("{id}: would not publish: {why}"),
                (None, None) => println!("{id}: would publish"),
            }
        }
        println!("run:  {}", run_line(&p.report.outcome));
        for q in p
            .report
            .quarantined
            .iter()
            .filter(|q| !candidates.iter().any(|c| c.id() == q.id))
        {
            println!("also quarantined: {} ({})", one_line(&q.id), q.stage);
        }
        match &hash {
            Some(h) => println!("hash: {h}"),
            None => println!("hash: none (nothing would be published)"),
        }
        if let Some(d) = &diff {
            for change in &d.changes {
                println!("{}", one_line(&change.to_string()));
            }
        }
    }
    let set_aside: Vec<String> = candidates
        .iter()
        .map(Entry::id)
        .filter(|id| quarantined(id).is_some())
        .collect();
    if !set_aside.is_empty() {
        return Err(CmdError::failed(format!(
            "{} would be quarantined",
            set_aside.join(", ")
        )));
    }
    match &p.report.outcome {
        Outcome::Rejected { reason, .. } => Err(CmdError::failed(reason.clone())),
        other => match blocked {
            Some(why) => Err(CmdError::failed(format!("{why}: {other}"))),
            None => Ok(()),
        },
    }
}
