//! The demo's HTTP client: readiness checks of its children and requests through Envoy.

use std::net::SocketAddr;
use std::time::Duration;

pub fn client() -> Result<reqwest::Client, String> {
    client_from(None)
}

/// [`client`], its connections from `local` when given (a loopback address of its own, so the
/// demo's requests spend another client's quota than the user's `curl` from 127.0.0.1).
pub fn client_from(local: Option<std::net::IpAddr>) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .local_address(local)
        .timeout(Duration::from_secs(5))
        // A proxy from the user's environment must not stand between the demo and loopback.
        .no_proxy()
        .build()
        .map_err(|e| format!("building the HTTP client: {e}"))
}

/// The status code of a GET, or None when nothing answered.
pub async fn status(client: &reqwest::Client, url: &str) -> Option<u16> {
    client
        .get(url)
        .send()
        .await
        .ok()
        .map(|r| r.status().as_u16())
}

/// One GET through Envoy's listener with the given Host header: status and the `x-ratelimit-*`
/// headers on the answer (Envoy writes them from the rate-limit service's statuses), as
/// `name: value` pairs joined by `, `.
pub async fn limit_headers(
    client: &reqwest::Client,
    listen: SocketAddr,
    host: &str,
    path: &str,
) -> Result<(u16, String), String> {
    let response = client
        .get(format!("http://{listen}{path}"))
        .header(reqwest::header::HOST, host)
        .send()
        .await
        .map_err(|e| format!("{e}"))?;
    let shown: Vec<String> = [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ]
    .into_iter()
    .filter_map(|name| {
        let value = response.headers().get(name)?.to_str().ok()?;
        Some(format!("{name}: {value}"))
    })
    .collect();
    Ok((response.status().as_u16(), shown.join(", ")))
}

/// One GET through Envoy's listener with the given Host header: status and body.
pub async fn through_envoy(
    client: &reqwest::Client,
    listen: SocketAddr,
    host: &str,
    path: &str,
) -> Result<(u16, String), String> {
    let response = client
        .get(format!("http://{listen}{path}"))
        .header(reqwest::header::HOST, host)
        .send()
        .await
        .map_err(|e| format!("{e}"))?;
    let code = response.status().as_u16();
    let body = response.text().await.map_err(|e| format!("{e}"))?;
    Ok((code, body))
}
