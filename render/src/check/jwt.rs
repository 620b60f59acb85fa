//! An entry's `jwt` providers and a route's `auth` (docs/design.md#authentication): token
//! issuers Envoy's JWT filter verifies at the edge. Public keys only, inline or fetched from a
//! URL of an issuer the operators allow; claims copied to headers the gateway owns on the
//! entry's routes.

use super::backend::{check_backend, BackendHost};
use super::fields::{list, object, optional_flag, reject_unknown, required, string};
use super::header_changes::{check_changed_header, Direction};
use super::identifiers::check_identifier;
use super::path::check_path;
use super::report::{child, index, quote, Problems};
use super::Policy;
use crate::entry::{Jwk, Jwks, JwtProvider, RouteAuth};
use base64::Engine;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Providers per entry, keys per JWKS and claim headers per provider: the most an operator
/// setting may allow (the schema's bounds), and the defaults.
pub const MAX_JWT_PROVIDERS: usize = 16;
pub const DEFAULT_MAX_JWT_PROVIDERS: usize = 4;
pub const MAX_JWKS_KEYS: usize = 32;
pub const DEFAULT_MAX_JWKS_KEYS: usize = 8;
pub const MAX_CLAIM_HEADERS: usize = 16;
pub const DEFAULT_MAX_CLAIM_HEADERS: usize = 8;
/// Audiences per provider.
pub const MAX_AUDIENCES: usize = 8;
/// Longest issuer, audience or JWKS URL.
pub const MAX_JWT_STRING_LEN: usize = 256;
/// Longest claim name (a dotted path into nested claims) and key id.
pub const MAX_CLAIM_NAME_LEN: usize = 128;
/// RSA moduli the gateway accepts, in bits: below 2048 is breakable, above 8192 costs every
/// proxy on every token.
pub const MIN_RSA_BITS: usize = 2048;
pub const MAX_RSA_BITS: usize = 8192;
/// The characters of a claim name, as a JSON Schema pattern.
pub const CLAIM_NAME_CHARSET: &str = "^[A-Za-z0-9_.:-]+$";
/// Signature algorithms a key may name.
pub const RSA_ALGORITHMS: [&str; 6] = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"];
pub const EC_ALGORITHMS: [&str; 1] = ["ES256"];

const PROVIDER_FIELDS: [&str; 6] =
    ["issuer", "audiences", "jwks", "jwks_uri", "claims_to_headers", "forward"];
const JWK_FIELDS: [&str; 13] =
    ["kty", "kid", "alg", "use", "n", "e", "crv", "x", "y", "key_ops", "x5c", "x5t", "x5t#S256"];
/// Certificates in a key's `x5c` chain, and the longest one (standard base64 of its DER).
pub const MAX_X5C_CERTS: usize = 4;
pub const MAX_X5C_CERT_LEN: usize = 8192;
/// Members of a private or symmetric key (RFC 7518 §6.2.2, §6.3.2, §6.4).
const PRIVATE_JWK_FIELDS: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
const AUTH_FIELDS: [&str; 1] = ["jwt"];

/// The operators' JWT settings: which issuers may have their keys fetched (`GATEWAY_JWT_ISSUERS`)
/// and the bounds (`GATEWAY_MAX_JWT_PROVIDERS`, `GATEWAY_MAX_JWKS_KEYS`,
/// `GATEWAY_MAX_CLAIM_HEADERS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtPolicy {
    pub issuers: Vec<AllowedIssuer>,
    pub max_providers: usize,
    pub max_keys: usize,
    pub max_claim_headers: usize,
}

/// An issuer whose JWKS Envoy may fetch, and the URL prefix the JWKS must be under (by default
/// the issuer's own origin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedIssuer {
    pub issuer: String,
    pub jwks_prefix: String,
}

impl Default for JwtPolicy {
    fn default() -> Self {
        JwtPolicy {
            issuers: Vec::new(),
            max_providers: DEFAULT_MAX_JWT_PROVIDERS,
            max_keys: DEFAULT_MAX_JWKS_KEYS,
            max_claim_headers: DEFAULT_MAX_CLAIM_HEADERS,
        }
    }
}

