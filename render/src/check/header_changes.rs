//! `request_headers` / `response_headers`: headers a route sets or removes
//! (docs/design.md#route-policy). Names and values are checked as headers (a CR or LF in a value
//! would end the header, a pseudo-header is Envoy's own), and the headers the gateway itself
//! vouches for are off limits: the Host the backend is addressed by, the forwarding and request-id
//! headers backends and logs trust, Envoy's own `x-envoy-` headers, and the connection's framing.

use super::fields::{object, reject_unknown, string};
use super::report::{child, describe, index, quote, Problems};
use crate::entry::HeaderChanges;
use serde_json::Value;

/// Headers one of `add`, `set`, `append` or `remove` may list (and `add`, `set` and `append`
/// together).
pub const MAX_HEADER_CHANGES: usize = 16;
/// Longest value a route may set.
pub const MAX_HEADER_VALUE_BYTES: usize = 1024;
/// Longest header name a route may set, remove, or allow in CORS.
pub const MAX_CHANGED_HEADER_NAME_LEN: usize = 128;
/// The characters of every header name an entry writes, as a JSON Schema pattern: the RFC 9110
/// token characters, lowercase.
pub const HEADER_NAME_CHARSET: &str = "^[a-z0-9!#$%&'*+.^_`|~-]+$";
/// The characters of a header value a route sets, as a JSON Schema pattern: visible ASCII,
/// spaces and tabs.
pub const HEADER_VALUE_CHARSET: &str = "^[\t -~]+$";

const CHANGES_FIELDS: [&str; 4] = ["add", "set", "append", "remove"];

/// Which way the headers travel, and for requests the headers the route's own rate limits count.
pub(crate) enum Direction<'a> {
    /// `(limit index, header)` of every per-header limit of the route.
    Request {
        limit_keys: &'a [(usize, String)],
    },
    Response,
}

pub(crate) fn header_changes(
    v: &Value,
    field: &str,
    direction: &Direction<'_>,
    problems: &mut Problems,
) -> Option<HeaderChanges> {
    let map = object(v, field, "header changes", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &CHANGES_FIELDS, problems);
    let mut out = HeaderChanges::default();
    out.add = named_values(map, field, "add", direction, problems);
    out.set = named_values(map, field, "set", direction, problems);
    out.append = named_values(map, field, "append", direction, problems);
    // A header has one change: set (`add` or `set`), appended to, or removed.
    let valued = [("add", &out.add), ("set", &out.set), ("append", &out.append)];
    for (i, (key, values)) in valued.iter().enumerate() {
        for name in values.keys() {
            if let Some((earlier, _)) = valued[..i].iter().find(|(_, v)| v.contains_key(name)) {
                problems.push(
                    &child(&child(field, key), name),
                    format!(
                        "{} is also in {earlier}; a header is set, appended to or removed, once",
                        quote(name)
                    ),
                );
            }
        }
    }
    let total: usize = valued.iter().map(|(_, v)| v.len()).sum();
    if total > MAX_HEADER_CHANGES {
        problems.push(
            field,
            format!("sets or appends {total} headers in all (add, set and append); at most {MAX_HEADER_CHANGES}"),
        );
    }
    if let Some(remove) = map.get("remove") {
        let remove_field = child(field, "remove");
        match remove {
            Value::Array(items) => {
                if items.len() > MAX_HEADER_CHANGES {
                    problems.push(
                        &remove_field,
                        format!("has {} headers; at most {MAX_HEADER_CHANGES}", items.len()),
                    );
                }
                let mut seen: Vec<(&str, usize)> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let at = index(&remove_field, i);
                    let Value::String(name) = item else {
                        problems.push(
                            at,
                            format!("expected a header name (a string), got {}", describe(item)),
                        );
                        continue;
                    };
                    if let Err(reason) = check_changed_header(name, direction) {
                        problems.push(at, reason);
                    } else if let Some((_, first)) = seen.iter().find(|(s, _)| *s == name.as_str())
                    {
                        problems.push(
                            at,
                            format!(
                                "{} is listed twice (also {})",
                                quote(name),
                                index(&remove_field, *first)
                            ),
                        );
                    } else if let Some((key, _)) = [("add", &out.add), ("set", &out.set), ("append", &out.append)]
                        .into_iter()
                        .find(|(_, v)| v.contains_key(name.as_str()))
                    {
                        problems.push(
                            at,
                            format!(
                                "{} is also in {key}; a header is either set or removed",
                                quote(name)
                            ),
                        );
                    } else {
                        seen.push((name, i));
                    }
                }
                out.remove = seen.into_iter().map(|(s, _)| s.to_string()).collect();
                out.remove.sort();
            }
            other => problems.push(
                &remove_field,
                format!("expected a list of header names, got {}", describe(other)),
            ),
        }
    }
    (problems.0.len() == before).then_some(out)
}

