//! What wakes the reconcile function, typed once at the edge (docs/design.md#lambda-events):
//! DynamoDB stream batches, the EventBridge schedule and direct invocations, of which only
//! `{"action":"seed"}` asks for something other than a run.
//!
//! The content of a wake-up is never applied (a run re-reads the whole registry): an event is
//! read into the first of these types it is, for the log, and any other JSON (a stream batch or
//! a tick that does not read as one included) is a direct invocation, which wakes the run all
//! the same.

use aws_lambda_events::cloudwatch_events::CloudWatchEvent;
use aws_lambda_events::dynamodb;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

/// One invocation of the reconcile function.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ReconcileEvent {
    /// `{"action":"seed"}` from the deploy-time seed: publish the first bundle, never overwrite.
    Seed(SeedRequest),
    /// A batch of the registry table's stream (`Records`).
    Stream(Box<dynamodb::Event>),
    /// The every-minute schedule (an EventBridge event).
    Schedule(Box<CloudWatchEvent>),
    /// Any other JSON.
    Direct(IgnoredAny),
}

/// `{"action":"seed"}`.
#[derive(Debug, Deserialize)]
pub struct SeedRequest {
    pub action: SeedAction,
}

#[derive(Debug, Deserialize)]
pub enum SeedAction {
    #[serde(rename = "seed")]
    Seed,
}

impl ReconcileEvent {
    /// What woke the run, for the log.
    pub fn describe(&self) -> &'static str {
        match self {
            ReconcileEvent::Seed(_) => "seed request",
            ReconcileEvent::Stream(_) => "table stream",
            ReconcileEvent::Schedule(_) => "schedule",
            ReconcileEvent::Direct(_) => "direct invocation",
        }
    }
}

/// A JSON document as the runtime would read it; JSON that is no event's is a direct invocation.
impl From<Value> for ReconcileEvent {
    fn from(event: Value) -> Self {
        ReconcileEvent::deserialize(event).unwrap_or(ReconcileEvent::Direct(IgnoredAny))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(event: &Value) -> ReconcileEvent {
        serde_json::from_value(event.clone()).expect("every JSON document is an event")
    }

    #[test]
    fn each_source_is_read_into_its_type() {
        let stream = json!({ "Records": [ {
            "eventID": "1", "eventName": "INSERT", "eventVersion": "1.1",
            "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
            "dynamodb": { "ApproximateCreationDateTime": 1704067200,
                "Keys": { "pk": { "S": "ENTRY#billing/invoices" }, "sk": { "S": "ENTRY" } },
                "SequenceNumber": "1", "SizeBytes": 52, "StreamViewType": "NEW_AND_OLD_IMAGES" },
            "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/x" } ] });
        let ReconcileEvent::Stream(batch) = read(&stream) else {
            panic!("a stream batch")
        };
        assert_eq!(batch.records.len(), 1);
        assert_eq!(batch.records[0].event_name, "INSERT");

        let tick = json!({ "version": "0", "id": "53dc4d37", "detail-type": "Scheduled Event",
            "source": "aws.events", "account": "123456789012", "time": "2024-01-01T00:01:00Z",
            "region": "us-east-1", "resources": ["arn:aws:events:us-east-1:123456789012:rule/r"],
            "detail": {} });
        let ReconcileEvent::Schedule(tick) = read(&tick) else {
            panic!("a schedule tick")
        };
        assert_eq!(tick.source.as_deref(), Some("aws.events"));

        assert!(matches!(read(&json!({ "action": "seed" })), ReconcileEvent::Seed(_)));
        for direct in [
            json!({}),
            json!({ "action": "reconcile" }),
            json!({ "action": "seed!" }),
            json!(null),
            json!([1]),
        ] {
            assert_eq!(read(&direct).describe(), "direct invocation", "{direct}");
        }
    }

    #[test]
    fn an_event_that_only_looks_like_its_source_still_wakes_the_run() {
        for event in [
            json!({ "Records": [ { "eventName": "INSERT" } ] }),
            json!({ "Records": "all of them" }),
            json!({ "detail-type": "Scheduled Event", "time": "yesterday" }),
            json!({ "detail-type": "Scheduled Event", "time": "2024-01-01T00:00:00Z",
                 "resources": [], "detail": {}, "source": { "nested": [[[]]] } }),
        ] {
            let woken = read(&event);
            assert!(matches!(woken, ReconcileEvent::Direct(_)), "{event}: {woken:?}");
            assert!(matches!(ReconcileEvent::from(event), ReconcileEvent::Direct(_)));
        }
    }

    #[test]
    fn hostile_json_is_an_event_or_a_parse_error_never_a_panic() {
        let deep = format!("{}{}", "{\"Records\":".repeat(50_000), "}".repeat(50_000));
        assert!(serde_json::from_str::<ReconcileEvent>(&deep).is_err());
        for text in [
            r#"{"Records": [{"dynamodb": {"ApproximateCreationDateTime": -1e308, "SizeBytes": 1}}]}"#,
            r#"{"Records": [{"dynamodb": {"ApproximateCreationDateTime": 1e308, "SizeBytes": -1}}]}"#,
            r#"{"Records": [{"dynamodb": {"Keys": {"pk": {"N": "1e999999"}}}}]}"#,
            r#"{"detail-type": "Scheduled Event", "time": "+999999-12-31T23:59:59Z"}"#,
        ] {
            let event: ReconcileEvent = serde_json::from_str(text).expect(text);
            assert!(!event.describe().is_empty());
        }
        let both: ReconcileEvent = serde_json::from_str(r#"{"action": "seed", "Records": []}"#).expect("JSON");
        assert!(matches!(both, ReconcileEvent::Seed(_)));
    }
}
