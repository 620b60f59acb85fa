//! Loopback HTTP backends for tests: each answers every request with a JSON body naming itself
//! and echoing the method and path (`{"backend":"billing","method":"GET","path":"/invoices/7"}`),
//! and counts what it served. Each runs on its own thread and runtime, so it works under any
//! test harness, and stops when its guard drops.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct Backend {
    name: String,
    addr: SocketAddr,
    served: Arc<AtomicU64>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Backend {
    /// Starts a backend called `name` on a free loopback port (bound before this returns).
    pub fn start(name: &str) -> Backend {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap_or_else(|e| panic!("backend {name}: binding 127.0.0.1:0: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("backend {name}: local address: {e}"));
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("backend {name}: non-blocking listener: {e}"));
        let served = Arc::new(AtomicU64::new(0));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = {
            let name = name.to_string();
            let served = served.clone();
            std::thread::Builder::new()
                .name(format!("backend-{name}"))
                .spawn(move || serve(listener, name, served, rx))
                .unwrap_or_else(|e| panic!("backend thread: {e}"))
        };
        Backend {
            name: name.to_string(),
            addr,
            served,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, usable as an entry's `backend`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Request headers a backend echoes back as `echo-<name>` response headers.
pub const ECHOED: [&str; 3] = ["x-forwarded-for", "x-envoy-external-address", "x-request-id"];

/// Paths under this prefix are answered 500 (with the same JSON body): a failing backend.
pub const FAILING_PREFIX: &str = "/fail";

/// The body a backend answers `method path` with.
pub fn expected_body(backend: &str, method: &str, path: &str) -> serde_json::Value {
    serde_json::json!({ "backend": backend, "method": method, "path": path })
}

fn serve(
    listener: TcpListener,
    name: String,
    served: Arc<AtomicU64>,
    shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("backend {name}: runtime: {e}"),
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => panic!("backend {name}: listener: {e}"),
        };
        tokio::pin!(shutdown);
        loop {
            let stream = tokio::select! {
                _ = &mut shutdown => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
            };
            let name = name.clone();
            let served = served.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    served.fetch_add(1, Ordering::SeqCst);
                    let failing = req.uri().path().starts_with(FAILING_PREFIX);
                    let body =
                        expected_body(&name, req.method().as_str(), req.uri().path()).to_string();
                    // What the proxy told the backend about the client, echoed back as
                    // `echo-<name>` response headers.
                    let echoed: Vec<_> = ECHOED
                        .iter()
                        .filter_map(|h| Some((*h, req.headers().get(*h)?.clone())))
                        .collect();
                    async move {
                        let mut response = Response::new(Full::new(Bytes::from(body)));
                        if failing {
                            *response.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
                        }
                        response.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("application/json"),
                        );
                        for (name, value) in echoed {
                            if let Ok(echo) = hyper::header::HeaderName::from_bytes(
                                format!("echo-{name}").as_bytes(),
                            ) {
                                response.headers_mut().insert(echo, value);
                            }
                        }
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn answers_with_its_name_method_and_path_and_counts() {
        let backend = Backend::start("billing");
        let mut stream = std::net::TcpStream::connect(backend.addr()).expect("connect");
        stream
            .write_all(b"DELETE /invoices/7?x=1 HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
            .expect("write");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).expect("body");
        let body: serde_json::Value = serde_json::from_str(body).expect("json body");
        assert_eq!(body, expected_body("billing", "DELETE", "/invoices/7"));
        assert_eq!(backend.requests(), 1);
        let addr = backend.addr();
        drop(backend);
        // Another test may have bound the freed port since: what must not answer is this backend.
        if let Ok(mut stream) = std::net::TcpStream::connect(addr) {
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let _ = stream
                .write_all(b"GET /after-drop HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n");
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer);
            assert!(
                !answer.contains("\"backend\":\"billing\""),
                "backend should stop with its guard: {answer}"
            );
        }
    }
}