/// `parent.key`: header names and their values, each checked as a header this route may write.
fn named_values(
    map: &serde_json::Map<String, Value>,
    parent: &str,
    key: &str,
    direction: &Direction<'_>,
    problems: &mut Problems,
) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let Some(v) = map.get(key) else {
        return out;
    };
    let field = child(parent, key);
    let Some(headers) = object(v, &field, "headers and their values", problems) else {
        return out;
    };
    if headers.len() > MAX_HEADER_CHANGES {
        problems.push(
            &field,
            format!("has {} headers; at most {MAX_HEADER_CHANGES}", headers.len()),
        );
    }
    for (name, value) in headers {
        let at = child(&field, name);
        if let Err(reason) = check_changed_header(name, direction)
            .and_then(|()| check_added_header(name, direction))
        {
            problems.push(&at, reason);
            continue;
        }
        let Some(value) = string(value, &at, problems) else {
            continue;
        };
        match check_header_value(value) {
            Ok(()) => {
                out.insert(name.clone(), value.to_string());
            }
            Err(reason) => problems.push(&at, reason),
        }
    }
    out
}

/// A lowercase RFC 9110 token: the shape of every header name an entry writes.
pub fn check_header_token(h: &str) -> Result<(), String> {
    header_shape(
        h,
        "must not be empty; name a header such as \"x-team\"",
        "; Envoy sets those itself",
        MAX_CHANGED_HEADER_NAME_LEN,
    )
}

/// The shape every header name in an entry shares (header changes, the canary's cohort header,
/// per-header limits): not empty (`empty` says what to write), not a pseudo-header (`pseudo`
/// ends that sentence), RFC 9110 token characters, lowercase, at most `max` characters.
pub(crate) fn header_shape(h: &str, empty: &str, pseudo: &str, max: usize) -> Result<(), String> {
    if h.is_empty() {
        return Err(empty.into());
    }
    if h.starts_with(':') {
        return Err(format!("{} is an HTTP/2 pseudo-header{pseudo}", quote(h)));
    }
    if let Some(c) = h
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(*c)))
    {
        return Err(format!(
            "character {} is not allowed in a header name (RFC 9110 token characters only)",
            quote(&c.to_string())
        ));
    }
    if h.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "{} must be lowercase: write {}",
            quote(h),
            quote(&h.to_ascii_lowercase())
        ));
    }
    if h.len() > max {
        return Err(format!("is {} characters long; at most {max}", h.len()));
    }
    Ok(())
}

/// A header a route may set or remove in `direction`.
pub(crate) fn check_changed_header(h: &str, direction: &Direction<'_>) -> Result<(), String> {
    check_header_token(h)?;
    let why = match h {
        "host" => Some("it carries the backend's name (the client's is in x-forwarded-host)"),
        "x-request-id" => Some("it ties the access log to the backend's logs"),
        "forwarded" => Some("backends trust the forwarding headers it writes"),
        _ if h.starts_with("x-forwarded-") => {
            Some("backends trust the forwarding headers it writes")
        }
        _ if h.starts_with("x-envoy-") => Some("Envoy reads and writes x-envoy- headers itself"),
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "te"
        | "trailer" | "upgrade" | "content-length" => {
            Some("it frames the connection or the message, which Envoy manages")
        }
        _ => None,
    };
    if let Some(why) = why {
        return Err(format!("{} is the gateway's to set: {why}", quote(h)));
    }
    if let Direction::Request { limit_keys } = direction {
        if let Some((i, _)) = limit_keys.iter().find(|(_, k)| k == h) {
            return Err(format!(
                "{} is the header this route's limits[{i}] counts; the backend would see a key other than the one limited",
                quote(h)
            ));
        }
    }
    Ok(())
}

