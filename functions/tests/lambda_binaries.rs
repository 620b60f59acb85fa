//! The two Lambda binaries run as Lambda runs them: a process with a clean environment (Lambda's
//! variables, the SDK's endpoint and credentials for moto's server, the gateway's settings)
//! polling a Runtime API served here on loopback. What this proves beyond the handler tests is
//! the wiring: environment → clients → runtime loop → handler → answer, and the JSON logs.

mod lambda_runtime_api;
mod registry_support;
mod response_url;
mod support;

use gateway_functions::reconcile::{seed, SeedOutcome};
use gateway_render::{Bundle, Entry};
use gateway_testkit::envoy_bin;
use lambda_runtime_api::{Completion, LambdaProcess, RuntimeApi};
use response_url::{response_url, Captured};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;

/// Every wait in this file is bounded by this.
const WAIT: Duration = Duration::from_secs(30);
const DOMAIN: &str = support::DOMAIN;

fn setting(name: &str, value: &str) -> (String, String) {
    (name.to_string(), value.to_string())
}

/// The function's answer to `event`; fails the test, with the process's output, when the
/// function reports an error, dies, or does not answer in time.
async fn answer(api: &RuntimeApi, lambda: &mut LambdaProcess, event: Value) -> Value {
    let completion = api.invoke(&event, WAIT).await;
    match completion {
        Some(Completion::Response(body)) => body,
        Some(Completion::Error { error_type, body }) => panic!(
            "the function failed the invocation ({error_type:?}): {body}\n{}",
            lambda.log_text()
        ),
        None => panic!(
            "no answer within {WAIT:?} (exited: {:?}; requests the API did not serve: {:?})\n{}",
            lambda.exited(),
            api.unknown_requests(),
            lambda.log_text()
        ),
    }
}

