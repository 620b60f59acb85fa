//! Two revisions of one entry served side by side (docs/design.md#rollout).
//!
//! An entry whose `serving` the reconciler set renders twice: its stable revision under the
//! entry's own names, and the candidate (the registered revision) under `team.service.candidate`
//! (clusters, route names, rate-limit keys, JWT providers), so neither revision's configuration
//! can touch the other's and the proxies' per-cluster counters tell them apart.
//!
//! Every route of either revision is copied with a cohort condition, so each request sees exactly
//! one revision's routes. A client's cohort is a bucket 0–255: the first two hex digits of its
//! cookie `gw-ro-XXXXXXXX` (host-only, set by the gateway), or, without a valid cookie, of the
//! request id Envoy gave the request (a random UUID), which the answer then sets as the cookie.
//! Buckets below `percent × 256 / 100` are the candidate's. Raising the share only moves clients
//! from stable to candidate, never back. A request without a valid cookie whose request id is not
//! lowercase hex digits and dashes (a client's own `x-request-id`, which the listener preserves)
//! is served by the stable revision and gets no cookie, so no client value that could add a
//! cookie attribute is ever written into a `set-cookie`.

use crate::contract::ROUTE_METADATA_NAMESPACE;
use crate::entry::Entry;
use serde_json::{json, Value};
use std::borrow::Cow;

/// The label the candidate's names carry: `billing.invoices.candidate`.
pub const CANDIDATE: &str = "candidate";
/// How long a cohort cookie lasts in the browser: 30 days, longer than any rollout.
pub const COOKIE_MAX_AGE_SECONDS: u32 = 30 * 24 * 60 * 60;
/// The request header Envoy's request ids arrive in.
const REQUEST_ID: &str = "x-request-id";
/// What follows a request id's first two hex digits for it to become a cookie value: hex digits
/// and dashes only (a UUID's), so nothing a client sends can add a cookie attribute. Not a
/// counted `{34}`: Envoy refuses an RE2 program above 100, and a counted repeat is unrolled.
const REQUEST_ID_TAIL: &str = "[0-9a-f-]*";

/// Which of a rollout's two revisions a route serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    Stable,
    Candidate,
}

impl Revision {
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::Stable => "stable",
            Revision::Candidate => "candidate",
        }
    }
}

/// How one rendered revision's routes are narrowed to its cohort.
#[derive(Debug, Clone)]
pub(crate) struct Cohort {
    pub revision: Revision,
    /// Buckets `0..threshold` are the candidate's.
    pub threshold: u32,
    pub cookie: String,
    /// The entry's own service (the candidate clone's carries `.candidate`).
    pub service: String,
}

/// One entry as the render sees it: itself, or one of a rollout's revisions with its cohort.
pub(crate) struct Unit<'a> {
    pub entry: Cow<'a, Entry>,
    pub cohort: Option<Cohort>,
}

/// The cohort cookie of an entry: `gw-ro-` and the first 8 hex digits of the SHA-256 of its
/// service, short enough that every cohort regex stays inside Envoy's RE2 program size bound.
pub fn cookie_name(service: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest: String = Sha256::digest(service.as_bytes())[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("gw-ro-{digest}")
}

/// The bucket bound of a share: buckets `0..threshold(p)` of 256 are the candidate's.
pub fn threshold(percent: u32) -> u32 {
    (percent.min(100) * 256 + 50) / 100
}

/// The entries a render renders: an entry in rollout becomes its two revisions (or one, at a share
/// of 0 or 100), every other entry itself.
pub(crate) fn expand<'a>(entries: &[&'a Entry]) -> Vec<Unit<'a>> {
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let Some(serving) = &entry.serving else {
            out.push(Unit { entry: Cow::Borrowed(*entry), cohort: None });
            continue;
        };
        let threshold = threshold(serving.percent);
        let cookie = cookie_name(&entry.service);
        if threshold > 0 {
            let mut candidate = (*entry).clone();
            candidate.serving = None;
            candidate.rollout = None;
            if threshold < 256 {
                candidate.service = format!("{}.{CANDIDATE}", entry.service);
            }
            out.push(Unit {
                entry: Cow::Owned(candidate),
                cohort: (threshold < 256).then(|| Cohort {
                    revision: Revision::Candidate,
                    threshold,
                    cookie: cookie.clone(),
                    service: entry.service.clone(),
                }),
            });
        }
        if threshold < 256 {
            let mut stable = serving.stable.clone();
            stable.team.clone_from(&entry.team);
            stable.service.clone_from(&entry.service);
            stable.serving = None;
            stable.rollout = None;
            out.push(Unit {
                entry: Cow::Owned(stable),
                cohort: (threshold > 0).then(|| Cohort {
                    revision: Revision::Stable,
                    threshold,
                    cookie,
                    service: entry.service.clone(),
                }),
            });
        }
    }
    out
}

