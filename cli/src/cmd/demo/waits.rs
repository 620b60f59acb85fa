//! Waiting, bounded, for a child to answer and for requests through Envoy to reach the sample
//! backends; failing early, with the child's log, when a child exits meanwhile.

use super::http;
use super::plan::Plan;
use super::progress::{Failure, Progress};
use super::samples::Sample;
use super::running::Demo;
use gateway_envoy_admin::AdminClient;
use std::time::{Duration, Instant};

/// How long a child may take to answer its first health check.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(250);

/// The end of one bounded wait.
struct Deadline(Instant);

impl Deadline {
    fn after(wait: Duration) -> Deadline {
        Deadline(Instant::now() + wait)
    }

    /// Between two tries: once the wait is over, the failure `timed_out` describes; before, a
    /// pause of `poll`.
    async fn pause(
        &self,
        poll: Duration,
        p: &Progress,
        timed_out: impl FnOnce() -> String,
    ) -> Result<(), Failure> {
        if Instant::now() > self.0 {
            return Err(p.fail(timed_out()));
        }
        tokio::time::sleep(poll).await;
        Ok(())
    }
}

/// Waits until `url` answers 200, failing early when a child exits.
pub async fn wait_ok(
    demo: &mut Demo,
    client: &reqwest::Client,
    url: &str,
    p: &Progress,
) -> Result<(), Failure> {
    wait_until_ok(demo, url, || http::status(client, url), p).await
}

/// Waits until Envoy's admin `/ready` answers 200, asked through the one admin client.
pub async fn wait_envoy_ready(
    demo: &mut Demo,
    admin: &AdminClient,
    p: &Progress,
) -> Result<(), Failure> {
    let url = format!("{}/ready", admin.endpoint());
    let ready = || async {
        admin
            .get("/ready")
            .await
            .ok()
            .map(|response| response.status)
    };
    wait_until_ok(demo, &url, ready, p).await
}

/// Waits until `probe` reports 200 (None: nothing answered), failing early when a child exits;
/// `what` names the URL asked.
async fn wait_until_ok<F, Fut>(
    demo: &mut Demo,
    what: &str,
    mut probe: F,
    p: &Progress,
) -> Result<(), Failure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<u16>>,
{
    let deadline = Deadline::after(START_TIMEOUT);
    let mut last = None;
    loop {
        demo.processes.check_alive().map_err(|e| p.fail(e))?;
        last = probe().await.or(last);
        if last == Some(200) {
            return Ok(());
        }
        deadline
            .pause(POLL, p, || {
                let answer = last.map_or("nothing answered".to_string(), |c| {
                    format!("last answer {c}")
                });
                format!(
                    "{what} did not answer 200 within {} s ({answer})",
                    START_TIMEOUT.as_secs()
                )
            })
            .await?;
    }
}

/// Waits until something accepts connections on `addr` (a gRPC server answers no plain GET).
pub async fn wait_listening(
    demo: &mut Demo,
    addr: std::net::SocketAddr,
    p: &Progress,
) -> Result<(), Failure> {
    let deadline = Deadline::after(START_TIMEOUT);
    loop {
        demo.processes.check_alive().map_err(|e| p.fail(e))?;
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return Ok(());
        }
        deadline
            .pause(POLL, p, || {
                format!(
                    "nothing listened on {addr} within {} s",
                    START_TIMEOUT.as_secs()
                )
            })
            .await?;
    }
}

/// Waits until the rate-limit sidecar serves the bundle Envoy's sidecar delivered, so the
/// limiter counts with the rules of the routes Envoy runs.
pub async fn wait_same_live(
    demo: &mut Demo,
    client: &reqwest::Client,
    plan: &Plan,
    p: &Progress,
) -> Result<(), Failure> {
    let live = |addr: std::net::SocketAddr| async move {
        let status: serde_json::Value = client
            .get(format!("http://{addr}/status"))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        status["live"]["hash"].as_str().map(str::to_string)
    };
    let deadline = Deadline::after(plan.wait);
    loop {
        demo.processes.check_alive().map_err(|e| p.fail(e))?;
        let envoy_side = live(plan.sidecar_listen).await;
        if envoy_side.is_some() && envoy_side == live(plan.ratelimit_sidecar_listen).await {
            // gateway-ratelimit looks at its file five times a second.
            tokio::time::sleep(Duration::from_millis(600)).await;
            return Ok(());
        }
        deadline
            .pause(POLL, p, || {
                format!(
                    "the rate-limit sidecar did not deliver the bundle Envoy runs within {} s; see http://{}/status",
                    plan.wait.as_secs(),
                    plan.ratelimit_sidecar_listen
                )
            })
            .await?;
    }
}

/// Sends GETs from this machine (as `from`) until the limiter refuses one: the first `quota` must pass and
/// a 429 must follow within another `quota` + 1 (a window can end in between).
pub async fn global_limit(
    demo: &mut Demo,
    plan: &Plan,
    (client, from): (&reqwest::Client, &str),
    host: &str,
    path: &str,
    quota: u32,
    p: &Progress,
) -> Result<(), Failure> {
    demo.processes.check_alive().map_err(|e| p.fail(e))?;
    let mut codes = Vec::new();
    let mut headers = String::new();
    for _ in 0..(2 * quota + 1) {
        let code = match http::limit_headers(client, plan.listen, host, path).await {
            Ok((code, shown)) => {
                headers = shown;
                code
            }
            Err(e) => return Err(p.fail(format!("GET http://{host}{path}: {e}"))),
        };
        codes.push(code.to_string());
        if code == 429 {
            break;
        }
    }
    let passed_quota = codes.iter().take(quota as usize).all(|c| c == "200");
    if passed_quota && codes.last().is_some_and(|c| c == "429") {
        p.note(format!(
            "GET http://{host}{path} × {}: {} (429 from the rate-limit service); Envoy's headers on it: {headers}",
            codes.len(),
            codes.join(" ")
        ));
        if from != "127.0.0.1" {
            p.note(format!(
                "counted for client {from}, the demo's own address: a curl from 127.0.0.1 has a quota of its own"
            ));
        }
        Ok(())
    } else {
        Err(p.fail(format!(
            "GET http://{host}{path} answered {}; expected {quota} × 200 then 429. See {} and http://{}/status",
            codes.join(" "),
            plan.display(&plan.run_dir.join("ratelimit.log")),
            plan.ratelimit_sidecar_listen
        )))
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
    let deadline = Deadline::after(plan.wait);
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
        deadline
            .pause(Duration::from_millis(500), p, || {
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
                format!(
                    "no answer from the sample backend within {} s:\n{}\nsee the reconciler lines above, http://{}/status and the logs in {}",
                    plan.wait.as_secs(),
                    lines.join("\n"),
                    plan.sidecar_listen,
                    plan.display(&plan.run_dir)
                )
            })
            .await?;
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
