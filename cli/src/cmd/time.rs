//! UTC timestamps for people: the SDK's RFC 3339 formatter (`aws_smithy_types::DateTime`), with
//! a space for the `T` and no `Z` (`2026-11-29 23:59:59`).

use aws_smithy_types::date_time::{DateTime, Format};

/// `epoch_secs` as `YYYY-MM-DD HH:MM:SS` (UTC). An instant outside the years 1 to 9999 (which
/// RFC 3339 cannot write, and no S3 or registry timestamp is) prints as its epoch seconds.
pub fn format_utc(epoch_secs: i64) -> String {
    match DateTime::from_secs(epoch_secs).fmt(Format::DateTime) {
        Ok(rfc3339) => rfc3339.trim_end_matches('Z').replacen('T', " ", 1),
        Err(_) => format!("{epoch_secs}s since the epoch"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_known_instants() {
        assert_eq!(super::format_utc(0), "1970-01-01 00:00:00");
        assert_eq!(super::format_utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(super::format_utc(1_795_996_799), "2026-11-29 23:59:59");
    }

    #[test]
    fn before_the_epoch_and_out_of_range() {
        assert_eq!(super::format_utc(-1), "1969-12-31 23:59:59");
        assert_eq!(
            super::format_utc(253_402_300_800),
            "253402300800s since the epoch"
        );
    }
}
