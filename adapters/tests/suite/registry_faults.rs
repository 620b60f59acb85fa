//! Transient failures: throttling and an unreachable endpoint are retried with backoff and end
//! as `Retryable`, never as a conflict, and nothing is half-written.

use gateway_testkit::registry as registry_support;

use gateway_adapters::aws::{dynamodb_config, DYNAMODB_MAX_ATTEMPTS};
use gateway_adapters::registry::{DynamoRegistry, RegisterOutcome, RegistryError};
use gateway_render::check::Policy;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use registry_support::{invoices_api, moto, registry, DOMAIN};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};

const THROTTLED: &str = "{\"__type\":\"com.amazonaws.dynamodb.v20120810#ThrottlingException\",\"message\":\"Rate of requests exceeds the allowed throughput.\"}";

/// A loopback proxy in front of moto that answers its first `throttle` connections with
/// DynamoDB's throttling error (hyper, closing each, so every retry is a new connection) and
/// pipes the rest through unchanged. Returns its endpoint and the number of connections it saw.
async fn throttling_proxy(upstream: String, throttle: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let upstream = upstream.clone();
            tokio::spawn(async move {
                if n < throttle {
                    // The whole request is read before the answer, as DynamoDB does.
                    let service = service_fn(|req: Request<Incoming>| async {
                        let _ = req.into_body().collect().await;
                        Ok::<_, Infallible>(throttled())
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(conn), service)
                        .await;
                } else if let Ok(mut up) = TcpStream::connect(&upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut conn, &mut up).await;
                }
            });
        }
    });
    (endpoint, seen)
}

/// DynamoDB's throttling error, closing the connection.
fn throttled() -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(THROTTLED.as_bytes())));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    headers.insert("x-amzn-requestid", HeaderValue::from_static("throttled"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

async fn registry_at(endpoint: &str, table: &str) -> DynamoRegistry {
    let conf = moto().sdk_config().await;
    let client =
        aws_sdk_dynamodb::Client::from_conf(dynamodb_config(&conf).endpoint_url(endpoint).build());
    DynamoRegistry::new(client, table, DOMAIN).with_policy(Policy::new(DOMAIN, true))
}

#[tokio::test]
async fn brief_throttling_is_retried_and_the_registration_succeeds() {
    let direct = registry().await;
    let upstream = moto().endpoint.trim_start_matches("http://").to_string();
    let (endpoint, seen) = throttling_proxy(upstream, 2).await;
    let reg = registry_at(&endpoint, direct.table()).await;
    let e = invoices_api();
    assert_eq!(
        reg.register(&e).await.expect("register through throttling"),
        RegisterOutcome::Created { revision: 1 }
    );
    assert!(
        seen.load(Ordering::SeqCst) > 2,
        "the throttled calls were retried"
    );
    assert_eq!(
        direct.get(&e.id()).await.expect("get").map(|s| s.entry),
        Some(e)
    );
}

#[tokio::test]
async fn persistent_throttling_is_retryable_not_a_conflict() {
    let direct = registry().await;
    let upstream = moto().endpoint.trim_start_matches("http://").to_string();
    let (endpoint, seen) = throttling_proxy(upstream, usize::MAX).await;
    let reg = registry_at(&endpoint, direct.table()).await;
    let err = reg.register(&invoices_api()).await.expect_err("throttled");
    assert!(matches!(err, RegistryError::Retryable(_)), "{err:?}");
    assert_eq!(err.kind(), "retryable");
    assert!(err.to_string().contains("ThrottlingException"), "{err}");
    assert_eq!(
        seen.load(Ordering::SeqCst),
        DYNAMODB_MAX_ATTEMPTS as usize,
        "one call, every attempt used"
    );
    assert!(registry_support::rows(&direct).await.is_empty());

    let err = reg
        .deregister("billing/invoices-api")
        .await
        .expect_err("throttled");
    assert!(matches!(err, RegistryError::Retryable(_)), "{err:?}");
}

#[tokio::test]
async fn an_unreachable_endpoint_is_retryable() {
    let port = gateway_testkit::free_port();
    let reg = registry_at(&format!("http://127.0.0.1:{port}"), "nowhere").await;
    let err = reg.register(&invoices_api()).await.expect_err("no server");
    assert!(matches!(err, RegistryError::Retryable(_)), "{err:?}");
}

/// Revokes a grant from a second client just before the registry's TransactWriteItems leaves, so
/// the revoke lands between the registration's read of the grant and its commit.
#[derive(Debug)]
struct RevokeBeforeCommit {
    table: String,
    team: &'static str,
    account: &'static str,
    done: std::sync::atomic::AtomicBool,
}

impl aws_sdk_dynamodb::config::Intercept for RevokeBeforeCommit {
    fn name(&self) -> &'static str {
        "RevokeBeforeCommit"
    }

    fn read_before_execution(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef<
            '_,
        >,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let is_transaction = context
            .input()
            .downcast_ref::<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsInput>()
            .is_some();
        if !is_transaction || self.done.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let (table, team, account) = (self.table.clone(), self.team, self.account);
        // Interceptors are synchronous: the revoke runs to completion on a thread of its own.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("runtime");
            runtime.block_on(async {
                let other =
                    DynamoRegistry::new(registry_support::client(moto()).await, table, DOMAIN);
                assert!(
                    other.tenancy().revoke(team, account).await.expect("revoke"),
                    "the grant existed"
                );
            });
        })
        .join()
        .map_err(|_| "the revoke panicked")?;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoke_between_the_grant_read_and_the_commit_wins() {
    use gateway_adapters::registry::Actor;
    let plain = registry().await;
    plain
        .tenancy()
        .grant("billing", "222222222222", "test")
        .await
        .expect("grant");
    let conf = moto().sdk_config().await;
    let client = aws_sdk_dynamodb::Client::from_conf(
        dynamodb_config(&conf)
            .interceptor(RevokeBeforeCommit {
                table: plain.table().to_string(),
                team: "billing",
                account: "222222222222",
                done: Default::default(),
            })
            .build(),
    );
    let reg =
        DynamoRegistry::new(client, plain.table(), DOMAIN).with_policy(Policy::new(DOMAIN, true));
    let stack = Actor::stack(
        "222222222222",
        "arn:aws:cloudformation:us-east-1:222222222222:stack/s/1",
        "Expose",
    );
    let err = reg
        .register_as(&invoices_api(), &stack)
        .await
        .expect_err("the grant was gone at commit");
    assert_eq!(err.kind(), "forbidden", "{err}");
    assert!(
        err.to_string()
            .starts_with("account 222222222222 is not granted team billing"),
        "{err}"
    );
    assert!(
        registry_support::rows(&plain).await.is_empty(),
        "nothing was written, the grant included"
    );
}
