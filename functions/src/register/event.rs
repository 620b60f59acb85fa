//! What the register function is invoked with, typed once at the edge.
//!
//! An invocation is classified by the keys its entry point always sets (`RequestType` for
//! CloudFormation, `Records` for SNS, anything else is a direct invoke), then read into that
//! entry point's type. Content an entry point cannot use becomes a [`BadRequest`] carrying the
//! answer's message, so every invocation, however malformed, gets an answer and never a panic.
//!
//! SNS records are read for the two fields the function uses (`Sns.TopicArn`, `Sns.Message`)
//! rather than as `aws_lambda_events::sns::SnsRecord`: that type requires every field SNS sets
//! (signature, certificate URL, timestamp…), and a record without them is answered today by its
//! message alone. The message itself is a CloudFormation event, read into the same type as a
//! direct one.

use aws_lambda_events::cloudformation::CloudFormationCustomResourceRequest;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One invocation of the register function.
#[derive(Debug)]
pub enum RegisterEvent {
    /// A CloudFormation custom resource event, answered at its `ResponseURL`.
    CustomResource(Result<Box<CloudFormationCustomResourceRequest>, BadRequest>),
    /// SNS records, each carrying a CloudFormation event as its message.
    Sns(Vec<Result<SnsNotification, BadRequest>>),
    /// A direct invoke: the gateway account's operators.
    Direct(Result<DirectRequest, BadRequest>),
}

/// Why an invocation cannot be acted on: the `bad-request` answer's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRequest(pub String);

/// One SNS record the function can act on.
#[derive(Debug)]
pub struct SnsNotification {
    /// The topic it came through: who the caller is (empty when the record names none, which
    /// the identity check refuses).
    pub topic_arn: String,
    /// The CloudFormation event it carries.
    pub event: Result<Box<CloudFormationCustomResourceRequest>, BadRequest>,
}

/// `{"action":"register","entry":…}` or `{"action":"deregister","id":"team/service"}`.
#[derive(Debug, Clone, PartialEq)]
pub enum DirectRequest {
    /// The entry document as given; the registry's checks judge it.
    Register {
        entry: Value,
    },
    Deregister {
        id: String,
    },
}

impl From<Value> for RegisterEvent {
    fn from(event: Value) -> Self {
        if event.get("RequestType").is_some() {
            return RegisterEvent::CustomResource(custom_resource(event));
        }
        if let Some(records) = event.get("Records").and_then(Value::as_array) {
            return RegisterEvent::Sns(
                records
                    .iter()
                    .enumerate()
                    .map(|(i, record)| sns_record(i, record))
                    .collect(),
            );
        }
        RegisterEvent::Direct(DirectRequest::from_event(&event))
    }
}

/// Any JSON is an event: what cannot be used is answered, not refused by the runtime.
impl<'de> Deserialize<'de> for RegisterEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(RegisterEvent::from)
    }
}

/// A CloudFormation custom resource event, direct or from an SNS message.
fn custom_resource(event: Value) -> Result<Box<CloudFormationCustomResourceRequest>, BadRequest> {
    serde_json::from_value(event).map_err(|e| {
        // Without a parseable event there is no ResponseURL to answer; CloudFormation times out.
        BadRequest(format!("not a CloudFormation custom resource event: {e}"))
    })
}

fn sns_record(i: usize, record: &Value) -> Result<SnsNotification, BadRequest> {
    let Some(message) = record.pointer("/Sns/Message").and_then(Value::as_str) else {
        return Err(BadRequest(format!(
            "Records[{i}].Sns.Message: missing; expected an SNS record"
        )));
    };
    let topic_arn = record
        .pointer("/Sns/TopicArn")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let event = match serde_json::from_str::<Value>(message) {
        Ok(inner) => custom_resource(inner),
        Err(e) => Err(BadRequest(format!(
            "Records[{i}].Sns.Message: not a CloudFormation event (JSON): {e}"
        ))),
    };
    Ok(SnsNotification { topic_arn, event })
}

