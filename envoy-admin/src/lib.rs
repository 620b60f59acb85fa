//! The one client for Envoy's admin endpoint. Production puts the admin on a Unix socket
//! (`admin.address.pipe`), where no route can reach it; local runs may keep it on loopback TCP.
//! Both speak the same HTTP/1.1, one request per connection: admin calls are rare and small.

pub mod traffic;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// Admin answers in milliseconds; a slow answer means a stuck Envoy, not a reason to hang.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

/// Where the admin endpoint listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminEndpoint {
    /// `unix:/PATH`.
    Unix(PathBuf),
    /// `http://HOST:PORT` or `HOST:PORT` (kept as `HOST:PORT`).
    Tcp(String),
}

impl FromStr for AdminEndpoint {
    type Err = AdminError;

    fn from_str(s: &str) -> Result<Self, AdminError> {
        let bad = |reason: &str| AdminError::Address {
            address: s.to_string(),
            reason: reason.to_string(),
        };
        if let Some(path) = s.strip_prefix("unix:") {
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(bad(
                    "a Unix socket path must be absolute, e.g. unix:/run/envoy/admin.sock",
                ));
            }
            return Ok(AdminEndpoint::Unix(path));
        }
        let rest = s.strip_prefix("http://").unwrap_or(s).trim_end_matches('/');
        if rest.is_empty() || rest.contains('/') || !rest.contains(':') || s.starts_with("https://")
        {
            return Err(bad("expected unix:/PATH, HOST:PORT or http://HOST:PORT"));
        }
        Ok(AdminEndpoint::Tcp(rest.to_string()))
    }
}

impl fmt::Display for AdminEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdminEndpoint::Unix(path) => write!(f, "unix:{}", path.display()),
            AdminEndpoint::Tcp(addr) => write!(f, "http://{addr}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("Envoy admin address {address:?}: {reason}")]
    Address { address: String, reason: String },
    #[error("Envoy admin {endpoint}: cannot connect: {source}")]
    Connect {
        endpoint: String,
        #[source]
        source: std::io::Error,
    },
    #[error("Envoy admin {endpoint}{path}: {source}")]
    Http {
        endpoint: String,
        path: String,
        #[source]
        source: hyper::Error,
    },
    #[error("Envoy admin {endpoint}{path}: building the request: {source}")]
    Request {
        endpoint: String,
        path: String,
        #[source]
        source: hyper::http::Error,
    },
    #[error("Envoy admin {endpoint}{path}: no answer within {timeout:?}")]
    Timeout {
        endpoint: String,
        path: String,
        timeout: Duration,
    },
}

/// One admin answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminResponse {
    pub status: u16,
    pub body: Bytes,
}

