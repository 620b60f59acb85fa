//! Quarantine: a stored entry that fails the checks, fails to render or makes Envoy reject the
//! config is set aside, and everything else publishes (docs/design.md#quarantine).
//!
//! A quarantined entry keeps the version the live bundle's `entries` hold (when that version
//! still passes the checks), or is left out when it never published. Its registry rows, guards
//! included, are untouched: nobody can take its host or paths meanwhile.

use super::Stage;
use gateway_render::check::{check_entry, Policy};
use gateway_render::Entry;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// How far quarantine may go before a run rejects as a whole.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuarantineLimits {
    /// Largest share of registered teams (0.0–1.0) whose entries quarantine may hold back, once
    /// at least two teams are held; beyond it the run rejects and publishes nothing.
    /// `GATEWAY_QUARANTINE_MAX_SHARE`, default 0.25.
    pub max_share: f64,
    /// Envoy validations the run-wide search (which teams fail) may spend, the first full
    /// validation included, and again each failing team's own search (which of its entries).
    /// `GATEWAY_QUARANTINE_MAX_VALIDATIONS`, default 24.
    pub max_validations: usize,
    /// Seconds one run may spend narrowing. `GATEWAY_QUARANTINE_MAX_SECONDS`, default 90: the
    /// reconcile function times out at 3 minutes, and the search is checked between validations.
    pub max_seconds: u64,
}

pub const DEFAULT_MAX_SHARE: f64 = 0.25;
/// Teams that must be held back before the share valve can reject a run: one team's failures,
/// however many, never stop the others' publish.
pub const MIN_TEAMS_FOR_THE_VALVE: usize = 2;
pub const DEFAULT_MAX_VALIDATIONS: usize = 24;
pub const DEFAULT_MAX_SECONDS: u64 = 90;

impl Default for QuarantineLimits {
    fn default() -> Self {
        QuarantineLimits {
            max_share: DEFAULT_MAX_SHARE,
            max_validations: DEFAULT_MAX_VALIDATIONS,
            max_seconds: DEFAULT_MAX_SECONDS,
        }
    }
}

impl QuarantineLimits {
    /// `GATEWAY_QUARANTINE_MAX_SHARE`, `GATEWAY_QUARANTINE_MAX_VALIDATIONS` and
    /// `GATEWAY_QUARANTINE_MAX_SECONDS` from the environment (the defaults above when unset).
    pub fn from_env() -> Result<QuarantineLimits, gateway_adapters::settings::InvalidSetting> {
        let var = |name: &str| std::env::var(name).ok();
        QuarantineLimits::from_values(
            var("GATEWAY_QUARANTINE_MAX_SHARE").as_deref(),
            var("GATEWAY_QUARANTINE_MAX_VALIDATIONS").as_deref(),
            var("GATEWAY_QUARANTINE_MAX_SECONDS").as_deref(),
        )
        .map_err(gateway_adapters::settings::InvalidSetting)
    }

    /// Reads the three settings; a value that does not parse or is out of range names itself.
    pub fn from_values(
        share: Option<&str>,
        validations: Option<&str>,
        seconds: Option<&str>,
    ) -> Result<QuarantineLimits, String> {
        let mut limits = QuarantineLimits::default();
        if let Some(v) = share.map(str::trim).filter(|v| !v.is_empty()) {
            match v.parse::<f64>() {
                Ok(s) if (0.0..=1.0).contains(&s) => limits.max_share = s,
                _ => {
                    return Err(format!(
                        "GATEWAY_QUARANTINE_MAX_SHARE: {v:?} is not a share between 0 and 1"
                    ))
                }
            }
        }
        if let Some(v) = validations.map(str::trim).filter(|v| !v.is_empty()) {
            match v.parse::<usize>() {
                Ok(n) if n >= 2 => limits.max_validations = n,
                _ => return Err(format!(
                    "GATEWAY_QUARANTINE_MAX_VALIDATIONS: {v:?} is not a whole number of at least 2"
                )),
            }
        }
        if let Some(v) = seconds.map(str::trim).filter(|v| !v.is_empty()) {
            match v.parse::<u64>() {
                Ok(n) if n >= 1 => limits.max_seconds = n,
                _ => {
                    return Err(format!(
                        "GATEWAY_QUARANTINE_MAX_SECONDS: {v:?} is not a whole number of seconds"
                    ))
                }
            }
        }
        Ok(limits)
    }
}

