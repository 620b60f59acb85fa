//! What wakes the reconcile function, typed once at the edge (docs/design.md#lambda-events):
//! DynamoDB stream batches, the EventBridge schedule and direct invocations, of which only
//! `{"action":"seed"}` asks for something other than a run.
//!
//! The content of a wake-up is never applied (a run re-reads the whole registry), so an event is
//! classified by the keys its source always sets and then read into that source's type for the
//! log; one that looks like a stream batch or a schedule tick but does not read as one still
//! wakes the run, as before.

use aws_lambda_events::cloudwatch_events::CloudWatchEvent;
use aws_lambda_events::dynamodb;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One invocation of the reconcile function.
#[derive(Debug)]
pub enum ReconcileEvent {
    /// `{"action":"seed"}` from the deploy-time seed: publish the first bundle, never overwrite.
    Seed,
    /// A batch of the registry table's stream (`Records`).
    Stream(Box<dynamodb::Event>),
    /// The every-minute schedule (`detail-type: Scheduled Event`).
    Schedule(Box<CloudWatchEvent>),
    /// A direct invocation with anything else.
    Direct,
    /// Looks like a stream batch or a schedule tick by its keys but does not read as one: a
    /// wake-up all the same.
    Unreadable {
        looks_like: &'static str,
        why: String,
    },
}

const STREAM: &str = "table stream";
const SCHEDULE: &str = "schedule";

impl ReconcileEvent {
    /// What woke the run, for the log.
    pub fn describe(&self) -> &'static str {
        match self {
            ReconcileEvent::Seed => "seed request",
            ReconcileEvent::Stream(_) => STREAM,
            ReconcileEvent::Schedule(_) => SCHEDULE,
            ReconcileEvent::Direct => "direct invocation",
            ReconcileEvent::Unreadable { looks_like, .. } => looks_like,
        }
    }
}

impl From<&Value> for ReconcileEvent {
    fn from(event: &Value) -> Self {
        fn read<T: serde::de::DeserializeOwned>(
            event: &Value,
            looks_like: &'static str,
            typed: impl FnOnce(Box<T>) -> ReconcileEvent,
        ) -> ReconcileEvent {
            match T::deserialize(event) {
                Ok(t) => typed(Box::new(t)),
                Err(e) => ReconcileEvent::Unreadable {
                    looks_like,
                    why: e.to_string(),
                },
            }
        }
        if event.get("action").and_then(Value::as_str) == Some("seed") {
            ReconcileEvent::Seed
        } else if event.get("Records").is_some() {
            read(event, STREAM, ReconcileEvent::Stream)
        } else if event.get("detail-type").and_then(Value::as_str) == Some("Scheduled Event") {
            read(event, SCHEDULE, ReconcileEvent::Schedule)
        } else {
            ReconcileEvent::Direct
        }
    }
}

impl From<Value> for ReconcileEvent {
    fn from(event: Value) -> Self {
        ReconcileEvent::from(&event)
    }
}

/// Any JSON is an event: every one wakes a run.
impl<'de> Deserialize<'de> for ReconcileEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(ReconcileEvent::from)
    }
}

/// What woke the run; logged, never applied.
pub fn describe_event(event: &Value) -> &'static str {
    ReconcileEvent::from(event).describe()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_source_is_read_into_its_type() {
        let stream = json!({ "Records": [ {
            "eventID": "1", "eventName": "INSERT", "eventVersion": "1.1",
            "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
            "dynamodb": { "ApproximateCreationDateTime": 1704067200,
                "Keys": { "pk": { "S": "ENTRY#billing/invoices" }, "sk": { "S": "ENTRY" } },
                "SequenceNumber": "1", "SizeBytes": 52, "StreamViewType": "NEW_AND_OLD_IMAGES" },
            "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/x" } ] });
        let ReconcileEvent::Stream(batch) = ReconcileEvent::from(&stream) else {
            panic!("a stream batch")
        };
        assert_eq!(batch.records.len(), 1);
        assert_eq!(batch.records[0].event_name, "INSERT");

        let tick = json!({ "version": "0", "id": "53dc4d37", "detail-type": "Scheduled Event",
            "source": "aws.events", "account": "123456789012", "time": "2024-01-01T00:01:00Z",
            "region": "us-east-1", "resources": ["arn:aws:events:us-east-1:123456789012:rule/r"],
            "detail": {} });
        let ReconcileEvent::Schedule(tick) = ReconcileEvent::from(&tick) else {
            panic!("a schedule tick")
        };
        assert_eq!(tick.source.as_deref(), Some("aws.events"));

        assert!(matches!(
            ReconcileEvent::from(&json!({ "action": "seed" })),
            ReconcileEvent::Seed
        ));
        for direct in [
            json!({}),
            json!({ "action": "reconcile" }),
            json!(null),
            json!([1]),
        ] {
            assert_eq!(describe_event(&direct), "direct invocation", "{direct}");
        }
    }

    #[test]
    fn an_event_that_only_looks_like_its_source_still_wakes_the_run() {
        for (event, looks_like) in [
            (
                json!({ "Records": [ { "eventName": "INSERT" } ] }),
                "table stream",
            ),
            (json!({ "Records": "all of them" }), "table stream"),
            (
                json!({ "detail-type": "Scheduled Event", "time": "yesterday" }),
                "schedule",
            ),
            (
                json!({ "detail-type": "Scheduled Event", "time": "2024-01-01T00:00:00Z",
                     "resources": [], "detail": {},
                     "source": { "nested": [[[]]] } }),
                "schedule",
            ),
        ] {
            let woken = ReconcileEvent::from(&event);
            assert!(
                matches!(&woken, ReconcileEvent::Unreadable { looks_like: l, why } if *l == looks_like && !why.is_empty()),
                "{event}: {woken:?}"
            );
            assert_eq!(woken.describe(), looks_like);
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
            r#"{"action": "seed", "Records": []}"#,
        ] {
            let event: ReconcileEvent = serde_json::from_str(text).expect(text);
            assert!(!event.describe().is_empty());
        }
    }
}
