//! `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` over the limiter: Envoy's
//! descriptors in, one status per descriptor and the overall code out. An over-limit answer
//! carries `x-ratelimit-limit`, `x-ratelimit-remaining` and `x-ratelimit-reset` for the limit
//! that refused, which Envoy adds to its 429.

use crate::limiter::{decide, Decision, Descriptor, LimitStatus};
use crate::rules::LiveRules;
use crate::window::Windows;
use envoy_types::pb::envoy::config::core::v3::HeaderValue;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{
    rate_limit, Code, DescriptorStatus, RateLimit,
};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitService;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use envoy_types::pb::google::protobuf::Duration as PbDuration;
use gateway_render::Unit;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone)]
pub struct Limiter {
    rules: LiveRules,
    windows: Arc<Mutex<Windows>>,
}

impl Limiter {
    pub fn new(rules: LiveRules) -> Limiter {
        Limiter {
            rules,
            windows: Arc::default(),
        }
    }

    /// The decision for one request at `now` (Unix seconds).
    pub fn decide(&self, request: &RateLimitRequest, now: u64) -> Decision {
        let request_hits = u64::from(request.hits_addend.max(1));
        let descriptors: Vec<(Descriptor, u64)> = request
            .descriptors
            .iter()
            .map(|d| {
                let entries = d
                    .entries
                    .iter()
                    .map(|e| (e.key.clone(), e.value.clone()))
                    .collect();
                let hits = d.hits_addend.as_ref().map_or(request_hits, |h| h.value);
                (entries, hits)
            })
            .collect();
        let tree = self.rules.snapshot();
        let mut windows = match self.windows.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        decide(&tree, &mut windows, &request.domain, &descriptors, now)
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn proto_unit(unit: Unit) -> rate_limit::Unit {
    match unit {
        Unit::Second => rate_limit::Unit::Second,
        Unit::Minute => rate_limit::Unit::Minute,
        Unit::Hour => rate_limit::Unit::Hour,
        Unit::Day => rate_limit::Unit::Day,
    }
}

/// The wire answer for a decision.
pub fn response(decision: &Decision) -> RateLimitResponse {
    let statuses = decision
        .statuses
        .iter()
        .map(|status| match status {
            LimitStatus::NoLimit => DescriptorStatus {
                code: Code::Ok as i32,
                ..DescriptorStatus::default()
            },
            LimitStatus::Limited {
                limit,
                over,
                remaining,
                reset_in,
            } => DescriptorStatus {
                code: if *over && !limit.shadow_mode {
                    Code::OverLimit
                } else {
                    Code::Ok
                } as i32,
                current_limit: limit
                    .unit
                    .filter(|_| !limit.unlimited)
                    .map(|unit| RateLimit {
                        name: String::new(),
                        requests_per_unit: limit.requests_per_unit,
                        unit: proto_unit(unit) as i32,
                    }),
                limit_remaining: u32::try_from(*remaining).unwrap_or(u32::MAX),
                duration_until_reset: Some(PbDuration {
                    seconds: i64::try_from(*reset_in).unwrap_or(i64::MAX),
                    nanos: 0,
                }),
                ..DescriptorStatus::default()
            },
        })
        .collect();
    let mut answer = RateLimitResponse {
        overall_code: if decision.over_limit {
            Code::OverLimit
        } else {
            Code::Ok
        } as i32,
        statuses,
        ..RateLimitResponse::default()
    };
    if decision.over_limit {
        answer.response_headers_to_add = refusal_headers(decision);
    }
    answer
}

/// The headers of the limit that refused (the first over-limit, enforced one).
fn refusal_headers(decision: &Decision) -> Vec<HeaderValue> {
    let refused = decision.statuses.iter().find_map(|s| match s {
        LimitStatus::Limited {
            limit,
            over: true,
            reset_in,
            ..
        } if !limit.shadow_mode => Some((limit.requests_per_unit, *reset_in)),
        _ => None,
    });
    let Some((limit, reset_in)) = refused else {
        return Vec::new();
    };
    [
        ("x-ratelimit-limit", limit.to_string()),
        ("x-ratelimit-remaining", "0".to_string()),
        ("x-ratelimit-reset", reset_in.to_string()),
    ]
    .into_iter()
    .map(|(key, value)| HeaderValue {
        key: key.into(),
        value,
        ..HeaderValue::default()
    })
    .collect()
}

#[tonic::async_trait]
impl RateLimitService for Limiter {
    async fn should_rate_limit(
        &self,
        request: tonic::Request<RateLimitRequest>,
    ) -> Result<tonic::Response<RateLimitResponse>, tonic::Status> {
        let request = request.into_inner();
        let decision = self.decide(&request, unix_now());
        if decision.over_limit {
            tracing::debug!(domain = %request.domain, "over limit");
        }
        Ok(tonic::Response::new(response(&decision)))
    }
}
