//! The whole pipeline with the real pieces: teams register through the registry (DynamoDB on
//! moto), the reconciler renders, validates with the real Envoy and publishes to the versioned
//! bucket, the sidecar delivers, and Envoy serves — then a team changes its route and the new
//! route serves with no restart and no failed request.

// The sidecar tests' harness (bundles in moto's bucket, the sidecar binary, Envoy on the
// gateway's bootstrap), shared rather than copied.
use gateway_testkit::delivery as common;
// The functions tests' reconcile set-up (table, bucket, the reconcile configuration).
use gateway_testkit::control as support;

use common::{
    client, envoy_mode_args, route, send, start_envoy, wait_backend, wait_files, Dirs,
    SidecarProcess, DOMAIN,
};
use gateway_adapters::metrics::CloudWatchMetrics;
use gateway_control::reconcile::{reconcile, seed, Outcome};
use gateway_render::{Entry, Limit, Policy, RenderConfig};
use gateway_testkit::backend::Backend;
use gateway_testkit::envoy::EnvoyPorts;
use gateway_testkit::MotoServer;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn entry(
    team: &str,
    service: &str,
    host: &str,
    backend: &Backend,
    routes: Vec<gateway_render::Route>,
) -> Entry {
    common::entry(team, service, host, &backend.url(), routes)
}

