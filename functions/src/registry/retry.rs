//! Backoff for the registry's own retries: a transaction cancelled because the host changed
//! since it was read, or because DynamoDB throttled or conflicted one of its items. (The SDK
//! retries whole calls itself; these cancellations are not SDK errors, so it does not.)

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// Rounds of read → plan → write before a registration gives up with `Retryable`. Registrations
/// racing on one host commit one per round, so this bounds how many may race and all succeed.
pub(crate) const MAX_ROUNDS: u32 = 12;
const BASE: Duration = Duration::from_millis(20);
const CAP: Duration = Duration::from_millis(1000);

/// Sleeps a random time in `[0, min(CAP, BASE * 2^round)]` ("full jitter"), so racers that lost
/// together do not retry together.
pub(crate) async fn backoff(round: u32) {
    let ceiling = BASE.saturating_mul(1u32 << round.min(16)).min(CAP);
    let millis = ceiling.as_millis() as u64;
    let wait = if millis == 0 {
        0
    } else {
        random_u64() % (millis + 1)
    };
    tokio::time::sleep(Duration::from_millis(wait)).await;
}

/// Randomness without another dependency: every `RandomState` is seeded randomly.
pub(crate) fn random_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    h.finish()
}
