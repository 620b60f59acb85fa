//! What one reconcile run decided, in words an operator reads at 3 a.m.

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

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Registry => f.write_str("registry"),
            Stage::Render => f.write_str("render"),
            Stage::Validation(layer) => write!(f, "validation ({layer})"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
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
        failed_key: String,
    },
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
        use serde_json::json;
        match self {
            Outcome::Published {
                version_id,
                hash,
                routes,
            } => {
                json!({"outcome": self.kind(), "version_id": version_id, "hash": hash, "routes": routes})
            }
            Outcome::Unchanged { hash } => json!({"outcome": self.kind(), "hash": hash}),
            Outcome::KeptLive { reason } => json!({"outcome": self.kind(), "reason": reason}),
            Outcome::HeldDrift {
                live_hash,
                recorded_hash,
            } => {
                json!({"outcome": self.kind(), "live_hash": live_hash, "recorded_hash": recorded_hash})
            }
            Outcome::Rejected {
                stage,
                reason,
                failed_key,
            } => json!({
                "outcome": self.kind(), "stage": stage.to_string(), "reason": reason,
                "failed": format!("failed/{failed_key}")
            }),
        }
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
