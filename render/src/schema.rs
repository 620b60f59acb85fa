//! The entry's JSON Schema, committed as `schema/entry.schema.json`: the shape of a registration
//! entry (types, required fields, enums, no unknown fields) from the entry types' derives
//! (`crate::entry`, their doc comments as descriptions), and the checks' fixed bounds (lengths,
//! item counts, integer ranges, character sets) from the checks' own constants.
//!
//! It is what one entry shows on its own, without the gateway's settings: `ExposeOnGateway`
//! refuses an entry at synth by it, and editors complete and flag entries with it. The checks
//! (`crate::check`) remain the rules: they accept nothing the schema refuses (every good corpus
//! entry validates), and they alone judge what needs the operators' settings (route timeout,
//! retry attempts, health-check interval, the base domain, backend restrictions) or more than
//! a value's shape (addresses, CIDRs, public suffixes, duplicate routes, what a duration says).

use crate::check::{
    CIDR_CHARSET, MAX_CLIENT_CIDRS, CLAIM_NAME_CHARSET, EC_ALGORITHMS, MAX_AUDIENCES,
    MAX_CLAIM_HEADERS, MAX_CLAIM_NAME_LEN, MAX_JWKS_KEYS, MAX_JWT_PROVIDERS, MAX_JWT_STRING_LEN,
    RSA_ALGORITHMS, MAX_X5C_CERTS, MAX_X5C_CERT_LEN,
    COHORT_HEADER_VALUE_CHARSET, DNS_NAME_CHARSET, HEADER_NAME_CHARSET, HEADER_VALUE_CHARSET,
    IDENTIFIER_CHARSET, MAX_BACKENDS, MAX_BURST, MAX_CANARY_HEADER_NAME_LEN, MAX_CANARY_HEADER_VALUE_LEN,
    MAX_CANARY_WEIGHT, MAX_CHANGED_HEADER_NAME_LEN, MAX_CORS_ORIGINS, MAX_FQDN_LEN,
    MAX_HEADER_CHANGES, MAX_HEADER_NAME_LEN, MAX_HEADER_VALUE_BYTES, MAX_LABEL_LEN,
    MAX_LIMITS_PER_ROUTE, MAX_PATH_BYTES, MAX_REQUESTS, MAX_RETRIED_STATUS_CODES, MAX_ROUTES,
    MAX_HEADER_MATCHES, MAX_MIRROR_PERCENT, MAX_QUERY_MATCHES, MAX_QUERY_NAME_LEN, MAX_QUERY_VALUE_LEN, METHODS,
    PATH_CHARSET, QUERY_NAME_CHARSET, QUERY_VALUE_CHARSET, RETRIED_STATUSES, RETRY_CONDITIONS,
};
use crate::entry::Entry;
use schemars::generate::SchemaSettings;
use schemars::transform::{transform_subschemas, Transform};
use schemars::Schema;
use serde_json::{json, Map, Value};

/// Where the schema is committed, from the repository root.
pub const SCHEMA_FILE: &str = "schema/entry.schema.json";
/// The schema's `$id`. Nothing fetches it: editors and the construct read the file.
pub const SCHEMA_ID: &str = "urn:gateway:schema:entry";

/// The entry's JSON Schema (draft 2020-12), as committed.
pub fn entry_schema() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .for_deserialize()
        .with_transform(AbsentNotNull)
        .with_transform(NoIntegerFormats)
        .into_generator()
        .into_root_schema_for::<Entry>();
    for (pointer, keywords) in fixed_bounds() {
        let Some(Value::Object(field)) = schema.pointer_mut(pointer) else {
            panic!("{pointer}: the entry types have no such field; move its bound with it");
        };
        let Value::Object(keywords) = keywords else {
            panic!("{pointer}: bounds are JSON Schema keywords");
        };
        field.extend(keywords);
    }
    schema.insert("$id".into(), SCHEMA_ID.into());
    schema.insert("title".into(), "Gateway registration entry".into());
    schema.insert(
        "description".into(),
        concat!(
            "One team's declaration for one service (key: team/service), as ExposeOnGateway, ",
            "gatewayctl and the register function take it (docs/design.md#registration-entry). ",
            "The shape and fixed bounds only: the register function also judges what needs the ",
            "gateway's settings or the registry. Generated from render/src/entry.rs and ",
            "render/src/schema.rs; do not edit."
        )
        .into(),
    );
    schema.to_value()
}

