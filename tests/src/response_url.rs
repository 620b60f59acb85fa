//! A loopback stand-in for CloudFormation's pre-signed ResponseURL (the test kit's hyper stub
//! server): records every request it receives (method, target, content type, JSON body) and
//! answers with a chosen status.

use crate::stub::{Answer, StubServer};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// One request received by the stand-in ResponseURL.
#[derive(Debug)]
pub struct Captured {
    pub method: String,
    pub target: String,
    pub content_type: Option<String>,
    pub body: Value,
}

/// A loopback HTTP listener answering every request with `status`.
pub async fn response_url(status: u16) -> (String, mpsc::UnboundedReceiver<Captured>) {
    response_url_with(Answer::status(status)).await
}

/// A listener answering every request with a redirect to `location`.
pub async fn redirecting_url(location: &str) -> (String, mpsc::UnboundedReceiver<Captured>) {
    response_url_with(Answer::status(307).header("location", location)).await
}

/// Serves until the receiver is dropped (or the test's runtime ends).
async fn response_url_with(answer: Answer) -> (String, mpsc::UnboundedReceiver<Captured>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let keeper = tx.clone();
    let server = StubServer::answering(move |r| {
        let _ = tx.send(Captured {
            content_type: r.header("content-type").map(str::to_string),
            body: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            method: r.method,
            target: r.target,
        });
        answer.clone().header("connection", "close")
    });
    let url = format!("{}/cfn-response/abc?X-Amz-Signature=sig", server.url());
    tokio::spawn(async move {
        keeper.closed().await;
        drop(server);
    });
    (url, rx)
}

/// CloudFormation's Create of the custom resource for `entry` (a string property) from a team's
/// stack, to be answered at `url`; `wait_for` is the construct's `WaitFor`, when set.
pub fn cfn_create_waiting(
    url: &str,
    request_id: &str,
    entry: &gateway_render::Entry,
    wait_for: Option<&str>,
) -> Value {
    let mut props = json!({ "Entry": serde_json::to_string(entry).expect("json") });
    if let Some(w) = wait_for {
        props["WaitFor"] = json!(w);
    }
    json!({
        "RequestType": "Create",
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:gateway-register",
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/team/guid",
        "RequestId": request_id,
        "ResourceType": "Custom::GatewayRoute",
        "LogicalResourceId": "Expose",
        "ResourceProperties": props,
    })
}