/// What a quarantined entry is served as meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kept {
    /// The version in the live bundle's `entries` is still served.
    Previous,
    /// It never published (or its published version fails the checks now): it is left out.
    LeftOut,
}

impl Kept {
    pub fn as_str(self) -> &'static str {
        match self {
            Kept::Previous => "previous",
            Kept::LeftOut => "left-out",
        }
    }
}

/// One entry set aside by a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Quarantined {
    /// `team/service`.
    pub id: String,
    pub team: String,
    pub stage: Stage,
    /// Every problem, or Envoy's exact message.
    pub reason: String,
    pub kept: Kept,
}

impl Quarantined {
    pub fn to_json(&self) -> serde_json::Value {
        crate::to_json(self)
    }

    /// `failed/quarantine/{team}/{service}/reason.txt`'s text.
    pub fn report(&self) -> String {
        format!(
            "entry: {}\nstage: {}\nserved meanwhile: {}\n\n{}\n",
            self.id,
            self.stage,
            match self.kept {
                Kept::Previous => "the version in the live bundle",
                Kept::LeftOut => "nothing (left out of the bundle)",
            },
            self.reason
        )
    }
}

/// The team of an id or of an unreadable row's key (`ENTRY#team/service`).
pub fn team_of(id: &str) -> String {
    let id = id.strip_prefix("ENTRY#").unwrap_or(id);
    id.split('/').next().unwrap_or(id).to_string()
}

/// The entry ids a render error names (one, or both sides of a conflict).
pub fn ids_in_render_error(e: &gateway_render::RenderError) -> Vec<String> {
    use gateway_render::RenderError as R;
    let strip = |s: &str| s.split(" (").next().unwrap_or(s).to_string();
    match e {
        R::DuplicateEntry { entry }
        | R::Backend { entry, .. }
        | R::Limit { entry, .. }
        | R::DuplicateRule { entry, .. } => vec![entry.clone()],
        R::HostConflict { first, second, .. } | R::PathConflict { first, second, .. } => {
            vec![strip(first), strip(second)]
        }
        R::Serialize { .. } => Vec::new(),
    }
}

/// Envoy's refusal of one entry revision, isolated to that entry: remembered across runs
/// (`STATE` / `VERDICTS`) under `key`, the digest of what the verdict was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub key: String,
    /// The validation layer that refused it.
    pub layer: String,
    pub reason: String,
}

/// The candidate set: entries by id, with what each was before quarantine replaced it.
#[derive(Debug, Clone, Default)]
pub struct Candidate {
    pub entries: BTreeMap<String, Entry>,
    pub quarantined: Vec<Quarantined>,
    /// Routes each registered entry asks for (an unreadable row counts one).
    pub registered_routes: BTreeMap<String, usize>,
    /// Each registered entry's revision (an unreadable row's is 0).
    pub revisions: BTreeMap<String, u64>,
    /// When each readable entry was last written (unix seconds): the newest growth past a bound
    /// is set aside first.
    pub updated_at: BTreeMap<String, u64>,
    /// Entries a validation refused on their own, this run or (remembered) an earlier one.
    pub refused: BTreeMap<String, Refusal>,
}

impl Candidate {
    /// Sets `id` aside: its previous version (when it passes the checks) or nothing.
    pub fn quarantine(
        &mut self,
        id: &str,
        stage: Stage,
        reason: String,
        previous: &BTreeMap<String, Entry>,
        policy: &Policy,
        bad_previous: &[String],
    ) {
        let prev = previous.get(id).filter(|p| {
            check_entry(p, policy).is_ok()
                && !bad_previous.iter().any(|b| b == id)
                && self.entries.get(id) != Some(*p)
        });
        let kept = match prev {
            Some(p) => {
                self.entries.insert(id.to_string(), p.clone());
                Kept::Previous
            }
            None => {
                self.entries.remove(id);
                Kept::LeftOut
            }
        };
        if let Some(q) = self.quarantined.iter_mut().find(|q| q.id == id) {
            // Its previous version failed as well: it is left out, both reasons kept.
            q.reason = format!("{}\n{stage}: {reason}", q.reason);
            q.kept = Kept::LeftOut;
            self.entries.remove(id);
            return;
        }
        self.quarantined.push(Quarantined {
            id: id.to_string(),
            team: team_of(id),
            stage,
            reason,
            kept,
        });
    }

