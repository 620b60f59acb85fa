//! The two Lambda binaries run as Lambda runs them: a process with a clean environment (Lambda's
//! variables, the SDK's endpoint and credentials for moto's server, the gateway's settings)
//! polling a Runtime API served here on loopback. What this proves beyond the handler tests is
//! the wiring: environment → clients → runtime loop → handler → answer, and the JSON logs.

use crate::lambda_runtime_api;
use gateway_testkit::response_url;
use gateway_testkit::control as support;

use gateway_adapters::registry::DynamoRegistry;
use gateway_control::reconcile::{seed, SeedOutcome};
use gateway_render::{Bundle, Entry};
use gateway_testkit::envoy_bin;
use lambda_runtime_api::{Completion, LambdaProcess, RuntimeApi};
use response_url::{response_url, Captured};
use serde_json::{json, Value};
use std::time::Duration;
use support::registry_support;
use tokio::sync::mpsc;

/// Every wait in this file is bounded by this.
const WAIT: Duration = Duration::from_secs(30);
const DOMAIN: &str = support::DOMAIN;

fn setting(name: &str, value: &str) -> (String, String) {
    (name.to_string(), value.to_string())
}

/// Lambda's environment with AWS credentials whose endpoint nothing serves, plus `settings`.
fn unreachable_aws(settings: &[(&str, &str)]) -> Vec<(String, String)> {
    let aws = [
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ];
    aws.iter()
        .chain(settings)
        .map(|(name, value)| setting(name, value))
        .collect()
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

/// moto's account: the gateway's own, as GetCallerIdentity tells the function at start.
const GATEWAY_ACCOUNT: &str = "123456789012";

fn stack_arn(account: &str, name: &str) -> String {
    format!("arn:aws:cloudformation:us-east-1:{account}:stack/{name}/5b8a9f40-1111-11ef-9f3c-0a1b2c3d4e5f")
}

/// A CloudFormation custom resource event (`kind`: Create, Update, Delete) from `stack`'s
/// resource `Expose` for `entry`, carried as a JSON string property (what the construct sends),
/// answered at `url`.
fn cfn_event(
    kind: &str,
    url: &str,
    request_id: &str,
    stack: &str,
    entry: &Entry,
    physical: Option<&str>,
) -> Value {
    let mut event = json!({
        "RequestType": kind,
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:gateway-register",
        "ResponseURL": url,
        "StackId": stack,
        "RequestId": request_id,
        "ResourceType": "Custom::ExposeOnGateway",
        "LogicalResourceId": "Expose",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:gateway-register",
            "Entry": serde_json::to_string(entry).expect("entry json"),
            "WaitFor": "registered",
        },
    });
    if let Some(p) = physical {
        event["PhysicalResourceId"] = json!(p);
    }
    if kind == "Update" {
        event["OldResourceProperties"] = event["ResourceProperties"].clone();
    }
    event
}

/// CloudFormation's Create for `entry` from a stack of the gateway's own account.
fn cfn_create(url: &str, request_id: &str, entry: &Entry) -> Value {
    let stack = stack_arn(GATEWAY_ACCOUNT, "catalog");
    cfn_event("Create", url, request_id, &stack, entry, None)
}

/// `event` as SNS delivers it to a subscribed function through the gateway account's own
/// registration topic.
fn sns_wrapped(event: &Value) -> Value {
    sns_from(GATEWAY_ACCOUNT, event)
}

/// `event` as SNS delivers it through the registration topic of `account` (the cross-account
/// path: only that account may publish to it).
fn sns_from(account: &str, event: &Value) -> Value {
    let topic = format!("arn:aws:sns:us-east-1:{GATEWAY_ACCOUNT}:gateway-register-{account}");
    sns_via(&topic, event)
}

