//! Authentication at the edge (docs/design.md#authentication) through the real pipeline: entries
//! that passed the registration checks, rendered, published signed into moto's bucket, delivered
//! by the sidecar into the real Envoy on the gateway's bootstrap, and tokens minted here (RS256
//! and ES256) against it:
//! - a route that requires a token answers 401 with `www-authenticate` to no token, a wrongly
//!   signed, expired, not-yet-valid or other issuer's token, and 401 or 403 to a wrong audience;
//!   nothing reaches the backend then;
//! - a good token reaches the backend with its claim in the team's header (a client's copy
//!   never), and without the token itself;
//! - the entry's route without `auth` admits anyone, without a client's copy of a claim header;
//!   another team's routes are untouched (their clients' headers pass as sent);
//! - a new JWKS (a key rotation) takes effect with no restart of Envoy, and a route whose issuer
//!   keys are fetched (`jwks_uri`) verifies with them, while one whose keys cannot be fetched
//!   fails closed alone.
//!
//! One gateway serves every case; every case runs even when one fails, and all failures are
//! reported together.

use gateway_testkit::delivery as common;

use common::*;
use gateway_render::check::{check_entry_value, JwtPolicy, Policy};
use gateway_render::Entry;
use gateway_testkit::policy_backend::PolicyBackend;
use gateway_testkit::stub::{Answer, StubServer};
use gateway_testkit::tokens::{jwks, now, TokenSigner};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const APPLY: Duration = Duration::from_secs(30);
const ISSUER: &str = "https://id.example.com/";

fn policy(remote_issuers: &str) -> Policy {
    let mut p = Policy::new(DOMAIN, true);
    p.jwt = JwtPolicy::from_values(Some(remote_issuers), None, None, None).expect("issuers");
    p
}

struct Fixture {
    backend: PolicyBackend,
    rsa: TokenSigner,
    ec: TokenSigner,
    /// Serves `remote`'s JWKS (the EC key).
    keys: StubServer,
    /// Where the `dead` provider's keys would be: nothing listens.
    dead: String,
}

impl Fixture {
    fn remote_issuer(&self) -> String {
        format!("http://{}/", self.keys.addr())
    }

    fn entries(&self, invoice_keys: Value) -> Vec<Entry> {
        let issuers = format!("{},{}", self.remote_issuer(), self.dead);
        let p = policy(&issuers);
        let checked = |doc: Value| -> Entry {
            check_entry_value(&doc, &p).unwrap_or_else(|r| panic!("entry refused:\n{r}\n{doc}"))
        };
        vec![
            checked(json!({
                "team": "billing", "service": "invoices-api", "host": "invoices",
                "backend": self.backend.url(),
                "jwt": { "main": { "issuer": ISSUER, "audiences": ["invoices"], "jwks": invoice_keys,
                                   "claims_to_headers": { "sub": "x-user-id" } } },
                "routes": [
                    { "path": "/invoices", "auth": { "jwt": "main" } },
                    { "path": "/public" }
                ]
            })),
            checked(json!({
                "team": "catalog", "service": "products-api", "host": "catalog",
                "backend": self.backend.url(),
                "routes": [ { "path": "/products" } ]
            })),
            checked(json!({
                "team": "keys", "service": "remote-api", "host": "remote",
                "backend": self.backend.url(),
                "jwt": {
                    "fetched": { "issuer": self.remote_issuer(), "jwks_uri": format!("{}jwks.json", self.remote_issuer()) },
                    "dead": { "issuer": self.dead.clone(), "jwks_uri": format!("{}jwks.json", self.dead) }
                },
                "routes": [
                    { "path": "/fetched", "auth": { "jwt": "fetched" } },
                    { "path": "/dead", "auth": { "jwt": "dead" } },
                    { "path": "/open" }
                ]
            })),
        ]
    }
}

