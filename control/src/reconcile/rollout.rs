//! Step 2b, rollouts (docs/design.md#rollout): each entry rolled out in `steps` is served at its
//! current step, judged once the step's interval has passed on the two revisions' own request
//! metrics, and advanced, promoted or rolled back. Runs after the checks, before the render
//! input is keyed, so a judgement that moves the share renders.

use super::run::{now, Run};
use gateway_adapters::metrics::{MetricsSink, RolloutFigures};
use gateway_adapters::registry::rollout::{Progress, Rollouts};
use gateway_adapters::registry::Registry;
use gateway_adapters::store::ConfigStore;
use gateway_render::check::parse_duration;
use gateway_render::Entry;
use tracing::{info, warn};

/// The operators' defaults and rule for judging a step (`GATEWAY_ROLLOUT_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutSettings {
    /// How much the candidate's 5xx share may exceed the stable revision's, when the team sets
    /// no `max_5xx_increase` (`GATEWAY_ROLLOUT_MAX_5XX_INCREASE`, default 0.01).
    pub max_5xx_increase: f64,
    /// How many times the stable revision's p99 the candidate's may be, when the team sets no
    /// `max_p99_ratio` (`GATEWAY_ROLLOUT_MAX_P99_RATIO`, default 1.5).
    pub max_p99_ratio: f64,
    /// The fewest candidate requests in a step's window that can be judged
    /// (`GATEWAY_ROLLOUT_MIN_REQUESTS`, default 20).
    pub min_requests: f64,
    /// Windows in a row with fewer than that before the rollout is rolled back
    /// (`GATEWAY_ROLLOUT_MAX_HOLDS`, default 3).
    pub max_holds: u32,
    /// Seconds at the start of a new candidate's first step left out of its first window
    /// (`GATEWAY_ROLLOUT_SETTLE_SECONDS`, default 60, one default metrics window of the proxies;
    /// at most half the interval): the proxies' last figures of a candidate before it, published
    /// after this one was registered, carry the same `Revision` and must not count for it.
    pub settle_seconds: u64,
    /// How many milliseconds above the stable revision's p99 the candidate's must also be before
    /// the ratio counts (`GATEWAY_ROLLOUT_P99_SLACK_MS`, default 25): Envoy's latency buckets are
    /// coarse, and 1.1 ms against 2.1 ms is a ratio of 1.9 that no user notices.
    pub p99_slack_ms: f64,
}

impl Default for RolloutSettings {
    fn default() -> Self {
        RolloutSettings { max_5xx_increase: 0.01, max_p99_ratio: 1.5, min_requests: 20.0, max_holds: 3, settle_seconds: 60, p99_slack_ms: 25.0 }
    }
}

impl RolloutSettings {
    /// From the environment; unset or empty keeps a default, anything unreadable is named.
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let mut s = RolloutSettings::default();
        let number = |name: &str, min: f64, max: f64| -> Result<Option<f64>, String> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|x| (min..=max).contains(x))
                        .ok_or_else(|| format!("{name}: {v:?} is not a number from {min} to {max}"))
                })
                .transpose()
        };
        if let Some(x) = number("GATEWAY_ROLLOUT_MAX_5XX_INCREASE", 0.0, 1.0)? {
            s.max_5xx_increase = x;
        }
        if let Some(x) = number("GATEWAY_ROLLOUT_MAX_P99_RATIO", 1.0, 100.0)? {
            s.max_p99_ratio = x;
        }
        if let Some(x) = number("GATEWAY_ROLLOUT_MIN_REQUESTS", 1.0, 1e9)? {
            s.min_requests = x;
        }
        if let Some(x) = number("GATEWAY_ROLLOUT_MAX_HOLDS", 1.0, 100.0)? {
            s.max_holds = x as u32;
        }
        if let Some(x) = number("GATEWAY_ROLLOUT_SETTLE_SECONDS", 0.0, 3600.0)? {
            s.settle_seconds = x as u64;
        }
        if let Some(x) = number("GATEWAY_ROLLOUT_P99_SLACK_MS", 0.0, 60_000.0)? {
            s.p99_slack_ms = x;
        }
        Ok(s)
    }
}

/// What a judgement decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Healthy: on to the next step (or promoted at 100).
    Advance(String),
    /// Too little traffic this window: the step is held.
    Hold(String),
    /// Unhealthy, or held too long: the stable revision serves everything.
    RollBack(String),
}

