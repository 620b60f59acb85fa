//! Fixed-window counters, as envoyproxy/ratelimit counts: one counter per descriptor (its full
//! list of key/value pairs) per window of the limit's unit, starting on the unit's boundary
//! (second, minute, hour, day of Unix time), so every replica of the service agrees on windows.

use gateway_render::Unit;
use std::collections::HashMap;

pub fn unit_seconds(unit: Unit) -> u64 {
    match unit {
        Unit::Second => 1,
        Unit::Minute => 60,
        Unit::Hour => 3600,
        Unit::Day => 86_400,
    }
}

/// What one descriptor's hit did to its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// Hits in the window, this one included.
    pub after: u64,
    /// Seconds until the window ends.
    pub reset_in: u64,
}

/// Counters by key and window. Windows that ended are swept at most once a second, so memory
/// holds only the windows in force.
#[derive(Debug, Default)]
pub struct Windows {
    counters: HashMap<String, (u64, u64)>,
    next_sweep: u64,
}

impl Windows {
    /// Adds `hits` to `key`'s counter for the window of `unit` holding `now` (Unix seconds).
    pub fn hit(&mut self, key: &str, unit: Unit, hits: u64, now: u64) -> Count {
        if now >= self.next_sweep {
            self.counters.retain(|_, (end, _)| *end > now);
            self.next_sweep = now + 1;
        }
        let len = unit_seconds(unit);
        let end = (now / len + 1) * len;
        let counter = self
            .counters
            .entry(format!("{key}_{}", end - len))
            .or_insert((end, 0));
        counter.1 = counter.1.saturating_add(hits);
        Count {
            after: counter.1,
            reset_in: end - now,
        }
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
        assert_eq!(
            w.hit("k", Unit::Minute, 1, 120),
            Count {
                after: 1,
                reset_in: 60
            }
        );
        assert_eq!(
            w.hit("k", Unit::Minute, 1, 179),
            Count {
                after: 2,
                reset_in: 1
            }
        );
        assert_eq!(
            w.hit("k", Unit::Minute, 1, 180),
            Count {
                after: 1,
                reset_in: 60
            }
        );
    }

    #[test]
    fn keys_and_units_count_separately() {
        let mut w = Windows::default();
        w.hit("a", Unit::Hour, 1, 10);
        assert_eq!(w.hit("b", Unit::Hour, 1, 10).after, 1);
        assert_eq!(w.hit("a", Unit::Second, 1, 10).after, 1);
        assert_eq!(w.hit("a", Unit::Hour, 3, 11).after, 4);
        assert_eq!(w.hit("a", Unit::Day, 1, 86_399).reset_in, 1);
    }

    #[test]
    fn ended_windows_are_swept() {
        let mut w = Windows::default();
        for i in 0..100 {
            w.hit(&format!("client-{i}"), Unit::Second, 1, 5);
        }
        assert_eq!(w.len(), 100);
        w.hit("other", Unit::Second, 1, 6);
        assert_eq!(w.len(), 1, "the second that ended is gone");
    }
}
