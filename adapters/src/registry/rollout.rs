//! Rollouts in the registry (docs/design.md#rollout), the part without I/O: which stable
//! revision a registration is rolled out beside, what the operators' promote and abort (which
//! change no entry, owner or revision) make of the registered one, the reconciler's progress and
//! the view `gatewayctl` shows. `rollout_rows.rs` reads and writes them in the table.

use super::keys::{self, Item};
use super::RegistryError;
use gateway_render::{Entry, Problem, Rejection, Serving};

/// The entry row's attribute holding an operator's decision on the registered revision's
/// rollout: `promote:REVISION` or `abort:REVISION`. Every registration replaces the row, so a
/// new revision starts without one.
pub const ATTR_ROLLOUT_DECISION: &str = "rollout_decision";

/// An operator's word on a rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The candidate serves everything: what reaching 100 % does.
    Promote,
    /// The stable revision serves everything again.
    Abort,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Promote => "promote",
            Decision::Abort => "abort",
        }
    }
}

/// What registering `new` stores, given the stored entry and its revision: `new` itself, with
/// `serving` set when it is rolled out beside a stable revision. The stable revision is the stored
/// one, or while a rollout is still open the stable one it has (a promoted rollout's candidate
/// becomes the next stable: promoted by an operator, which serves it at 100, or by its last
/// step, which `promoted` says). No stored entry, no rollout, `percent: 100`, or nothing to
/// change from the stable one: `new` serves everything.
pub fn staged(new: &Entry, current: Option<(&Entry, u64)>, promoted: bool) -> Result<Entry, RegistryError> {
    let mut out = new.clone();
    out.serving = None;
    let Some(rollout) = &new.rollout else {
        return Ok(out);
    };
    let percent = rollout.percent.or_else(|| rollout.steps.first().copied()).unwrap_or(100);
    let Some((stored, revision)) = current else {
        return Ok(out);
    };
    if percent >= 100 {
        return Ok(out);
    }
    let (mut stable, stable_revision) = match &stored.serving {
        Some(s) if s.percent < 100 && !promoted => (s.stable.clone(), s.stable_revision),
        _ => (stored.clone(), revision),
    };
    stable.rollout = None;
    stable.serving = None;
    let mut unchanged = out.clone();
    unchanged.rollout = None;
    if unchanged == stable {
        return Ok(out);
    }
    if stable.host != out.host {
        return Err(RegistryError::Rejected(Rejection {
            problems: vec![Problem {
                field: "host".into(),
                reason: format!(
                    "a rollout cannot move the service from host {:?} to {:?}: its cohort cookie belongs to one host; register the new host without rollout",
                    stable.host, out.host
                ),
            }],
        }));
    }
    out.serving = Some(Box::new(Serving { stable, stable_revision, percent }));
    Ok(out)
}

/// The entry as served once an operator's decision on its revision is applied: promote ends the
/// rollout on the candidate (share 100), abort on the stable revision (share 0). The stable
/// revision stays in the row, so its guards and backend claims are released by the next
/// registration, as any revision's are.
pub(crate) fn apply_decision(entry: &mut Entry, revision: u64, item: &Item) {
    let Some((decision, of)) = decision_of(item) else {
        return;
    };
    if of != revision {
        return;
    }
    match decision {
        Decision::Promote => {
            if let Some(s) = entry.serving.as_mut() {
                s.percent = 100;
            }
        }
        Decision::Abort => {
            if let Some(s) = entry.serving.as_mut() {
                s.percent = 0;
            }
        }
    }
}

/// The decision stored on an entry row, and the revision it is about.
pub fn decision_of(item: &Item) -> Option<(Decision, u64)> {
    let raw = keys::get_s(item, ATTR_ROLLOUT_DECISION)?;
    let (word, revision) = raw.split_once(':')?;
    let decision = match word {
        "promote" => Decision::Promote,
        "abort" => Decision::Abort,
        _ => return None,
    };
    Some((decision, revision.parse().ok()?))
}

/// What `gatewayctl rollout promote|abort` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub id: String,
    pub revision: u64,
    pub decision: Decision,
}

/// Where an entry's rollout stands, as `gatewayctl rollout status` and `status` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutView {
    pub id: String,
    /// The registered revision (the candidate while a rollout is open).
    pub revision: u64,
    /// The team's `rollout` field as registered.
    pub rollout: Option<gateway_render::Rollout>,
    /// The stable revision it is rolled out beside, and the share registered for the candidate.
    pub stable_revision: Option<u64>,
    pub percent: Option<u32>,
    /// An operator's promote or abort of this revision.
    pub decision: Option<Decision>,
    /// A judged rollout's progress, as the reconciler last recorded it for this revision.
    pub progress: Option<Progress>,
}