/// A header a route may add in `direction`, beyond [`check_changed_header`]. A response header
/// that sets state in the browser beyond this one response and this host is refused: a tenant's
/// host shares the base domain (and the registrable domain above it) with every other tenant.
/// Removing any of them stays allowed (it only drops what the backend sent; Envoy's CORS filter
/// writes its headers after the route's removals).
///
/// `strict-transport-security` stays allowed: a browser applies it to the host that sent it and,
/// with `includeSubDomains`, to names below that host, never to a parent; names below a team's
/// host are only ever that team's own (a host inside another team's host is a conflict), and
/// the HSTS preload list takes registrable domains only, never a tenant's host.
pub(crate) fn check_added_header(h: &str, direction: &Direction<'_>) -> Result<(), String> {
    if !matches!(direction, Direction::Response) {
        return Ok(());
    }
    let why = match h {
        // A cookie may carry `Domain=<base domain>` (or the registrable domain above it): the
        // browser then sends it to every tenant's host, and it can shadow their own cookies.
        "set-cookie" | "set-cookie2" => Some(
            "a cookie set here may be scoped to the gateway's base domain and reach every tenant's host; the backend sets its own cookies",
        ),
        // Written by Envoy's CORS filter from the checked `cors` policy; a hand-written one would
        // allow origins (or credentials with `*`) that policy refuses.
        _ if h.starts_with("access-control-") => Some(
            "CORS headers come from the route's cors policy, whose origins are checked; declare cors instead",
        ),
        // `"cookies"` (and `"*"`) clear the cookies of the whole registrable domain, not only
        // this host's: every other tenant's host and the base domain included.
        "clear-site-data" => Some(
            "browsers clear the cookies of the whole site (its registrable domain), every tenant's host included",
        ),
        // Names another protocol, host or port for this host; browsers cache it (`ma`,
        // `persist`) for later connections. What the gateway listens on is the load balancer's.
        "alt-svc" => Some(
            "it sends browsers to another protocol, host or port for this host and they remember it; the gateway's listener decides how it is reached",
        ),
        // Pins the keys of the gateway's certificate, shared by every tenant and rotated by the
        // operators; a client that honours it would refuse the host after a rotation.
        "public-key-pins" | "public-key-pins-report-only" => Some(
            "it pins the keys of the gateway's certificate, which every tenant shares and the operators rotate",
        ),
        _ => None,
    };
    match why {
        Some(why) => Err(format!("{} may not be added to a response: {why}", quote(h))),
        None => Ok(()),
    }
}