impl AdminResponse {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

#[derive(Debug, Clone)]
pub struct AdminClient {
    endpoint: AdminEndpoint,
    timeout: Duration,
}

impl AdminClient {
    pub fn new(endpoint: AdminEndpoint) -> Self {
        AdminClient {
            endpoint,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn endpoint(&self) -> &AdminEndpoint {
        &self.endpoint
    }

    pub async fn get(&self, path_and_query: &str) -> Result<AdminResponse, AdminError> {
        self.request("GET", path_and_query).await
    }

    pub async fn post(&self, path_and_query: &str) -> Result<AdminResponse, AdminError> {
        self.request("POST", path_and_query).await
    }

    /// One request on its own connection, bounded by the client's timeout as a whole.
    pub async fn request(
        &self,
        method: &str,
        path_and_query: &str,
    ) -> Result<AdminResponse, AdminError> {
        let timed_out = || AdminError::Timeout {
            endpoint: self.endpoint.to_string(),
            path: path_and_query.to_string(),
            timeout: self.timeout,
        };
        tokio::time::timeout(self.timeout, self.exchange(method, path_and_query))
            .await
            .map_err(|_| timed_out())?
    }

    async fn exchange(
        &self,
        method: &str,
        path_and_query: &str,
    ) -> Result<AdminResponse, AdminError> {
        let endpoint = self.endpoint.to_string();
        let connect = |source| AdminError::Connect {
            endpoint: endpoint.clone(),
            source,
        };
        match &self.endpoint {
            AdminEndpoint::Unix(path) => {
                let stream = tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(connect)?;
                self.send(stream, "localhost", method, path_and_query).await
            }
            AdminEndpoint::Tcp(addr) => {
                let stream = tokio::net::TcpStream::connect(addr.as_str())
                    .await
                    .map_err(connect)?;
                self.send(stream, addr, method, path_and_query).await
            }
        }
    }

    async fn send<S>(
        &self,
        stream: S,
        host: &str,
        method: &str,
        path_and_query: &str,
    ) -> Result<AdminResponse, AdminError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let http = |source| AdminError::Http {
            endpoint: self.endpoint.to_string(),
            path: path_and_query.to_string(),
            source,
        };
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(http)?;
        // The connection task ends when the exchange does (or with the timeout's drop).
        let driver = tokio::spawn(conn);
        let request = Request::builder()
            .method(method)
            .uri(path_and_query)
            .header(hyper::header::HOST, host)
            .body(Empty::<Bytes>::new())
            .map_err(|source| AdminError::Request {
                endpoint: self.endpoint.to_string(),
                path: path_and_query.to_string(),
                source,
            })?;
        let result = async {
            let response = sender.send_request(request).await.map_err(http)?;
            let status = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(http)?
                .to_bytes();
            Ok(AdminResponse { status, body })
        }
        .await;
        driver.abort();
        result
    }
}

/// Percent-encodes a query value (RFC 3986 unreserved characters stay).
pub fn encode_query_value(value: &str) -> String {
    value.bytes().fold(String::new(), |mut out, b| {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_and_print() {
        let unix: AdminEndpoint = "unix:/run/envoy/admin.sock".parse().expect("unix");
        assert_eq!(
            unix,
            AdminEndpoint::Unix(PathBuf::from("/run/envoy/admin.sock"))
        );
        assert_eq!(unix.to_string(), "unix:/run/envoy/admin.sock");
        let tcp: AdminEndpoint = "http://127.0.0.1:9901/".parse().expect("tcp");
        assert_eq!(tcp, AdminEndpoint::Tcp("127.0.0.1:9901".into()));
        assert_eq!(
            "127.0.0.1:9901".parse::<AdminEndpoint>().expect("bare"),
            tcp
        );
        for bad in [
            "unix:admin.sock",
            "https://127.0.0.1:9901",
            "http://h:1/x",
            "",
            "nohost",
        ] {
            assert!(bad.parse::<AdminEndpoint>().is_err(), "{bad}");
        }
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(encode_query_value("^a\\.b$|c d"), "%5Ea%5C.b%24%7Cc%20d");
    }

    /// A one-shot HTTP server on a Unix socket stands in for Envoy's admin transport here; the
    /// live tests talk to a real Envoy's admin socket.
    #[tokio::test]
    async fn speaks_http_over_a_unix_socket_and_times_out_on_silence() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("admin.sock");
        let listener = tokio::net::UnixListener::bind(&path).expect("bind");
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.expect("accept");
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.expect("read");
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nLIVE\n")
                .await
                .expect("write");
            // The second connection is accepted and never answered.
            let (_silent, _) = listener.accept().await.expect("accept");
            tokio::time::sleep(Duration::from_secs(5)).await;
            head
        });
        let client = AdminClient::new(AdminEndpoint::Unix(path.clone()));
        let r = client.post("/runtime_modify?a=1").await.expect("answer");
        assert_eq!((r.status, &r.body[..]), (200, &b"LIVE\n"[..]));
        let slow = client.clone().with_timeout(Duration::from_millis(200));
        let e = slow.get("/ready").await.expect_err("silent");
        assert!(matches!(e, AdminError::Timeout { .. }), "{e}");
        server.abort();
        let missing = AdminClient::new(AdminEndpoint::Unix(dir.path().join("none.sock")));
        let e = missing.get("/ready").await.expect_err("no socket");
        assert!(e.to_string().contains("none.sock"), "{e}");
    }
}
