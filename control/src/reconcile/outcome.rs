//! What one reconcile run decided, in words an operator reads at 3 a.m.

use serde::{Serialize, Serializer};
use std::fmt;

/// Where a rejected render was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// A stored entry no longer passes the registration checks (or does not parse).
    Registry,
    /// The renderer refused the registry (two entries that would shadow each other).
    Render,
    /// One of the validator's layers.
    Validation(String),
}

/// As its sentence form (`validation (envoy)`), which readers of the JSON match on.
impl Serialize for Stage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Registry => f.write_str("registry"),
            Stage::Render => f.write_str("render"),
            Stage::Validation(layer) => write!(f, "validation ({layer})"),
        }
    }
}

/// As JSON: `{"outcome": "<kind>", …the variant's fields}` (see [`Outcome::kind`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    Published {
        version_id: String,
        hash: String,
        routes: usize,
    },
    /// The registry renders to what is live: nothing to do.
    Unchanged { hash: String },
    /// The registry read returned no entries: an empty route table is an outage, never an intent.
    KeptLive { reason: String },
    /// The live bundle is not the one this reconciler last published (an operator's kill switch
    /// or restore, or a hand edit): publish nothing until the hash matches again or `resume`.
    HeldDrift {
        live_hash: Option<String>,
        recorded_hash: Option<String>,
    },
    /// Nothing published; the failed render is kept under `failed/{key}`.
    Rejected {
        stage: Stage,
        reason: String,
        #[serde(rename = "failed", serialize_with = "failed_path")]
        failed_key: String,
    },
}

/// `failed/{key}`: where the failed render is kept, as an operator looks for it.
fn failed_path<S: Serializer>(key: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_args!("failed/{key}"))
}

impl Outcome {
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Published { .. } => "published",
            Outcome::Unchanged { .. } => "unchanged",
            Outcome::KeptLive { .. } => "kept-live",
            Outcome::HeldDrift { .. } => "held-drift",
            Outcome::Rejected { .. } => "rejected",
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        crate::to_json(self)
    }
}

fn or_none(h: &Option<String>) -> &str {
    h.as_deref().unwrap_or("none")
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Published {
                version_id,
                hash,
                routes,
            } => {
                write!(
                    f,
                    "published version {version_id} ({hash}, {routes} routes)"
                )
            }
            Outcome::Unchanged { hash } => write!(f, "unchanged ({hash} is live)"),
            Outcome::KeptLive { reason } => write!(f, "kept live config: {reason}"),
            Outcome::HeldDrift {
                live_hash,
                recorded_hash,
            } => write!(
                f,
                "held: drift (live bundle {} is not the last published {}); restore it with \
                 `gatewayctl restore` or accept it with `gatewayctl resume`",
                or_none(live_hash),
                or_none(recorded_hash)
            ),
            Outcome::Rejected {
                stage,
                reason,
                failed_key,
            } => {
                let first = reason.lines().next().unwrap_or_default();
                write!(
                    f,
                    "rejected: {stage}: {first} (details in failed/{failed_key})"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_outcome_writes_the_json_readers_know() {
        let cases = [
            (
                Outcome::Published {
                    version_id: "v1".into(),
                    hash: "sha256:a".into(),
                    routes: 3,
                },
                json!({"outcome": "published", "version_id": "v1", "hash": "sha256:a", "routes": 3}),
            ),
            (
                Outcome::Unchanged {
                    hash: "sha256:a".into(),
                },
                json!({"outcome": "unchanged", "hash": "sha256:a"}),
            ),
            (
                Outcome::KeptLive {
                    reason: "empty".into(),
                },
                json!({"outcome": "kept-live", "reason": "empty"}),
            ),
            (
                Outcome::HeldDrift {
                    live_hash: Some("sha256:b".into()),
                    recorded_hash: None,
                },
                json!({"outcome": "held-drift", "live_hash": "sha256:b", "recorded_hash": null}),
            ),
            (
                Outcome::Rejected {
                    stage: Stage::Validation("envoy".into()),
                    reason: "bad".into(),
                    failed_key: "2024/x".into(),
                },
                json!({"outcome": "rejected", "stage": "validation (envoy)", "reason": "bad",
                       "failed": "failed/2024/x"}),
            ),
        ];
        for (outcome, expected) in cases {
            assert_eq!(outcome.to_json(), expected, "{outcome}");
            assert_eq!(outcome.to_json()["outcome"], outcome.kind());
            // Byte for byte as the hand-written maps were: keys sorted.
            assert_eq!(
                serde_json::to_string(&outcome.to_json()).expect("json"),
                serde_json::to_string(&expected).expect("json")
            );
        }
    }
}
