//! `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` over the limiter: Envoy's
//! descriptors in, one status per descriptor and the overall code out, each status carrying
//! what envoyproxy/ratelimit's carries (`current_limit`, `limit_remaining`,
//! `duration_until_reset`). The service adds no headers of its own (production's are off):
//! Envoy's rate-limit filter writes the `x-ratelimit-*` headers from these statuses. A request
//! the service cannot answer (no rules loaded, no domain, no descriptors) fails the call, as
//! production's does: Envoy then lets it through and counts the failure.

use crate::limiter::{decide, Decision, Request, RequestDescriptor, ServiceError, Status};
use crate::rules::LiveRules;
use crate::window::Windows;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{
    rate_limit, Code, DescriptorStatus, RateLimit,
};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitService;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use envoy_types::pb::google::protobuf::Duration as PbDuration;
use gateway_validator::rules::RuleUnit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone)]
pub struct Limiter {
    rules: LiveRules,
    windows: Arc<Mutex<Windows>>,
    errors: Arc<AtomicU64>,
}

impl Limiter {
    pub fn new(rules: LiveRules) -> Limiter {
        Limiter {
            rules,
            windows: Arc::default(),
            errors: Arc::default(),
        }
    }

    /// Calls answered with an error since the start.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// The decision for one request at `now` (Unix seconds).
    pub fn decide(&self, request: &RateLimitRequest, now: u64) -> Result<Decision, ServiceError> {
        let request = Request {
            domain: request.domain.clone(),
            hits_addend: request.hits_addend,
            descriptors: request
                .descriptors
                .iter()
                .map(|d| RequestDescriptor {
                    entries: d
                        .entries
                        .iter()
                        .map(|e| (e.key.clone(), e.value.clone()))
                        .collect(),
                    hits_addend: d.hits_addend.as_ref().map(|h| h.value),
                    limit_override: d.limit.as_ref().map(|l| (l.requests_per_unit, l.unit)),
                })
                .collect(),
        };
        let rules = self.rules.snapshot();
        let mut windows = match self.windows.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        decide(rules.as_deref(), &mut windows, &request, now)
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn proto_unit(unit: RuleUnit) -> rate_limit::Unit {
    match unit {
        RuleUnit::Second => rate_limit::Unit::Second,
        RuleUnit::Minute => rate_limit::Unit::Minute,
        RuleUnit::Hour => rate_limit::Unit::Hour,
        RuleUnit::Day => rate_limit::Unit::Day,
        RuleUnit::Week => rate_limit::Unit::Week,
        RuleUnit::Month => rate_limit::Unit::Month,
        RuleUnit::Year => rate_limit::Unit::Year,
    }
}

/// One descriptor's status on the wire, as production's service writes it.
fn descriptor_status(status: &Status) -> DescriptorStatus {
    match status {
        Status::NotLimited => DescriptorStatus {
            code: Code::Ok as i32,
            ..DescriptorStatus::default()
        },
        Status::Unlimited => DescriptorStatus {
            code: Code::Ok as i32,
            limit_remaining: u32::MAX,
            ..DescriptorStatus::default()
        },
        Status::Counted(c) => DescriptorStatus {
            code: if status.over_limit() {
                Code::OverLimit
            } else {
                Code::Ok
            } as i32,
            current_limit: Some(RateLimit {
                name: c.name.clone(),
                requests_per_unit: c.requests_per_unit,
                unit: proto_unit(c.unit) as i32,
            }),
            limit_remaining: c.remaining,
            duration_until_reset: c.reset_in.map(|s| PbDuration {
                seconds: i64::try_from(s).unwrap_or(i64::MAX),
                nanos: 0,
            }),
            ..DescriptorStatus::default()
        },
    }
}

/// The wire answer for a decision: no `response_headers_to_add`.
pub fn response(decision: &Decision) -> RateLimitResponse {
    RateLimitResponse {
        overall_code: if decision.over_limit() {
            Code::OverLimit
        } else {
            Code::Ok
        } as i32,
        statuses: decision.statuses.iter().map(descriptor_status).collect(),
        ..RateLimitResponse::default()
    }
}

#[tonic::async_trait]
impl RateLimitService for Limiter {
    async fn should_rate_limit(
        &self,
        request: tonic::Request<RateLimitRequest>,
    ) -> Result<tonic::Response<RateLimitResponse>, tonic::Status> {
        let request = request.into_inner();
        match self.decide(&request, unix_now()) {
            Ok(decision) => {
                if decision.over_limit() {
                    tracing::debug!(domain = %request.domain, "over limit");
                }
                Ok(tonic::Response::new(response(&decision)))
            }
            Err(e) => {
                let errors = self.errors.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::warn!(error = %e, errors, "rate-limit call failed");
                // Production's service returns a plain error: gRPC's UNKNOWN.
                Err(tonic::Status::unknown(e.to_string()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Counted;

    fn counted(over: bool, shadowed: bool, quota: bool) -> Status {
        Status::Counted(Counted {
            requests_per_unit: 3,
            unit: RuleUnit::Minute,
            name: "n".into(),
            remaining: 0,
            reset_in: (!quota).then_some(17),
            over,
            shadowed,
            quota,
        })
    }

    #[test]
    fn statuses_carry_what_production_sends_and_no_headers() {
        let decision = Decision {
            statuses: vec![
                Status::NotLimited,
                Status::Unlimited,
                counted(true, false, false),
                counted(true, true, false),
                counted(true, false, true),
            ],
        };
        let r = response(&decision);
        assert_eq!(r.overall_code, Code::OverLimit as i32);
        assert!(r.response_headers_to_add.is_empty());
        assert_eq!(
            r.statuses[0],
            DescriptorStatus {
                code: Code::Ok as i32,
                ..DescriptorStatus::default()
            }
        );
        assert_eq!(
            (r.statuses[1].code, r.statuses[1].limit_remaining),
            (Code::Ok as i32, u32::MAX)
        );
        assert!(r.statuses[1].current_limit.is_none());
        let over = &r.statuses[2];
        assert_eq!(over.code, Code::OverLimit as i32);
        assert_eq!(
            over.current_limit,
            Some(RateLimit {
                name: "n".into(),
                requests_per_unit: 3,
                unit: rate_limit::Unit::Minute as i32
            })
        );
        assert_eq!(
            over.duration_until_reset,
            Some(PbDuration {
                seconds: 17,
                nanos: 0
            })
        );
        assert_eq!(
            r.statuses[3].code,
            Code::Ok as i32,
            "shadow mode answers OK"
        );
        assert!(r.statuses[3].duration_until_reset.is_some());
        assert_eq!(r.statuses[4].code, Code::Ok as i32, "quota mode answers OK");
        assert!(r.statuses[4].duration_until_reset.is_none());
        assert!(r.statuses[4].current_limit.is_some());
    }

    #[test]
    fn only_an_enforced_limit_makes_the_answer_over_limit() {
        let shadow_only = Decision {
            statuses: vec![counted(true, true, false), counted(true, false, true)],
        };
        assert_eq!(response(&shadow_only).overall_code, Code::Ok as i32);
    }
}