impl RolloutView {
    /// `rolling-out`, `promoted`, `aborted` or `none` (nothing rolled out: a new entry, no
    /// `rollout`, or promoted by registering without it).
    pub fn state(&self) -> &'static str {
        match (self.stable_revision, self.decision, self.progress.as_ref().map(|p| p.state.as_str())) {
            (None, _, _) => "none",
            (Some(_), Some(Decision::Promote), _) => "promoted",
            (Some(_), Some(Decision::Abort), _) => "aborted",
            (Some(_), None, Some("promoted")) => "promoted",
            (Some(_), None, Some("rolled-back")) => "rolled-back",
            (Some(_), None, _) => "rolling-out",
        }
    }

    /// The candidate's share of requests now: 100 when nothing is rolled out or it was promoted,
    /// 0 when aborted.
    pub fn serving_percent(&self) -> u32 {
        match self.state() {
            "rolling-out" => match (&self.progress, &self.rollout) {
                (Some(p), Some(r)) if !r.steps.is_empty() => r.steps.get(p.step).copied().unwrap_or(100),
                _ => self.percent.unwrap_or(100),
            },
            "aborted" | "rolled-back" => 0,
            _ => 100,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "state": self.state(),
            "revision": self.revision,
            "stable_revision": self.stable_revision,
            "percent": self.serving_percent(),
            "rollout": self.rollout,
            "decision": self.decision.map(Decision::as_str),
            "step": self.progress.as_ref().map(|p| p.step),
            "step_since": self.progress.as_ref().map(|p| p.since),
            "reason": self.progress.as_ref().and_then(|p| p.reason.clone()),
            "cookie": gateway_render::rollout::cookie_name(self.id.split_once('/').map_or("", |(_, s)| s)),
        })
    }
}

/// The reconciler's row of rollout progress, under its `STATE` key (docs/design.md#rollout).
pub const ROLLOUTS_SK: &str = "ROLLOUTS";

/// Where one entry's judged rollout (`steps`) stands, kept by the reconciler between runs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    /// The registered revision being rolled out; another revision starts again at its first step.
    pub revision: u64,
    /// The index into `steps` being served.
    pub step: usize,
    /// When the step began (unix seconds).
    pub since: u64,
    /// `progressing`, `promoted` or `rolled-back`.
    pub state: String,
    /// Judgements in a row at this step that had too little traffic.
    #[serde(default)]
    pub holds: u32,
    /// Why the last judgement went as it did, with its figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the rollout ended (promoted or rolled back), unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
}

/// Every entry's progress, by id.
pub type Rollouts = std::collections::BTreeMap<String, Progress>;

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_render::check::check_entry_bytes;
    use gateway_render::Policy;

    fn entry(rewrite: &str, rollout: &str) -> Entry {
        let text = format!(
            r#"{{"team":"t","service":"s","host":"h","backend":"http://10.0.0.1","routes":[{{"path":"/a","rewrite":"{rewrite}"}}]{rollout}}}"#
        );
        check_entry_bytes(text.as_bytes(), &Policy::new("api.example.com", false)).unwrap()
    }

    #[test]
    fn a_rollout_stands_beside_the_stored_revision_and_keeps_it_while_open() {
        let v1 = entry("/v1", "");
        let v2 = entry("/v2", r#","rollout":{"percent":20}"#);
        let staged2 = staged(&v2, Some((&v1, 1)), false).unwrap();
        let s = staged2.serving.as_ref().unwrap();
        assert_eq!((s.stable.clone(), s.stable_revision, s.percent), (v1.clone(), 1, 20));
        // A new candidate while the rollout is open keeps the same stable revision.
        let v3 = entry("/v3", r#","rollout":{"percent":50}"#);
        let staged3 = staged(&v3, Some((&staged2, 2)), false).unwrap();
        assert_eq!(staged3.serving.as_ref().unwrap().stable_revision, 1);
        // Without rollout, at 100, or for a new entry: no serving.
        assert!(staged(&entry("/v4", ""), Some((&staged3, 3)), false).unwrap().serving.is_none());
        assert!(staged(&entry("/v4", r#","rollout":{"percent":100}"#), Some((&staged3, 3)), false).unwrap().serving.is_none());
        assert!(staged(&v2, None, false).unwrap().serving.is_none());
        // The same content as the stable revision: nothing to roll out.
        assert!(staged(&entry("/v1", r#","rollout":{"percent":20}"#), Some((&v1, 1)), false).unwrap().serving.is_none());
        // A promoted candidate is the next stable: by an operator (served at 100) or by its last
        // step.
        let mut promoted = staged2.clone();
        promoted.serving.as_mut().unwrap().percent = 100;
        let staged5 = staged(&entry("/v5", r#","rollout":{"percent":10}"#), Some((&promoted, 2)), false).unwrap();
        assert_eq!(staged5.serving.unwrap().stable_revision, 2);
        let staged6 = staged(&entry("/v6", r#","rollout":{"percent":10}"#), Some((&staged2, 2)), true).unwrap();
        assert_eq!(staged6.serving.unwrap().stable_revision, 2);
    }

    #[test]
    fn a_rollout_cannot_move_the_host() {
        let v1 = entry("/v1", "");
        let mut v2 = entry("/v2", r#","rollout":{"percent":20}"#);
        v2.host = "other".into();
        match staged(&v2, Some((&v1, 1)), false) {
            Err(RegistryError::Rejected(r)) => assert_eq!(r.problems[0].field, "host"),
            other => panic!("{other:?}"),
        }
    }
}

