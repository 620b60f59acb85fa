//! The one retry schedule for the project's own retry loops: the registry's transaction rounds
//! (a transaction cancelled because the host changed since it was read, or because DynamoDB
//! throttled or conflicted one of its items; the SDK retries whole calls itself, but these
//! cancellations are not SDK errors), the status-row puts a `BatchWriteItem` left unprocessed
//! (also not an SDK error) and the custom resource's answer to CloudFormation.
//!
//! A loop keeps its own body, and with it which outcomes end it and which try again; the
//! schedule says how many attempts there are and how long to wait before each:
//!
//! ```text
//! for attempt in SCHEDULE.attempts() {
//!     SCHEDULE.pause(attempt).await; // nothing before the first
//!     // ... return on success or on a final error, note why otherwise
//! }
//! ```

use std::ops::Range;
use std::time::Duration;

/// How many attempts, and the wait before attempt `n` (the first waits nothing):
/// `min(cap, first * factor^(n-1))`, or, with `jitter`, a random time in `[0, that]` ("full
/// jitter": racers that lost together do not retry together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The wait before the second attempt (its ceiling, with jitter).
    pub first: Duration,
    /// Each further wait is this many times the one before.
    pub factor: u32,
    /// No wait is longer than this.
    pub cap: Duration,
    pub jitter: bool,
}

impl Backoff {
    /// The attempt numbers, `0..attempts`.
    pub fn attempts(&self) -> Range<u32> {
        0..self.attempts
    }

    /// The longest wait before attempt `attempt` (zero before the first).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        if attempt == 0 {
            return Duration::ZERO;
        }
        let growth = self.factor.saturating_pow(attempt - 1);
        self.first.saturating_mul(growth).min(self.cap)
    }

    /// The wait before attempt `attempt`: the ceiling, or a random time up to it with jitter.
    pub fn delay(&self, attempt: u32) -> Duration {
        let ceiling = self.ceiling(attempt);
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        if !self.jitter || millis == 0 {
            return ceiling;
        }
        Duration::from_millis(rand::random_range(0..=millis))
    }

    /// Sleeps [`Backoff::delay`] before attempt `attempt` (returns at once before the first).
    pub async fn pause(&self, attempt: u32) {
        let wait = self.delay(attempt);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// A random 128-bit token as 32 hex digits (DynamoDB's `ClientRequestToken`).
pub fn random_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

#[cfg(test)]
mod tests {
    use super::*;

    const REGISTRY_LIKE: Backoff = Backoff {
        attempts: 12,
        first: Duration::from_millis(40),
        factor: 2,
        cap: Duration::from_millis(1000),
        jitter: true,
    };

    #[test]
    fn ceilings_grow_by_the_factor_up_to_the_cap_and_the_first_attempt_waits_nothing() {
        let ceilings: Vec<u128> = REGISTRY_LIKE
            .attempts()
            .map(|a| REGISTRY_LIKE.ceiling(a).as_millis())
            .collect();
        assert_eq!(
            ceilings,
            [0, 40, 80, 160, 320, 640, 1000, 1000, 1000, 1000, 1000, 1000]
        );
        // Far past the attempts, the arithmetic saturates instead of overflowing.
        assert_eq!(REGISTRY_LIKE.ceiling(u32::MAX), Duration::from_millis(1000));
        let fixed = Backoff {
            attempts: 3,
            first: Duration::from_millis(200),
            factor: 4,
            cap: Duration::MAX,
            jitter: false,
        };
        let delays: Vec<u128> = fixed
            .attempts()
            .map(|a| fixed.delay(a).as_millis())
            .collect();
        assert_eq!(delays, [0, 200, 800]);
    }

    #[test]
    fn jittered_delays_stay_within_the_ceiling_and_spread() {
        let delays: Vec<Duration> = (0..200).map(|_| REGISTRY_LIKE.delay(6)).collect();
        assert!(delays.iter().all(|d| *d <= Duration::from_millis(1000)));
        let distinct: std::collections::BTreeSet<_> = delays.iter().collect();
        assert!(distinct.len() > 20, "{} distinct delays", distinct.len());
        assert_eq!(REGISTRY_LIKE.delay(0), Duration::ZERO);
    }

    #[test]
    fn tokens_are_32_hex_digits_and_differ() {
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 32, "{a}");
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
    }
}
