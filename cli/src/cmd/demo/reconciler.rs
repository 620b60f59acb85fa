//! The reconciler loop: the reconcile function's code, run every few seconds. The short interval
//! stands in for both the stream's wake-up and the schedule's backstop: a registration from
//! another terminal is published within one interval. It prints each decision when it differs
//! from the previous one.

use gateway_adapters::metrics::CloudWatchMetrics;
use gateway_control::reconcile::{reconcile, ReconcileConfig};
use gateway_adapters::registry::DynamoRegistry;
use gateway_adapters::store::S3Store;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub const INTERVAL: Duration = Duration::from_secs(2);

/// A run in flight at shutdown is let finish (its Envoy validation is a child process of its
/// own) for at most this long.
const STOP_WAIT: Duration = Duration::from_secs(15);

pub struct Reconciler {
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl Reconciler {
    pub fn start(
        registry: DynamoRegistry,
        store: S3Store,
        metrics: CloudWatchMetrics,
        cfg: ReconcileConfig,
    ) -> Reconciler {
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(registry, store, metrics, cfg, stopped));
        Reconciler {
            stop,
            task: Some(task),
        }
    }

    /// Stops the loop between runs, letting a run in flight finish (bounded).
    pub async fn stop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(STOP_WAIT, &mut task).await.is_err() {
                task.abort();
            }
        }
    }
}

impl Drop for Reconciler {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn run(
    registry: DynamoRegistry,
    store: S3Store,
    metrics: CloudWatchMetrics,
    cfg: ReconcileConfig,
    mut stopped: watch::Receiver<bool>,
) {
    let mut last = String::new();
    while !*stopped.borrow() {
        let line = match reconcile(&registry, &store, &metrics, &cfg).await {
            Ok(outcome) => outcome.to_string(),
            Err(e) => format!("run failed, nothing published: {e}"),
        };
        if line != last {
            println!("      reconciler: {line}");
            last = line;
        }
        tokio::select! {
            _ = tokio::time::sleep(INTERVAL) => {}
            _ = stopped.changed() => {}
        }
    }
}