impl DirectRequest {
    /// The request a direct invoke makes, or why it makes none.
    pub fn from_event(event: &Value) -> Result<DirectRequest, BadRequest> {
        let bad = |message: &str| Err(BadRequest(message.to_string()));
        match event.get("action").and_then(Value::as_str) {
            Some("register") => match event.get("entry") {
                Some(entry) => Ok(DirectRequest::Register {
                    entry: entry.clone(),
                }),
                None => bad("entry: missing; register needs the entry document"),
            },
            Some("deregister") => match event.get("id").and_then(Value::as_str) {
                Some(id) => Ok(DirectRequest::Deregister { id: id.to_string() }),
                None => bad("id: missing; deregister needs \"team/service\""),
            },
            Some(other) => Err(BadRequest(format!(
                "action: unknown action {other:?}; expected register or deregister"
            ))),
            None => bad(
                "action: missing; expected {\"action\":\"register\",\"entry\":…}, {\"action\":\"deregister\",\"id\":…}, a CloudFormation custom resource event or an SNS-wrapped one",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn create() -> Value {
        json!({
            "RequestType": "Create",
            "ResponseURL": "https://bucket.s3.amazonaws.com/x",
            "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/billing/guid",
            "RequestId": "r1",
            "ResourceType": "Custom::ExposeOnGateway",
            "LogicalResourceId": "Expose",
            "ResourceProperties": { "Entry": "{}" },
        })
    }

    #[test]
    fn each_entry_point_is_read_into_its_type() {
        let RegisterEvent::CustomResource(Ok(request)) = RegisterEvent::from(create()) else {
            panic!("a Create event")
        };
        assert!(matches!(
            *request,
            CloudFormationCustomResourceRequest::Create(ref r) if r.request_id == "r1"
        ));

        let sns = json!({ "Records": [ { "Sns": {
            "TopicArn": "arn:aws:sns:us-east-1:123456789012:gateway-register-222222222222",
            "Message": create().to_string() } } ] });
        let RegisterEvent::Sns(records) = RegisterEvent::from(sns) else {
            panic!("SNS records")
        };
        let [Ok(record)] = records.as_slice() else {
            panic!("one usable record: {records:?}")
        };
        assert!(record.topic_arn.ends_with("-222222222222"));
        assert!(record.event.is_ok(), "{:?}", record.event);

        let direct = json!({ "action": "deregister", "id": "billing/invoices" });
        let RegisterEvent::Direct(Ok(request)) = RegisterEvent::from(direct) else {
            panic!("a direct request")
        };
        assert_eq!(
            request,
            DirectRequest::Deregister {
                id: "billing/invoices".into()
            }
        );
    }

    #[test]
    fn malformed_events_become_answers_that_name_the_field() {
        let mut unknown = create();
        unknown["RequestType"] = json!("Explode");
        let RegisterEvent::CustomResource(Err(BadRequest(why))) = RegisterEvent::from(unknown)
        else {
            panic!("a bad custom resource event")
        };
        assert!(
            why.starts_with(
                "not a CloudFormation custom resource event: unknown variant `Explode`"
            ),
            "{why}"
        );

        let sns =
            json!({ "Records": [ 5, { "Sns": { "Message": 7 } }, { "Sns": { "Message": "{" } } ] });
        let RegisterEvent::Sns(records) = RegisterEvent::from(sns) else {
            panic!("SNS records")
        };
        assert_eq!(
            records[0].as_ref().err(),
            Some(&BadRequest(
                "Records[0].Sns.Message: missing; expected an SNS record".into()
            ))
        );
        assert_eq!(
            records[1].as_ref().err(),
            Some(&BadRequest(
                "Records[1].Sns.Message: missing; expected an SNS record".into()
            ))
        );
        let Ok(third) = &records[2] else {
            panic!("a record with a message")
        };
        assert_eq!(third.topic_arn, "");
        let Err(BadRequest(why)) = &third.event else {
            panic!("an unreadable message")
        };
        assert!(
            why.starts_with("Records[2].Sns.Message: not a CloudFormation event (JSON): "),
            "{why}"
        );

        for (event, message) in [
            (json!({ "action": "register" }), "entry: missing; register needs the entry document"),
            (json!({ "action": "deregister", "id": 7 }), "id: missing; deregister needs \"team/service\""),
            (json!({ "action": "drop" }), "action: unknown action \"drop\"; expected register or deregister"),
            // `Records` that is not a list is no SNS event.
            (json!({ "Records": {} }), "action: missing; expected {\"action\":\"register\",\"entry\":…}, {\"action\":\"deregister\",\"id\":…}, a CloudFormation custom resource event or an SNS-wrapped one"),
        ] {
            let RegisterEvent::Direct(Err(BadRequest(why))) = RegisterEvent::from(event.clone())
            else {
                panic!("a bad direct request: {event}")
            };
            assert_eq!(why, message, "{event}");
        }
    }

    #[test]
    fn hostile_json_is_answered_not_panicked_on() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(serde_json::from_str::<RegisterEvent>(&deep).is_err());
        for text in [
            "null",
            "[]",
            "\"RequestType\"",
            r#"{"RequestType": null}"#,
            r#"{"RequestType": "Create", "ResourceProperties": 1e400}"#,
            r#"{"Records": [{"Sns": {"Message": "{\"RequestType\": [[[[]]]]}"}}]}"#,
            r#"{"action": "register", "entry": null}"#,
        ] {
            // Either an event or a parse error of the JSON text itself; never a panic.
            let _ = serde_json::from_str::<RegisterEvent>(text);
        }
        let event: RegisterEvent = serde_json::from_str(r#"{"RequestType": null}"#).expect("JSON");
        assert!(matches!(event, RegisterEvent::CustomResource(Err(_))));
    }
}
