//! A route's `clients` (docs/design.md#route-policy): CIDR blocks of the trusted client address
//! (past the trusted hops, as every per-client rule here) a route admits or refuses. Envoy's RBAC
//! filter judges them per route and answers 403.

use super::cidr::Cidr;
use super::fields::{list, object, reject_unknown, string};
use super::report::{child, index, quote, Problems};
use crate::entry::Clients;
use serde_json::Value;

/// CIDR blocks one list (`allow` or `deny`) of a route may hold.
pub const MAX_CLIENT_CIDRS: usize = 16;
/// A CIDR block's shape, as a JSON Schema pattern; the checks judge the address and prefix.
pub const CIDR_CHARSET: &str = "^[0-9a-fA-F.:]+/[0-9]{1,3}$";

const CLIENTS_FIELDS: [&str; 2] = ["allow", "deny"];

pub(crate) fn clients(v: &Value, field: &str, problems: &mut Problems) -> Option<Clients> {
    let map = object(v, field, "client lists", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &CLIENTS_FIELDS, problems);
    let mut lists = [Vec::new(), Vec::new()];
    for (slot, key) in lists.iter_mut().zip(CLIENTS_FIELDS) {
        let Some(v) = map.get(key) else { continue };
        let at = child(field, key);
        let Some(items) = list(v, &at, "CIDR blocks", problems) else { continue };
        if items.is_empty() {
            problems.push(&at, format!("an empty list; leave {key} out"));
        }
        if items.len() > MAX_CLIENT_CIDRS {
            problems.push(&at, format!("has {} CIDR blocks; at most {MAX_CLIENT_CIDRS}", items.len()));
        }
        for (i, item) in items.iter().enumerate() {
            let here = index(&at, i);
            let Some(s) = string(item, &here, problems) else { continue };
            match canonical_cidr(s) {
                Ok(block) if slot.contains(&block) => {
                    problems.push(&here, format!("{} is listed twice", quote(s)));
                }
                Ok(block) => slot.push(block),
                Err(reason) => problems.push(&here, reason),
            }
        }
    }
    if !map.contains_key("allow") && !map.contains_key("deny") {
        problems.push(field, "needs allow or deny (lists of CIDR blocks)");
    }
    let [allow, deny] = lists;
    (problems.0.len() == before).then_some(Clients { allow, deny })
}

/// A CIDR block as written, if it is one in its canonical form (host bits clear): a block
/// written `10.1.2.3/8` means something other than it says, so it is refused naming the block.
pub fn canonical_cidr(s: &str) -> Result<String, String> {
    let block = Cidr::parse(s)?;
    let canonical = block.to_string();
    if canonical != s {
        return Err(format!("{} is not the block's own spelling; write {}", quote(s), quote(&canonical)));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> Result<Clients, Vec<String>> {
        let mut p = Problems::default();
        clients(&v, "routes[0].clients", &mut p).ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn allow_and_deny_lists_of_canonical_blocks() {
        let c = run(json!({ "allow": ["10.0.0.0/8", "2001:db8::/32"], "deny": ["10.9.0.0/16"] })).expect("valid");
        assert_eq!(c.allow, ["10.0.0.0/8", "2001:db8::/32"]);
        assert_eq!(c.deny, ["10.9.0.0/16"]);
        assert!(run(json!({ "deny": ["0.0.0.0/0"] })).is_ok());
        for (v, want) in [
            (json!({ "allow": ["10.1.2.3/8"] }), "routes[0].clients.allow[0]: \"10.1.2.3/8\" is not the block's own spelling; write \"10.0.0.0/8\""),
            (json!({ "allow": ["10.0.0.0"] }), "routes[0].clients.allow[0]: \"10.0.0.0\" is not a CIDR block"),
            (json!({ "allow": ["10.0.0.0/33"] }), "routes[0].clients.allow[0]: "),
            (json!({ "deny": ["10.0.0.0/8", "10.0.0.0/8"] }), "routes[0].clients.deny[1]: \"10.0.0.0/8\" is listed twice"),
            (json!({ "allow": [] }), "routes[0].clients.allow: an empty list"),
            (json!({}), "routes[0].clients: needs allow or deny"),
            (json!({ "allowed": ["10.0.0.0/8"] }), "routes[0].clients.allowed: unknown field"),
            (json!({ "allow": "10.0.0.0/8" }), "routes[0].clients.allow: expected a list"),
        ] {
            let problems = run(v.clone()).expect_err("refused");
            assert!(problems.iter().any(|p| p.starts_with(want)), "{v}: {problems:?}");
        }
        let many: Vec<String> = (0..=MAX_CLIENT_CIDRS).map(|i| format!("10.{i}.0.0/16")).collect();
        let problems = run(json!({ "allow": many })).expect_err("too many");
        assert_eq!(problems, ["routes[0].clients.allow: has 17 CIDR blocks; at most 16"]);
    }
}