/// Judges one window of `figures` against the team's bounds (or the operators' defaults).
pub fn judge(
    figures: &RolloutFigures,
    max_5xx_increase: f64,
    max_p99_ratio: f64,
    settings: &RolloutSettings,
    holds: u32,
) -> Verdict {
    let (c, s) = (&figures.candidate, &figures.stable);
    let said = format!(
        "candidate {} requests, {:.2} % 5xx, p99 {}; stable {} requests, {:.2} % 5xx, p99 {}",
        c.requests,
        c.error_share() * 100.0,
        c.p99_ms.map_or("unknown".into(), |p| format!("{p} ms")),
        s.requests,
        s.error_share() * 100.0,
        s.p99_ms.map_or("unknown".into(), |p| format!("{p} ms")),
    );
    if c.requests < settings.min_requests {
        let why = format!(
            "too little traffic to judge: {said}; at least {} candidate requests per interval",
            settings.min_requests
        );
        return if holds + 1 >= settings.max_holds {
            Verdict::RollBack(format!("{why}, for {} intervals in a row", holds + 1))
        } else {
            Verdict::Hold(why)
        };
    }
    let increase = c.error_share() - s.error_share();
    if increase > max_5xx_increase {
        return Verdict::RollBack(format!(
            "5xx share {:.2} points above the stable revision's (at most {:.2}): {said}",
            increase * 100.0,
            max_5xx_increase * 100.0
        ));
    }
    if let (Some(cp), Some(sp)) = (c.p99_ms, s.p99_ms) {
        if sp > 0.0 && cp > sp * max_p99_ratio && cp - sp > settings.p99_slack_ms {
            return Verdict::RollBack(format!(
                "p99 {:.2} times the stable revision's (at most {max_p99_ratio}, and {} ms above it): {said}",
                cp / sp,
                settings.p99_slack_ms
            ));
        }
    }
    Verdict::Advance(format!("healthy: {said}"))
}

impl<R: Registry + Sync, S: ConfigStore + Sync> Run<'_, R, S> {
    /// Serves each judged rollout at its step, judging the steps whose interval has passed, and
    /// keeps the progress to record after the run decides. A metrics or registry failure only
    /// holds a step: it never advances one.
    pub(super) async fn rollouts<M: MetricsSink + Sync>(&mut self, metrics: &M) {
        let judged: Vec<String> = self
            .cand
            .entries
            .iter()
            .filter(|(_, e)| e.serving.is_some() && e.rollout.as_ref().is_some_and(|r| !r.steps.is_empty()))
            .map(|(id, _)| id.clone())
            .collect();
        if judged.is_empty() {
            // Nothing judged: the row is left as it is (a later rollout starts its own progress).
            return;
        }
        let read = match self.registry.read_rollouts().await {
            Ok(r) => r,
            Err(e) => {
                warn!(error = %e, "could not read rollout progress; judged rollouts hold their first step");
                Rollouts::new()
            }
        };
        let mut next = Rollouts::new();
        let at = now();
        for id in judged {
            let Some(entry) = self.cand.entries.get_mut(&id) else { continue };
            let revision = self.cand.revisions.get(&id).copied().unwrap_or(0);
            let mut progress = match read.get(&id) {
                Some(p) if p.revision == revision => p.clone(),
                _ => Progress { revision, step: 0, since: at, state: "progressing".into(), holds: 0, reason: None, ended_at: None },
            };
            if progress.state == "progressing" {
                step(entry, &mut progress, at, metrics, &self.cfg.rollout).await;
            }
            serve(entry, &progress);
            next.insert(id, progress);
        }
        self.facts.rollouts = (next != read).then_some(next);
    }
}