    /// Whether `id` is quarantined and served at its previous version meanwhile.
    pub fn kept_previous(&self, id: &str) -> bool {
        self.quarantined
            .iter()
            .any(|q| q.id == id && q.kept == Kept::Previous)
    }

    /// Stops serving a quarantined entry's previous version: it is left out, `why` added.
    pub fn drop_kept(&mut self, id: &str, why: String) {
        if let Some(q) = self.quarantined.iter_mut().find(|q| q.id == id) {
            q.kept = Kept::LeftOut;
            q.reason = format!("{}\n{why}", q.reason);
            self.entries.remove(id);
        }
    }

    pub fn is_quarantined(&self, id: &str) -> bool {
        self.quarantined.iter().any(|q| q.id == id)
    }

    /// `Some(reason)` when quarantine went too far: every entry, or entries of more than the
    /// share of teams. One team's quarantine, however many of its entries, is that team's: the
    /// valve is for a cause many teams share (a rule, a build or an Envoy that refuses what
    /// everyone registered), where publishing the rest would silently drop most of the gateway.
    pub fn too_much(&self, limits: &QuarantineLimits) -> Option<String> {
        if self.quarantined.is_empty() {
            return None;
        }
        let registered = self.registered_routes.len();
        if self.quarantined.len() >= registered {
            return Some(format!(
                "every registered entry ({registered}) failed; nothing is left to publish"
            ));
        }
        let teams: BTreeSet<String> = self.registered_routes.keys().map(|id| team_of(id)).collect();
        let held: BTreeSet<&str> = self.quarantined.iter().map(|q| q.team.as_str()).collect();
        let share = held.len() as f64 / teams.len().max(1) as f64;
        (held.len() >= MIN_TEAMS_FOR_THE_VALVE && share > limits.max_share).then(|| {
            format!(
                "quarantine would hold back entries of {} of {} teams ({:.0}%), more than GATEWAY_QUARANTINE_MAX_SHARE {:.0}%: a cause this many teams share is not one team's entry",
                held.len(),
                teams.len(),
                share * 100.0,
                limits.max_share * 100.0
            )
        })
    }

    pub fn list(&self) -> Vec<Entry> {
        self.entries.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quarantined_entry_writes_the_json_readers_know() {
        for (kept, name) in [(Kept::Previous, "previous"), (Kept::LeftOut, "left-out")] {
            let q = Quarantined {
                id: "billing/x".into(),
                team: "billing".into(),
                stage: Stage::Validation("envoy".into()),
                reason: "why".into(),
                kept,
            };
            assert_eq!(kept.as_str(), name);
            assert_eq!(
                serde_json::to_string(&q.to_json()).expect("json"),
                format!(
                    r#"{{"id":"billing/x","kept":"{name}","reason":"why","stage":"validation (envoy)","team":"billing"}}"#
                )
            );
        }
    }

    #[test]
    fn settings_parse_and_name_themselves() {
        let d = QuarantineLimits::from_values(None, None, Some(" ")).expect("defaults");
        assert_eq!(d, QuarantineLimits::default());
        let s = QuarantineLimits::from_values(Some("0.5"), Some("8"), Some("60")).expect("set");
        assert_eq!(
            (s.max_share, s.max_validations, s.max_seconds),
            (0.5, 8, 60)
        );
        let e = QuarantineLimits::from_values(Some("1.5"), None, None).expect_err("share");
        assert!(e.starts_with("GATEWAY_QUARANTINE_MAX_SHARE"), "{e}");
        let e = QuarantineLimits::from_values(None, Some("1"), None).expect_err("runs");
        assert!(e.starts_with("GATEWAY_QUARANTINE_MAX_VALIDATIONS"), "{e}");
    }

    #[test]
    fn teams_come_from_ids_and_row_keys() {
        assert_eq!(team_of("billing/invoices"), "billing");
        assert_eq!(team_of("ENTRY#billing/invoices"), "billing");
    }
}