fn sns_via(topic: &str, event: &Value) -> Value {
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

/// The register binary under test: its process on the Runtime API, on `registry`'s table of the
/// shared moto server, and the stand-in ResponseURL (`url`) whose calls it collects.
struct RegisterProcess {
    api: RuntimeApi,
    lambda: LambdaProcess,
    url: String,
    calls: mpsc::UnboundedReceiver<Captured>,
}

impl RegisterProcess {
    async fn start(registry: &DynamoRegistry) -> RegisterProcess {
        let api = RuntimeApi::start().await;
        let mut env = registry_support::moto().aws_env();
        env.push(setting("GATEWAY_TABLE", registry.table()));
        env.push(setting("GATEWAY_DOMAIN", DOMAIN));
        // The stand-in ResponseURL is loopback http, answered only with this setting.
        env.push(setting("GATEWAY_ALLOW_LOOPBACK_BACKENDS", "true"));
        let lambda = LambdaProcess::spawn(env!("CARGO_BIN_EXE_register"), &api, &env);
        let (url, calls) = response_url(200).await;
        RegisterProcess {
            api,
            lambda,
            url,
            calls,
        }
    }

    async fn answer(&mut self, event: Value) -> Value {
        answer(&self.api, &mut self.lambda, event).await
    }

    /// The next call CloudFormation's ResponseURL received.
    async fn cfn_answer(&mut self) -> Captured {
        tokio::time::timeout(WAIT, self.calls.recv())
            .await
            .expect("CloudFormation's ResponseURL was called in time")
            .expect("listener alive")
    }

    /// A CloudFormation event (see [`cfn_event`]) answered at this process's ResponseURL.
    fn event(
        &self,
        kind: &str,
        request_id: &str,
        stack: &str,
        entry: &Entry,
        physical: Option<&str>,
    ) -> Value {
        cfn_event(kind, &self.url, request_id, stack, entry, physical)
    }

    /// Invokes with `event`, prints the function's own answer (shown when the test fails; the
    /// test checks what reached CloudFormation instead) and returns the ResponseURL call.
    async fn cfn_call(&mut self, event: Value) -> Captured {
        let answer = self.answer(event).await;
        eprintln!("answer: {answer}");
        self.cfn_answer().await
    }

    /// The JSON `fields` of the log lines with `message`.
    fn logged(&self, message: &str) -> Vec<Value> {
        log_fields(&self.lambda)
            .into_iter()
            .filter(|f| f["message"] == message)
            .collect()
    }
}

#[tokio::test]
async fn the_register_binary_answers_direct_cloudformation_and_sns_events() {
    let registry = registry_support::registry().await;
    let mut register = RegisterProcess::start(&registry).await;
    // The gateway account's own stacks need grants like any other account's.
    for team in ["catalog", "search", "billing"] {
        registry
            .tenancy()
            .grant(team, GATEWAY_ACCOUNT, "test")
            .await
            .expect("grant");
    }

    // Direct invocation.
    let invoices = registry_support::invoices_api();
    let got = register
        .answer(json!({ "action": "register", "entry": invoices }))
        .await;
    assert_eq!(
        got,
        json!({ "ok": true, "outcome": "created", "revision": 1 })
    );
    let stored = registry_support::stored_entry(&registry, "billing/invoices-api").await;
    assert_eq!(stored.entry, invoices);

    // A rejection names the field (a link-local backend is refused whatever the settings).
    let mut local = registry_support::entry("billing", "local-api", "invoices", &["/local"]);
    local.backend = "http://169.254.169.254".into();
    let got = register
        .answer(json!({ "action": "register", "entry": local }))
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
        !is_registered(&registry, "billing/local-api").await,
        "a rejected entry is not written"
    );

    // CloudFormation custom resource Create, answered at its ResponseURL, and the same kind of
    // event wrapped in SNS.
    let catalog = registry_support::entry("catalog", "products", "catalog", &["/products"]);
    let search = registry_support::entry("search", "query", "search", &["/query"]);
    let direct = cfn_create(&register.url, "req-create-1", &catalog);
    let wrapped = sns_wrapped(&cfn_create(&register.url, "req-create-2", &search));
    let got = register.answer(direct).await;
    assert_eq!(got["ok"], true, "{got}");
    assert_eq!(got["physicalResourceId"], "catalog/products", "{got}");
    let put = register.cfn_answer().await;
    assert_success_put(&put, "catalog/products", "req-create-1");
    assert_eq!(put.body["LogicalResourceId"], "Expose");
    // The base domain came from GATEWAY_DOMAIN.
    assert_eq!(put.body["Data"]["Fqdn"], "catalog.api.example.com");
    assert!(is_registered(&registry, "catalog/products").await);

    let got = register.answer(wrapped).await;
    assert_eq!(got["ok"], true, "{got}");
    assert_eq!(got["records"][0]["status"], "SUCCESS", "{got}");
    let put = register.cfn_answer().await;
    assert_success_put(&put, "search/query", "req-create-2");
    assert!(is_registered(&registry, "search/query").await);

    // An answer CloudFormation cannot receive fails the invocation, so Lambda's retry delivers it.
    let closed = format!("http://{}/cfn-response/gone", gateway_testkit::free_addr());
    let billing = registry_support::entry("billing", "exports", "invoices", &["/exports"]);
    let failed = register
        .api
        .invoke(&cfn_create(&closed, "req-create-3", &billing), WAIT)
        .await;
    let Some(Completion::Error { body, .. }) = &failed else {
        panic!(
            "expected a function error, got {failed:?}\n{}",
            register.lambda.log_text()
        )
    };
    let message = body["errorMessage"].as_str().unwrap_or_default();
    assert!(
        message.contains("ResponseURL"),
        "the error says what failed: {body}"
    );
    assert!(
        is_registered(&registry, "billing/exports").await,
        "the registration itself happened; the retry finds it unchanged"
    );
    // The stack that created it deletes it (a direct invoke from the gateway account's stack).
    let mut delete = cfn_create(&register.url, "req-delete-3", &billing);
    delete["RequestType"] = json!("Delete");
    delete["PhysicalResourceId"] = json!("billing/exports");
    let got = register.answer(delete).await;
    assert_eq!(
        got["result"]["outcome"], "deleted",
        "the process survives a failed invocation: {got}"
    );
    assert_eq!(register.cfn_answer().await.body["Status"], "SUCCESS");

    assert!(
        register.lambda.exited().is_none(),
        "one process served every invocation"
    );
    // Lambda sets no RUST_LOG: the answers must still be in the logs.
    let answered = register.logged("answered CloudFormation");
    assert_eq!(
        answered.len(),
        3,
        "each CloudFormation answer is logged as JSON\n{}",
        register.lambda.log_text()
    );
    assert_eq!(answered[0]["physical_resource_id"], "catalog/products");
    assert_eq!(answered[1]["physical_resource_id"], "search/query");
    assert_eq!(answered[2]["physical_resource_id"], "billing/exports");
}