impl JwtPolicy {
    /// The settings' values; unset or empty keeps each default. Errors name the setting.
    pub fn from_values(
        issuers: Option<&str>,
        max_providers: Option<&str>,
        max_keys: Option<&str>,
        max_claim_headers: Option<&str>,
    ) -> Result<JwtPolicy, String> {
        let mut p = JwtPolicy::default();
        let bound = |name: &str, v: Option<&str>, max: usize, default: usize| -> Result<usize, String> {
            match v.map(str::trim).filter(|v| !v.is_empty()) {
                None => Ok(default),
                Some(v) => v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| format!("{name}: {v:?} is not a whole number from 1 to {max}")),
            }
        };
        p.max_providers = bound("GATEWAY_MAX_JWT_PROVIDERS", max_providers, MAX_JWT_PROVIDERS, DEFAULT_MAX_JWT_PROVIDERS)?;
        p.max_keys = bound("GATEWAY_MAX_JWKS_KEYS", max_keys, MAX_JWKS_KEYS, DEFAULT_MAX_JWKS_KEYS)?;
        p.max_claim_headers = bound(
            "GATEWAY_MAX_CLAIM_HEADERS",
            max_claim_headers,
            MAX_CLAIM_HEADERS,
            DEFAULT_MAX_CLAIM_HEADERS,
        )?;
        for item in issuers.unwrap_or("").split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (issuer, prefix) = match item.split_once('|') {
                Some((i, p)) => (i.trim(), Some(p.trim())),
                None => (item, None),
            };
            let origin = url_origin(issuer)
                .map_err(|why| format!("GATEWAY_JWT_ISSUERS: issuer {issuer:?}: {why}"))?;
            let jwks_prefix = match prefix {
                None => format!("{origin}/"),
                Some(p) => {
                    let o = url_origin(p).map_err(|why| format!("GATEWAY_JWT_ISSUERS: JWKS prefix {p:?}: {why}"))?;
                    if p.len() == o.len() { format!("{o}/") } else { p.to_string() }
                }
            };
            p.issuers.push(AllowedIssuer { issuer: issuer.to_string(), jwks_prefix });
        }
        Ok(p)
    }
}

/// `scheme://authority` of an `http(s)://` URL.
fn url_origin(url: &str) -> Result<&str, String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("is not an https:// (or http://) URL")?;
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if authority_len == 0 {
        return Err("has no host".into());
    }
    Ok(&url[..url.len() - rest.len() + authority_len])
}

/// An issuer: an `https://` or `http://` URL of printable ASCII, no query or fragment. It is
/// compared with the token's `iss` exactly, as written.
pub fn check_issuer(s: &str) -> Result<(), String> {
    if s.len() > MAX_JWT_STRING_LEN {
        return Err(format!("is {} characters long; at most {MAX_JWT_STRING_LEN}", s.len()));
    }
    if let Some(c) = s.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!("{} contains {}; an issuer is printable ASCII without spaces", quote(s), quote(&c.to_string())));
    }
    url_origin(s).map_err(|why| format!("{} {why}; an issuer is the URL tokens name in iss", quote(s)))?;
    if s.contains(['?', '#']) {
        return Err(format!("{} has a query or fragment; an issuer URL has neither", quote(s)));
    }
    Ok(())
}

/// An audience: 1–256 characters of printable ASCII, compared with the token's `aud` exactly.
pub fn check_audience(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > MAX_JWT_STRING_LEN {
        return Err(format!("is {} characters long; at most {MAX_JWT_STRING_LEN}", s.len()));
    }
    if let Some(c) = s.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!("contains {}; an audience is printable ASCII without spaces", quote(&c.to_string())));
    }
    Ok(())
}

/// A claim name (a dotted path reaches a nested claim).
pub fn check_claim_name(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("a claim name must not be empty".into());
    }
    if s.len() > MAX_CLAIM_NAME_LEN {
        return Err(format!("claim name is {} characters long; at most {MAX_CLAIM_NAME_LEN}", s.len()));
    }
    if let Some(c) = s.chars().find(|c| !(c.is_ascii_alphanumeric() || "_.:-".contains(*c))) {
        return Err(format!("claim name {} has {}; letters, digits, _ . : - only", quote(s), quote(&c.to_string())));
    }
    if s.starts_with('.') || s.ends_with('.') || s.contains("..") {
        return Err(format!("claim name {} has an empty part between dots", quote(s)));
    }
    Ok(())
}

