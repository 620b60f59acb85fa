//! A route's `mirror` (docs/design.md#route-policy): a share of its requests copied to a backend
//! judged exactly like the entry's own, whose answers Envoy drops. Each distinct mirror backend
//! is a cluster, and claimed like `backend` (`Entry::upstreams`).

use super::backend::required_backend;
use super::fields::{object, reject_unknown, required};
use super::report::{child, describe, Problems};
use super::Policy;
use crate::entry::Mirror;
use serde_json::Value;

/// Distinct backends one entry's routes may mirror to: each is a cluster in every proxy and a
/// backend claim in the registration transaction.
pub const MAX_MIRROR_BACKENDS: usize = 2;
/// The largest `mirror.percent`: every request.
pub const MAX_MIRROR_PERCENT: u32 = 100;

const MIRROR_FIELDS: [&str; 2] = ["backend", "percent"];

pub(crate) fn mirror(
    v: &Value,
    field: &str,
    policy: &Policy,
    problems: &mut Problems,
) -> Option<Mirror> {
    let map = object(v, field, "a mirror", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &MIRROR_FIELDS, problems);
    let backend = required_backend(map, field, "backend", policy, problems);
    let percent = required(map, field, "percent", problems).and_then(|v| {
        let at = child(field, "percent");
        match v.as_u64() {
            Some(n) if n <= u64::from(MAX_MIRROR_PERCENT) => Some(n as u32),
            Some(n) => {
                problems.push(&at, format!("is {n}; a share is 0 to {MAX_MIRROR_PERCENT} percent"));
                None
            }
            None => {
                problems.push(&at, format!("expected a whole number 0 to {MAX_MIRROR_PERCENT}, got {}", describe(v)));
                None
            }
        }
    });
    let mirror = Mirror {
        backend: backend?,
        percent: percent?,
    };
    (problems.0.len() == before).then_some(mirror)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> Result<Mirror, Vec<String>> {
        let mut p = Problems::default();
        let policy = Policy::new("api.example.com", false);
        mirror(&v, "routes[0].mirror", &policy, &mut p).ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn a_backend_judged_like_the_entrys_and_a_share() {
        let m = run(json!({ "backend": "https://shadow.internal.example", "percent": 25 })).expect("valid");
        assert_eq!((m.backend.as_str(), m.percent), ("https://shadow.internal.example", 25));
        assert!(run(json!({ "backend": "https://shadow.internal.example", "percent": 0 })).is_ok());
        for (v, want) in [
            (json!({ "backend": "http://127.0.0.1:8080", "percent": 10 }), "routes[0].mirror.backend: "),
            (json!({ "backend": "http://169.254.169.254", "percent": 10 }), "routes[0].mirror.backend: "),
            (json!({ "backend": "https://s.internal.example", "percent": 101 }), "routes[0].mirror.percent: is 101; a share is 0 to 100 percent"),
            (json!({ "backend": "https://s.internal.example", "percent": 2.5 }), "routes[0].mirror.percent: expected a whole number"),
            (json!({ "backend": "https://s.internal.example" }), "routes[0].mirror.percent: required field is missing"),
            (json!({ "percent": 5 }), "routes[0].mirror.backend: required field is missing"),
            (json!({ "backend": "https://s.internal.example", "percent": 5, "ratio": 1 }), "routes[0].mirror.ratio: unknown field"),
            (json!("https://s.internal.example"), "routes[0].mirror: expected a mirror"),
        ] {
            let problems = run(v.clone()).expect_err("refused");
            assert!(problems.iter().any(|p| p.starts_with(want)), "{v}: {problems:?}");
        }
    }
}
