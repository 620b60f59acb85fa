//! `rollout`: a fixed share (`percent`) or steps the gateway judges (docs/design.md#rollout).

use super::duration::{envoy_duration, parse_duration};
use super::fields::{object, reject_unknown, string};
use super::report::{child, describe, index, quote, Problems};
use super::Policy;
use crate::entry::Rollout;
use serde_json::Value;

const ROLLOUT_FIELDS: [&str; 5] = ["percent", "steps", "interval", "max_5xx_increase", "max_p99_ratio"];
/// At most this many steps.
pub const MAX_ROLLOUT_STEPS: usize = 10;
/// The longest step interval a team may ask for.
pub const MAX_ROLLOUT_INTERVAL_MS: u64 = 24 * 60 * 60 * 1000;
/// `GATEWAY_MIN_ROLLOUT_INTERVAL` when unset: two of the sidecars' default metrics windows, so a
/// step is judged on at least one whole window of each proxy.
pub const DEFAULT_MIN_ROLLOUT_INTERVAL_MS: u64 = 2 * 60 * 1000;

pub(crate) fn rollout(v: &Value, field: &str, policy: &Policy, problems: &mut Problems) -> Option<Rollout> {
    let map = object(v, field, "a rollout", problems)?;
    reject_unknown(map, field, &ROLLOUT_FIELDS, problems);
    let before = problems.0.len();
    let mut out = Rollout::default();
    match (map.get("percent"), map.get("steps")) {
        (Some(_), Some(_)) => problems.push(field, "either percent (a fixed share) or steps (judged by the gateway), not both"),
        (None, None) => problems.push(field, "needs percent (a fixed share, 0-100) or steps (shares the gateway moves through, ending at 100)"),
        (Some(p), None) => {
            out.percent = share(p, &child(field, "percent"), 0, problems);
            for judged in ["interval", "max_5xx_increase", "max_p99_ratio"] {
                if map.contains_key(judged) {
                    problems.push(child(field, judged), "only with steps: a fixed percent is never judged");
                }
            }
        }
        (None, Some(s)) => {
            out.steps = steps(s, &child(field, "steps"), problems).unwrap_or_default();
            let at = child(field, "interval");
            match map.get("interval") {
                None => problems.push(&at, "required with steps: how long each step lasts before it is judged"),
                Some(v) => {
                    if let Some(s) = string(v, &at, problems) {
                        match check_rollout_interval(s, policy.min_rollout_interval_ms) {
                            Ok(_) => out.interval = Some(s.to_string()),
                            Err(why) => problems.push(&at, why),
                        }
                    }
                }
            }
            out.max_5xx_increase = bounded_number(map.get("max_5xx_increase"), &child(field, "max_5xx_increase"), 0.0, 1.0, "a share of answers", problems);
            out.max_p99_ratio = bounded_number(map.get("max_p99_ratio"), &child(field, "max_p99_ratio"), 1.0, 100.0, "a ratio of p99 latencies", problems);
        }
    }
    (problems.0.len() == before).then_some(out)
}

/// A whole number from `min` to 100.
fn share(v: &Value, field: &str, min: u64, problems: &mut Problems) -> Option<u32> {
    match v.as_u64() {
        Some(n) if (min..=100).contains(&n) => Some(n as u32),
        _ => {
            problems.push(field, format!("expected a whole number from {min} to 100, got {}", describe(v)));
            None
        }
    }
}

fn steps(v: &Value, field: &str, problems: &mut Problems) -> Option<Vec<u32>> {
    let Value::Array(items) = v else {
        problems.push(field, format!("expected a list of shares, got {}", describe(v)));
        return None;
    };
    if items.is_empty() || items.len() > MAX_ROLLOUT_STEPS {
        problems.push(field, format!("has {} steps; 1 to {MAX_ROLLOUT_STEPS}", items.len()));
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = index(field, i);
        let n = share(item, &at, 1, problems)?;
        if let Some(&last) = out.last() {
            if n <= last {
                problems.push(&at, format!("is {n}, not above the step before ({last}); steps only grow"));
                return None;
            }
        }
        out.push(n);
    }
    if out.last() != Some(&100) {
        problems.push(field, "must end at 100: the last step promotes the revision (use percent to hold a share)");
        return None;
    }
    Some(out)
}