/// A SUCCESS answer for the resource `physical` to the request `request_id`, PUT as
/// CloudFormation expects it.
fn assert_success_put(put: &Captured, physical: &str, request_id: &str) {
    assert_eq!(put.method, "PUT");
    assert_eq!(put.body["Status"], "SUCCESS", "{:?}", put.body);
    assert_eq!(put.body["PhysicalResourceId"], physical);
    assert_eq!(put.body["RequestId"], request_id);
}

async fn is_registered(registry: &DynamoRegistry, id: &str) -> bool {
    registry.get(id).await.expect("read the table").is_some()
}

// ---------------------------------------------------------------------------------------------
// register: tenancy

const TEAM_ACCOUNT: &str = "222222222222";
const UNGRANTED_ACCOUNT: &str = "333333333333";
const PAYMENTS_ACCOUNT: &str = "444444444444";
const INVOICES_ID: &str = "billing/invoices-api";

/// The stored owner attribute of an entry row, straight from the table.
async fn stored_owner(registry: &DynamoRegistry, id: &str) -> Option<String> {
    registry_support::row(registry, &format!("ENTRY#{id}"), "ENTRY")
        .await
        .and_then(|item| item.get("owner").and_then(|v| v.as_s().ok()).cloned())
}

/// One refused (or left-alone) request of the tenancy test and what CloudFormation must be told.
struct Refusal {
    /// The account whose registration topic carried the event; `None`: a direct invoke.
    via: Option<&'static str>,
    event: Value,
    status: &'static str,
    /// The physical id of the answer, where the step checks it.
    physical: Option<&'static str>,
    reason: String,
}