/// The schema file's text: the one serializer of everything rendered (sorted keys, two-space
/// indent, trailing newline), so the same types always give the same bytes.
pub fn entry_schema_text() -> String {
    crate::canonical::to_json_bytes(&entry_schema())
}

/// Each bound of the checks that holds whatever the gateway's settings, at the field it bounds.
/// Lengths count characters in JSON Schema and bytes in the checks: every bounded string here
/// has an ASCII character set, so the two agree.
fn fixed_bounds() -> Vec<(&'static str, Value)> {
    let identifier =
        json!({ "minLength": 1, "maxLength": MAX_LABEL_LEN, "pattern": IDENTIFIER_CHARSET });
    let path = json!({ "minLength": 1, "maxLength": MAX_PATH_BYTES, "pattern": PATH_CHARSET });
    let header_name = |max: usize| json!({ "type": "string", "minLength": 1, "maxLength": max, "pattern": HEADER_NAME_CHARSET });
    let changed_header = header_name(MAX_CHANGED_HEADER_NAME_LEN);
    let cidrs = json!({ "minItems": 1, "maxItems": MAX_CLIENT_CIDRS, "uniqueItems": true, "items": { "type": "string", "pattern": CIDR_CHARSET } });
    let set_of = |values: &[&str]| json!({ "minItems": 1, "uniqueItems": true, "items": { "type": "string", "enum": values } });
    vec![
        ("", one_of_required(&[("backend", "string"), ("backends", "array")])),
        (
            "/properties/backends",
            json!({ "minItems": 2, "maxItems": MAX_BACKENDS }),
        ),
        (
            "/$defs/WeightedBackend/properties/weight",
            json!({ "maximum": MAX_CANARY_WEIGHT }),
        ),
        ("/properties/team", identifier.clone()),
        ("/properties/service", identifier),
        // `host.<base domain>` fits MAX_FQDN_LEN; the base domain is the operators', so what
        // holds on every gateway is the host and its dot.
        (
            "/properties/host",
            json!({ "minLength": 1, "maxLength": MAX_FQDN_LEN - 1, "pattern": DNS_NAME_CHARSET }),
        ),
        (
            "/properties/routes",
            json!({ "minItems": 1, "maxItems": MAX_ROUTES }),
        ),
        (
            "/$defs/Canary/properties/weight",
            json!({ "maximum": MAX_CANARY_WEIGHT }),
        ),
        (
            "/$defs/CanaryHeader/properties/name",
            header_name(MAX_CANARY_HEADER_NAME_LEN),
        ),
        (
            "/$defs/CanaryHeader/properties/value",
            json!({
                "minLength": 1,
                "maxLength": MAX_CANARY_HEADER_VALUE_LEN,
                "pattern": COHORT_HEADER_VALUE_CHARSET,
            }),
        ),
        ("/$defs/HealthCheck/properties/path", path.clone()),
        ("/$defs/Route/properties/path", path.clone()),
        ("/$defs/Route/properties/exact", path.clone()),
        (
            "/$defs/Route",
            one_of_required(&[("path", "string"), ("exact", "string")]),
        ),
        (
            "/$defs/Route/properties/headers",
            json!({ "minItems": 1, "maxItems": MAX_HEADER_MATCHES }),
        ),
        (
            "/$defs/Route/properties/query",
            json!({ "minItems": 1, "maxItems": MAX_QUERY_MATCHES }),
        ),
        (
            "/$defs/HeaderMatch",
            one_of_required(&[("value", "string"), ("present", "boolean")]),
        ),
        (
            "/$defs/HeaderMatch/properties/name",
            header_name(MAX_CANARY_HEADER_NAME_LEN),
        ),
        (
            "/$defs/HeaderMatch/properties/value",
            json!({
                "minLength": 1,
                "maxLength": MAX_CANARY_HEADER_VALUE_LEN,
                "pattern": COHORT_HEADER_VALUE_CHARSET,
            }),
        ),
        (
            "/$defs/QueryMatch",
            one_of_required(&[("value", "string"), ("present", "boolean")]),
        ),
        (
            "/$defs/QueryMatch/properties/name",
            json!({ "minLength": 1, "maxLength": MAX_QUERY_NAME_LEN, "pattern": QUERY_NAME_CHARSET }),
        ),
        (
            "/$defs/QueryMatch/properties/value",
            json!({ "minLength": 1, "maxLength": MAX_QUERY_VALUE_LEN, "pattern": QUERY_VALUE_CHARSET }),
        ),
        ("/$defs/QueryMatch/properties/present", json!({ "const": true })),
        (
            "/$defs/Rollout",
            one_of_required(&[("percent", "integer"), ("steps", "array")]),
        ),
        ("/$defs/Rollout/properties/percent", json!({ "maximum": 100 })),
        (
            "/$defs/Rollout/properties/steps",
            json!({ "minItems": 1, "maxItems": crate::check::MAX_ROLLOUT_STEPS, "items": { "type": "integer", "minimum": 1, "maximum": 100 } }),
        ),
        ("/$defs/Rollout/properties/max_5xx_increase", json!({ "minimum": 0, "maximum": 1 })),
        ("/$defs/Rollout/properties/max_p99_ratio", json!({ "minimum": 1, "maximum": 100 })),
        (
            "/properties/jwt",
            json!({
                "minProperties": 1,
                "maxProperties": MAX_JWT_PROVIDERS,
                "propertyNames": { "minLength": 1, "maxLength": MAX_LABEL_LEN, "pattern": IDENTIFIER_CHARSET },
            }),
        ),
        (
            "/$defs/JwtProvider",
            one_of_required(&[("jwks", "object"), ("jwks_uri", "string")]),
        ),
        (
            "/$defs/JwtProvider/properties/issuer",
            json!({ "maxLength": MAX_JWT_STRING_LEN, "pattern": "^https?://[!-~]+$" }),
        ),
        (
            "/$defs/JwtProvider/properties/jwks_uri",
            json!({ "maxLength": MAX_JWT_STRING_LEN, "pattern": "^https?://[!-~]+$" }),
        ),
        (
            "/$defs/JwtProvider/properties/audiences",
            json!({
                "minItems": 1,
                "maxItems": MAX_AUDIENCES,
                "uniqueItems": true,
                "items": { "type": "string", "minLength": 1, "maxLength": MAX_JWT_STRING_LEN, "pattern": "^[!-~]+$" },
            }),
        ),
        (
            "/$defs/JwtProvider/properties/claims_to_headers",
            json!({
                "minProperties": 1,
                "maxProperties": MAX_CLAIM_HEADERS,
                "propertyNames": { "minLength": 1, "maxLength": MAX_CLAIM_NAME_LEN, "pattern": CLAIM_NAME_CHARSET },
                "additionalProperties": changed_header.clone(),
            }),
        ),
        (
            "/$defs/Jwks/properties/keys",
            json!({ "minItems": 1, "maxItems": MAX_JWKS_KEYS }),
        ),
        ("/$defs/Jwk/properties/kty", json!({ "enum": ["RSA", "EC"] })),
        (
            "/$defs/Jwk/properties/alg",
            json!({ "enum": RSA_ALGORITHMS.iter().chain(EC_ALGORITHMS.iter()).collect::<Vec<_>>() }),
        ),
        ("/$defs/Jwk/properties/use", json!({ "const": "sig" })),
        ("/$defs/Jwk/properties/crv", json!({ "const": "P-256" })),
        (
            "/$defs/Jwk/properties/key_ops",
            json!({ "minItems": 1, "maxItems": 1, "items": { "type": "string", "const": "verify" } }),
        ),
        (
            "/$defs/Jwk/properties/x5c",
            json!({ "minItems": 1, "maxItems": MAX_X5C_CERTS, "items": { "type": "string", "maxLength": MAX_X5C_CERT_LEN, "pattern": "^[A-Za-z0-9+/=]+$" } }),
        ),
        (
            "/$defs/Jwk/properties/kid",
            json!({ "minLength": 1, "maxLength": MAX_CLAIM_NAME_LEN, "pattern": "^[!-~]+$" }),
        ),
        ("/$defs/Clients", json!({ "minProperties": 1 })),
        ("/$defs/Clients/properties/allow", cidrs.clone()),
        ("/$defs/Clients/properties/deny", cidrs),
        (
            "/$defs/Mirror/properties/percent",
            json!({ "maximum": MAX_MIRROR_PERCENT }),
        ),
        ("/$defs/Rewrite/anyOf/0", path.clone()),
        (
            "/$defs/RewriteTo",
            one_of_required(&[("path", "string"), ("prefix", "string")]),
        ),
        ("/$defs/RewriteTo/properties/path", path.clone()),
        ("/$defs/RewriteTo/properties/prefix", path),
        ("/$defs/Route/properties/methods", set_of(&METHODS)),
        (
            "/$defs/Route/properties/limits",
            json!({ "maxItems": MAX_LIMITS_PER_ROUTE }),
        ),
        (
            "/$defs/Limit/anyOf/0/properties/burst",
            json!({ "minimum": 1, "maximum": MAX_BURST }),
        ),
        (
            "/$defs/Limit/anyOf/1/properties/requests",
            json!({ "minimum": 1, "maximum": MAX_REQUESTS }),
        ),
        (
            "/$defs/Limit/anyOf/1/properties/header",
            header_name(MAX_HEADER_NAME_LEN),
        ),
        // The most attempts is the operators' (GATEWAY_MAX_RETRY_ATTEMPTS).
        (
            "/$defs/Retries/properties/attempts",
            json!({ "minimum": 1 }),
        ),
        ("/$defs/Retries/properties/on", set_of(&RETRY_CONDITIONS)),
        (
            "/$defs/Retries/properties/status_codes",
            json!({
                "minItems": 1,
                "maxItems": MAX_RETRIED_STATUS_CODES,
                "uniqueItems": true,
                "items": {
                    "type": "integer",
                    "minimum": RETRIED_STATUSES.start(),
                    "maximum": RETRIED_STATUSES.end(),
                },
            }),
        ),
        ("/$defs/HeaderChanges/properties/add", header_values()),
        ("/$defs/HeaderChanges/properties/set", header_values()),
        ("/$defs/HeaderChanges/properties/append", header_values()),
        (
            "/$defs/HeaderChanges/properties/remove",
            json!({ "maxItems": MAX_HEADER_CHANGES, "uniqueItems": true, "items": changed_header.clone() }),
        ),
        (
            "/$defs/Cors/properties/origins",
            json!({ "minItems": 1, "maxItems": MAX_CORS_ORIGINS, "uniqueItems": true }),
        ),
        ("/$defs/Cors/properties/methods", {
            let mut methods = set_of(&METHODS);
            methods["maxItems"] = METHODS.len().into();
            methods
        }),
        (
            "/$defs/Cors/properties/headers",
            json!({ "minItems": 1, "maxItems": MAX_HEADER_CHANGES, "uniqueItems": true, "items": changed_header.clone() }),
        ),
        (
            "/$defs/Redirect/properties/scheme",
            json!({ "enum": ["http", "https"] }),
        ),
        (
            "/$defs/Redirect/properties/port",
            json!({ "minimum": 1, "maximum": 65535 }),
        ),
        (
            "/$defs/Redirect/properties/status",
            json!({ "enum": crate::check::REDIRECT_STATUSES }),
        ),
        (
            "/$defs/Cors/properties/expose_headers",
            json!({ "minItems": 1, "maxItems": MAX_HEADER_CHANGES, "uniqueItems": true, "items": changed_header }),
        ),
    ]
}

