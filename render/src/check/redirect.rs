//! `redirect`: a route the gateway answers with a redirect instead of proxying
//! (docs/design.md#route-policy). Every part is the request's own unless given; at least one is.

use super::fields::{object, reject_unknown, string};
use super::identifiers::check_dns_name;
use super::path::check_path;
use super::report::{child, describe, quote, Problems};
use super::rewrite::check_rewrite;
use crate::entry::Redirect;
use serde_json::{Map, Value};

const REDIRECT_FIELDS: [&str; 6] = ["scheme", "host", "port", "path", "prefix", "status"];
/// The statuses a redirect may answer, as Gateway API allows them.
pub const REDIRECT_STATUSES: [u16; 5] = [301, 302, 303, 307, 308];
/// Route fields that act on the request sent to the backend or on its answer: a redirect sends
/// none, so none of them may be written beside it.
pub const NOT_WITH_A_REDIRECT: [&str; 9] = [
    "timeout",
    "mirror",
    "host_rewrite",
    "retries",
    "rewrite",
    "request_headers",
    "response_headers",
    "cors",
    "websocket",
];

/// `route_path`: the route's own `path` when it is valid (a `prefix` ends in `/` exactly when it does).
pub(crate) fn redirect(
    v: &Value,
    field: &str,
    route_path: Option<&str>,
    problems: &mut Problems,
) -> Option<Redirect> {
    let map = object(v, field, "a redirect", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &REDIRECT_FIELDS, problems);
    let text = |key: &str, problems: &mut Problems, check: &dyn Fn(&str) -> Result<(), String>| {
        let at = child(field, key);
        let s = string(map.get(key)?, &at, problems)?;
        match check(s) {
            Ok(()) => Some(s.to_string()),
            Err(reason) => {
                problems.push(&at, reason);
                None
            }
        }
    };
    let scheme = text("scheme", problems, &|s| match s {
        "http" | "https" => Ok(()),
        other => Err(format!("{} is not http or https", quote(other))),
    });
    let host = text("host", problems, &check_dns_name);
    let path = text("path", problems, &check_path);
    let prefix = text("prefix", problems, &|p| check_rewrite(p, route_path));
    if map.contains_key("path") && map.contains_key("prefix") {
        problems.push(
            &child(field, "prefix"),
            "either path (the whole path) or prefix (the matched prefix) is replaced, not both",
        );
    }
    let port = number(map, field, "port", problems, &|n| {
        (1..=65535).contains(&n).then_some(()).ok_or_else(|| {
            format!("{n} is not a port; a port is 1 to 65535")
        })
    })
    .map(|n| n as u16);
    let status = number(map, field, "status", problems, &|n| {
        REDIRECT_STATUSES
            .iter()
            .any(|s| u64::from(*s) == n)
            .then_some(())
            .ok_or_else(|| format!("{n} is not a redirect status; use 301, 302, 303, 307 or 308"))
    })
    .map(|n| n as u16);
    if ["scheme", "host", "port", "path", "prefix"]
        .iter()
        .all(|k| !map.contains_key(*k))
    {
        problems.push(
            field,
            "says nowhere to go: give at least one of scheme, host, port, path or prefix (the same URL again would loop)",
        );
    }
    (problems.0.len() == before).then_some(Redirect {
        scheme,
        host,
        port,
        path,
        prefix,
        status,
    })
}

fn number(
    map: &Map<String, Value>,
    field: &str,
    key: &str,
    problems: &mut Problems,
    check: &dyn Fn(u64) -> Result<(), String>,
) -> Option<u64> {
    let v = map.get(key)?;
    let at = child(field, key);
    let Some(n) = v.as_u64() else {
        problems.push(&at, format!("expected a whole number, got {}", describe(v)));
        return None;
    };
    check(n).map_err(|reason| problems.push(&at, reason)).ok()?;
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value, path: &str) -> Result<Redirect, Vec<String>> {
        let mut p = Problems::default();
        redirect(&v, "routes[0].redirect", Some(path), &mut p)
            .ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn a_redirect_names_where_to_and_each_part_is_checked() {
        let r = run(json!({"scheme": "https", "host": "new.example.com", "port": 8443, "prefix": "/v2/invoices", "status": 301}), "/invoices")
            .expect("valid");
        assert_eq!((r.scheme.as_deref(), r.port, r.status), (Some("https"), Some(8443), Some(301)));
        assert_eq!(
            run(json!({"scheme": "ftp", "host": "Evil..example", "port": 0, "path": "/a/../b", "prefix": "/x/", "status": 200, "to": "x"}), "/invoices")
                .expect_err("hostile"),
            vec![
                "routes[0].redirect.to: unknown field; expected scheme, host, port, path, prefix or status",
                "routes[0].redirect.scheme: \"ftp\" is not http or https",
                format!("routes[0].redirect.host: {}", check_dns_name("Evil..example").expect_err("bad name")).as_str(),
                format!("routes[0].redirect.path: {}", check_path("/a/../b").expect_err("dot segment")).as_str(),
                format!("routes[0].redirect.prefix: {}", check_rewrite("/x/", Some("/invoices")).expect_err("slash")).as_str(),
                "routes[0].redirect.prefix: either path (the whole path) or prefix (the matched prefix) is replaced, not both",
                "routes[0].redirect.port: 0 is not a port; a port is 1 to 65535",
                "routes[0].redirect.status: 200 is not a redirect status; use 301, 302, 303, 307 or 308",
            ]
        );
        assert_eq!(
            run(json!({"status": 308}), "/a").expect_err("loop"),
            vec!["routes[0].redirect: says nowhere to go: give at least one of scheme, host, port, path or prefix (the same URL again would loop)"]
        );
    }
}