#[tokio::test]
async fn the_register_binary_trusts_the_topic_grants_and_owners_not_the_payload() {
    let registry = registry_support::registry().await;
    registry
        .tenancy()
        .grant("billing", TEAM_ACCOUNT, "test")
        .await
        .expect("grant");
    registry
        .tenancy()
        .grant("payments", PAYMENTS_ACCOUNT, "test")
        .await
        .expect("grant");
    let mut register = RegisterProcess::start(&registry).await;
    let stack_a = stack_arn(TEAM_ACCOUNT, "invoices");
    let stack_b = stack_arn(TEAM_ACCOUNT, "invoices-copy");
    let invoices = registry_support::invoices_api();

    // 1. The granted account's stack, through its own topic: created, owned by that resource.
    let got = register
        .answer(sns_from(
            TEAM_ACCOUNT,
            &register.event("Create", "t1", &stack_a, &invoices, None),
        ))
        .await;
    assert_eq!(got["records"][0]["status"], "SUCCESS", "{got}");
    let put = register.cfn_answer().await;
    assert_eq!(put.body["Status"], "SUCCESS", "{:?}", put.body);
    assert_eq!(put.body["PhysicalResourceId"], INVOICES_ID);
    assert_eq!(
        stored_owner(&registry, INVOICES_ID).await.as_deref(),
        Some(format!("stack:{stack_a}#Expose").as_str())
    );

    let other = registry_support::entry("billing", "other", "invoices", &["/other"]);
    let mut rewritten = invoices.clone();
    rewritten.backend = "https://attacker.example".into();
    let own = registry_support::entry("catalog", "products", "catalog", &["/products"]);
    let inside = registry_support::entry("payments", "pay", "x.invoices", &["/pay"]);
    let held = format!("entry {INVOICES_ID} is held by stack {stack_a} (resource Expose)");
    let not_ours = |from: &str| {
        format!("StackId {stack_a} is a stack of account 222222222222, but the request came from account {from}")
    };
    let e = |kind: &str, id: &str, stack: &str, entry: &Entry, physical: Option<&str>| {
        register.event(kind, id, stack, entry, physical)
    };
    let refusals = [
        // 2. An account without a grant for the team, through its own topic: refused, naming
        //    both.
        Refusal {
            via: Some(UNGRANTED_ACCOUNT),
            event: e("Create", "t2", &stack_arn(UNGRANTED_ACCOUNT, "x"), &other, None),
            status: "FAILED",
            physical: Some("failed-t2"),
            reason: "account 333333333333 is not granted team billing; an operator of the gateway grants it with: gatewayctl grant billing --account 333333333333".into(),
        },
        // 3. The payload claims a stack of another account than the topic's: refused.
        Refusal {
            via: Some(UNGRANTED_ACCOUNT),
            event: e("Create", "t3", &stack_a, &other, None),
            status: "FAILED",
            physical: None,
            reason: not_ours("333333333333"),
        },
        // 4. A second stack of the granted account declares the same entry: Create fails
        //    naming the owning stack; Update fails; Delete succeeds and leaves the entry alone.
        Refusal {
            via: Some(TEAM_ACCOUNT),
            event: e("Create", "t4", &stack_b, &invoices, None),
            status: "FAILED",
            physical: Some("failed-t4"),
            reason: held.clone(),
        },
        Refusal {
            via: Some(TEAM_ACCOUNT),
            event: e("Update", "t5", &stack_b, &rewritten, Some(INVOICES_ID)),
            status: "FAILED",
            physical: Some(INVOICES_ID),
            reason: held.clone(),
        },
        Refusal {
            via: Some(TEAM_ACCOUNT),
            event: e("Delete", "t6", &stack_b, &invoices, Some(INVOICES_ID)),
            status: "SUCCESS",
            physical: None,
            reason: format!("{INVOICES_ID}: left alone, not deleted: {held}"),
        },
        // 5. A direct (not SNS) CloudFormation event is the gateway account's: a team account's
        //    StackId there is refused, and the gateway account needs a grant too.
        Refusal {
            via: None,
            event: e("Update", "t7", &stack_a, &rewritten, Some(INVOICES_ID)),
            status: "FAILED",
            physical: None,
            reason: not_ours("123456789012"),
        },
        Refusal {
            via: None,
            event: e("Create", "t8", &stack_arn(GATEWAY_ACCOUNT, "ops"), &own, None),
            status: "FAILED",
            physical: None,
            reason: "account 123456789012 is not granted team catalog; an operator of the gateway grants it with: gatewayctl grant catalog --account 123456789012".into(),
        },
        // 6. Hosts inside hosts: payments may not take a subdomain of billing's host.
        Refusal {
            via: Some(PAYMENTS_ACCOUNT),
            event: e("Create", "t9", &stack_arn(PAYMENTS_ACCOUNT, "pay"), &inside, None),
            status: "FAILED",
            physical: None,
            reason: "host invoices.api.example.com (enclosing x.invoices.api.example.com) is held by billing".into(),
        },
    ];
    for refusal in refusals {
        let event = match refusal.via {
            Some(account) => sns_from(account, &refusal.event),
            None => refusal.event,
        };
        let put = register.cfn_call(event).await;
        assert_eq!(put.body["Status"], refusal.status, "{:?}", put.body);
        if let Some(physical) = refusal.physical {
            assert_eq!(put.body["PhysicalResourceId"], physical);
        }
        assert_eq!(put.body["Reason"], refusal.reason.as_str());
    }
    assert!(!is_registered(&registry, "billing/other").await);
    let stored = registry
        .get(INVOICES_ID)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(stored.entry, invoices, "the owner's entry is untouched");
    assert_eq!(stored.revision, 1);

    // 7. Records the function cannot trust are not answered and change nothing: topics that
    //    name no account, a ResponseURL that is not S3's.
    for (topic, url_used) in [
        (
            format!("arn:aws:sns:us-east-1:{GATEWAY_ACCOUNT}:gateway-register-{TEAM_ACCOUNT}0"),
            register.url.clone(),
        ),
        (
            format!("arn:aws:sns:us-east-1:{GATEWAY_ACCOUNT}:gateway-registrations"),
            register.url.clone(),
        ),
        (
            format!("arn:aws:sns:us-east-1:{GATEWAY_ACCOUNT}:gateway-register-{TEAM_ACCOUNT}"),
            "https://collector.example.com/cfn?X-Amz-Signature=x".to_string(),
        ),
    ] {
        let event = cfn_event(
            "Delete",
            &url_used,
            "t10",
            &stack_a,
            &invoices,
            Some(INVOICES_ID),
        );
        let got = register.answer(sns_via(&topic, &event)).await;
        assert_eq!(got["ok"], false, "{got}");
        let kind = got["records"][0]["error"]["kind"].as_str().unwrap_or("");
        assert!(kind == "forbidden" || kind == "bad-request", "{got}");
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(300), register.calls.recv())
            .await
            .is_err(),
        "no answer was sent for an untrusted record"
    );
    assert!(is_registered(&registry, INVOICES_ID).await);

    // 8. The owner deletes: gone, guards released.
    let delete = register.event("Delete", "t11", &stack_a, &invoices, Some(INVOICES_ID));
    let put = register.cfn_call(sns_from(TEAM_ACCOUNT, &delete)).await;
    assert_eq!(put.body["Status"], "SUCCESS");
    assert_eq!(put.body["Reason"], "billing/invoices-api: deleted");
    let rows: Vec<_> = registry_support::rows(&registry)
        .await
        .into_iter()
        .filter(|(pk, _)| pk.starts_with("ENTRY#") || pk.starts_with("HOST#"))
        .collect();
    assert_eq!(
        rows,
        [registry_support::pair(
            "HOST#invoices.api.example.com",
            "HOST"
        )],
        "only the released host guard (its version) remains"
    );

    // Every decision is one JSON line with account, stack, entry, decision and reason.
    let audit = register.logged("registration decision");
    let summary: Vec<(String, String)> = audit
        .iter()
        .map(|f| {
            (
                f["account"].as_str().unwrap_or("?").to_string(),
                f["decision"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    let expect = |a: &str, d: &str| (a.to_string(), d.to_string());
    assert_eq!(
        summary,
        [
            expect(TEAM_ACCOUNT, "created"),
            expect(UNGRANTED_ACCOUNT, "forbidden"),
            expect(UNGRANTED_ACCOUNT, "forbidden"),
            expect(TEAM_ACCOUNT, "conflict"),
            expect(TEAM_ACCOUNT, "conflict"),
            expect(TEAM_ACCOUNT, "left-alone"),
            expect(GATEWAY_ACCOUNT, "forbidden"),
            expect(GATEWAY_ACCOUNT, "forbidden"),
            expect(PAYMENTS_ACCOUNT, "conflict"),
            expect("", "refused"),
            expect("", "refused"),
            expect(TEAM_ACCOUNT, "refused"),
            expect(TEAM_ACCOUNT, "deleted"),
        ],
        "{}",
        register.lambda.log_text()
    );
    assert_eq!(audit[0]["stack"], stack_a.as_str());
    assert_eq!(audit[0]["entry_id"], INVOICES_ID);
    assert_eq!(audit[3]["stack"], stack_b.as_str());
    assert!(
        audit[3]["reason"].as_str().unwrap_or("").contains(&stack_a),
        "{}",
        audit[3]
    );
    assert_eq!(audit[8]["entry_id"], "payments/pay");
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

/// Billing's `invoices` entry, the one the reconcile binary's runs publish.
fn billing_invoices() -> Entry {
    support::entry("billing", "invoices", "invoices", &["/invoices"])
}

fn reconcile_env(h: &support::Harness) -> Vec<(String, String)> {
    let mut env = h.moto.aws_env();
    env.push(setting("GATEWAY_TABLE", h.registry.table()));
    env.push(setting("GATEWAY_BUCKET", h.store.bucket()));
    env.push(setting(
        "GATEWAY_SIGNING_KEY",
        h.store.signer().expect("the harness signs").key(),
    ));
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
    h.register(billing_invoices()).await;

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
    h.register(billing_invoices()).await;
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

    let store = gateway_adapters::store::S3Store::new(
        gateway_adapters::store::s3_client(&h.moto.sdk_config().await),
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
    // Nothing may be called: the process must stop before touching AWS.
    let envoy = envoy_bin();
    let env = unreachable_aws(&[
        ("GATEWAY_BUCKET", "bundles"),
        ("GATEWAY_DOMAIN", DOMAIN),
        ("ENVOY_BIN", &envoy.to_string_lossy()),
    ]);
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

#[tokio::test]
async fn the_register_binary_without_its_own_account_fails_at_init_naming_get_caller_identity() {
    let api = RuntimeApi::start().await;
    // STS cannot be reached: the function cannot know whom a direct invoke is.
    let env = unreachable_aws(&[("GATEWAY_TABLE", "registry"), ("GATEWAY_DOMAIN", DOMAIN)]);
    let mut lambda = LambdaProcess::spawn(env!("CARGO_BIN_EXE_register"), &api, &env);
    let deadline = tokio::time::Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = lambda.exited() {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the function did not stop within {WAIT:?}\n{}",
            lambda.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(!status.success(), "exits non-zero: {status}");
    assert!(
        lambda.stderr_text().contains("GetCallerIdentity failed"),
        "names what failed: {}",
        lambda.log_text()
    );
    assert!(
        api.invoke(&json!({}), Duration::from_millis(200))
            .await
            .is_none(),
        "took no event"
    );
}

/// From a terminal: `--version` and `--help` answer without the runtime; anything else is a
/// usage error (exit 2), never a start against a missing runtime API.
#[test]
fn both_binaries_answer_version_and_help_from_a_terminal() {
    for (bin, name) in [
        (env!("CARGO_BIN_EXE_register"), "register"),
        (env!("CARGO_BIN_EXE_reconcile"), "reconcile"),
    ] {
        let run = |arg: &str| {
            std::process::Command::new(bin)
                .arg(arg)
                .env_clear()
                .output()
                .expect("the binary runs")
        };
        let version = run("--version");
        assert!(version.status.success(), "{name}");
        assert_eq!(
            String::from_utf8_lossy(&version.stdout).trim(),
            format!("{name} {}", env!("CARGO_PKG_VERSION"))
        );
        let help = run("--help");
        assert!(help.status.success() && String::from_utf8_lossy(&help.stdout).contains("Lambda"));
        let wrong = run("--verbose");
        assert_eq!(wrong.status.code(), Some(2), "{name}");
        assert!(String::from_utf8_lossy(&wrong.stderr).contains("--verbose"), "{name}");
    }
}
