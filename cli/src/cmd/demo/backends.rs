//! The two sample backends, served in-process: each answers every request with JSON naming
//! itself and echoing what it received, so a response shows which backend Envoy chose.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub struct SampleBackend {
    pub name: String,
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl SampleBackend {
    /// Binds `addr` now (a taken port fails here, with a reason) and serves in a task.
    pub async fn start(name: String, addr: SocketAddr) -> Result<SampleBackend, std::io::Error> {
        let listener = TcpListener::bind(addr).await?;
        let task = tokio::spawn(serve(listener, Arc::from(name.as_str())));
        Ok(SampleBackend { name, addr, task })
    }
}

impl Drop for SampleBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(listener: TcpListener, name: Arc<str>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let name = name.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let name = name.clone();
                async move { Ok::<_, Infallible>(answer(&name, &req)) }
            });
            // A client hanging up mid-request is not the demo's concern.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn answer(name: &str, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let host = req
        .headers()
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let body = json!({
        "backend": name,
        "method": req.method().as_str(),
        "path": req.uri().path(),
        "host": host,
    });
    let mut response = Response::new(Full::new(Bytes::from(format!("{body}\n"))));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}