/// Billing's invoices entry (GET, and POST with a burst limit) served by `backend`.
fn invoices_at(backend: &Backend) -> Entry {
    entry(
        "billing",
        "invoices",
        "invoices",
        backend,
        vec![
            route("/invoices", Some(&["GET"]), vec![]),
            route(
                "/invoices",
                Some(&["POST"]),
                vec![Limit::Burst { burst: 1000 }],
            ),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_routes_serve_and_a_change_lands_with_no_restart_and_no_failed_request() {
    let moto = MotoServer::start();
    let conf = moto.sdk_config().await;
    let policy = Policy::new(DOMAIN, true);
    let dynamo = gateway_adapters::aws::dynamodb_client(&conf);
    let (registry, store) = support::table_and_bucket(&moto, dynamo, &policy, "pipeline").await;
    let bucket = store.bucket().to_string();
    let metrics = CloudWatchMetrics::from_conf(&conf);
    let cfg = support::reconcile_config(RenderConfig::new(DOMAIN), policy, Default::default());

    let (billing, billing_v2, catalog) = (
        Backend::start("billing"),
        Backend::start("billing-v2"),
        Backend::start("catalog"),
    );
    seed(&registry, &store, &cfg).await.expect("seed");
    registry
        .register(&invoices_at(&billing))
        .await
        .expect("register billing");
    registry
        .register(&entry(
            "catalog",
            "products",
            "catalog",
            &catalog,
            vec![route("/products", None, vec![])],
        ))
        .await
        .expect("register catalog");
    let Outcome::Published { hash, .. } = reconcile(&registry, &store, &metrics, &cfg)
        .await
        .expect("reconcile")
    else {
        panic!("the first reconcile publishes");
    };

    let dirs = Dirs::new();
    let ports = EnvoyPorts::free();
    let admin = format!("http://{}", ports.admin);
    let sidecar = SidecarProcess::start(&moto, &envoy_mode_args(&bucket, &dirs, &admin, &[]));
    wait_files(&dirs, Duration::from_secs(30)).await;
    assert_eq!(
        sidecar.healthz().await,
        Some(200),
        "healthy once the files exist: Envoy may start"
    );
    let (code, body) = sidecar.ready().await.expect("/ready answers");
    assert_eq!(code, 503, "not ready before Envoy runs the bundle: {body}");
    let mut envoy = start_envoy(&dirs, ports);
    sidecar.wait_live(&hash, Duration::from_secs(30)).await;
    let mut ready = (0, String::new());
    for _ in 0..100 {
        ready = sidecar.ready().await.expect("/ready answers");
        if ready.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        ready.0, 200,
        "ready once Envoy runs the live hash: {}",
        ready.1
    );
    assert!(ready.1.contains(&hash), "{}", ready.1);
    let pid = envoy.pid();
    let http = client();
    let listener = envoy.listener_addr();

    // By Host and path, methods respected, unknown host answered by the catch-all.
    wait_backend(
        &http,
        listener,
        "invoices",
        "/invoices/7",
        "billing",
        Duration::from_secs(20),
    )
    .await;
    wait_backend(
        &http,
        listener,
        "catalog",
        "/products",
        "catalog",
        Duration::from_secs(20),
    )
    .await;
    let (code, _) = send(&http, listener, "DELETE", "invoices", "/invoices/7")
        .await
        .expect("send");
    assert_eq!(code, 404, "DELETE is not registered on /invoices");
    let (code, body) = send(&http, listener, "GET", "nobody", "/")
        .await
        .expect("send");
    assert_eq!(code, 404);
    assert!(body.contains('{'), "the catch-all answers JSON: {body}");
    let (code, _) = send(&http, listener, "GET", "catalog", "/invoices")
        .await
        .expect("send");
    assert_eq!(
        code, 404,
        "a path on another team's host does not leak across"
    );

    // Steady traffic on the changing and an unchanged route while billing moves to a new backend.
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let mut loops = Vec::new();
    for (host, path) in [("invoices", "/invoices/1"), ("catalog", "/products/1")] {
        let (stop, failures, sent, http) =
            (stop.clone(), failures.clone(), sent.clone(), http.clone());
        loops.push(tokio::spawn(async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(90);
            while !stop.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                match send(&http, listener, "GET", host, path).await {
                    Ok((200, _)) => {}
                    Ok((code, body)) => {
                        eprintln!("{host}{path}: HTTP {code}: {body}");
                        failures.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) => {
                        eprintln!("{host}{path}: {e}");
                        failures.fetch_add(1, Ordering::SeqCst);
                    }
                }
                sent.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    registry
        .register(&invoices_at(&billing_v2))
        .await
        .expect("billing moves to v2");
    let Outcome::Published { hash: moved, .. } = reconcile(&registry, &store, &metrics, &cfg)
        .await
        .expect("reconcile")
    else {
        panic!("the change publishes");
    };
    sidecar.wait_live(&moved, Duration::from_secs(30)).await;
    wait_backend(
        &http,
        listener,
        "invoices",
        "/invoices/1",
        "billing-v2",
        Duration::from_secs(20),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    for l in loops {
        l.await.expect("client loop");
    }
    assert!(
        sent.load(Ordering::SeqCst) > 50,
        "traffic flowed throughout"
    );
    assert_eq!(
        failures.load(Ordering::SeqCst),
        0,
        "no failed request while the route moved"
    );
    assert!(
        envoy.is_running() && envoy.pid() == pid,
        "served by the same Envoy process, no restart"
    );
    assert!(billing_v2.requests() > 0);
}

/// A team's token issuer through the whole pipeline: registered in the registry, checked again,
/// rendered and validated with the real Envoy (the JWT filter's providers inlined) by the
/// reconciler, delivered by the sidecar. The route answers 401 without a token and passes a good
/// one with its claim; a key added beside the live one (a rotation's first half) lands while
/// tokens of the live key keep passing, every request of them answered; the old key's removal
/// then refuses its tokens. Envoy is never restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_token_issuer_gates_its_route_and_rotates_keys_with_no_failed_request() {
    use gateway_testkit::policy_backend::PolicyBackend;
    use gateway_testkit::tokens::{jwks, now, TokenSigner};
    use serde_json::{json, Value};

    let moto = MotoServer::start();
    let conf = moto.sdk_config().await;
    let policy = Policy::new(DOMAIN, true);
    let dynamo = gateway_adapters::aws::dynamodb_client(&conf);
    let (registry, store) = support::table_and_bucket(&moto, dynamo, &policy, "pipeline-jwt").await;
    let bucket = store.bucket().to_string();
    let metrics = CloudWatchMetrics::from_conf(&conf);
    let cfg = support::reconcile_config(RenderConfig::new(DOMAIN), policy.clone(), Default::default());
    let backend = PolicyBackend::start();
    let (old_key, new_key) = (TokenSigner::ec("k1"), TokenSigner::rsa("k2"));
    let entry_with = |keys: Value| -> Entry {
        let doc = json!({
            "team": "billing", "service": "invoices", "host": "invoices", "backend": backend.url(),
            "jwt": { "main": { "issuer": "https://id.example.com/", "audiences": ["invoices"],
                               "jwks": keys, "claims_to_headers": { "sub": "x-user-id" } } },
            "routes": [ { "path": "/invoices", "auth": { "jwt": "main" } } ]
        });
        gateway_render::check::check_entry_value(&doc, &policy).unwrap_or_else(|r| panic!("{r}"))
    };
    let publish = |entry: Entry| {
        let (registry, store, metrics, cfg) = (&registry, &store, &metrics, &cfg);
        async move {
            registry.register(&entry).await.expect("register");
            match reconcile(registry, store, metrics, cfg).await.expect("reconcile") {
                Outcome::Published { hash, .. } => hash,
                other => panic!("the registration publishes: {other:?}"),
            }
        }
    };
    seed(&registry, &store, &cfg).await.expect("seed");
    let first = publish(entry_with(jwks(&[&old_key]))).await;

    let dirs = Dirs::new();
    let ports = EnvoyPorts::free();
    let admin = format!("http://{}", ports.admin);
    let sidecar = SidecarProcess::start(&moto, &envoy_mode_args(&bucket, &dirs, &admin, &[]));
    wait_files(&dirs, Duration::from_secs(30)).await;
    let mut envoy = start_envoy(&dirs, ports);
    sidecar.wait_live(&first, Duration::from_secs(30)).await;
    let (pid, listener, http) = (envoy.pid(), envoy.listener_addr(), client());
    let claims = json!({ "iss": "https://id.example.com/", "aud": "invoices", "sub": "user-7", "exp": now() + 600 });
    let (old_token, new_token) = (old_key.token(&claims), new_key.token(&claims));
    let get = move |token: Option<String>| {
        let http = http.clone();
        async move {
            let mut req = http
                .get(format!("http://{listener}/invoices/1"))
                .header(reqwest::header::HOST, format!("invoices.{DOMAIN}"));
            if let Some(t) = token {
                req = req.header("authorization", format!("Bearer {t}"));
            }
            let r = req.send().await.expect("answer");
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.ok())
        }
    };
    assert_eq!(get(None).await.0, 401, "no token");
    let (status, body) = get(Some(old_token.clone())).await;
    assert_eq!(status, 200);
    assert_eq!(body.expect("the backend's record")["headers"]["x-user-id"], "user-7");
    assert_eq!(get(Some(new_token.clone())).await.0, 401, "a key not registered yet");

    // Tokens of the live key, without a pause, while the new key is added beside it.
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, failures) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let traffic = {
        let (stop, sent, failures, token) = (stop.clone(), sent.clone(), failures.clone(), old_token.clone());
        let get = get.clone();
        tokio::spawn(async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(90);
            while !stop.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                let (status, _) = get(Some(token.clone())).await;
                if status != 200 {
                    eprintln!("a token of the live key got {status} during the rotation");
                    failures.fetch_add(1, Ordering::SeqCst);
                }
                sent.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let both = publish(entry_with(jwks(&[&old_key, &new_key]))).await;
    sidecar.wait_live(&both, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    traffic.await.expect("client loop");
    assert!(sent.load(Ordering::SeqCst) > 20, "traffic flowed throughout");
    assert_eq!(failures.load(Ordering::SeqCst), 0, "no request of the live key failed");
    assert_eq!(get(Some(new_token.clone())).await.0, 200, "the added key verifies");

    let rotated = publish(entry_with(jwks(&[&new_key]))).await;
    sidecar.wait_live(&rotated, Duration::from_secs(30)).await;
    assert_eq!(get(Some(old_token)).await.0, 401, "the removed key verifies nothing");
    assert_eq!(get(Some(new_token)).await.0, 200);
    assert!(envoy.is_running() && envoy.pid() == pid, "no restart");
}
