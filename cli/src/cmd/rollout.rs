//! `gatewayctl rollout status|promote|abort TEAM/SERVICE`: where a rollout stands, and the
//! operators' word on it (docs/design.md#rollout). Promote and abort change no entry, owner or
//! revision: they tell the reconciler what to serve of the registered revision.

use super::common::{DomainArg, TableArg};
use super::registry::{failed, is_id, open};
use super::{block_on, CmdError, CmdResult};
use gateway_adapters::registry::rollout::{Decision, RolloutView};
use gateway_render::Policy;

/// Look at or decide a rollout
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Where the entry's rollout stands: revisions, share, cookie, decision
    Status(Target),
    /// Serve the candidate to every request now (ends the rollout)
    Promote(Target),
    /// Serve the stable revision to every request again (ends the rollout)
    Abort(Target),
}

#[derive(clap::Args, Debug)]
pub struct Target {
    /// The entry's id
    #[arg(value_name = "TEAM/SERVICE")]
    pub id: String,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub table: TableArg,
    #[command(flatten)]
    pub domain: DomainArg,
}

pub fn run(args: Args) -> CmdResult {
    let (target, decision) = match args.action {
        Action::Status(t) => (t, None),
        Action::Promote(t) => (t, Some(Decision::Promote)),
        Action::Abort(t) => (t, Some(Decision::Abort)),
    };
    if !is_id(&target.id) {
        return Err(CmdError::usage(format!("{:?} is not a TEAM/SERVICE id", target.id)));
    }
    block_on(async {
        let registry = open(&target.table, Policy::new(target.domain.get()?, false)).await?;
        if let Some(decision) = decision {
            let done = registry.decide_rollout(&target.id, decision).await.map_err(failed)?;
            if !target.json {
                println!(
                    "{}: {} of revision {} recorded; the next reconcile run serves {}",
                    done.id,
                    done.decision.as_str(),
                    done.revision,
                    match decision {
                        Decision::Promote => "the candidate to every request",
                        Decision::Abort => "the stable revision to every request",
                    }
                );
            }
        }
        let Some(view) = registry.rollout_view(&target.id).await.map_err(failed)? else {
            return Err(CmdError::failed(format!("{} is not registered", target.id)));
        };
        if target.json {
            println!("{}", view.to_json());
        } else if decision.is_none() {
            print!("{}", describe(&view));
        }
        Ok(())
    })
}

/// The human form of a rollout's standing.
pub fn describe(view: &RolloutView) -> String {
    match (view.state(), view.stable_revision) {
        ("rolling-out", Some(stable)) => format!(
            "{}: rolling out revision {} to {}% of requests beside stable revision {} (cohort cookie {}){}\n",
            view.id,
            view.revision,
            view.serving_percent(),
            stable,
            gateway_render::rollout::cookie_name(view.id.split_once('/').map_or("", |(_, s)| s)),
            match &view.progress {
                Some(p) => format!("; step {} since {}{}", p.step + 1, p.since, p.reason.as_deref().map(|r| format!("; last judged: {r}")).unwrap_or_default()),
                None => String::new(),
            },
        ),
        ("promoted", _) if view.decision.is_some() => format!("{}: revision {} promoted by an operator: it serves every request\n", view.id, view.revision),
        ("promoted", _) => format!(
            "{}: revision {} promoted: it serves every request ({})\n",
            view.id,
            view.revision,
            view.progress.as_ref().and_then(|p| p.reason.as_deref()).unwrap_or("its last step passed"),
        ),
        ("rolled-back", Some(stable)) => format!(
            "{}: revision {} ROLLED BACK: stable revision {stable} serves every request; {}\n",
            view.id,
            view.revision,
            view.progress.as_ref().and_then(|p| p.reason.as_deref()).unwrap_or(""),
        ),
        ("aborted", Some(stable)) => format!(
            "{}: rollout of revision {} aborted by an operator: stable revision {stable} serves every request\n",
            view.id, view.revision
        ),
        _ => format!("{}: revision {} serves every request (no rollout)\n", view.id, view.revision),
    }
}
