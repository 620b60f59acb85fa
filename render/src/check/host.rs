//! `host`: the labels a team puts in front of the gateway's base domain.

use super::identifiers::check_dns_name;
use super::report::quote;

/// Longest full hostname (RFC 1035 limit on a name in text form without the root dot).
pub const MAX_FQDN_LEN: usize = 253;

pub fn check_host(host: &str, base_domain: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err(
            "must not be empty; give the label(s) in front of the base domain, e.g. \"invoices\""
                .into(),
        );
    }
    check_dns_name(host)?;
    let labels = host.split('.').count();
    if labels > super::MAX_HOST_LABELS {
        return Err(format!(
            "{} has {labels} labels; at most {} in front of the base domain (each enclosing host is checked in the registration transaction)",
            quote(host),
            super::MAX_HOST_LABELS
        ));
    }
    let base = base_domain.trim_end_matches('.');
    if !base.is_empty() && (host == base || host.ends_with(&format!(".{base}"))) {
        return Err(format!(
            "{} already contains the base domain {}; give only the label(s) in front of it",
            quote(host),
            quote(base)
        ));
    }
    let fqdn_len = host.len() + 1 + base.len();
    if fqdn_len > MAX_FQDN_LEN {
        return Err(format!(
            "full hostname {host}.{base} is {fqdn_len} characters long; at most {MAX_FQDN_LEN}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_cases::{assert_accepted, assert_refused};
    use super::*;

    const BASE: &str = "api.example.com";

    #[test]
    fn accepts_one_or_more_labels() {
        assert_accepted(
            |host| check_host(host, BASE),
            &["invoices", "eu.invoices", "v2", "a-b.c-d.e", "a.b.c.d"],
        );
    }

    #[test]
    fn rejects_more_than_four_labels_naming_the_count() {
        let err = check_host("a.b.c.d.e", BASE).expect_err("five labels");
        assert!(
            err.starts_with("\"a.b.c.d.e\" has 5 labels; at most 4"),
            "{err}"
        );
    }

    #[test]
    fn rejects_bad_labels_with_the_label_named() {
        let err = check_host("Invoices", BASE).expect_err("uppercase");
        assert_eq!(
            err,
            "label \"Invoices\" must be lowercase a-z, 0-9 or \"-\""
        );
        let cases = [
            ("*.invoices", "wildcard"),
            ("*", "wildcard"),
            ("invoices.", "end with"),
            ("a..b", "empty label"),
            (".a", "empty label"),
            ("", "empty"),
        ];
        assert_refused(|host| check_host(host, BASE), &cases);
        for bad in [
            "in voices",
            "in\nvoices",
            "invoices\"",
            "invoices:8080",
            "invoices/x",
        ] {
            assert!(check_host(bad, BASE).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rejects_the_base_domain_written_out() {
        let err = check_host("invoices.api.example.com", BASE).expect_err("base");
        assert!(err.contains("already contains the base domain"), "{err}");
        assert!(check_host("api.example.com", BASE).is_err());
    }

    #[test]
    fn bounds_the_full_hostname() {
        // 3 labels of 63 + 2 dots = 191; + "." + 15 = 207: fine. One more label of 50 breaks 253.
        let long = ["a".repeat(63), "b".repeat(63), "c".repeat(63)].join(".");
        assert_eq!(check_host(&long, BASE), Ok(()));
        let err = check_host(&format!("{long}.{}", "d".repeat(50)), BASE).expect_err("long");
        assert!(err.contains("at most 253"), "{err}");
        let exact = format!("{long}.{}", "d".repeat(253 - 191 - 1 - 1 - BASE.len()));
        assert_eq!(exact.len() + 1 + BASE.len(), 253);
        assert_eq!(check_host(&exact, BASE), Ok(()));
    }
}
