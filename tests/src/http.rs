//! Plain HTTP/1.1 on loopback, one request per connection (`Connection: close`): what tests
//! send to Envoy's listener, its admin endpoint or a backend when the exact bytes matter (the
//! Host header, no client pooling or retries). Envoy refuses HTTP/1.0 by default, so 1.1 it is.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// A connect to a loopback port that nothing listens on fails at once; this bounds the rare
/// case of a full accept queue.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Envoy's slowest answers in these tests (a 503 from a dead upstream) come well within this.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One answer: the status code, the head (status line and headers) and the body, de-chunked.
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
/// fails or the answer has no status line.
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
    let stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).ok()?;
    stream.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
    exchange(stream, method, host, path_and_query, headers)
}

/// `request` over a Unix socket (Envoy's admin in production shape).
pub fn request_unix(socket: &Path, method: &str, path_and_query: &str) -> Option<Response> {
    let stream = UnixStream::connect(socket).ok()?;
    stream.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
    exchange(stream, method, "localhost", path_and_query, &[])
}

fn exchange(
    mut stream: impl Read + Write,
    method: &str,
    host: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
) -> Option<Response> {
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        stream,
        "{method} {path_and_query} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or((answer.as_str(), ""));
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let mut response = Response {
        status,
        head: head.to_string(),
        body: body.to_string(),
    };
    if response
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        response.body = dechunk(body);
    }
    Some(response)
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

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dechunks_and_finds_headers_in_any_case() {
        assert_eq!(
            dechunk("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
            "hello world"
        );
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
