//! Plain HTTP/1.1 on loopback, one request per connection (`Connection: close`), through hyper's
//! client: what tests send to Envoy's listener or a backend when the exact request matters (the
//! Host header, no client pooling or retries). Envoy refuses HTTP/1.0 by default, so 1.1 it is.
//! Envoy's admin endpoint has its own client (`EnvoyProcess::admin`).

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::time::Duration;

/// A connect to a loopback port that nothing listens on fails at once; this bounds the rare
/// case of a full accept queue.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Envoy's slowest answers in these tests (a 503 from a dead upstream) come well within this.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One answer: the status code, the head (status line and headers, for messages) and the body.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Response {
    /// The first header called `name` (any case), its value trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    }
}

/// `METHOD path` with `Host: host` and an empty body; `None` when the connection or the read
/// fails or no answer comes within the timeouts.
pub fn request(
    addr: SocketAddr,
    method: &str,
    host: &str,
    path_and_query: &str,
) -> Option<Response> {
    request_with_headers(addr, method, host, path_and_query, &[])
}

/// `request` with extra request headers (`("x-forwarded-for", "6.6.6.6")`).
pub fn request_with_headers(
    addr: SocketAddr,
    method: &str,
    host: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
) -> Option<Response> {
    crate::block_on(async {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr))
            .await
            .ok()?
            .ok()?;
        tokio::time::timeout(
            READ_TIMEOUT,
            exchange(stream, method, host, path_and_query, headers),
        )
        .await
        .ok()?
    })
}

async fn exchange(
    stream: tokio::net::TcpStream,
    method: &str,
    host: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
) -> Option<Response> {
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    let driver = tokio::spawn(conn);
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path_and_query)
        .header(hyper::header::HOST, host);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .header(hyper::header::CONTENT_LENGTH, "0")
        .header(hyper::header::CONNECTION, "close")
        .body(Empty::<Bytes>::new())
        .ok()?;
    let answer = async {
        let response = sender.send_request(request).await.ok()?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.ok()?.to_bytes();
        Some((parts, body))
    }
    .await;
    driver.abort();
    let (parts, body) = answer?;
    let mut head = format!(
        "{:?} {} {}",
        parts.version,
        parts.status.as_u16(),
        parts.status.canonical_reason().unwrap_or("")
    );
    for (name, value) in &parts.headers {
        head.push_str(&format!(
            "\r\n{name}: {}",
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    Some(Response {
        status: parts.status.as_u16(),
        head,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Just the status code of `request`.
pub fn status(addr: SocketAddr, method: &str, host: &str, path_and_query: &str) -> Option<u16> {
    request(addr, method, host, path_and_query).map(|r| r.status)
}

/// Asks `METHOD path` every 100 ms until the status is `want` or `within` has passed (a config
/// change reaches Envoy's workers a moment after the admin call returns); the last status seen.
pub fn wait_for_status(
    addr: SocketAddr,
    method: &str,
    host: &str,
    path_and_query: &str,
    want: u16,
    within: Duration,
) -> Option<u16> {
    let deadline = std::time::Instant::now() + within;
    let mut last = None;
    while std::time::Instant::now() < deadline {
        last = status(addr, method, host, path_and_query);
        if last == Some(want) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_headers_in_any_case() {
        let r = Response {
            status: 200,
            head: "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nX-A:  b ".into(),
            body: String::new(),
        };
        assert_eq!(r.header("Content-Type"), Some("application/json"));
        assert_eq!(r.header("x-a"), Some("b"));
        assert_eq!(r.header("missing"), None);
    }

    #[test]
    fn asks_a_backend_and_reads_its_answer() {
        let backend = crate::backend::Backend::start("billing");
        let r = request(
            backend.addr(),
            "DELETE",
            "billing.example",
            "/invoices/7?x=1",
        )
        .expect("the backend answers");
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let body: serde_json::Value = serde_json::from_str(&r.body).expect("json body");
        assert_eq!(
            body,
            crate::backend::expected_body("billing", "DELETE", "/invoices/7")
        );
        assert_eq!(status(backend.addr(), "GET", "b", "/"), Some(200));
        assert_eq!(backend.requests(), 2);
    }
}