/// A header a claim is copied into: a header a route could set (never the gateway's own,
/// forwarding or framing headers), and never one that carries the client's credentials or
/// describes the body, since the gateway removes it from every request of a route that
/// requires a token, whoever sent it.
pub fn check_claim_header(h: &str) -> Result<(), String> {
    check_changed_header(h, &Direction::Request { limit_keys: &[] })?;
    let why = match h {
        "authorization" | "proxy-authorization" => Some("it carries the client's credentials"),
        "cookie" => Some("it carries the client's cookies"),
        "user-agent" | "accept" | "origin" | "referer" => Some("it describes the client's request"),
        _ if h.starts_with("content-") => Some("it describes the request's body"),
        _ if h.starts_with("access-control-") => Some("CORS reads it"),
        _ => None,
    };
    match why {
        Some(why) => Err(format!("{} may not carry a claim: {why}", quote(h))),
        None => Ok(()),
    }
}

/// Decodes base64url without padding, as a JWK writes its numbers.
fn base64url(s: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| "is not base64url without padding".to_string())
}

/// The entry's `jwt`: provider name → provider.
pub(crate) fn providers(
    v: &Value,
    field: &str,
    policy: &Policy,
    problems: &mut Problems,
) -> Option<BTreeMap<String, JwtProvider>> {
    let map = object(v, field, "token issuers by name", problems)?;
    let before = problems.0.len();
    if map.is_empty() {
        problems.push(field, "an empty object; leave jwt out");
    }
    if map.len() > policy.jwt.max_providers {
        problems.push(
            field,
            format!(
                "has {} providers; at most {} (GATEWAY_MAX_JWT_PROVIDERS)",
                map.len(),
                policy.jwt.max_providers
            ),
        );
    }
    let mut out = BTreeMap::new();
    for (name, v) in map {
        let at = child(field, name);
        if let Err(why) = check_identifier(name) {
            problems.push(&at, format!("provider name {}: {why}", quote(name)));
            continue;
        }
        if let Some(p) = provider(v, &at, policy, problems) {
            out.insert(name.clone(), p);
        }
    }
    (problems.0.len() == before).then_some(out)
}

fn provider(v: &Value, field: &str, policy: &Policy, problems: &mut Problems) -> Option<JwtProvider> {
    let map = object(v, field, "a token issuer", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &PROVIDER_FIELDS, problems);
    let issuer = required(map, field, "issuer", problems).and_then(|v| {
        let at = child(field, "issuer");
        let s = string(v, &at, problems)?;
        check_issuer(s).map_err(|why| problems.push(&at, why)).ok()?;
        Some(s.to_string())
    });
    let audiences = match map.get("audiences") {
        None => Vec::new(),
        Some(v) => audiences(v, &child(field, "audiences"), problems),
    };
    let (jwks, jwks_uri) = match (map.get("jwks"), map.get("jwks_uri")) {
        (Some(_), Some(_)) => {
            problems.push(child(field, "jwks_uri"), "either jwks (the keys inline) or jwks_uri, not both");
            (None, None)
        }
        (None, None) => {
            problems.push(child(field, "jwks"), "required: the issuer's public keys (jwks), or jwks_uri for an issuer the operators allow");
            (None, None)
        }
        (Some(v), None) => (jwks(v, &child(field, "jwks"), policy, problems), None),
        (None, Some(v)) => {
            let at = child(field, "jwks_uri");
            let uri = string(v, &at, problems).and_then(|u| {
                check_jwks_uri(u, issuer.as_deref(), policy)
                    .map_err(|why| problems.push(&at, why))
                    .ok()
                    .map(|()| u.to_string())
            });
            (None, uri)
        }
    };
    let claims_to_headers = match map.get("claims_to_headers") {
        None => BTreeMap::new(),
        Some(v) => claims_to_headers(v, &child(field, "claims_to_headers"), policy, problems),
    };
    let forward = optional_flag(map, field, "forward", problems);
    if problems.0.len() > before {
        return None;
    }
    Some(JwtProvider { issuer: issuer?, audiences, jwks, jwks_uri, claims_to_headers, forward })
}