/// What one request got: the status, the `www-authenticate` header, and the backend's record of
/// the request's headers when it reached the backend (the body's `headers`).
#[derive(Debug)]
struct Got {
    status: u16,
    challenge: Option<String>,
    body: String,
    seen: Option<Value>,
}

async fn get(gw: &Gateway, host: &str, path: &str, headers: &[(&str, &str)]) -> Result<Got, String> {
    let mut req = gw
        .client
        .get(format!("http://{}{path}", gw.listener()))
        .header(reqwest::header::HOST, format!("{host}.{DOMAIN}"));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let r = req.send().await.map_err(|e| format!("{host}{path}: {e}"))?;
    let status = r.status().as_u16();
    let challenge = r
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = r.text().await.map_err(|e| e.to_string())?;
    let seen = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v.get("headers").cloned());
    Ok(Got { status, challenge, body, seen })
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn claims(extra: Value) -> Value {
    let mut c = json!({ "iss": ISSUER, "aud": "invoices", "sub": "user-7", "iat": now(), "exp": now() + 600 });
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            if v.is_null() {
                c.remove(k);
            } else {
                c.insert(k.clone(), v.clone());
            }
        }
    }
    c
}

/// A request the route must refuse before the backend: `want` statuses, a `www-authenticate`
/// challenge, the gateway's JSON body.
async fn expect_refused(gw: &Gateway, what: &str, token: Option<&str>, want: &[u16]) -> Result<(), String> {
    let auth = token.map(bearer);
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
    let got = get(gw, "invoices", "/invoices/7", &headers).await?;
    if !want.contains(&got.status) || got.seen.is_some() {
        return Err(format!("{what}: expected {want:?} before the backend, got {got:?}"));
    }
    if got.status == 401 && !got.challenge.as_deref().is_some_and(|c| c.starts_with("Bearer")) {
        return Err(format!("{what}: a 401 without a Bearer challenge: {got:?}"));
    }
    if got.status == 401 && got.body.trim_end() != "{\"error\":\"unauthorized\"}" {
        return Err(format!("{what}: the gateway's 401 answers JSON, got {:?}", got.body));
    }
    Ok(())
}

async fn case_tokens(gw: &Gateway, f: &Fixture) -> Result<(), String> {
    let stranger = TokenSigner::ec("ec-1");
    expect_refused(gw, "no token", None, &[401]).await?;
    expect_refused(gw, "not a token", Some("not.a.jwt"), &[401]).await?;
    expect_refused(gw, "a key that is not the issuer's, naming the issuer's kid", Some(&stranger.token(&claims(json!({})))), &[401]).await?;
    expect_refused(gw, "another issuer", Some(&f.ec.token(&claims(json!({ "iss": "https://evil.example.com/" })))), &[401]).await?;
    expect_refused(gw, "a wrong audience", Some(&f.rsa.token(&claims(json!({ "aud": "catalog" })))), &[401, 403]).await?;
    expect_refused(gw, "expired", Some(&f.rsa.token(&claims(json!({ "exp": now() - 600, "iat": now() - 1200 })))), &[401]).await?;
    expect_refused(gw, "not yet valid", Some(&f.ec.token(&claims(json!({ "nbf": now() + 600 })))), &[401]).await?;
    // A token in the query string is not where the gateway looks for one.
    let in_query = get(gw, "invoices", &format!("/invoices?access_token={}", f.rsa.token(&claims(json!({})))), &[]).await?;
    if in_query.status != 401 {
        return Err(format!("a token in the query string: expected 401, got {in_query:?}"));
    }
    for (alg, signer) in [("RS256", &f.rsa), ("ES256", &f.ec)] {
        let token = signer.token(&claims(json!({})));
        let auth = bearer(&token);
        let got = get(gw, "invoices", "/invoices/7", &[("authorization", &auth), ("x-user-id", "forged-admin")]).await?;
        let seen = got.seen.as_ref().ok_or_else(|| format!("{alg}: a good token did not reach the backend: {got:?}"))?;
        if got.status != 200 || seen["x-user-id"] != "user-7" {
            return Err(format!("{alg}: the backend must see the token's sub as x-user-id (never the client's): {got:?}"));
        }
        if seen.get("authorization").is_some() {
            return Err(format!("{alg}: the token was forwarded without forward: true: {seen}"));
        }
    }
    // A good token without the claim: the client's copy of the header still never passes.
    let no_sub = f.rsa.token(&claims(json!({ "sub": null })));
    let got = get(gw, "invoices", "/invoices/7", &[("authorization", &bearer(&no_sub)), ("x-user-id", "forged-admin")]).await?;
    match &got.seen {
        Some(seen) if got.status == 200 && seen.get("x-user-id").is_none() => {}
        _ => return Err(format!("a token without sub: the client's x-user-id must be removed: {got:?}")),
    }
    Ok(())
}