/// Judges `progress`'s step when its interval has passed.
async fn step<M: MetricsSink + Sync>(
    entry: &Entry,
    progress: &mut Progress,
    at: u64,
    metrics: &M,
    settings: &RolloutSettings,
) {
    let Some(rollout) = &entry.rollout else { return };
    let interval = rollout.interval.as_deref().and_then(|i| parse_duration(i).ok()).unwrap_or(60_000) / 1000;
    if at < progress.since + interval.max(1) {
        return;
    }
    // A new candidate's first window leaves out its first seconds: figures of the candidate
    // before it, published late, carry the same dimensions.
    let from = match (progress.step, progress.holds) {
        (0, 0) => progress.since + settings.settle_seconds.min(interval / 2),
        _ => progress.since,
    };
    let figures = match metrics.rollout_figures(&entry.team, &entry.service, from, at).await {
        Ok(Some(f)) => f,
        Ok(None) => return,
        Err(e) => {
            warn!(entry = %entry.id(), error = %e, "could not read the rollout's request metrics; the step is held");
            return;
        }
    };
    let as_f64 = |n: &Option<serde_json::Number>, default: f64| n.as_ref().and_then(|n| n.as_f64()).unwrap_or(default);
    let verdict = judge(
        &figures,
        as_f64(&rollout.max_5xx_increase, settings.max_5xx_increase),
        as_f64(&rollout.max_p99_ratio, settings.max_p99_ratio),
        settings,
        progress.holds,
    );
    let share = rollout.steps.get(progress.step).copied().unwrap_or(100);
    info!(entry = %entry.id(), step = progress.step, share, verdict = ?verdict, "rollout step judged");
    match verdict {
        Verdict::Advance(why) => {
            progress.step += 1;
            progress.since = at;
            progress.holds = 0;
            progress.reason = Some(format!("step {share} %: {why}"));
            if rollout.steps.get(progress.step).is_none_or(|s| *s >= 100) {
                progress.state = "promoted".into();
                progress.ended_at = Some(at);
            }
        }
        Verdict::Hold(why) => {
            progress.holds += 1;
            progress.since = at;
            progress.reason = Some(format!("step {share} % held: {why}"));
        }
        Verdict::RollBack(why) => {
            progress.state = "rolled-back".into();
            progress.ended_at = Some(at);
            progress.reason = Some(format!("rolled back at step {share} %: {why}"));
        }
    }
}

/// What the render serves of `entry` at `progress`.
fn serve(entry: &mut Entry, progress: &Progress) {
    let Some(rollout) = entry.rollout.clone() else { return };
    match progress.state.as_str() {
        "promoted" => entry.serving = None,
        "rolled-back" => {
            if let Some(s) = entry.serving.as_mut() {
                s.percent = 0;
            }
        }
        _ => {
            if let Some(s) = entry.serving.as_mut() {
                s.percent = rollout.steps.get(progress.step).copied().unwrap_or(100);
            }
            if entry.serving.as_ref().is_some_and(|s| s.percent >= 100) {
                entry.serving = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_adapters::metrics::RevisionFigures;

    fn figures(c: (f64, f64, f64), s: (f64, f64, f64)) -> RolloutFigures {
        let rev = |(requests, responses_5xx, p99): (f64, f64, f64)| RevisionFigures { requests, responses_5xx, p99_ms: Some(p99) };
        RolloutFigures { candidate: rev(c), stable: rev(s) }
    }

    #[test]
    fn a_step_advances_holds_or_rolls_back_by_the_documented_rule() {
        let s = RolloutSettings::default();
        let j = |f: &RolloutFigures, holds| judge(f, 0.05, 2.0, &s, holds);
        assert!(matches!(j(&figures((100.0, 1.0, 20.0), (400.0, 2.0, 20.0)), 0), Verdict::Advance(_)));
        match j(&figures((100.0, 50.0, 20.0), (400.0, 0.0, 20.0)), 0) {
            Verdict::RollBack(why) => assert!(why.contains("5xx share 50.00 points"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(j(&figures((100.0, 0.0, 90.0), (400.0, 0.0, 20.0)), 0), Verdict::RollBack(_)));
        // A ratio at bucket resolution of a millisecond or two is noise.
        assert!(matches!(j(&figures((100.0, 0.0, 2.1), (400.0, 0.0, 1.1)), 0), Verdict::Advance(_)));
        assert!(matches!(j(&figures((5.0, 0.0, 20.0), (400.0, 0.0, 20.0)), 0), Verdict::Hold(_)));
        match j(&figures((5.0, 0.0, 20.0), (400.0, 0.0, 20.0)), 2) {
            Verdict::RollBack(why) => assert!(why.contains("too little traffic") && why.contains("3 intervals"), "{why}"),
            other => panic!("{other:?}"),
        }
        // The stable revision's own errors are the baseline, not zero.
        assert!(matches!(j(&figures((100.0, 10.0, 20.0), (400.0, 36.0, 20.0)), 0), Verdict::Advance(_)));
    }
}