/// An RE2 alternation matching two lowercase hex digits whose value is in `lo..hi` (0 ≤ lo <
/// hi ≤ 256).
pub fn bucket_regex(lo: u32, hi: u32) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let d = |n: u32| DIGITS[n as usize] as char;
    let class = |a: u32, b: u32| -> String {
        if a == b {
            return d(a).to_string();
        }
        if b <= 9 || a >= 10 {
            return format!("[{}-{}]", d(a), d(b));
        }
        format!("[{}-9a-{}]", d(a), d(b))
    };
    let (last, first) = (hi - 1, lo);
    let (fh, fl, lh, ll) = (first / 16, first % 16, last / 16, last % 16);
    let mut parts = Vec::new();
    if fh == lh {
        parts.push(format!("{}{}", d(fh), class(fl, ll)));
    } else {
        let mut mid_from = fh + 1;
        let mut mid_to = lh.saturating_sub(1);
        if fl == 0 {
            mid_from = fh;
        } else {
            parts.push(format!("{}{}", d(fh), class(fl, 15)));
        }
        let last_whole = ll == 15;
        if last_whole {
            mid_to = lh;
        }
        if mid_from <= mid_to && mid_to < 16 {
            parts.push(format!("{}[0-9a-f]", class(mid_from, mid_to)));
        }
        if !last_whole {
            parts.push(format!("{}{}", d(lh), class(0, ll)));
        }
    }
    if parts.len() == 1 {
        parts.remove(0)
    } else {
        format!("(?:{})", parts.join("|"))
    }
}

fn regex_header(name: &str, regex: String, invert: bool) -> Value {
    let mut m = json!({ "name": name, "string_match": { "safe_regex": { "regex": regex } } });
    if invert {
        m["invert_match"] = json!(true);
        m["treat_missing_header_as_empty"] = json!(true);
    }
    m
}

/// A `cookie` header holding the cohort cookie with a first byte in `buckets` (an RE2 of two hex
/// digits); cookie pairs are separated by `;` and optional spaces.
fn cookie_regex(cookie: &str, buckets: &str) -> String {
    format!("(?:.*; *)?{cookie}={buckets}[^;]*(?:;.*)?")
}

/// The route copies that serve `route` to its revision's cohort only, in the order they render
/// (their conditions are disjoint, so the order among them changes nothing).
pub(crate) fn cohort_copies(route: Value, cohort: &Cohort) -> Vec<Value> {
    let (mine_lo, mine_hi) = match cohort.revision {
        Revision::Candidate => (0, cohort.threshold),
        Revision::Stable => (cohort.threshold, 256),
    };
    let mine = bucket_regex(mine_lo, mine_hi);
    let with_cookie = regex_header("cookie", cookie_regex(&cohort.cookie, &mine), false);
    let no_cookie = regex_header("cookie", cookie_regex(&cohort.cookie, "[0-9a-f]{2}"), true);
    let set_cookie = json!({
        "header": {
            "key": "set-cookie",
            "value": format!(
                "{}=%REQ(x-request-id)%; Path=/; Max-Age={COOKIE_MAX_AGE_SECONDS}; Secure; HttpOnly; SameSite=Lax",
                cohort.cookie
            )
        },
        "append_action": "APPEND_IF_EXISTS_OR_ADD"
    });
    let base = labelled(route, cohort);
    let mut out = vec![
        with_conditions(base.clone(), "cookie", vec![with_cookie]),
        with_set_cookie(
            with_conditions(
                base.clone(),
                "new",
                vec![
                    no_cookie.clone(),
                    regex_header(REQUEST_ID, format!("{mine}{REQUEST_ID_TAIL}"), false),
                ],
            ),
            set_cookie,
        ),
    ];
    if cohort.revision == Revision::Stable {
        // No valid cookie and a request id that is not hex digits and dashes: stable, no cookie.
        out.push(with_conditions(
            base,
            "other",
            vec![no_cookie, regex_header(REQUEST_ID, format!("[0-9a-f]{{2}}{REQUEST_ID_TAIL}"), true)],
        ));
    }
    out
}

