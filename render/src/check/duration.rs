//! Durations in entries (`timeout`): a positive integer with the unit `ms`, `s` or `m`
//! (docs/design.md#registration-entry).

/// Default whole-request timeout of a route, in milliseconds, when the entry sets none.
pub const DEFAULT_ROUTE_TIMEOUT_MS: u64 = 15_000;
/// Default of the operators' maximum route timeout (`GATEWAY_MAX_ROUTE_TIMEOUT`), in milliseconds.
pub const DEFAULT_MAX_ROUTE_TIMEOUT_MS: u64 = 60_000;

/// `"250ms"`, `"5s"`, `"2m"` → milliseconds. No sign, no fraction, no leading zero, no spaces.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let (digits, scale) = if let Some(d) = s.strip_suffix("ms") {
        (d, 1)
    } else if let Some(d) = s.strip_suffix('s') {
        (d, 1_000)
    } else if let Some(d) = s.strip_suffix('m') {
        (d, 60_000)
    } else {
        return Err(format!(
            "{s:?} is not a duration; write a whole number with unit ms, s or m (\"5s\", \"250ms\")"
        ));
    };
    let well_formed = !digits.is_empty()
        && digits.len() <= 9
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0');
    if !well_formed {
        return Err(format!(
            "{s:?} is not a duration; write a whole number above 0 with unit ms, s or m (\"5s\", \"250ms\")"
        ));
    }
    digits
        .parse::<u64>()
        .map(|n| n * scale)
        .map_err(|e| format!("{s:?} is not a duration: {e}"))
}

/// Milliseconds as Envoy's JSON duration (`"5s"`, `"0.250s"`).
pub fn envoy_duration(ms: u64) -> String {
    if ms.is_multiple_of(1_000) {
        format!("{}s", ms / 1_000)
    } else {
        format!("{}.{:03}s", ms / 1_000, ms % 1_000)
    }
}

/// A route's `timeout`: a duration of at most `max_ms`.
pub fn check_timeout(s: &str, max_ms: u64) -> Result<u64, String> {
    let ms = parse_duration(s)?;
    if ms > max_ms {
        return Err(format!(
            "is {}; at most {} (the operators' maximum route timeout)",
            envoy_duration(ms),
            envoy_duration(max_ms)
        ));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bounds() {
        assert_eq!(parse_duration("250ms"), Ok(250));
        assert_eq!(parse_duration("5s"), Ok(5_000));
        assert_eq!(parse_duration("2m"), Ok(120_000));
        for bad in ["", "s", "0s", "05s", "-1s", "1.5s", "5", "5h", " 5s", "5 s", "5S", "1000000000s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert_eq!(check_timeout("60s", 60_000), Ok(60_000));
        assert_eq!(
            check_timeout("61s", 60_000),
            Err("is 61s; at most 60s (the operators' maximum route timeout)".into())
        );
        assert_eq!(
            check_timeout("2m", 60_000),
            Err("is 120s; at most 60s (the operators' maximum route timeout)".into())
        );
    }

    #[test]
    fn envoy_form() {
        assert_eq!(envoy_duration(15_000), "15s");
        assert_eq!(envoy_duration(250), "0.250s");
        assert_eq!(envoy_duration(1_005), "1.005s");
    }
}