/// Exactly one of the named fields (each with its type, which strict validators such as ajv's
/// want beside a `required`).
fn one_of_required(fields: &[(&str, &str)]) -> Value {
    let options: Vec<Value> = fields
        .iter()
        .map(|(name, kind)| json!({ "type": "object", "required": [name], "properties": { *name: { "type": kind } } }))
        .collect();
    json!({ "oneOf": options })
}

/// Header names and the values a route sets or appends (`add`, `set`, `append`): each at most
/// 16 (the checks also bound the three together).
fn header_values() -> serde_json::Value {
    json!({
        "maxProperties": MAX_HEADER_CHANGES,
        "propertyNames": {
            "minLength": 1,
            "maxLength": MAX_CHANGED_HEADER_NAME_LEN,
            "pattern": HEADER_NAME_CHARSET,
        },
        "additionalProperties": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_HEADER_VALUE_BYTES,
            "pattern": HEADER_VALUE_CHARSET,
        },
    })
}

/// Optional fields are left out, never `null`: serde would read a `null` as `None`, but the
/// checks refuse it (`expected a string, got null`), so the schema does too.
#[derive(Clone)]
struct AbsentNotNull;

impl Transform for AbsentNotNull {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(obj) = schema.as_object_mut() {
            if let Some(Value::Array(types)) = obj.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    obj.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(any_of)) = obj.get_mut("anyOf") {
                let before = any_of.len();
                any_of.retain(|s| s != &json!({ "type": "null" }));
                if any_of.len() == 1 && before == 2 {
                    if let Some(Value::Object(inner)) = any_of.pop() {
                        obj.remove("anyOf");
                        merge(obj, inner);
                    }
                }
            }
        }
        transform_subschemas(self, schema);
    }
}

