//! Loopback HTTP backends that answer every request with a JSON body naming themselves and
//! echoing the method and path (`{"backend":"billing","method":"GET","path":"/invoices/7"}`), so
//! a response shows which backend Envoy chose. The test kit's backends also fail on purpose
//! under `/fail` and echo what the proxy said about the client; the demo's name the Host too.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;

/// Request headers a backend echoes back as `echo-<name>` response headers.
pub const ECHOED: [&str; 3] = [
    "x-forwarded-for",
    "x-envoy-external-address",
    "x-request-id",
];

/// Paths under this prefix are answered 500 (with the same JSON body): a failing backend.
pub const FAILING_PREFIX: &str = "/fail";

/// The body a backend answers `method path` with.
pub fn expected_body(backend: &str, method: &str, path: &str) -> serde_json::Value {
    serde_json::json!({ "backend": backend, "method": method, "path": path })
}

/// What one backend answers.
#[derive(Debug, Clone)]
pub struct Echo {
    name: Arc<str>,
    /// The demo's backends (`for_people`).
    for_people: bool,
    served: Arc<AtomicU64>,
}

impl Echo {
    pub fn new(name: &str) -> Echo {
        Echo {
            name: Arc::from(name),
            for_people: false,
            served: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The demo's backends, read by people in a terminal: the body also names the Host header
    /// received and ends with a newline; nothing fails on purpose or is echoed as a header.
    pub fn for_people(mut self) -> Echo {
        self.for_people = true;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Requests answered so far (shared by every clone).
    pub fn requests(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }

    /// The answer to one request.
    pub fn answer<B>(&self, req: &Request<B>) -> Response<Full<Bytes>> {
        self.served.fetch_add(1, Ordering::SeqCst);
        let mut body = expected_body(&self.name, req.method().as_str(), req.uri().path());
        let mut text = if self.for_people {
            let host = req
                .headers()
                .get(hyper::header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default();
            body["host"] = host.into();
            format!("{body}\n")
        } else {
            body.to_string()
        };
        let mut response = Response::new(Full::new(Bytes::from(std::mem::take(&mut text))));
        if !self.for_people && req.uri().path().starts_with(FAILING_PREFIX) {
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        }
        let headers = response.headers_mut();
        headers.insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("application/json"),
        );
        if !self.for_people {
            // What the proxy told the backend about the client, echoed back.
            for name in ECHOED {
                if let (Some(value), Ok(echo)) = (
                    req.headers().get(name),
                    hyper::header::HeaderName::from_bytes(format!("echo-{name}").as_bytes()),
                ) {
                    headers.insert(echo, value.clone());
                }
            }
        }
        response
    }
}

/// Serves `echo` on `listener` until the task is dropped; a client hanging up mid-request ends
/// only its own connection.
pub async fn serve(listener: TcpListener, echo: Echo) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let echo = echo.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let response = echo.answer(&req);
                async move { Ok::<_, Infallible>(response) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_name_method_path_and_fails_on_purpose() {
        let echo = Echo::new("billing");
        let req = Request::builder()
            .method("DELETE")
            .uri("/invoices/7?x=1")
            .header("x-request-id", "r1")
            .body(())
            .expect("request");
        let r = echo.answer(&req);
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["echo-x-request-id"], "r1");
        let failing = Request::get("/fail/x").body(()).expect("request");
        assert_eq!(echo.answer(&failing).status(), 500);
        assert_eq!(echo.clone().requests(), 2);
        let shown = Echo::new("catalog").for_people();
        let req = Request::get("/fail")
            .header("host", "h.example")
            .body(())
            .expect("request");
        let r = shown.answer(&req);
        assert_eq!(r.status(), 200);
        assert!(r.headers().get("echo-x-request-id").is_none());
    }
}
