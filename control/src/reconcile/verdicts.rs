//! Envoy's verdicts remembered across runs (docs/design.md#quarantine): a revision a validation
//! refused on its own is set aside by later runs before they render, so a known-bad revision
//! costs no validation again. A verdict holds for exactly what it judged (`render_skip::
//! verdict_key`: the build, the render configuration and the entry as registered); a new
//! revision, another build or another configuration is judged afresh.

use super::quarantine::{Candidate, Refusal};
use super::render_skip::{verdict_key, BuildIdentity};
use gateway_adapters::registry::{Registry, RegistryError, Verdict};
use gateway_render::RenderConfig;

/// The verdicts a run read, and those it found should be kept (`None`: it did not get as far
/// as judging them, and the row is left as it is).
#[derive(Debug, Default)]
pub(super) struct VerdictFacts {
    pub read: Vec<Verdict>,
    pub next: Option<Vec<Verdict>>,
}

/// The remembered verdicts that still apply: the entry is registered at that revision and its
/// key is the one judged.
pub(super) fn still_apply(
    cand: &Candidate,
    read: &[Verdict],
    build: &BuildIdentity,
    render: &RenderConfig,
) -> Vec<Verdict> {
    read.iter()
        .filter(|v| cand.revisions.get(&v.id) == Some(&v.revision))
        .filter(|v| {
            cand.entries
                .get(&v.id)
                .and_then(|e| verdict_key(build, render, e))
                .is_some_and(|key| key == v.key)
        })
        .cloned()
        .collect()
}

/// A remembered verdict as this run's refusal.
pub(super) fn refusal(v: &Verdict) -> Refusal {
    Refusal {
        key: v.key.clone(),
        layer: v.stage.clone(),
        reason: v.reason.clone(),
    }
}

/// What to keep after this run: every refusal the candidate holds, at its registered revision,
/// keeping when it was first refused.
pub(super) fn to_keep(cand: &Candidate, read: &[Verdict], now: u64) -> Vec<Verdict> {
    cand.refused
        .iter()
        .filter_map(|(id, r)| {
            let revision = *cand.revisions.get(id)?;
            let since = read
                .iter()
                .find(|v| v.id == *id && v.revision == revision && v.key == r.key)
                .map_or(now, |v| v.since);
            Some(Verdict {
                id: id.clone(),
                revision,
                key: r.key.clone(),
                stage: r.layer.clone(),
                reason: r.reason.clone(),
                since,
            })
        })
        .collect()
}

/// Replaces the row when what to keep differs from what was read.
pub(super) async fn record<R: Registry>(
    registry: &R,
    facts: &VerdictFacts,
) -> Result<(), RegistryError> {
    match &facts.next {
        Some(next) if same(next, &facts.read) => Ok(()),
        Some(next) => registry.record_verdicts(next).await,
        None => Ok(()),
    }
}

fn same(a: &[Verdict], b: &[Verdict]) -> bool {
    let key = |v: &Verdict| (v.id.clone(), v.revision, v.key.clone());
    let mut a: Vec<_> = a.iter().map(key).collect();
    let mut b: Vec<_> = b.iter().map(key).collect();
    a.sort();
    b.sort();
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_render::Entry;

    fn entry(team: &str) -> Entry {
        serde_json::from_value(serde_json::json!({
            "team": team, "service": "svc", "host": team, "backend": "http://b.example:80",
            "routes": [ { "path": "/a" } ]
        }))
        .expect("entry")
    }

    fn cand_with(id: &str, e: Entry, revision: u64) -> Candidate {
        let mut cand = Candidate::default();
        cand.entries.insert(id.to_string(), e);
        cand.revisions.insert(id.to_string(), revision);
        cand
    }

    fn verdict(cand: &Candidate, id: &str, build: &BuildIdentity, cfg: &RenderConfig) -> Verdict {
        Verdict {
            id: id.into(),
            revision: cand.revisions[id],
            key: verdict_key(build, cfg, &cand.entries[id]).expect("key"),
            stage: "layer 3 (envoy --mode validate)".into(),
            reason: "refused".into(),
            since: 7,
        }
    }

    #[test]
    fn a_verdict_holds_for_exactly_what_it_judged() {
        let build = BuildIdentity::named("b1");
        let cfg = RenderConfig::new("api.example.com");
        let cand = cand_with("a/svc", entry("a"), 3);
        let v = verdict(&cand, "a/svc", &build, &cfg);
        assert_eq!(still_apply(&cand, &[v.clone()], &build, &cfg), [v.clone()]);
        // Another revision, another content at the same revision, another build, another
        // configuration: judged again.
        let newer = cand_with("a/svc", entry("a"), 4);
        assert!(still_apply(&newer, &[v.clone()], &build, &cfg).is_empty());
        let mut edited = entry("a");
        edited.host = "other".into();
        let rewritten = cand_with("a/svc", edited, 3);
        assert!(still_apply(&rewritten, &[v.clone()], &build, &cfg).is_empty());
        assert!(still_apply(&cand, &[v.clone()], &BuildIdentity::named("b2"), &cfg).is_empty());
        let other_cfg = RenderConfig::new("gw.example.org");
        assert!(still_apply(&cand, &[v.clone()], &build, &other_cfg).is_empty());
        // An unknown build remembers nothing.
        assert!(still_apply(&cand, &[v], &BuildIdentity::unknown(), &cfg).is_empty());
    }

    #[test]
    fn kept_verdicts_keep_their_first_refusal_time() {
        let build = BuildIdentity::named("b1");
        let cfg = RenderConfig::new("api.example.com");
        let mut cand = cand_with("a/svc", entry("a"), 3);
        let v = verdict(&cand, "a/svc", &build, &cfg);
        cand.refused.insert("a/svc".into(), refusal(&v));
        let kept = to_keep(&cand, &[v.clone()], 100);
        assert_eq!(kept, [v.clone()]);
        assert_eq!(to_keep(&cand, &[], 100)[0].since, 100);
        assert!(same(&kept, &[v]));
    }
}
