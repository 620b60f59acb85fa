//! What the demo has running: everything it started, stopped together whatever way it ends.

use super::backends::SampleBackend;
use super::reconciler::Reconciler;
use gateway_proc_kit::processes::Processes;

/// Everything the demo started, stopped together whatever way the demo ends.
#[derive(Default)]
pub struct Demo {
    pub processes: Processes,
    pub backends: Vec<SampleBackend>,
    pub reconciler: Option<Reconciler>,
}

impl Demo {
    pub async fn stop(&mut self) -> Vec<&'static str> {
        let mut stopped = Vec::new();
        if let Some(mut r) = self.reconciler.take() {
            r.stop().await;
            stopped.push("the reconciler loop");
        }
        stopped.extend(self.processes.stop_all().await);
        if !self.backends.is_empty() {
            self.backends.clear();
            stopped.push("the sample backends");
        }
        stopped
    }
}
