//! The last run that was rejected, kept as `failed/last-rejected.txt` beside the rejected
//! render: while no publish has come after it, every registration waits on it, and `status`
//! says so (docs/design.md#entry-status). A run that ends `unchanged` empties it (what is live
//! is then what the registry renders, so nothing waits).

use super::Stage;
use gateway_adapters::store::ConfigStore;
use tracing::warn;

/// The file under `failed/`.
pub const LAST_REJECTION: &str = "last-rejected.txt";

/// A rejected run as `status` reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRejection {
    /// Unix seconds.
    pub at: u64,
    pub stage: String,
    /// `failed/KEY`: where the render and the whole reason are.
    pub failed: String,
    /// The reason's first line.
    pub reason: String,
}

impl LastRejection {
    pub fn text(at: u64, stage: &Stage, failed_key: &str, reason: &str) -> String {
        format!("at: {at}\nstage: {stage}\nfailed: failed/{failed_key}\n\n{reason}\n")
    }

    /// The file's text read back; `None` for an empty (cleared) or foreign file.
    pub fn parse(text: &str) -> Option<LastRejection> {
        let mut lines = text.lines();
        let at = lines.next()?.strip_prefix("at: ")?.parse().ok()?;
        let stage = lines.next()?.strip_prefix("stage: ")?.to_string();
        let failed = lines.next()?.strip_prefix("failed: ")?.to_string();
        let reason = lines
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .to_string();
        Some(LastRejection {
            at,
            stage,
            failed,
            reason,
        })
    }

    /// What holds every registration, and what lifts it.
    pub fn hold(&self) -> String {
        format!(
            "the last reconcile run was rejected at {} ({}), and nothing has published since: no registration goes out until a run passes; fix what it names (details in {}) or deregister the entries it names",
            self.stage, self.reason, self.failed
        )
    }
}

/// Reads the last rejection; any failure reads as none (a report, never a decision).
pub async fn read<S: ConfigStore>(store: &S) -> Option<LastRejection> {
    let bytes = store.read_failed(LAST_REJECTION).await.ok()??;
    LastRejection::parse(&String::from_utf8_lossy(&bytes))
}

/// Empties the file when it holds a rejection.
pub(super) async fn clear<S: ConfigStore>(store: &S) {
    if read(store).await.is_some() {
        if let Err(e) = store.keep_failed(LAST_REJECTION, b"").await {
            warn!(error = %e, "could not clear failed/{LAST_REJECTION}; status may report a rejection that no longer holds");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_writes_and_an_empty_file_is_none() {
        let text = LastRejection::text(7, &Stage::Validation("quarantine".into()), "abc", "too many teams\nsecond");
        let read = LastRejection::parse(&text).expect("parses");
        assert_eq!(read.at, 7);
        assert_eq!(read.stage, "validation (quarantine)");
        assert_eq!(read.failed, "failed/abc");
        assert_eq!(read.reason, "too many teams");
        assert!(read.hold().contains("failed/abc"));
        assert_eq!(LastRejection::parse(""), None);
        assert_eq!(LastRejection::parse("something else"), None);
    }
}