/// The `fields` of every tracing JSON line the process wrote.
fn log_fields(lambda: &LambdaProcess) -> Vec<Value> {
    lambda
        .json_lines()
        .into_iter()
        .filter_map(|line| line.get("fields").cloned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// register

async fn cfn_answer(rx: &mut mpsc::UnboundedReceiver<Captured>) -> Captured {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("CloudFormation's ResponseURL was called in time")
        .expect("listener alive")
}

/// CloudFormation's Create for `entry`, carried as a JSON string property (what the construct
/// sends).
fn cfn_create(url: &str, request_id: &str, entry: &Entry) -> Value {
    json!({
        "RequestType": "Create",
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:gateway-register",
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/catalog/5b8a9f40-1111-11ef-9f3c-0a1b2c3d4e5f",
        "RequestId": request_id,
        "ResourceType": "Custom::ExposeOnGateway",
        "LogicalResourceId": "Expose",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:gateway-register",
            "Entry": serde_json::to_string(entry).expect("entry json"),
        },
    })
}

/// `event` as SNS delivers it to a subscribed function (the cross-account path).
fn sns_wrapped(event: &Value) -> Value {
    let topic = "arn:aws:sns:us-east-1:123456789012:gateway-registrations";
    json!({ "Records": [{
        "EventSource": "aws:sns",
        "EventVersion": "1.0",
        "EventSubscriptionArn": format!("{topic}:2bcfbf39-05c3-41de-beaa-fcfcc21c8f55"),
        "Sns": {
            "Type": "Notification",
            "MessageId": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
            "TopicArn": topic,
            "Subject": "AWS CloudFormation custom resource request",
            "Message": event.to_string(),
            "Timestamp": "2024-01-01T00:00:00.000Z",
            "SignatureVersion": "1",
            "Signature": "EXAMPLE",
            "SigningCertUrl": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem",
            "UnsubscribeUrl": format!("https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn={topic}:2bcfbf39"),
            "MessageAttributes": {}
        }
    }]})
}

#[tokio::test]
async fn the_register_binary_answers_direct_cloudformation_and_sns_events() {
    let registry = registry_support::registry().await;
    let api = RuntimeApi::start().await;
    let mut env = registry_support::moto().aws_env();
    env.push(setting("GATEWAY_TABLE", registry.table()));
    env.push(setting("GATEWAY_DOMAIN", DOMAIN));
    // GATEWAY_ALLOW_LOOPBACK_BACKENDS is left unset, as in production: loopback is rejected.
    let mut lambda = LambdaProcess::spawn(env!("CARGO_BIN_EXE_register"), &api, &env);

    // Direct invocation.
    let invoices = registry_support::invoices_api();
    let got = answer(
        &api,
        &mut lambda,
        json!({ "action": "register", "entry": invoices }),
    )
    .await;
    assert_eq!(
        got,
        json!({ "ok": true, "outcome": "created", "revision": 1 })
    );
    let stored = registry
        .get("billing/invoices-api")
        .await
        .expect("read the table")
        .expect("the entry is in the table");
    assert_eq!(stored.entry, invoices);

    // A rejection names the field; the policy came from the (absent) loopback setting.
    let mut local = registry_support::entry("billing", "local-api", "invoices", &["/local"]);
    local.backend = "http://127.0.0.1:8080".into();
    let got = answer(
        &api,
        &mut lambda,
        json!({ "action": "register", "entry": local }),
    )
    .await;
    assert_eq!(got["ok"], false, "{got}");
    assert_eq!(got["error"]["kind"], "rejected", "{got}");
    let problems = got["error"]["problems"]
        .as_array()
        .expect("problems listed");
    assert!(
        problems.iter().any(|p| p["field"] == "backend"),
        "the rejection names the backend field: {got}"
    );
    assert!(
        registry
            .get("billing/local-api")
            .await
            .expect("read")
            .is_none(),
        "a rejected entry is not written"
    );

    // CloudFormation custom resource Create, answered at its ResponseURL.
    let (url, mut calls) = response_url(200).await;
    let catalog = registry_support::entry("catalog", "products", "catalog", &["/products"]);
    let got = answer(
        &api,
        &mut lambda,
        cfn_create(&url, "req-create-1", &catalog),
    )
    .await;
    assert_eq!(got["ok"], true, "{got}");
    assert_eq!(got["physicalResourceId"], "catalog/products", "{got}");
    let put = cfn_answer(&mut calls).await;
    assert_eq!(put.method, "PUT");
    assert_eq!(put.body["Status"], "SUCCESS", "{:?}", put.body);
    assert_eq!(put.body["PhysicalResourceId"], "catalog/products");
    assert_eq!(put.body["RequestId"], "req-create-1");
    assert_eq!(put.body["LogicalResourceId"], "Expose");
    // The base domain came from GATEWAY_DOMAIN.
    assert_eq!(put.body["Data"]["Fqdn"], "catalog.api.example.com");
    assert!(registry
        .get("catalog/products")
        .await
        .expect("read")
        .is_some());

    // The same kind of event wrapped in SNS.
    let search = registry_support::entry("search", "query", "search", &["/query"]);
    let got = answer(
        &api,
        &mut lambda,
        sns_wrapped(&cfn_create(&url, "req-create-2", &search)),
    )
    .await;
    assert_eq!(got["ok"], true, "{got}");
    assert_eq!(got["records"][0]["status"], "SUCCESS", "{got}");
    let put = cfn_answer(&mut calls).await;
    assert_eq!(put.method, "PUT");
    assert_eq!(put.body["Status"], "SUCCESS", "{:?}", put.body);
    assert_eq!(put.body["PhysicalResourceId"], "search/query");
    assert_eq!(put.body["RequestId"], "req-create-2");
    assert!(registry.get("search/query").await.expect("read").is_some());

    // An answer CloudFormation cannot receive fails the invocation, so Lambda's retry delivers it.
    let closed = format!("http://{}/cfn-response/gone", gateway_testkit::free_addr());
    let billing = registry_support::entry("billing", "exports", "invoices", &["/exports"]);
    let failed = api
        .invoke(&cfn_create(&closed, "req-create-3", &billing), WAIT)
        .await;
    let Some(Completion::Error { body, .. }) = &failed else {
        panic!(
            "expected a function error, got {failed:?}\n{}",
            lambda.log_text()
        )
    };
    let message = body["errorMessage"].as_str().unwrap_or_default();
    assert!(
        message.contains("ResponseURL"),
        "the error says what failed: {body}"
    );
    assert!(
        registry
            .get("billing/exports")
            .await
            .expect("read")
            .is_some(),
        "the registration itself happened; the retry finds it unchanged"
    );
    let got = answer(
        &api,
        &mut lambda,
        json!({ "action": "deregister", "id": "billing/exports" }),
    )
    .await;
    assert_eq!(
        got["outcome"], "deleted",
        "the process survives a failed invocation: {got}"
    );

    assert!(
        lambda.exited().is_none(),
        "one process served every invocation"
    );
    // Lambda sets no RUST_LOG: the answers must still be in the logs.
    let answered: Vec<Value> = log_fields(&lambda)
        .into_iter()
        .filter(|f| f["message"] == "answered CloudFormation")
        .collect();
    assert_eq!(
        answered.len(),
        2,
        "each CloudFormation answer is logged as JSON\n{}",
        lambda.log_text()
    );
    assert_eq!(answered[0]["physical_resource_id"], "catalog/products");
    assert_eq!(answered[1]["physical_resource_id"], "search/query");
}

// ---------------------------------------------------------------------------------------------
// reconcile

/// A DynamoDB stream batch as a register transaction produces it (entry insert, host guard and
/// path guard writes). The reconciler must treat it as a wake-up only.
fn stream_batch(table: &str) -> Value {
    let arn = format!(
        "arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/2024-01-01T00:00:00.000"
    );
    let record = |id: &str, name: &str, pk: &str, sk: &str, new_image: Value| {
        json!({
            "eventID": id,
            "eventName": name,
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "us-east-1",
            "dynamodb": {
                "ApproximateCreationDateTime": 1704067200,
                "Keys": { "pk": { "S": pk }, "sk": { "S": sk } },
                "NewImage": new_image,
                "SequenceNumber": format!("1000000000000000000{id}"),
                "SizeBytes": 512,
                "StreamViewType": "NEW_AND_OLD_IMAGES"
            },
            "eventSourceARN": arn,
        })
    };
    json!({ "Records": [
        record("1", "INSERT", "ENTRY#billing/invoices", "ENTRY", json!({
            "pk": { "S": "ENTRY#billing/invoices" }, "sk": { "S": "ENTRY" },
            "entry": { "S": "{\"team\":\"billing\"}" }, "revision": { "N": "1" },
            "updated_at": { "N": "1704067200" }
        })),
        record("2", "INSERT", "HOST#invoices.api.example.com", "HOST", json!({
            "pk": { "S": "HOST#invoices.api.example.com" }, "sk": { "S": "HOST" },
            "owner": { "S": "billing" }, "version": { "N": "1" }
        })),
        record("3", "INSERT", "HOST#invoices.api.example.com", "PATH#/invoices", json!({
            "pk": { "S": "HOST#invoices.api.example.com" }, "sk": { "S": "PATH#/invoices" },
            "owner": { "S": "billing/invoices" }
        })),
    ]})
}

/// EventBridge's scheduled-rule event (the every-minute backstop).
fn schedule_tick() -> Value {
    json!({
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2024-01-01T00:01:00Z",
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/gateway-reconcile-every-minute"],
        "detail": {}
    })
}

fn reconcile_env(h: &support::Harness) -> Vec<(String, String)> {
    let mut env = h.moto.aws_env();
    env.push(setting("GATEWAY_TABLE", h.registry.table()));
    env.push(setting("GATEWAY_BUCKET", h.store.bucket()));
    env.push(setting("GATEWAY_DOMAIN", DOMAIN));
    env.push(setting("ENVOY_BIN", &envoy_bin().to_string_lossy()));
    env.push(setting("GATEWAY_ALLOW_LOOPBACK_BACKENDS", "true"));
    env
}

#[tokio::test]
async fn the_reconcile_binary_publishes_on_a_stream_event_then_stays_unchanged() {
    let h = support::Harness::start().await;
    let seeded = seed(&h.registry, &h.store, &h.cfg).await.expect("seed");
    assert!(matches!(seeded, SeedOutcome::Seeded { .. }), "{seeded}");
    // A loopback backend: accepted only because the process gets
    // GATEWAY_ALLOW_LOOPBACK_BACKENDS=true (the reconciler re-checks every entry).
    h.register(support::entry(
        "billing",
        "invoices",
        "invoices",
        &["/invoices"],
    ))
    .await;

    let api = RuntimeApi::start().await;
    let mut lambda =
        LambdaProcess::spawn(env!("CARGO_BIN_EXE_reconcile"), &api, &reconcile_env(&h));

    let first = answer(&api, &mut lambda, stream_batch(h.registry.table())).await;
    assert_eq!(first["outcome"], "published", "{first}");
    assert_eq!(first["routes"], 1, "{first}");
    let hash = first["hash"]
        .as_str()
        .unwrap_or_else(|| panic!("a published answer names its hash: {first}"))
        .to_string();
    assert!(hash.starts_with("sha256:"), "{hash}");

    let live = h.live().await;
    assert_eq!(live.hash.as_deref(), Some(hash.as_str()));
    assert_eq!(first["version_id"], live.version_id.as_str(), "{first}");
    let bundle = Bundle::parse(h.get_object("bundle.json").await.as_bytes()).expect("bundle");
    assert_eq!(bundle.hash, hash);
    bundle.verify().expect("the bundle's files match its hash");
    assert_eq!(bundle.entries.len(), 1);
    assert_eq!(bundle.entries[0].id(), "billing/invoices");
    let versions = h.version_count().await;

    let second = answer(&api, &mut lambda, schedule_tick()).await;
    assert_eq!(second["outcome"], "unchanged", "{second}");
    assert_eq!(second["hash"], hash.as_str());
    let third = answer(&api, &mut lambda, json!({})).await;
    assert_eq!(third["outcome"], "unchanged", "{third}");
    assert_eq!(third["hash"], hash.as_str());
    assert_eq!(h.version_count().await, versions, "no new object version");

    let again = answer(&api, &mut lambda, json!({ "action": "seed" })).await;
    assert_eq!(again["outcome"], "seed", "{again}");
    let message = again["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("already seeded: bundle.json exists"),
        "{again}"
    );
    assert!(
        message.contains(&live.version_id),
        "names the live version: {again}"
    );
    assert_eq!(
        h.live().await.version_id,
        live.version_id,
        "seeding left it"
    );

    // The binary's CloudWatch client reached moto's server.
    assert!(
        h.metric_names().await.contains(&"Published".to_string()),
        "Published metric emitted"
    );

    assert!(lambda.exited().is_none(), "one process served every event");
    // Lambda sets no RUST_LOG: the decisions must still be logged, as JSON.
    let fields = log_fields(&lambda);
    let woken: Vec<&str> = fields
        .iter()
        .filter(|f| f["message"] == "reconcile run starting")
        .filter_map(|f| f["woken_by"].as_str())
        .collect();
    assert_eq!(
        woken,
        [
            "table stream",
            "schedule",
            "direct invocation",
            "seed request"
        ],
        "what woke each run is logged\n{}",
        lambda.log_text()
    );
    let decisions: Vec<(&str, &str)> = fields
        .iter()
        .filter(|f| f["message"] == "reconcile run decided")
        .filter_map(|f| Some((f["outcome"].as_str()?, f["decision"].as_str()?)))
        .collect();
    assert_eq!(decisions.len(), 3, "{decisions:?}");
    assert_eq!(decisions[0].0, "published");
    assert!(
        decisions[0].1.contains(&hash) && decisions[0].1.contains(&live.version_id),
        "{decisions:?}"
    );
    assert_eq!(decisions[1].0, "unchanged");
    assert_eq!(decisions[2].0, "unchanged");
}

#[tokio::test]
async fn a_failed_reconcile_is_a_function_error_and_the_next_event_recovers() {
    let h = support::Harness::start().await;
    h.register(support::entry(
        "billing",
        "invoices",
        "invoices",
        &["/invoices"],
    ))
    .await;
    // The process is pointed at a bucket that does not exist yet.
    let bucket = gateway_testkit::unique_name("late");
    let mut env = reconcile_env(&h);
    env.retain(|(k, _)| k != "GATEWAY_BUCKET");
    env.push(setting("GATEWAY_BUCKET", &bucket));
    let api = RuntimeApi::start().await;
    let mut lambda = LambdaProcess::spawn(env!("CARGO_BIN_EXE_reconcile"), &api, &env);

    let failed = api.invoke(&stream_batch(h.registry.table()), WAIT).await;
    let Some(Completion::Error { error_type, body }) = &failed else {
        panic!(
            "expected a function error (so the stream retries the batch), got {failed:?}\n{}",
            lambda.log_text()
        )
    };
    assert_eq!(error_type.as_deref(), Some("unhandled"), "{body}");
    assert_eq!(
        body["errorType"], "Reconcile.BucketUnavailable",
        "a type that groups failures: {body}"
    );
    let message = body["errorMessage"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("bucket:"),
        "names the failing part: {body}"
    );

    let store = gateway_functions::store::S3Store::new(
        gateway_functions::store::s3_client(&h.moto.sdk_config().await),
        bucket,
    );
    store
        .create_bucket_if_absent()
        .await
        .expect("create bucket");
    let retried = answer(&api, &mut lambda, stream_batch(h.registry.table())).await;
    assert_eq!(retried["outcome"], "published", "{retried}");
    assert!(lambda.exited().is_none(), "the same process recovered");
}

#[tokio::test]
async fn the_reconcile_binary_without_gateway_table_fails_at_init_naming_it() {
    let api = RuntimeApi::start().await;
    let env = vec![
        // Nothing may be called: the process must stop before touching AWS.
        setting("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        setting("AWS_ACCESS_KEY_ID", "test"),
        setting("AWS_SECRET_ACCESS_KEY", "test"),
        setting("AWS_REGION", "us-east-1"),
        setting("GATEWAY_BUCKET", "bundles"),
        setting("GATEWAY_DOMAIN", DOMAIN),
        setting("ENVOY_BIN", &envoy_bin().to_string_lossy()),
    ];
    let mut lambda = LambdaProcess::spawn(env!("CARGO_BIN_EXE_reconcile"), &api, &env);

    let deadline = tokio::time::Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = lambda.exited() {
            break status;
        }
        if let Some(report) = api.init_error(Duration::from_millis(50)).await {
            assert!(
                report.body.to_string().contains("GATEWAY_TABLE"),
                "the init error names GATEWAY_TABLE: {report:?}"
            );
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the function neither exited nor reported an init error within {WAIT:?}\n{}",
            lambda.log_text()
        );
    };
    assert!(
        !status.success(),
        "exits non-zero without its table: {status}"
    );
    let stderr = lambda.stderr_text();
    assert!(
        stderr.contains("GATEWAY_TABLE is not set"),
        "the exit message names GATEWAY_TABLE in a sentence: {}",
        lambda.log_text()
    );
}
