//! The service's decision for one request, pure: rules and counters in, one status per
//! descriptor out, as envoyproxy/ratelimit decides (`constructLimitsToCheck` and
//! `shouldRateLimitWorker` in its service/ratelimit.go, `DoLimit` of its Redis cache,
//! `GetResponseDescriptorStatus` of its base limiter):
//!
//! - each descriptor reaches the rule `RuleSet::limit` finds (value, then wildcard prefix, then
//!   key), or the limit Envoy sent with it (`limit` override) when the domain has rules;
//! - a rule named by another matched rule's `replaces` is not applied; an `unlimited` rule is
//!   not counted and answers with `limit_remaining` at its maximum;
//! - every other limit is counted in its fixed window (per value, or per wildcard pattern with
//!   `share_threshold`); past the limit it answers OVER_LIMIT, except that a `shadow_mode` rule
//!   answers OK (still counted and known to be over) and a `quota_mode` rule answers OK with the
//!   limit and nothing left;
//! - no rules loaded, an empty domain or no descriptors is an error, not an answer: Envoy then
//!   lets the request through (`failure_mode_deny: false`) and counts the failure.

use crate::window::Windows;
use gateway_validator::rules::{RuleLimit, RuleSet, RuleUnit};

/// One descriptor of a request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestDescriptor {
    pub entries: Vec<(String, String)>,
    /// The descriptor's own `hits_addend`; `None`: the request's.
    pub hits_addend: Option<u64>,
    /// A limit Envoy sent with the descriptor (requests per unit, and the unit's number in the
    /// protocol: 1 second … 4 day, 5 month, 6 year, 7 week).
    pub limit_override: Option<(u32, i32)>,
}

/// One `ShouldRateLimit` request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    pub domain: String,
    pub descriptors: Vec<RequestDescriptor>,
    /// 0 means 1.
    pub hits_addend: u32,
}

/// Why the service answers with an error (the gRPC call fails).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    #[error("no rate limit configuration loaded")]
    NoConfig,
    #[error("rate limit domain must not be empty")]
    EmptyDomain,
    #[error("rate limit descriptor list must not be empty")]
    NoDescriptors,
    #[error("descriptor {index}: limit override with unknown unit {unit}")]
    UnknownOverrideUnit { index: usize, unit: i32 },
}

/// A counted limit's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub requests_per_unit: u32,
    pub unit: RuleUnit,
    /// The rule's `name` (empty without one), which the protocol's `current_limit` carries.
    pub name: String,
    /// Left in the window after this request (0 once over).
    pub remaining: u32,
    /// Seconds until the window ends; `None` for a quota-mode answer, which carries none.
    pub reset_in: Option<u64>,
    /// This request went past the limit.
    pub over: bool,
    /// Over, but answered OK because the rule is in shadow mode.
    pub shadowed: bool,
    /// Over, but answered OK (with the limit and nothing left) because the rule is in quota
    /// mode.
    pub quota: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// No rule applies (none matched, or the one matched is replaced): OK, nothing counted.
    NotLimited,
    /// An `unlimited` rule: OK, `limit_remaining` at its maximum, nothing counted.
    Unlimited,
    /// Counted.
    Counted(Counted),
}

