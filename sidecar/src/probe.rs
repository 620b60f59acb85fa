//! `--probe URL`: the container health check (`gateway-sidecar --probe
//! http://127.0.0.1:9902/healthz`), so the image needs no curl.

use std::time::Duration;

const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// True when `url` answers 200.
pub async fn probe(url: &str) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let response = client.get(url).send().await.map_err(|e| format!("GET {url}: {e}"))?;
    if response.status() == reqwest::StatusCode::OK {
        Ok(())
    } else {
        Err(format!("GET {url}: HTTP {}", response.status()))
    }
}
