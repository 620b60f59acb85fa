//! Step 3, render: skipped when its result is already recorded, published and live; otherwise
//! rendered, setting aside the entry a render error names until the render passes.

use super::publish::reject;
use super::quarantine::{ids_in_render_error, Candidate};
use super::read::Standing;
use super::render_skip::reusable_hash;
use super::run::{Run, Step};
use super::{Outcome, ReconcileError, Stage};
use gateway_adapters::registry::Registry;
use gateway_adapters::store::ConfigStore;
use gateway_render::{render, Entry, Rendered};
use std::collections::BTreeMap;
use tracing::info;

impl<R: Registry + Sync, S: ConfigStore + Sync> Run<'_, R, S> {
    /// Every entry was checked and every backend resolved again; only the render is skipped,
    /// and only when its result is already recorded, published and live.
    pub(super) fn skip_render(&mut self, standing: Option<&Standing>) -> Step<()> {
        let Some(standing) = standing else {
            return Step::Next(());
        };
        self.facts.render.recorded = standing.render.clone();
        let (state, live) = (standing.state.as_ref(), standing.live.as_ref());
        let record = standing.render.as_ref();
        match reusable_hash(self.input.as_deref(), record, state, live) {
            Some(hash) => {
                info!(
                    %hash,
                    "entries, configuration and build as recorded for the live bundle; not rendered"
                );
                self.facts.render.skipped = true;
                self.facts.basis.unchanged_on = standing.state.clone();
                Step::Decided(Outcome::Unchanged { hash })
            }
            None => Step::Next(()),
        }
    }

    /// Renders the candidate. A render error names entries: the one to blame is set aside and
    /// the rest rendered again, until the render passes or quarantine goes too far.
    pub(super) async fn render(&mut self) -> Result<Step<Rendered>, ReconcileError> {
        let cfg = self.cfg;
        loop {
            let e = match render(&self.cand.list(), &cfg.render) {
                Ok(rendered) => return Ok(Step::Next(rendered)),
                Err(e) => e,
            };
            let (cand, prev, _) = self.with_previous().await?;
            let stop = match blame(&ids_in_render_error(&e), cand, prev) {
                // The guard holder wins: a quarantined entry's kept last-good version that now
                // clashes with another entry's host or paths (released since, and claimed by
                // its new holder) is dropped, and the holder's entry renders.
                Blame::KeptVersion { kept, holder } => {
                    cand.drop_kept(&kept, format!(
                        "its last published version is no longer served: {e}; {holder} holds that host or path now"
                    ));
                    None
                }
                Blame::Entry(id) => {
                    cand.quarantine(&id, Stage::Render, e.to_string(), prev, &cfg.policy, &[]);
                    cand.too_much(&cfg.quarantine)
                }
                Blame::Nobody => Some("the error names no entry that can be set aside".to_string()),
            };
            if let Some(why) = stop {
                let reason = format!("{e}\n{why}");
                return Ok(Step::Decided(reject(self.store, Stage::Render, reason, None).await?));
            }
        }
    }
}

/// Whom a render error that names `ids` is blamed on.
#[derive(Debug, PartialEq)]
enum Blame {
    /// A quarantined entry's kept previous version, clashing with `holder`'s entry.
    KeptVersion { kept: String, holder: String },
    /// The named entry that changed since the live bundle (else the last one named).
    Entry(String),
    Nobody,
}

fn blame(ids: &[String], cand: &Candidate, prev: &BTreeMap<String, Entry>) -> Blame {
    if let Some(kept) = ids.iter().find(|id| cand.kept_previous(id)) {
        let holder = ids.iter().find(|id| *id != kept).cloned().unwrap_or_default();
        return Blame::KeptVersion {
            kept: kept.clone(),
            holder,
        };
    }
    ids.iter()
        .find(|id| !cand.is_quarantined(id) && prev.get(*id) != cand.entries.get(*id))
        .or_else(|| ids.iter().rev().find(|id| !cand.is_quarantined(id)))
        .map_or(Blame::Nobody, |id| Blame::Entry(id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::{Kept, Quarantined};

    fn entry(service: &str, backend: &str) -> Entry {
        serde_json::from_value(serde_json::json!({
            "team": "billing", "service": service, "host": service,
            "backend": backend, "routes": [{"path": "/"}]
        }))
        .expect("an entry")
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| format!("billing/{n}")).collect()
    }

    fn candidate(entries: &[Entry]) -> Candidate {
        let mut cand = Candidate::default();
        for e in entries {
            cand.entries.insert(e.id(), e.clone());
        }
        cand
    }

    #[test]
    fn the_changed_entry_is_blamed_before_the_unchanged_one() {
        let (a, b) = (entry("a", "http://a:80"), entry("b", "http://b:80"));
        let cand = candidate(&[a.clone(), entry("b", "http://b2:80")]);
        let prev = BTreeMap::from([(a.id(), a), (b.id(), b)]);
        assert_eq!(blame(&ids(&["a", "b"]), &cand, &prev), Blame::Entry("billing/b".into()));
    }

    #[test]
    fn with_nothing_changed_the_last_named_is_blamed() {
        let (a, b) = (entry("a", "http://a:80"), entry("b", "http://b:80"));
        let cand = candidate(&[a.clone(), b.clone()]);
        let prev = BTreeMap::from([(a.id(), a), (b.id(), b)]);
        assert_eq!(blame(&ids(&["a", "b"]), &cand, &prev), Blame::Entry("billing/b".into()));
    }

    #[test]
    fn a_kept_previous_version_gives_way_to_the_holder() {
        let (a, b) = (entry("a", "http://a:80"), entry("b", "http://b:80"));
        let mut cand = candidate(&[a.clone(), b]);
        cand.quarantined.push(Quarantined {
            id: a.id(),
            team: "billing".into(),
            stage: Stage::Registry,
            reason: "bad".into(),
            kept: Kept::Previous,
        });
        let blamed = blame(&ids(&["a", "b"]), &cand, &BTreeMap::new());
        assert_eq!(
            blamed,
            Blame::KeptVersion { kept: "billing/a".into(), holder: "billing/b".into() }
        );
    }

    #[test]
    fn an_error_naming_only_set_aside_entries_blames_nobody() {
        let a = entry("a", "http://a:80");
        let mut cand = candidate(&[]);
        cand.quarantined.push(Quarantined {
            id: a.id(),
            team: "billing".into(),
            stage: Stage::Registry,
            reason: "bad".into(),
            kept: Kept::LeftOut,
        });
        assert_eq!(blame(&ids(&["a"]), &cand, &BTreeMap::new()), Blame::Nobody);
        assert_eq!(blame(&[], &cand, &BTreeMap::new()), Blame::Nobody);
    }
}