fn audiences(v: &Value, field: &str, problems: &mut Problems) -> Vec<String> {
    let Some(items) = list(v, field, "audiences", problems) else { return Vec::new() };
    if items.is_empty() {
        problems.push(field, "an empty list; leave audiences out to accept any audience");
    }
    if items.len() > MAX_AUDIENCES {
        problems.push(field, format!("has {} audiences; at most {MAX_AUDIENCES}", items.len()));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = index(field, i);
        let Some(s) = string(item, &at, problems) else { continue };
        if let Err(why) = check_audience(s) {
            problems.push(&at, why);
        } else if out.iter().any(|a| a == s) {
            problems.push(&at, format!("{} is listed twice", quote(s)));
        } else {
            out.push(s.to_string());
        }
    }
    out.sort();
    out
}

/// A JWKS URL: allowed only for an issuer the operators list, under that issuer's JWKS prefix;
/// `https://` (plain `http://` only to a loopback address where loopback backends are allowed:
/// keys fetched in the clear could be replaced on the way); its host judged like a backend's.
pub fn check_jwks_uri(uri: &str, issuer: Option<&str>, policy: &Policy) -> Result<(), String> {
    if uri.len() > MAX_JWT_STRING_LEN {
        return Err(format!("is {} characters long; at most {MAX_JWT_STRING_LEN}", uri.len()));
    }
    let Some(issuer) = issuer else {
        return Err("needs a valid issuer to be judged".into());
    };
    let Some(allowed) = policy.jwt.issuers.iter().find(|a| a.issuer == issuer) else {
        return Err(format!(
            "issuer {} is not one whose keys the gateway may fetch (GATEWAY_JWT_ISSUERS); give the keys inline as jwks",
            quote(issuer)
        ));
    };
    if !uri.starts_with(&allowed.jwks_prefix) {
        return Err(format!(
            "{} is not under {}, where the operators allow issuer {}'s keys",
            quote(uri),
            quote(&allowed.jwks_prefix),
            quote(issuer)
        ));
    }
    let origin = url_origin(uri)?;
    let path = &uri[origin.len()..];
    let backend = check_backend(origin, policy)?;
    if uri.starts_with("http://") && !(policy.allow_loopback_backends && is_loopback(&backend.host)) {
        return Err(format!("{} is plain http; keys fetched in the clear can be replaced on the way: use https://", quote(uri)));
    }
    if path.contains(['?', '#']) {
        return Err(format!("{} has a query or fragment", quote(uri)));
    }
    check_path(if path.is_empty() { "/" } else { path }).map_err(|why| format!("its path: {why}"))
}

fn is_loopback(host: &BackendHost) -> bool {
    match host {
        BackendHost::Name(n) => n == "localhost",
        BackendHost::V4(ip) => ip.is_loopback(),
        BackendHost::V6(ip) => ip.is_loopback(),
    }
}

fn jwks(v: &Value, field: &str, policy: &Policy, problems: &mut Problems) -> Option<Jwks> {
    let map = object(v, field, "a JSON Web Key Set", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &["keys"], problems);
    let at = child(field, "keys");
    let items = required(map, field, "keys", problems).and_then(|v| list(v, &at, "keys", problems))?;
    if items.is_empty() {
        problems.push(&at, "an empty key set verifies no token");
    }
    if items.len() > policy.jwt.max_keys {
        problems.push(&at, format!("has {} keys; at most {} (GATEWAY_MAX_JWKS_KEYS)", items.len(), policy.jwt.max_keys));
    }
    let mut keys: Vec<Jwk> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let here = index(&at, i);
        if let Some(k) = jwk(item, &here, problems) {
            if k.kid.is_some() && keys.iter().any(|o| o.kid == k.kid) {
                problems.push(child(&here, "kid"), format!("{} names another key too", quote(k.kid.as_deref().unwrap_or(""))));
            }
            keys.push(k);
        }
    }
    (problems.0.len() == before).then_some(Jwks { keys })
}

