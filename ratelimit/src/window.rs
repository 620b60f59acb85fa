//! Fixed-window counters, as envoyproxy/ratelimit counts: one counter per descriptor (its full
//! list of key/value pairs, or a shared wildcard's pattern) per window of the limit's unit,
//! starting on the unit's boundary of Unix time (a week from the epoch's Thursday, a month of 30
//! days, a year of 365), so every replica of the service agrees on windows.

use gateway_validator::rules::RuleUnit;
use std::collections::HashMap;

/// Counters by key and window. Windows that ended are swept at most once a second, so memory
/// holds only the windows in force.
#[derive(Debug, Default)]
pub struct Windows {
    counters: HashMap<String, (u64, u64)>,
    next_sweep: u64,
}

impl Windows {
    /// Adds `hits` to `key`'s counter for the window of `unit` holding `now` (Unix seconds);
    /// returns the count after, this hit included.
    pub fn hit(&mut self, key: &str, unit: RuleUnit, hits: u64, now: u64) -> u64 {
        if now >= self.next_sweep {
            self.counters.retain(|_, (end, _)| *end > now);
            self.next_sweep = now + 1;
        }
        let len = unit.seconds();
        let start = now / len * len;
        let counter = self
            .counters
            .entry(format!("{key}{start}"))
            .or_insert((start + len, 0));
        counter.1 = counter.1.saturating_add(hits);
        counter.1
    }

    /// Counters held now (windows not yet swept).
    pub fn len(&self) -> usize {
        self.counters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_counts_until_its_boundary_then_starts_again() {
        let mut w = Windows::default();
        // 120 is a minute boundary: 120..180 is one window.
        assert_eq!(w.hit("k", RuleUnit::Minute, 1, 120), 1);
        assert_eq!(w.hit("k", RuleUnit::Minute, 1, 179), 2);
        assert_eq!(w.hit("k", RuleUnit::Minute, 1, 180), 1);
    }

    #[test]
    fn keys_and_units_count_separately() {
        let mut w = Windows::default();
        w.hit("a", RuleUnit::Hour, 1, 10);
        assert_eq!(w.hit("b", RuleUnit::Hour, 1, 10), 1);
        assert_eq!(w.hit("a", RuleUnit::Hour, 3, 11), 4);
        // A week's window starts on the epoch's boundary, as the service divides Unix time.
        assert_eq!(w.hit("w", RuleUnit::Week, 1, 7 * 86_400 - 1), 1);
        assert_eq!(w.hit("w", RuleUnit::Week, 1, 7 * 86_400), 1);
    }

    #[test]
    fn ended_windows_are_swept() {
        let mut w = Windows::default();
        for i in 0..100 {
            w.hit(&format!("client-{i}_"), RuleUnit::Second, 1, 5);
        }
        assert_eq!(w.len(), 100);
        w.hit("other_", RuleUnit::Second, 1, 6);
        assert_eq!(w.len(), 1, "the second that ended is gone");
    }
}
