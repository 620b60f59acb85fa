//! Waiting, bounded, for a child to answer and for requests through Envoy to reach the sample
//! backends; failing early, with the child's log, when a child exits meanwhile.

use super::http;
use super::plan::Plan;
use super::progress::{Failure, Progress};
use super::samples::Sample;
use super::steps::Demo;
use std::time::{Duration, Instant};

/// How long a child may take to answer its first health check.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(250);

/// Waits until `url` answers 200, failing early when a child exits.
pub async fn wait_ok(
    demo: &mut Demo,
    client: &reqwest::Client,
    url: &str,
    p: &Progress,
) -> Result<(), Failure> {
    let deadline = Instant::now() + START_TIMEOUT;
    let mut last = None;
    loop {
        demo.processes.check_alive().map_err(|e| p.fail(e))?;
        last = http::status(client, url).await.or(last);
        if last == Some(200) {
            return Ok(());
        }
        if Instant::now() > deadline {
            let answer = last.map_or("nothing answered".to_string(), |c| {
                format!("last answer {c}")
            });
            return Err(p.fail(format!(
                "{url} did not answer 200 within {} s ({answer})",
                START_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Requests each sample's host and path until its own backend answers.
pub async fn through_envoy(
    demo: &mut Demo,
    plan: &Plan,
    client: &reqwest::Client,
    samples: &[Sample],
    p: &Progress,
) -> Result<(), Failure> {
    let deadline = Instant::now() + plan.wait;
    let mut pending: Vec<usize> = (0..samples.len()).collect();
    let mut last: Vec<String> = vec![String::new(); samples.len()];
    loop {
        demo.processes.check_alive().map_err(|e| p.fail(e))?;
        let mut still = Vec::new();
        for i in pending {
            let s = &samples[i];
            let host = s.entry.fqdn(&plan.domain);
            match http::through_envoy(client, plan.listen, &host, &s.probe_path).await {
                Ok((200, body)) if answered_by(&body, &s.backend_name) => p.note(format!(
                    "GET http://{host}{} via {} → 200 from {}: {}",
                    s.probe_path,
                    plan.listen,
                    s.backend_name,
                    body.trim()
                )),
                Ok((code, body)) => {
                    last[i] = format!("{code} {}", body.trim());
                    still.push(i);
                }
                Err(e) => {
                    last[i] = e;
                    still.push(i);
                }
            }
        }
        pending = still;
        if pending.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            let lines: Vec<String> = pending
                .iter()
                .map(|&i| {
                    let s = &samples[i];
                    format!(
                        "  GET http://{}{}: last answer {}",
                        s.entry.fqdn(&plan.domain),
                        s.probe_path,
                        last[i]
                    )
                })
                .collect();
            return Err(p.fail(format!(
                "no answer from the sample backend within {} s:\n{}\nsee the reconciler lines above, http://{}/status and the logs in {}",
                plan.wait.as_secs(),
                lines.join("\n"),
                plan.sidecar_listen,
                plan.display(&plan.run_dir)
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn answered_by(body: &str, backend: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("backend")
                .and_then(|b| b.as_str())
                .map(|b| b == backend)
        })
        .unwrap_or(false)
}