fn jwk(v: &Value, field: &str, problems: &mut Problems) -> Option<Jwk> {
    let map = object(v, field, "a public key", problems)?;
    let before = problems.0.len();
    for key in PRIVATE_JWK_FIELDS {
        if map.contains_key(key) {
            problems.push(
                child(field, key),
                "a private or secret key member: a JWKS here holds public keys only (the config reaches every proxy); remove it, and rotate the key if it was ever shared",
            );
        }
    }
    let unknown: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| !PRIVATE_JWK_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    reject_unknown(&unknown, field, &JWK_FIELDS, problems);
    let text = |key: &str, problems: &mut Problems| -> Option<String> {
        let v = map.get(key)?;
        string(v, &child(field, key), problems).map(str::to_string)
    };
    let kty = required(map, field, "kty", problems).and_then(|v| string(v, &child(field, "kty"), problems).map(str::to_string));
    let kid = text("kid", problems);
    let alg = text("alg", problems);
    let use_ = text("use", problems);
    let n = text("n", problems);
    let e = text("e", problems);
    let crv = text("crv", problems);
    let x = text("x", problems);
    let y = text("y", problems);
    let x5t = text("x5t", problems);
    let x5t_s256 = text("x5t#S256", problems);
    for (key, v) in [("x5t", &x5t), ("x5t#S256", &x5t_s256)] {
        if let Some(v) = v {
            if v.len() > 64 || base64url(v).is_err() {
                problems.push(child(field, key), "a certificate thumbprint: base64url without padding, at most 64 characters");
            }
        }
    }
    let key_ops = map.get("key_ops").and_then(|v| {
        let at = child(field, "key_ops");
        let items = list(v, &at, "key operations", problems)?;
        let ops: Vec<String> = items.iter().filter_map(|i| string(i, &at, problems).map(str::to_string)).collect();
        if ops != ["verify"] {
            problems.push(&at, "a public key here only verifies: [\"verify\"]");
            return None;
        }
        Some(ops)
    });
    let x5c = map.get("x5c").and_then(|v| {
        let at = child(field, "x5c");
        let items = list(v, &at, "certificates", problems)?;
        if items.is_empty() || items.len() > MAX_X5C_CERTS {
            problems.push(&at, format!("1 to {MAX_X5C_CERTS} certificates"));
            return None;
        }
        let mut certs = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let here = index(&at, i);
            let cert = string(item, &here, problems)?;
            let standard = base64::engine::general_purpose::STANDARD.decode(cert).is_ok();
            if !standard || cert.len() > MAX_X5C_CERT_LEN {
                problems.push(&here, format!("a certificate: standard base64 of its DER, at most {MAX_X5C_CERT_LEN} characters"));
                return None;
            }
            certs.push(cert.to_string());
        }
        Some(certs)
    });
    if let Some(kid) = &kid {
        if kid.is_empty() || kid.len() > MAX_CLAIM_NAME_LEN || !kid.chars().all(|c| c.is_ascii_graphic()) {
            problems.push(child(field, "kid"), format!("1-{MAX_CLAIM_NAME_LEN} characters of printable ASCII"));
        }
    }
    if let Some(u) = &use_ {
        if u != "sig" {
            problems.push(child(field, "use"), format!("{} is not sig; a key here verifies signatures", quote(u)));
        }
    }
    let absent = |keys: &[&str], kty: &str, problems: &mut Problems| {
        for key in keys {
            if map.contains_key(*key) {
                problems.push(child(field, key), format!("not a member of an {kty} key"));
            }
        }
    };
    match kty.as_deref() {
        Some("RSA") => {
            absent(&["crv", "x", "y"], "RSA", problems);
            if let Some(alg) = &alg {
                if !RSA_ALGORITHMS.contains(&alg.as_str()) {
                    problems.push(child(field, "alg"), format!("{} is not one of {} for an RSA key", quote(alg), RSA_ALGORITHMS.join(", ")));
                }
            }
            match &n {
                None => problems.push(child(field, "n"), "required field is missing"),
                Some(n) => match base64url(n) {
                    Err(why) => problems.push(child(field, "n"), why),
                    Ok(bytes) => {
                        let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
                        let bits = bytes[first..].first().map_or(0, |b| (bytes.len() - first) * 8 - b.leading_zeros() as usize);
                        if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
                            problems.push(child(field, "n"), format!("a {bits}-bit modulus; {MIN_RSA_BITS} to {MAX_RSA_BITS} bits"));
                        }
                    }
                },
            }
            match &e {
                None => problems.push(child(field, "e"), "required field is missing"),
                Some(e) => match base64url(e) {
                    Err(why) => problems.push(child(field, "e"), why),
                    Ok(bytes) => {
                        let value = bytes.iter().try_fold(0u64, |acc, b| acc.checked_mul(256).map(|a| a + u64::from(*b)));
                        if !matches!(value, Some(v) if v >= 3 && v % 2 == 1 && v <= u64::from(u32::MAX)) {
                            problems.push(child(field, "e"), "not an RSA public exponent (an odd number from 3, such as AQAB for 65537)");
                        }
                    }
                },
            }
        }
        Some("EC") => {
            absent(&["n", "e"], "EC", problems);
            if let Some(alg) = &alg {
                if !EC_ALGORITHMS.contains(&alg.as_str()) {
                    problems.push(child(field, "alg"), format!("{} is not ES256, the algorithm of a P-256 key", quote(alg)));
                }
            }
            if crv.as_deref() != Some("P-256") {
                problems.push(child(field, "crv"), "must be P-256 (ES256)");
            }
            let coordinate = |key: &str, v: &Option<String>, problems: &mut Problems| -> Option<Vec<u8>> {
                let Some(v) = v else {
                    problems.push(child(field, key), "required field is missing");
                    return None;
                };
                match base64url(v) {
                    Ok(b) if b.len() == 32 => Some(b),
                    Ok(b) => {
                        problems.push(child(field, key), format!("{} bytes; a P-256 coordinate is 32", b.len()));
                        None
                    }
                    Err(why) => {
                        problems.push(child(field, key), why);
                        None
                    }
                }
            };
            let (px, py) = (coordinate("x", &x, problems), coordinate("y", &y, problems));
            if let (Some(px), Some(py)) = (px, py) {
                let mut sec1 = vec![4u8];
                sec1.extend(px);
                sec1.extend(py);
                if p256::PublicKey::from_sec1_bytes(&sec1).is_err() {
                    problems.push(field, "x and y are not a point on P-256");
                }
            }
        }
        Some(other) => problems.push(
            child(field, "kty"),
            format!("{} is not RSA or EC; a shared secret (oct) would reach every proxy's config", quote(other)),
        ),
        None => {}
    }
    (problems.0.len() == before).then(|| Jwk {
        kty: kty.unwrap_or_default(),
        kid,
        alg,
        use_,
        n,
        e,
        crv,
        x,
        y,
        key_ops,
        x5c,
        x5t,
        x5t_s256,
    })
}