/// The route's metadata names the entry's own service and the revision (the access log's keys).
fn labelled(mut route: Value, cohort: &Cohort) -> Value {
    if let Some(meta) = route
        .get_mut("metadata")
        .and_then(|m| m.get_mut("filter_metadata"))
        .and_then(|m| m.get_mut(ROUTE_METADATA_NAMESPACE))
        .and_then(Value::as_object_mut)
    {
        meta.insert("service".into(), json!(cohort.service));
        meta.insert("revision".into(), json!(cohort.revision.as_str()));
    }
    route
}

fn with_conditions(mut route: Value, suffix: &str, conditions: Vec<Value>) -> Value {
    if let Some(name) = route.get("name").and_then(Value::as_str) {
        route["name"] = json!(format!("{name}#rollout-{suffix}"));
    }
    match route["match"]["headers"].as_array_mut() {
        Some(headers) => headers.extend(conditions),
        None => route["match"]["headers"] = Value::Array(conditions),
    }
    route
}

fn with_set_cookie(mut route: Value, header: Value) -> Value {
    match route["response_headers_to_add"].as_array_mut() {
        Some(list) => list.push(header),
        None => route["response_headers_to_add"] = json!([header]),
    }
    route
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(lo: u32, hi: u32) -> Vec<u32> {
        let re = regex_lite(&bucket_regex(lo, hi));
        (0..256).filter(|b| re(&format!("{b:02x}"))).collect()
    }

    /// A tiny matcher for the alternations `bucket_regex` writes: `(?:A|B)` of two-character
    /// patterns, each a literal or a class of ranges.
    fn regex_lite(re: &str) -> impl Fn(&str) -> bool {
        let body = re.strip_prefix("(?:").and_then(|r| r.strip_suffix(')')).unwrap_or(re);
        let alts: Vec<Vec<Vec<(char, char)>>> = body
            .split('|')
            .map(|alt| {
                let mut classes = Vec::new();
                let mut chars = alt.chars().peekable();
                while let Some(c) = chars.next() {
                    if c == '[' {
                        let mut ranges = Vec::new();
                        let mut inner: Vec<char> = Vec::new();
                        for c in chars.by_ref() {
                            if c == ']' {
                                break;
                            }
                            inner.push(c);
                        }
                        let mut i = 0;
                        while i < inner.len() {
                            if i + 2 < inner.len() && inner[i + 1] == '-' {
                                ranges.push((inner[i], inner[i + 2]));
                                i += 3;
                            } else {
                                ranges.push((inner[i], inner[i]));
                                i += 1;
                            }
                        }
                        classes.push(ranges);
                    } else {
                        classes.push(vec![(c, c)]);
                    }
                }
                classes
            })
            .collect();
        move |s: &str| {
            alts.iter().any(|alt| {
                alt.len() == s.len()
                    && alt.iter().zip(s.chars()).all(|(ranges, c)| ranges.iter().any(|(a, b)| *a <= c && c <= *b))
            })
        }
    }

    #[test]
    fn bucket_regexes_hold_exactly_their_range() {
        for (lo, hi) in [(0, 1), (0, 3), (0, 13), (0, 16), (0, 51), (0, 128), (0, 255), (3, 256), (51, 256), (0, 256), (17, 18), (15, 17), (200, 256), (128, 256), (16, 32)] {
            assert_eq!(members(lo, hi), (lo..hi).collect::<Vec<_>>(), "{lo}..{hi}: {}", bucket_regex(lo, hi));
        }
    }

    #[test]
    fn shares_round_to_buckets_and_only_grow() {
        assert_eq!(threshold(0), 0);
        assert_eq!(threshold(100), 256);
        assert_eq!(threshold(20), 51);
        assert_eq!(threshold(1), 3);
        let mut last = 0;
        for p in 0..=100 {
            assert!(threshold(p) >= last);
            last = threshold(p);
        }
    }

    #[test]
    fn cookie_names_are_short_and_per_service() {
        assert_eq!(cookie_name("invoices").len(), 14);
        assert_ne!(cookie_name("invoices"), cookie_name("payments"));
    }
}