fn bounded_number(
    v: Option<&Value>,
    field: &str,
    min: f64,
    max: f64,
    what: &str,
    problems: &mut Problems,
) -> Option<serde_json::Number> {
    let v = v?;
    match v {
        Value::Number(n) if n.as_f64().is_some_and(|x| x >= min && x <= max) => Some(n.clone()),
        _ => {
            problems.push(field, format!("expected {what} from {min} to {max}, got {}", describe(v)));
            None
        }
    }
}

/// A step interval: a duration from the operators' minimum to a day.
pub fn check_rollout_interval(s: &str, min_ms: u64) -> Result<u64, String> {
    let ms = parse_duration(s).map_err(|_| {
        format!("{} is not a duration; write a whole number above 0 with unit ms, s or m (\"5m\")", quote(s))
    })?;
    if ms < min_ms {
        return Err(format!(
            "is {}; at least {} (the operators' minimum rollout interval, GATEWAY_MIN_ROLLOUT_INTERVAL)",
            envoy_duration(ms),
            envoy_duration(min_ms)
        ));
    }
    if ms > MAX_ROLLOUT_INTERVAL_MS {
        return Err(format!("is {}; at most {}", envoy_duration(ms), envoy_duration(MAX_ROLLOUT_INTERVAL_MS)));
    }
    Ok(ms)
}

/// The value of `GATEWAY_MIN_ROLLOUT_INTERVAL` (a duration such as `2m`); at least 1 s.
pub fn min_rollout_interval_from_value(v: &str) -> Result<u64, String> {
    let ms = parse_duration(v.trim()).map_err(|why| format!("GATEWAY_MIN_ROLLOUT_INTERVAL: {why}"))?;
    if !(1_000..=MAX_ROLLOUT_INTERVAL_MS).contains(&ms) {
        return Err(format!("GATEWAY_MIN_ROLLOUT_INTERVAL: {v:?} is outside 1s to 1440m"));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> Result<Rollout, Vec<(String, String)>> {
        let mut policy = Policy::new("api.example.com", false);
        policy.min_rollout_interval_ms = 10_000;
        let mut p = Problems::default();
        match rollout(&v, "rollout", &policy, &mut p) {
            Some(r) if p.0.is_empty() => Ok(r),
            _ => Err(p.0.into_iter().map(|x| (x.field, x.reason)).collect()),
        }
    }

    #[test]
    fn percent_and_steps() {
        assert_eq!(run(json!({"percent": 20})).unwrap().percent, Some(20));
        let r = run(json!({"steps": [5, 25, 100], "interval": "30s", "max_5xx_increase": 0.05})).unwrap();
        assert_eq!(r.steps, vec![5, 25, 100]);
        assert_eq!(r.interval.as_deref(), Some("30s"));
        assert_eq!(r.max_5xx_increase.unwrap().to_string(), "0.05");
    }

    #[test]
    fn refusals_name_the_field() {
        let fields = |v| run(v).unwrap_err().into_iter().map(|(f, _)| f).collect::<Vec<_>>();
        assert_eq!(fields(json!({"percent": 101})), ["rollout.percent"]);
        assert_eq!(fields(json!({"percent": 20, "steps": [100]})), ["rollout"]);
        assert_eq!(fields(json!({})), ["rollout"]);
        assert_eq!(fields(json!({"percent": 20, "interval": "1m"})), ["rollout.interval"]);
        assert_eq!(fields(json!({"steps": [50, 20, 100], "interval": "1m"})), ["rollout.steps[1]"]);
        assert_eq!(fields(json!({"steps": [20, 50], "interval": "1m"})), ["rollout.steps"]);
        assert_eq!(fields(json!({"steps": [20, 100]})), ["rollout.interval"]);
        assert_eq!(fields(json!({"steps": [20, 100], "interval": "5s"})), ["rollout.interval"]);
        assert_eq!(fields(json!({"steps": [20, 100], "interval": "1m", "max_5xx_increase": 2})), ["rollout.max_5xx_increase"]);
        assert_eq!(fields(json!({"steps": [20, 100], "interval": "1m", "max_p99_ratio": 0.5})), ["rollout.max_p99_ratio"]);
        assert_eq!(fields(json!({"percent": 10, "cohort": "x"})), ["rollout.cohort"]);
        let why = run(json!({"steps": [20, 100], "interval": "5s"})).unwrap_err();
        assert!(why[0].1.contains("GATEWAY_MIN_ROLLOUT_INTERVAL"), "{why:?}");
    }
}