fn merge(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (k, v) in from {
        into.entry(k).or_insert(v);
    }
}

/// `format: uint32` and the like restate the Rust type; the bounds are `minimum`/`maximum`,
/// and validators warn on formats they do not know.
#[derive(Clone)]
struct NoIntegerFormats;

impl Transform for NoIntegerFormats {
    fn transform(&mut self, schema: &mut Schema) {
        if schema.get("type") == Some(&json!("integer")) {
            schema.remove("format");
        }
        transform_subschemas(self, schema);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{
        check_cohort_header_name, check_cohort_header_value, check_header_name, check_header_token,
        check_header_value, check_host, check_identifier, check_path, COHORT_HEADER_VALUE_CHARSET,
        DNS_NAME_CHARSET, HEADER_NAME_CHARSET, HEADER_VALUE_CHARSET, IDENTIFIER_CHARSET,
        PATH_CHARSET,
    };

    /// The characters a `^[CLASS]+$` pattern allows: ranges, single characters and `\t`.
    fn allowed_by(pattern: &str) -> impl Fn(char) -> bool {
        let class = pattern
            .strip_prefix("^[")
            .and_then(|p| p.strip_suffix("]+$"))
            .unwrap_or_else(|| panic!("{pattern}: a charset is ^[CLASS]+$"));
        let mut chars = Vec::new();
        let mut it = class.chars();
        while let Some(c) = it.next() {
            chars.push(match (c, c == '\\') {
                (_, true) => match it.next() {
                    Some('t') => '\t',
                    Some(other) => other,
                    None => panic!("{pattern}: a trailing backslash"),
                },
                (c, false) => c,
            });
        }
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            if i + 2 < chars.len() && chars[i + 1] == '-' {
                ranges.push(chars[i]..=chars[i + 2]);
                i += 3;
            } else {
                ranges.push(chars[i]..=chars[i]);
                i += 1;
            }
        }
        move |c| ranges.iter().any(|r| r.contains(&c))
    }