async fn case_unauthenticated_routes(gw: &Gateway) -> Result<(), String> {
    let public = get(gw, "invoices", "/public", &[("x-user-id", "forged-admin")]).await?;
    match &public.seen {
        Some(seen) if public.status == 200 && seen.get("x-user-id").is_none() => {}
        _ => return Err(format!("/public admits anyone, without a client's claim header: {public:?}")),
    }
    // Another team's route: nothing of billing's providers applies to it.
    let other = get(gw, "catalog", "/products", &[("x-user-id", "their-own"), ("authorization", "Bearer opaque")]).await?;
    match &other.seen {
        Some(seen) if other.status == 200 && seen["x-user-id"] == "their-own" && seen["authorization"] == "Bearer opaque" => Ok(()),
        _ => Err(format!("another team's route must pass its clients' headers as sent: {other:?}")),
    }
}

async fn case_fetched_keys(gw: &Gateway, f: &Fixture) -> Result<(), String> {
    let issuer = f.remote_issuer();
    let token = f.ec.token(&json!({ "iss": issuer, "sub": "svc", "exp": now() + 600 }));
    let auth = bearer(&token);
    // Envoy fetches the key set when the configuration arrives; the first requests may find it
    // still on its way (401 then), so this waits, bounded.
    let start = Instant::now();
    loop {
        let got = get(gw, "remote", "/fetched", &[("authorization", &auth)]).await?;
        if got.status == 200 && got.seen.is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(20) {
            return Err(format!("a token of the fetched key set never passed: {got:?}"));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let dead_token = f.ec.token(&json!({ "iss": f.dead, "sub": "svc", "exp": now() + 600 }));
    let dead = get(gw, "remote", "/dead", &[("authorization", &bearer(&dead_token))]).await?;
    if dead.status != 401 || dead.seen.is_some() {
        return Err(format!("keys that cannot be fetched fail closed: {dead:?}"));
    }
    let open = get(gw, "remote", "/open", &[]).await?;
    if open.status != 200 {
        return Err(format!("the entry's open route is unaffected by a dead key set: {open:?}"));
    }
    Ok(())
}

async fn case_rotation(gw: &Gateway, f: &Fixture) -> Result<(), String> {
    let pid = gw.envoy.pid();
    let next = TokenSigner::ec("ec-2");
    let new_token = next.token(&claims(json!({})));
    expect_refused(gw, "a key not yet registered", Some(&new_token), &[401]).await?;
    let (_, hash) = gw.bucket.publish(&f.entries(jwks(&[&next]))).await;
    gw.sidecar.wait_live(&hash, APPLY).await;
    let got = get(gw, "invoices", "/invoices/1", &[("authorization", &bearer(&new_token))]).await?;
    if got.status != 200 || got.seen.is_none() {
        return Err(format!("after the rotation the new key's token passes: {got:?}"));
    }
    expect_refused(gw, "the rotated-out RSA key", Some(&f.rsa.token(&claims(json!({})))), &[401]).await?;
    if gw.envoy.pid() != pid {
        return Err("Envoy restarted for a key rotation".into());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_judged_at_the_edge_per_route_and_rotate_without_a_restart() {
    let moto = shared_moto();
    let ec = TokenSigner::ec("ec-1");
    let keys_body = jwks(&[&ec]).to_string();
    let keys = StubServer::answering(move |_| {
        Answer::status(200).header("content-type", "application/json").body(&keys_body)
    });
    let dead = format!("http://127.0.0.1:{}/", gateway_testkit::free_addr().port());
    let f = Fixture { backend: PolicyBackend::start(), rsa: TokenSigner::rsa("rsa-1"), ec, keys, dead };
    let first = f.entries(jwks(&[&f.rsa, &f.ec]));
    let gw = Gateway::start(moto, &first).await;

    let mut failures = Vec::new();
    for (name, result) in [
        ("tokens", case_tokens(&gw, &f).await),
        ("routes without auth", case_unauthenticated_routes(&gw).await),
        ("fetched keys", case_fetched_keys(&gw, &f).await),
        ("rotation", case_rotation(&gw, &f).await),
    ] {
        match result {
            Ok(()) => println!("{name}: ok"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n--- sidecar log ---\n{}",
        failures.join("\n"),
        gw.sidecar.log_text()
    );
}

/// A proxy whose Envoy runs a bootstrap from before the JWT filter (an image not yet upgraded):
/// bundles without providers still go live on it (and `/ready` says so), while a bundle with
/// providers never does there, its delivery failing on the filter's missing version, so no
/// route that requires a token is ever served without its check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrap_without_the_filter_takes_bundles_without_providers_and_never_one_with_them() {
    use gateway_render::contract::JWT_FILTER;

    let moto = shared_moto();
    let backend = PolicyBackend::start();
    let p = policy("");
    let catalog = |paths: &[&str]| -> Entry {
        let routes: Vec<Value> = paths.iter().map(|path| json!({ "path": path })).collect();
        check_entry_value(
            &json!({ "team": "catalog", "service": "products-api", "host": "catalog",
                     "backend": backend.url(), "routes": routes }),
            &p,
        )
        .expect("valid")
    };
    let bucket = Bucket::create(moto).await;
    let first = bucket.publish(&[catalog(&["/products"])]).await;
    let ratelimit = gateway_testkit::free_addr();
    let gw = Gateway::deliver(moto, bucket, first, Dirs::new(), &[], |dirs, ports| {
        start_envoy_with_filters(dirs, ports, ratelimit, 0, |filters| {
            filters.retain(|f| f["name"] != JWT_FILTER)
        })
    })
    .await;
    let ready = gw.sidecar.ready().await.expect("/ready answers");
    assert_eq!(ready.0, 200, "{ready:?}");
    let (_, changed) = gw.bucket.publish(&[catalog(&["/products", "/offers"])]).await;
    gw.sidecar.wait_live(&changed, APPLY).await;
    assert_eq!(get(&gw, "catalog", "/offers", &[]).await.expect("answer").status, 200);

    let signer = TokenSigner::ec("k1");
    let guarded = check_entry_value(
        &json!({ "team": "catalog", "service": "products-api", "host": "catalog", "backend": backend.url(),
                 "jwt": { "main": { "issuer": ISSUER, "jwks": jwks(&[&signer]) } },
                 "routes": [ { "path": "/products", "auth": { "jwt": "main" } }, { "path": "/offers" } ] }),
        &p,
    )
    .expect("valid");
    let (_, with_providers) = gw.bucket.publish(&[guarded]).await;
    let status = gw
        .sidecar
        .wait_error_naming("jwt_authn.version_text", "the providers' delivery fails on this bootstrap")
        .await;
    assert_ne!(status["live"]["hash"], with_providers, "{status}");
    let open = get(&gw, "catalog", "/products", &[]).await.expect("answer");
    assert_eq!(open.status, 200, "the live routes stay the ones without a token requirement: {open:?}");
}
