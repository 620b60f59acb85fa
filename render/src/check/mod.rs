//! Registration checks: every rule of DESIGN.md's "Registration entry", all problems at once,
//! each naming its field path.

use crate::entry::Entry;
use std::collections::BTreeSet;
use std::fmt;

/// Largest entry document accepted, in bytes.
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;
/// Routes per entry.
pub const MAX_ROUTES: usize = 64;
/// Limits per route.
pub const MAX_LIMITS_PER_ROUTE: usize = 8;
/// Distinct path prefixes per entry. A registration claims one guard per prefix and may delete
/// as many old ones, plus the entry and the host guard: 2 + 2 * 48 = 98 <= 100 actions, the
/// DynamoDB TransactWriteItems limit.
pub const MAX_PATH_PREFIXES: usize = 48;

/// What the checks need to know about the gateway they register on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The gateway's base domain, e.g. `api.example.com`.
    pub base_domain: String,
    /// `GATEWAY_ALLOW_LOOPBACK_BACKENDS=true`: local runs and tests only. Link-local stays rejected.
    pub allow_loopback_backends: bool,
}

/// One problem with an entry: the field path (`routes[1].limits[0].every`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub field: String,
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// Every problem found in an entry, in document order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Rejection {
    pub problems: Vec<Problem>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// Checks raw input (a JSON document of at most `MAX_ENTRY_BYTES`) and returns the checked entry.
pub fn check_entry_bytes(input: &[u8], policy: &Policy) -> Result<Entry, Rejection> {
    let _ = (input, policy);
    Err(Rejection { problems: vec![Problem { field: "entry".into(), reason: "checks not implemented yet".into() }] })
}

/// Checks a parsed JSON value.
pub fn check_entry_value(value: &serde_json::Value, policy: &Policy) -> Result<Entry, Rejection> {
    let _ = (value, policy);
    Err(Rejection { problems: vec![Problem { field: "entry".into(), reason: "checks not implemented yet".into() }] })
}

/// The distinct path prefixes an entry claims (one guard row each).
pub fn path_prefixes(entry: &Entry) -> BTreeSet<String> {
    entry.routes.iter().map(|r| r.path.clone()).collect()
}

/// Whether two path prefixes overlap on path segments: equal, or one nested inside the other
/// (`/invoices` and `/invoices/export` overlap; `/invoices` and `/invoicesX` do not).
pub fn prefixes_overlap(a: &str, b: &str) -> bool {
    fn nested(outer: &str, inner: &str) -> bool {
        let outer = outer.trim_end_matches('/');
        inner == outer || outer.is_empty() || inner.starts_with(&format!("{outer}/"))
    }
    nested(a, b) || nested(b, a)
}