    /// Every character from U+0000 to U+00FF and a few beyond: the schema's pattern allows it
    /// exactly when the rule accepts it in the middle of an otherwise valid value (`probe`).
    fn agrees(pattern: &str, probe: impl Fn(char) -> String, rule: impl Fn(&str) -> bool) {
        let allowed = allowed_by(pattern);
        let disagree: Vec<String> = (0u32..=0xff)
            .filter_map(char::from_u32)
            .chain(['\u{2028}', '€', '\u{1f600}'])
            .filter(|c| allowed(*c) != rule(&probe(*c)))
            .map(|c| format!("{c:?} (pattern {}, rule {})", allowed(c), rule(&probe(c))))
            .collect();
        assert!(
            disagree.is_empty(),
            "{pattern} and its rule disagree on {disagree:?}"
        );
    }

    #[test]
    fn each_charset_allows_exactly_the_characters_its_rule_accepts() {
        let within = |c: char| format!("a{c}a");
        agrees(IDENTIFIER_CHARSET, within, |s| check_identifier(s).is_ok());
        agrees(DNS_NAME_CHARSET, within, |s| {
            check_host(s, "api.example.com").is_ok()
        });
        // `%20`: a `%` is allowed as the start of an escape.
        agrees(
            PATH_CHARSET,
            |c| format!("/a{c}20"),
            |s| check_path(s).is_ok(),
        );
        let name = |c: char| format!("x{c}x");
        agrees(HEADER_NAME_CHARSET, name, |s| check_header_token(s).is_ok());
        agrees(HEADER_NAME_CHARSET, name, |s| check_header_name(s).is_ok());
        agrees(HEADER_NAME_CHARSET, name, |s| {
            check_cohort_header_name(s).is_ok()
        });
        agrees(HEADER_VALUE_CHARSET, within, |s| {
            check_header_value(s).is_ok()
        });
        agrees(COHORT_HEADER_VALUE_CHARSET, within, |s| {
            check_cohort_header_value(s).is_ok()
        });
    }