impl Status {
    /// What the status answers: OVER_LIMIT only for an enforced limit that was passed.
    pub fn over_limit(&self) -> bool {
        matches!(self, Status::Counted(c) if c.over && !c.shadowed && !c.quota)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub statuses: Vec<Status>,
}

impl Decision {
    /// The overall code: OVER_LIMIT when any status is.
    pub fn over_limit(&self) -> bool {
        self.statuses.iter().any(Status::over_limit)
    }
}

/// The unit a limit override names, by its number in the protocol.
fn override_unit(unit: i32) -> Option<RuleUnit> {
    Some(match unit {
        1 => RuleUnit::Second,
        2 => RuleUnit::Minute,
        3 => RuleUnit::Hour,
        4 => RuleUnit::Day,
        5 => RuleUnit::Month,
        6 => RuleUnit::Year,
        7 => RuleUnit::Week,
        _ => return None,
    })
}

/// A limit to count for one descriptor, and what its counter is keyed by.
struct ToCount {
    limit: RuleLimit,
    shared: Vec<Option<String>>,
}

/// Decides one request against `rules` (`None`: nothing loaded yet) at `now` (Unix seconds).
pub fn decide(
    rules: Option<&RuleSet>,
    windows: &mut Windows,
    request: &Request,
    now: u64,
) -> Result<Decision, ServiceError> {
    if request.domain.is_empty() {
        return Err(ServiceError::EmptyDomain);
    }
    if request.descriptors.is_empty() {
        return Err(ServiceError::NoDescriptors);
    }
    let rules = rules.ok_or(ServiceError::NoConfig)?;
    let domain_known = rules.domains.contains_key(&request.domain);

    let mut unlimited = vec![false; request.descriptors.len()];
    let mut to_count: Vec<Option<ToCount>> = Vec::with_capacity(request.descriptors.len());
    let mut replacing: Vec<&str> = Vec::new();
    for (i, d) in request.descriptors.iter().enumerate() {
        let found = match d.limit_override {
            Some((requests_per_unit, unit)) if domain_known => {
                let unit = override_unit(unit)
                    .ok_or(ServiceError::UnknownOverrideUnit { index: i, unit })?;
                Some(ToCount {
                    limit: RuleLimit {
                        unit: Some(unit),
                        requests_per_unit,
                        unlimited: false,
                        shadow_mode: false,
                        quota_mode: false,
                        name: String::new(),
                        replaces: Vec::new(),
                        detailed_metric: false,
                    },
                    shared: Vec::new(),
                })
            }
            _ => rules.limit(&request.domain, &d.entries).map(|m| {
                replacing.extend(m.limit.replaces.iter().map(String::as_str));
                ToCount {
                    limit: m.limit.clone(),
                    shared: m.shared,
                }
            }),
        };
        match found {
            Some(t) if t.limit.unlimited => {
                unlimited[i] = true;
                to_count.push(None);
            }
            other => to_count.push(other),
        }
    }
    for slot in &mut to_count {
        if slot
            .as_ref()
            .is_some_and(|t| !t.limit.name.is_empty() && replacing.contains(&t.limit.name.as_str()))
        {
            *slot = None;
        }
    }

    let request_hits = u64::from(request.hits_addend.max(1));
    let mut statuses = Vec::with_capacity(to_count.len());
    for (i, slot) in to_count.into_iter().enumerate() {
        let d = &request.descriptors[i];
        let status = match slot {
            _ if unlimited[i] => Status::Unlimited,
            None => Status::NotLimited,
            Some(t) => {
                // Loaded rules carry a unit unless unlimited; overrides were checked above.
                let Some(unit) = t.limit.unit else {
                    statuses.push(Status::NotLimited);
                    continue;
                };
                let hits = d.hits_addend.unwrap_or(request_hits);
                let key = cache_key(&request.domain, &d.entries, &t.shared);
                let after = windows.hit(&key, unit, hits, now);
                let max = u64::from(t.limit.requests_per_unit);
                let over = after > max;
                let remaining = if over {
                    0
                } else {
                    u32::try_from(max - after).unwrap_or(u32::MAX)
                };
                // Shadow mode answers OK before quota mode is looked at.
                let shadowed = over && t.limit.shadow_mode;
                let quota = over && !shadowed && t.limit.quota_mode;
                Status::Counted(Counted {
                    requests_per_unit: t.limit.requests_per_unit,
                    unit,
                    name: t.limit.name.clone(),
                    remaining,
                    reset_in: (!quota).then(|| unit.seconds() - now % unit.seconds()),
                    over,
                    shadowed,
                    quota,
                })
            }
        };
        statuses.push(status);
    }
    Ok(Decision { statuses })
}

/// The counter's key before its window: `domain_key_value_…`, a shared wildcard's pattern in
/// place of the value it matched.
fn cache_key(domain: &str, entries: &[(String, String)], shared: &[Option<String>]) -> String {
    let mut key = format!("{domain}_");
    for (i, (k, v)) in entries.iter().enumerate() {
        let value = shared.get(i).and_then(Option::as_deref).unwrap_or(v);
        key.push_str(k);
        key.push('_');
        key.push_str(value);
        key.push('_');
    }
    key
}

#[cfg(test)]
mod tests;