/// A value a route sets: visible ASCII with inner spaces or tabs. The value is not quoted back:
/// it may be a token.
pub fn check_header_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Err("must not be empty; list the header in remove to drop it".into());
    }
    if v.len() > MAX_HEADER_VALUE_BYTES {
        return Err(format!(
            "the value is {} bytes long; at most {MAX_HEADER_VALUE_BYTES}",
            v.len()
        ));
    }
    if v.contains(['\r', '\n', '\0']) {
        return Err(
            "CR, LF and NUL are not allowed in a header value (they would end the header)".into(),
        );
    }
    if v.chars()
        .any(|c| !(c == ' ' || c == '\t' || c.is_ascii_graphic()))
    {
        return Err("only visible ASCII, spaces and tabs are allowed in a header value".into());
    }
    if v.starts_with([' ', '\t']) || v.ends_with([' ', '\t']) {
        return Err("the value must not start or end with a space or tab".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value, direction: &Direction<'_>) -> Result<HeaderChanges, Vec<String>> {
        let mut p = Problems::default();
        header_changes(&v, "routes[0].request_headers", direction, &mut p)
            .ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn hostile_names_and_values() {
        let keys = [(1, "x-api-key".to_string())];
        let req = Direction::Request { limit_keys: &keys };
        let errs = run(
            json!({"add": {"x-team": "billing", "host": "evil", ":authority": "evil", "x-envoy-retry-on": "5xx",
                           "x-forwarded-for": "1.2.3.4", "X-Big": "a", "x-crlf": "a\r\nx-injected: 1", "x-api-key": "k",
                           "x-request-id": "1", "x-sp": " a", "x-empty": "", "transfer-encoding": "chunked"},
                   "remove": ["x-debug", "x-debug", "x-team", "te"]}),
            &req,
        )
        .expect_err("hostile");
        assert_eq!(
            errs,
            vec![
                "routes[0].request_headers.add[\":authority\"]: \":authority\" is an HTTP/2 pseudo-header; Envoy sets those itself",
                "routes[0].request_headers.add.X-Big: \"X-Big\" must be lowercase: write \"x-big\"",
                "routes[0].request_headers.add.host: \"host\" is the gateway's to set: it carries the backend's name (the client's is in x-forwarded-host)",
                "routes[0].request_headers.add.transfer-encoding: \"transfer-encoding\" is the gateway's to set: it frames the connection or the message, which Envoy manages",
                "routes[0].request_headers.add.x-api-key: \"x-api-key\" is the header this route's limits[1] counts; the backend would see a key other than the one limited",
                "routes[0].request_headers.add.x-crlf: CR, LF and NUL are not allowed in a header value (they would end the header)",
                "routes[0].request_headers.add.x-empty: must not be empty; list the header in remove to drop it",
                "routes[0].request_headers.add.x-envoy-retry-on: \"x-envoy-retry-on\" is the gateway's to set: Envoy reads and writes x-envoy- headers itself",
                "routes[0].request_headers.add.x-forwarded-for: \"x-forwarded-for\" is the gateway's to set: backends trust the forwarding headers it writes",
                "routes[0].request_headers.add.x-request-id: \"x-request-id\" is the gateway's to set: it ties the access log to the backend's logs",
                "routes[0].request_headers.add.x-sp: the value must not start or end with a space or tab",
                "routes[0].request_headers.remove[1]: \"x-debug\" is listed twice (also routes[0].request_headers.remove[0])",
                "routes[0].request_headers.remove[2]: \"x-team\" is also in add; a header is either set or removed",
                "routes[0].request_headers.remove[3]: \"te\" is the gateway's to set: it frames the connection or the message, which Envoy manages",
            ]
        );
        // A response may carry the header a request limit counts.
        assert!(run(json!({"add": {"x-api-key": "k"}}), &Direction::Response).is_ok());
    }

    fn response(v: Value) -> Result<HeaderChanges, Vec<String>> {
        let mut p = Problems::default();
        header_changes(&v, "routes[0].response_headers", &Direction::Response, &mut p)
            .ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn a_response_may_not_set_state_beyond_its_own_host() {
        let errs = response(json!({"add": {
            "set-cookie": "sid=1; Domain=api.example.com; Path=/",
            "set-cookie2": "sid=1",
            "access-control-allow-origin": "*",
            "access-control-allow-credentials": "true",
            "access-control-allow-headers": "x-api-key",
            "access-control-expose-headers": "x-secret",
            "access-control-max-age": "86400",
            "clear-site-data": "\"cookies\"",
            "alt-svc": "h2=\"evil.example:443\"; ma=2592000; persist=1",
            "public-key-pins": "pin-sha256=\"abc\"; max-age=5184000; includeSubDomains",
            "public-key-pins-report-only": "pin-sha256=\"abc\"; max-age=1",
            "Set-Cookie": "sid=1",
        }}))
        .expect_err("hostile");
        let cookie = "a cookie set here may be scoped to the gateway's base domain and reach every tenant's host; the backend sets its own cookies";
        let cors = "CORS headers come from the route's cors policy, whose origins are checked; declare cors instead";
        let at = |h: &str, why: &str| {
            format!("routes[0].response_headers.add.{h}: \"{h}\" may not be added to a response: {why}")
        };
        assert_eq!(
            errs,
            vec![
                "routes[0].response_headers.add.Set-Cookie: \"Set-Cookie\" must be lowercase: write \"set-cookie\"".to_string(),
                at("access-control-allow-credentials", cors),
                at("access-control-allow-headers", cors),
                at("access-control-allow-origin", cors),
                at("access-control-expose-headers", cors),
                at("access-control-max-age", cors),
                at("alt-svc", "it sends browsers to another protocol, host or port for this host and they remember it; the gateway's listener decides how it is reached"),
                at("clear-site-data", "browsers clear the cookies of the whole site (its registrable domain), every tenant's host included"),
                at("public-key-pins", "it pins the keys of the gateway's certificate, which every tenant shares and the operators rotate"),
                at("public-key-pins-report-only", "it pins the keys of the gateway's certificate, which every tenant shares and the operators rotate"),
                at("set-cookie", cookie),
                at("set-cookie2", cookie),
            ]
        );
        // Removing them only drops what the backend sent; HSTS only reaches the team's own
        // host and the names below it; ordinary response headers pass.
        let ok = response(json!({
            "add": {"strict-transport-security": "max-age=63072000; includeSubDomains",
                    "cache-control": "no-store", "x-content-type-options": "nosniff",
                    "content-security-policy": "default-src 'self'", "set-cookie-policy": "x"},
            "remove": ["set-cookie", "set-cookie2", "access-control-allow-origin", "clear-site-data",
                       "alt-svc", "public-key-pins"]}))
        .expect("allowed");
        assert_eq!(ok.remove.len(), 6);
        // On a request these are only headers the backend reads.
        let req = Direction::Request { limit_keys: &[] };
        assert!(run(json!({"add": {"set-cookie": "x", "access-control-allow-origin": "*"}}), &req).is_ok());
    }

    #[test]
    fn set_and_append_are_checked_as_add_and_a_header_has_one_change() {
        let req = Direction::Request { limit_keys: &[] };
        let ok = run(
            json!({"add": {"x-a": "1"}, "set": {"x-b": "2"}, "append": {"x-c": "3"}, "remove": ["x-d"]}),
            &req,
        )
        .expect("valid");
        assert_eq!((ok.add.len(), ok.set.len(), ok.append.len(), ok.remove.len()), (1, 1, 1, 1));
        assert_eq!(
            run(
                json!({"set": {"x-a": "1", "host": "evil"}, "append": {"x-a": "2"}, "remove": ["x-a"]}),
                &req
            )
            .expect_err("twice"),
            vec![
                "routes[0].request_headers.set.host: \"host\" is the gateway's to set: it carries the backend's name (the client's is in x-forwarded-host)".to_string(),
                "routes[0].request_headers.append.x-a: \"x-a\" is also in set; a header is set, appended to or removed, once".to_string(),
                "routes[0].request_headers.remove[0]: \"x-a\" is also in set; a header is either set or removed".to_string(),
            ]
        );
        // A response may not append what it may not add.
        let errs = response(json!({"append": {"set-cookie": "sid=1"}})).expect_err("cookie");
        assert!(errs[0].starts_with("routes[0].response_headers.append.set-cookie: "), "{errs:?}");
        // add, set and append count together.
        let half = |p: &str| -> serde_json::Map<String, Value> {
            (0..9).map(|i| (format!("x-{p}{i}"), json!("v"))).collect()
        };
        assert_eq!(
            run(json!({"set": half("s"), "append": half("a")}), &req).expect_err("18"),
            vec!["routes[0].request_headers: sets or appends 18 headers in all (add, set and append); at most 16"]
        );
    }

    #[test]
    fn bounded() {
        let many: serde_json::Map<String, Value> =
            (0..17).map(|i| (format!("x-h{i}"), json!("v"))).collect();
        assert_eq!(
            run(json!({"add": many}), &Direction::Response).expect_err("many")[0],
            "routes[0].request_headers.add: has 17 headers; at most 16"
        );
        assert!(check_header_value(&"a".repeat(1025)).is_err());
        assert!(check_header_value("caf\u{e9}").is_err());
        assert!(check_header_value("%DOWNSTREAM_REMOTE_ADDRESS%").is_ok());
    }
}