    fn objects<'v>(v: &'v Value, at: String, out: &mut Vec<(String, &'v Map<String, Value>)>) {
        match v {
            Value::Object(map) => {
                // A `oneOf` option only says which of an object's fields is required; the
                // object it constrains is the one that refuses unknown fields.
                if map.get("type") == Some(&json!("object")) && !at.contains("/oneOf/") {
                    out.push((at.clone(), map));
                }
                for (k, child) in map {
                    objects(child, format!("{at}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    objects(child, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_object_refuses_unknown_fields_as_the_checks_do() {
        let schema = entry_schema();
        let mut found = Vec::new();
        objects(&schema, String::new(), &mut found);
        assert!(found.len() >= 10, "{} objects", found.len());
        for (at, object) in found {
            let map_of_headers = ["/properties/add", "/properties/set", "/properties/append"]
                .iter()
                .any(|k| at.ends_with(k));
            let expected = if map_of_headers {
                json!({ "type": "string", "minLength": 1, "maxLength": crate::check::MAX_HEADER_VALUE_BYTES, "pattern": HEADER_VALUE_CHARSET })
            } else if at.ends_with("/properties/claims_to_headers") {
                json!({ "type": "string", "minLength": 1, "maxLength": MAX_CHANGED_HEADER_NAME_LEN, "pattern": HEADER_NAME_CHARSET })
            } else if at == "/properties/jwt" {
                json!({ "$ref": "#/$defs/JwtProvider" })
            } else {
                json!(false)
            };
            assert_eq!(object.get("additionalProperties"), Some(&expected), "{at}");
        }
    }

    #[test]
    fn no_field_takes_null() {
        let text = entry_schema_text();
        assert!(!text.contains("\"null\""), "{text}");
        assert!(!text.contains("\"format\""), "{text}");
    }
}