fn claims_to_headers(v: &Value, field: &str, policy: &Policy, problems: &mut Problems) -> BTreeMap<String, String> {
    let Some(map) = object(v, field, "claim names and the headers they go in", problems) else {
        return BTreeMap::new();
    };
    if map.is_empty() {
        problems.push(field, "an empty object; leave claims_to_headers out");
    }
    if map.len() > policy.jwt.max_claim_headers {
        problems.push(
            field,
            format!("has {} claims; at most {} (GATEWAY_MAX_CLAIM_HEADERS)", map.len(), policy.jwt.max_claim_headers),
        );
    }
    let mut out = BTreeMap::new();
    let mut headers: BTreeMap<&str, &str> = BTreeMap::new();
    for (claim, header) in map {
        let at = child(field, claim);
        if let Err(why) = check_claim_name(claim) {
            problems.push(&at, why);
            continue;
        }
        let Some(h) = string(header, &at, problems) else { continue };
        if let Err(why) = check_claim_header(h) {
            problems.push(&at, why);
            continue;
        }
        if let Some(other) = headers.insert(h, claim) {
            problems.push(&at, format!("header {} already carries claim {}", quote(h), quote(other)));
            continue;
        }
        out.insert(claim.clone(), h.to_string());
    }
    out
}

/// A route's `auth`: `{ "jwt": NAME }`, one of `providers` (the names the entry's `jwt`
/// declares, `None` while `jwt` itself is invalid).
pub(crate) fn route_auth(
    v: &Value,
    field: &str,
    providers: Option<&[String]>,
    problems: &mut Problems,
) -> Option<RouteAuth> {
    let map = object(v, field, "what the route requires", problems)?;
    let before = problems.0.len();
    reject_unknown(map, field, &AUTH_FIELDS, problems);
    let at = child(field, "jwt");
    let name = required(map, field, "jwt", problems).and_then(|v| string(v, &at, problems));
    if let (Some(name), Some(providers)) = (name, providers) {
        if !providers.iter().any(|p| p == name) {
            problems.push(
                &at,
                if providers.is_empty() {
                    format!("{} is not a provider: the entry declares no jwt providers", quote(name))
                } else {
                    format!("{} is not one of the entry's jwt providers ({})", quote(name), providers.join(", "))
                },
            );
        }
    }
    (problems.0.len() == before).then(|| RouteAuth { jwt: name.unwrap_or_default().to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const N: &str = "wLvO9kb6E9gObqQP7MspHJSkpIg8UwGQL4HmrEDvBnBUt4RbCSEoZM6hhiH9ajXXq-wYlzaRfUQN-hk7oD3VQFZoimDjLpUfvmqe7BrDhlEWb0AjU9n-UjmcBLwPYxZN_3hEkoGEVYvqNkqVN-8nqgBQmSeaQz7j3nd0dODqjlPAn8JqRJGxEpdBXAaeW8e9XI9tMdb0CIUp9AeuxthvAN0d1dgX2mlUJCE7aqmzUmqGj2G1XoFz_yq-Ci5Gu9jk6L52dzNhOxLcUvWrrOC7h7tLJdtOHvHN7RVWJtR0DsmSdD8FsFu3iR0-NmOIhG2UEfTlHq2c56rYpGqhc9ohmw";

    fn policy() -> Policy {
        let mut p = Policy::new("api.example.com", false);
        p.jwt = JwtPolicy::from_values(Some("https://id.example.com/"), None, None, None).expect("valid");
        p
    }

    fn run(v: Value) -> Result<BTreeMap<String, JwtProvider>, Vec<String>> {
        let mut p = Problems::default();
        providers(&v, "jwt", &policy(), &mut p).ok_or_else(|| p.0.iter().map(|p| p.to_string()).collect())
    }

    fn rsa() -> Value {
        json!({ "kty": "RSA", "kid": "r1", "alg": "RS256", "use": "sig", "n": N, "e": "AQAB" })
    }

    fn ec() -> Value {
        // The P-256 generator point.
        json!({ "kty": "EC", "kid": "e1", "alg": "ES256", "crv": "P-256",
                "x": "axfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpY",
                "y": "T-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU" })
    }

    #[test]
    fn rsa_and_ec_public_keys_with_claims() {
        let got = run(json!({ "main": { "issuer": "https://id.example.com/", "audiences": ["b", "a"],
            "jwks": { "keys": [rsa(), ec()] }, "claims_to_headers": { "sub": "x-user-id", "org.id": "x-org" } } }))
        .expect("valid");
        let p = &got["main"];
        assert_eq!(p.audiences, ["a", "b"]);
        assert_eq!(p.jwks.as_ref().map(|k| k.keys.len()), Some(2));
        assert_eq!(p.claims_to_headers["sub"], "x-user-id");
        assert!(!p.forward);
    }

    #[test]
    fn hostile_values_are_refused_at_their_field() {
        let mut private = rsa();
        private["d"] = json!("AQAB");
        for (v, want) in [
            (json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [private] } } }), "jwt.m.jwks.keys[0].d: a private or secret key member"),
            (json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [{ "kty": "oct", "k": "c2VjcmV0" }] } } }), "jwt.m.jwks.keys[0].k: a private or secret key member"),
            (json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [{ "kty": "oct" }] } } }), "jwt.m.jwks.keys[0].kty: \"oct\" is not RSA or EC"),
            (json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [rsa()] }, "claims_to_headers": { "sub": "x-forwarded-for" } } }), "jwt.m.claims_to_headers.sub: \"x-forwarded-for\" is the gateway's to set"),
            (json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [rsa()] }, "claims_to_headers": { "sub": "authorization" } } }), "jwt.m.claims_to_headers.sub: \"authorization\" may not carry a claim"),
            (json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [rsa()] }, "claims_to_headers": { "sub": "host" } } }), "jwt.m.claims_to_headers.sub: \"host\" is the gateway's to set"),
            (json!({ "m": { "issuer": "https://evil.example.com/", "jwks_uri": "https://evil.example.com/keys" } }), "jwt.m.jwks_uri: issuer \"https://evil.example.com/\" is not one whose keys the gateway may fetch"),
            (json!({ "m": { "issuer": "https://id.example.com/", "jwks_uri": "https://elsewhere.example.com/keys" } }), "jwt.m.jwks_uri: \"https://elsewhere.example.com/keys\" is not under \"https://id.example.com/\""),
            (json!({ "m": { "issuer": "id.example.com", "jwks": { "keys": [rsa()] } } }), "jwt.m.issuer: \"id.example.com\" is not an https://"),
            (json!({ "m": { "issuer": "https://id.example.com/", "audiences": [""], "jwks": { "keys": [rsa()] } } }), "jwt.m.audiences[0]: must not be empty"),
            (json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [{ "kty": "RSA", "n": "AQAB", "e": "AQAB" }] } } }), "jwt.m.jwks.keys[0].n: a 17-bit modulus"),
            (json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [{ "kty": "EC", "crv": "P-256", "x": "axfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpY", "y": "axfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpY" }] } } }), "jwt.m.jwks.keys[0]: x and y are not a point on P-256"),
            (json!({ "m": { "issuer": "https://id.example.com/" } }), "jwt.m.jwks: required"),
            (json!({ "Main": { "issuer": "https://id.example.com/", "jwks": { "keys": [rsa()] } } }), "jwt.Main: provider name \"Main\""),
        ] {
            let problems = run(v.clone()).expect_err("refused");
            assert!(problems.iter().any(|p| p.starts_with(want)), "{v}: {problems:?}");
        }
    }

    #[test]
    fn what_identity_providers_publish_beside_a_key_is_kept() {
        let mut k = rsa();
        k["key_ops"] = json!(["verify"]);
        k["x5t"] = json!("NjVBRjY5MDlCMUIwNzU4RTA2QzZFMDQ4QzQ2MDAyQjVDNjk1RTM2Qg");
        k["x5c"] = json!(["MIIBszCCAVmgAwIBAgIUQ2Vy"]);
        let got = run(json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [k] } } })).expect("valid");
        let key = &got["m"].jwks.as_ref().expect("keys").keys[0];
        assert_eq!(key.key_ops.as_deref(), Some(&["verify".to_string()][..]));
        assert!(key.x5c.is_some() && key.x5t.is_some());
        let mut signing = rsa();
        signing["key_ops"] = json!(["sign"]);
        let problems = run(json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": [signing] } } })).expect_err("refused");
        assert!(problems[0].starts_with("jwt.m.jwks.keys[0].key_ops: a public key here only verifies"), "{problems:?}");
    }

    #[test]
    fn bounds_come_from_the_operators_settings() {
        let keys: Vec<Value> = (0..9).map(|i| { let mut k = rsa(); k["kid"] = json!(format!("k{i}")); k }).collect();
        let problems = run(json!({ "m": { "issuer": "https://id.example.com/", "jwks": { "keys": keys } } })).expect_err("too many");
        assert_eq!(problems, ["jwt.m.jwks.keys: has 9 keys; at most 8 (GATEWAY_MAX_JWKS_KEYS)"]);
        assert!(JwtPolicy::from_values(None, Some("17"), None, None).unwrap_err().starts_with("GATEWAY_MAX_JWT_PROVIDERS"));
        assert!(JwtPolicy::from_values(Some("id.example.com"), None, None, None).unwrap_err().starts_with("GATEWAY_JWT_ISSUERS"));
        let p = JwtPolicy::from_values(Some("https://accounts.example.com|https://keys.example.com/oauth2/"), None, None, None).unwrap();
        assert_eq!(p.issuers[0].jwks_prefix, "https://keys.example.com/oauth2/");
    }

    #[test]
    fn a_jwks_uri_is_https_under_the_allowed_prefix_and_judged_like_a_backend() {
        let p = policy();
        assert_eq!(check_jwks_uri("https://id.example.com/.well-known/jwks.json", Some("https://id.example.com/"), &p), Ok(()));
        assert!(check_jwks_uri("http://id.example.com/keys", Some("https://id.example.com/"), &p).is_err());
        let mut local = Policy::new("api.example.com", true);
        local.jwt = JwtPolicy::from_values(Some("http://127.0.0.1:9000/"), None, None, None).unwrap();
        assert_eq!(check_jwks_uri("http://127.0.0.1:9000/jwks", Some("http://127.0.0.1:9000/"), &local), Ok(()));
        let mut meta = Policy::new("api.example.com", true);
        meta.jwt = JwtPolicy::from_values(Some("http://169.254.169.254/"), None, None, None).unwrap();
        assert!(check_jwks_uri("http://169.254.169.254/latest", Some("http://169.254.169.254/"), &meta).is_err());
    }
}
