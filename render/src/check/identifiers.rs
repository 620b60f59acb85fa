//! Identifiers (`team`, `service`) and DNS labels (RFC 1123), the two name shapes of an entry.

use super::report::quote;

/// Longest identifier or DNS label.
pub const MAX_LABEL_LEN: usize = 63;
/// The characters of an identifier, as a JSON Schema pattern (the entry schema's).
pub const IDENTIFIER_CHARSET: &str = "^[a-z0-9-]+$";
/// The characters of a dot-separated DNS name of lowercase labels, as a JSON Schema pattern.
pub const DNS_NAME_CHARSET: &str = "^[a-z0-9.-]+$";

/// `team` and `service`: 1–63 of `a-z0-9-`, starting with a letter, not ending with `-`.
/// They become registry keys, cluster names and rate-limit keys, so nothing else gets in.
pub fn check_identifier(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err(
            "must not be empty; use 1-63 of a-z, 0-9 or \"-\", starting with a letter".into(),
        );
    }
    let lower = s.to_ascii_lowercase();
    if lower != s && check_identifier(&lower).is_ok() {
        return Err(format!(
            "{} must be lowercase: write {}",
            quote(s),
            quote(&lower)
        ));
    }
    if let Some(bad) = s
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-'))
    {
        return Err(format!(
            "{} must use only lowercase a-z, 0-9 or \"-\" (found {})",
            quote(s),
            quote(&bad.to_string())
        ));
    }
    if s.len() > MAX_LABEL_LEN {
        return Err(format!(
            "is {} characters long; at most {MAX_LABEL_LEN}",
            s.len()
        ));
    }
    if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(format!("{} must start with a letter a-z", quote(s)));
    }
    if s.ends_with('-') {
        return Err(format!("{} must not end with \"-\"", quote(s)));
    }
    Ok(())
}

/// One DNS label (RFC 1123), lowercase only: 1–63 of `a-z0-9-`, no leading or trailing `-`.
pub fn check_dns_label(label: &str) -> Result<(), String> {
    if label.is_empty() {
        return Err("has an empty label (a leading, trailing or doubled \".\")".into());
    }
    if label.contains('*') {
        return Err(format!(
            "label {} is a wildcard; wildcards are not allowed, the gateway alone owns the catch-all virtual host",
            quote(label)
        ));
    }
    if label
        .chars()
        .any(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-'))
    {
        return Err(format!(
            "label {} must be lowercase a-z, 0-9 or \"-\"",
            quote(label)
        ));
    }
    if label.len() > MAX_LABEL_LEN {
        return Err(format!(
            "label {} is {} characters long; at most {MAX_LABEL_LEN}",
            quote(label),
            label.len()
        ));
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Err(format!(
            "label {} must not start or end with \"-\"",
            quote(label)
        ));
    }
    Ok(())
}

/// A dot-separated DNS name of valid labels, without a trailing dot.
pub fn check_dns_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.ends_with('.') {
        return Err(format!("{} must not end with \".\"", quote(name)));
    }
    name.split('.').try_for_each(check_dns_label)
}

#[cfg(test)]
mod tests {
    use super::super::test_cases::{assert_accepted, assert_refused};
    use super::*;

    #[test]
    fn identifiers() {
        assert_accepted(
            check_identifier,
            &[
                "billing",
                "a",
                "invoices-api",
                "team-2",
                "a1b2",
                &"a".repeat(63),
            ],
        );
        let cases = [
            ("", "empty"),
            ("Billing", "must be lowercase: write \"billing\""),
            ("Bill_ing", "only lowercase"),
            ("bill_ing", "lowercase"),
            ("bill ing", "lowercase"),
            ("bill\ning", "lowercase"),
            ("bill\"ing", "lowercase"),
            ("bïlling", "lowercase"),
            ("1billing", "start with a letter"),
            ("-billing", "start with a letter"),
            ("billing-", "end with"),
            (&"a".repeat(64), "at most 63"),
        ];
        assert_refused(check_identifier, &cases);
    }

    #[test]
    fn error_messages_never_carry_raw_line_breaks() {
        let err = check_identifier("a\nteam: ok").expect_err("newline");
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn labels() {
        assert_accepted(
            check_dns_label,
            &[
                "a",
                "0",
                "9lives",
                "in-voices",
                "xn--bcher-kva",
                &"a".repeat(63),
            ],
        );
        let cases = [
            ("", "empty label"),
            ("*", "wildcard"),
            ("Invoices", "lowercase"),
            ("in_voices", "lowercase"),
            ("-a", "start or end"),
            ("a-", "start or end"),
            (&"a".repeat(64), "at most 63"),
        ];
        assert_refused(check_dns_label, &cases);
    }

    #[test]
    fn names() {
        assert_eq!(check_dns_name("invoices.eu"), Ok(()));
        assert!(check_dns_name("a..b").is_err());
        assert!(check_dns_name(".a").is_err());
        assert!(check_dns_name("a.")
            .expect_err("trailing")
            .contains("end with"));
        assert!(check_dns_name("").is_err());
    }
}
