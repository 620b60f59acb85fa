//! Nothing one entry's value can make Envoy refuse is accepted: entries holding the largest
//! value each field allows (names, hosts, backends, paths, rewrites, methods, header names and
//! values, limit keys, CORS patterns, canary cohorts, health checks) pass the registration
//! checks, render, and real Envoy validates the render. A team can only ever have its own entry
//! refused by the checks, never the whole render refused by Envoy.

use gateway_render::check::{
    check_entry_value, Policy, MAX_CANARY_HEADER_VALUE_LEN, MAX_CHANGED_HEADER_NAME_LEN,
    MAX_FQDN_LEN, MAX_HEADER_CHANGES, MAX_HEADER_NAME_LEN, MAX_HEADER_VALUE_BYTES,
    MAX_LIMITS_PER_ROUTE, MAX_PATH_BYTES,
};
use gateway_render::{render, Entry};
use gateway_testkit::validate::validate_bootstrap;
use crate::support::envoy::gateway_bootstrap;
use crate::support::{config, BASE_DOMAIN};
use serde_json::{json, Value};

fn checked(doc: Value) -> Entry {
    check_entry_value(&doc, &Policy::new(BASE_DOMAIN, false))
        .unwrap_or_else(|r| panic!("the largest values must pass the checks:\n{r}"))
}

/// `n` characters of one label alphabet, starting with `first`.
fn label(first: char, n: usize) -> String {
    std::iter::once(first)
        .chain(std::iter::repeat_n('7', n.saturating_sub(1)))
        .collect()
}

/// The longest host of four labels whose full name is `MAX_FQDN_LEN` under the base domain.
fn longest_host() -> String {
    let room = MAX_FQDN_LEN - BASE_DOMAIN.len() - 1;
    let last = room - 3 * 64;
    format!("{}.{}.{}.{}", label('a', 63), label('b', 63), label('c', 63), label('d', last))
}

/// A backend name of 253 characters.
fn longest_backend_name(tag: char) -> String {
    let tail = ".internal.example";
    let room = 253 - tail.len();
    let mut labels = Vec::new();
    let mut left = room;
    while left > 0 {
        let n = left.min(63);
        labels.push(label(tag, n));
        left = left.saturating_sub(n + 1);
    }
    format!("{}{tail}", labels.join("."))
}

/// A path of exactly `MAX_PATH_BYTES`, using every character class a path may hold.
fn longest_path(n: usize) -> String {
    let mut p = format!("/r{n}/x-._~!$&'()*+,;=:@%41");
    while p.len() < MAX_PATH_BYTES {
        p.push(if p.len() % 64 == 0 { '/' } else { 'p' });
    }
    p.truncate(MAX_PATH_BYTES);
    if p.ends_with('/') {
        p.pop();
        p.push('q');
    }
    p
}

fn header_name(i: usize, len: usize) -> String {
    let mut n = format!("x-h{i}-");
    while n.len() < len {
        n.push('z');
    }
    n
}

fn assert_envoy_accepts(entries: &[Entry], what: &str) {
    let rendered = render(entries, &config()).unwrap_or_else(|e| panic!("{what}: render: {e}"));
    let (ok, output) = validate_bootstrap(&gateway_bootstrap(&rendered, 0, 0));
    assert!(ok, "{what}: Envoy refused the render:\n{output}");
}

#[test]
fn the_largest_names_hosts_backends_and_cohorts_pass_envoy() {
    let team = label('t', 63);
    let service = label('s', 63);
    let doc = json!({
        "team": team, "service": service, "host": longest_host(),
        "backend": format!("https://{}:65535", longest_backend_name('m')),
        "protocol": "http2",
        "canary": {
            "backend": format!("https://{}:65535", longest_backend_name('k')),
            "weight": 37,
            "header": {
                "name": header_name(0, 128),
                "value": "v".repeat(MAX_CANARY_HEADER_VALUE_LEN)
            }
        },
        "health_check": { "path": longest_path(0), "interval": "5m" },
        "routes": [
            { "path": longest_path(1),
              "methods": ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"] },
            { "path": longest_path(2), "rewrite": longest_path(3), "methods": ["GET"] }
        ]
    });
    assert_envoy_accepts(&[checked(doc)], "names");
}

#[test]
fn the_most_limits_with_the_longest_keys_pass_envoy() {
    let mut limits: Vec<Value> = (0..MAX_LIMITS_PER_ROUTE - 2)
        .map(|i| json!({ "per": "header", "header": header_name(i, MAX_HEADER_NAME_LEN),
                          "requests": 1_000_000_000u32, "every": "day" }))
        .collect();
    limits.push(json!({ "per": "client-ip", "requests": 1, "every": "second" }));
    limits.push(json!({ "burst": 1_000_000 }));
    let routes: Vec<Value> = (0..40)
        .map(|i| json!({ "path": format!("/limits/{i}/{}", "l".repeat(200)), "limits": limits.clone() }))
        .collect();
    let doc = json!({
        "team": label('t', 63), "service": label('s', 63), "host": "limits",
        "backend": "http://limits.internal.example:8080", "routes": routes
    });
    assert_envoy_accepts(&[checked(doc)], "limits");
}

#[test]
fn the_most_header_changes_with_the_longest_names_and_values_pass_envoy() {
    let add = |tag: &str| -> Value {
        let mut m = serde_json::Map::new();
        for i in 0..MAX_HEADER_CHANGES {
            // Every visible ASCII character a value may hold, `%` included (escaped as `%%`).
            let mut v = String::from("a b\t%c%% %UPSTREAM_HOST% !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~");
            while v.len() < MAX_HEADER_VALUE_BYTES {
                v.push('x');
            }
            v.truncate(MAX_HEADER_VALUE_BYTES);
            m.insert(header_name(i, MAX_CHANGED_HEADER_NAME_LEN).replace("x-h", &format!("x-{tag}")), json!(v));
        }
        Value::Object(m)
    };
    let remove: Vec<String> = (0..MAX_HEADER_CHANGES)
        .map(|i| header_name(i + 100, MAX_CHANGED_HEADER_NAME_LEN))
        .collect();
    let doc = json!({
        "team": "headers", "service": "svc", "host": "headers",
        "backend": "http://headers.internal.example:8080",
        "routes": [ { "path": "/h", "methods": ["GET"],
            "request_headers": { "add": add("q"), "remove": remove },
            "response_headers": { "add": add("r"), "remove": ["server"] } } ]
    });
    assert_envoy_accepts(&[checked(doc)], "headers");
}

#[test]
fn the_most_retries_and_the_longest_durations_pass_envoy() {
    let doc = json!({
        "team": "retries", "service": "svc", "host": "retries",
        "backend": "http://retries.internal.example:8080",
        "routes": [ { "path": "/r", "methods": ["GET"], "timeout": "60s",
            "retries": { "attempts": 3, "on": ["connect-failure", "refused-stream", "reset", "5xx", "gateway-error", "retriable-status-codes"],
                         "status_codes": [400, 401, 403, 404, 408, 409, 425, 429, 500, 502, 503, 504, 507, 508, 598, 599],
                         "per_try_timeout": "59999ms" } },
            { "path": "/ws", "methods": ["GET"], "websocket": true } ]
    });
    assert_envoy_accepts(&[checked(doc)], "retries");
}

