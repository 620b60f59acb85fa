//! Upstreams for the entry-level traffic fields (feature `upstreams`): a backend that speaks
//! HTTP/1.1 and HTTP/2 with prior knowledge (h2c) on one port and reports which one a request
//! came over, with a health endpoint a test can switch to failing; and a small gRPC server
//! (tonic, Envoy's rate-limit service API, which the workspace already has as generated code)
//! that names itself in every answer. Each runs on its own thread and runtime and stops when its
//! guard drops.

use crate::serve::{bind_loopback, runtime, ServerThread};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::{
    RateLimitService, RateLimitServiceServer,
};
use envoy_types::pb::envoy::service::ratelimit::v3::{
    rate_limit_response, RateLimitRequest, RateLimitResponse,
};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;
use tokio_stream::wrappers::TcpListenerStream;

/// The path a `SwitchableBackend` answers its health on: 200 while healthy, 503 after
/// `set_healthy(false)`.
pub const HEALTH_PATH: &str = "/healthz";

/// HTTP/1.1 and h2c (prior knowledge) on one loopback port. Every request except the health
/// path is answered 200 with `{"backend","method","path","version","authority"}` (version is
/// `HTTP/1.1` or `HTTP/2.0`, authority the Host or `:authority` the backend received) and counted.
pub struct SwitchableBackend {
    name: String,
    addr: SocketAddr,
    served: Arc<AtomicU64>,
    health_checks: Arc<AtomicU64>,
    health_checks_h2: Arc<AtomicU64>,
    healthy: Arc<AtomicBool>,
    _server: ServerThread,
}

impl SwitchableBackend {
    pub fn start(name: &str) -> SwitchableBackend {
        SwitchableBackend::start_with(name, None)
    }

    /// The same backend behind TLS with `cert`/`key` (PEM files), offering ALPN `h2` and
    /// `http/1.1`; the answer's `alpn` says what the client negotiated.
    pub fn start_tls(name: &str, cert: &Path, key: &Path) -> SwitchableBackend {
        SwitchableBackend::start_with(name, Some(tls_acceptor(name, cert, key)))
    }

    fn start_with(name: &str, tls: Option<TlsAcceptor>) -> SwitchableBackend {
        let (listener, addr) = bind_loopback(name);
        let served = Arc::new(AtomicU64::new(0));
        let health_checks = Arc::new(AtomicU64::new(0));
        let health_checks_h2 = Arc::new(AtomicU64::new(0));
        let healthy = Arc::new(AtomicBool::new(true));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let state = Switch {
            name: name.to_string(),
            served: served.clone(),
            health_checks: health_checks.clone(),
            health_checks_h2: health_checks_h2.clone(),
            healthy: healthy.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("switchable-{name}"))
            .spawn(move || serve_switchable(listener, state, tls, rx))
            .unwrap_or_else(|e| panic!("backend thread: {e}"));
        SwitchableBackend {
            name: name.to_string(),
            addr,
            served,
            health_checks,
            health_checks_h2,
            healthy,
            _server: ServerThread::running(addr, tx, thread),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `http://127.0.0.1:PORT`, usable as an entry's `backend`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests answered so far, health checks not counted.
    pub fn requests(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }

    /// Health-check requests seen so far.
    pub fn health_checks(&self) -> u64 {
        self.health_checks.load(Ordering::SeqCst)
    }

    /// Health-check requests that came over HTTP/2.
    pub fn health_checks_over_h2(&self) -> u64 {
        self.health_checks_h2.load(Ordering::SeqCst)
    }

    /// From now on the health path answers 200 (`true`) or 503 (`false`). Other paths keep
    /// answering 200: only an active health check can tell this backend is "down".
    pub fn set_healthy(&self, healthy: bool) {
        self.healthy.store(healthy, Ordering::SeqCst);
    }
}

#[derive(Clone)]
struct Switch {
    name: String,
    served: Arc<AtomicU64>,
    health_checks: Arc<AtomicU64>,
    health_checks_h2: Arc<AtomicU64>,
    healthy: Arc<AtomicBool>,
}

fn serve_switchable(
    listener: TcpListener,
    state: Switch,
    tls: Option<TlsAcceptor>,
    shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    runtime(&state.name).block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)
            .unwrap_or_else(|e| panic!("{}: listener: {e}", state.name));
        tokio::pin!(shutdown);
        loop {
            let stream = tokio::select! {
                _ = &mut shutdown => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
            };
            let state = state.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let serve = |alpn: Option<String>| {
                    service_fn(move |req: Request<Incoming>| {
                        let state = state.clone();
                        let alpn = alpn.clone();
                        async move { Ok::<_, Infallible>(answer(&state, alpn.as_deref(), &req)) }
                    })
                };
                let builder = auto::Builder::new(TokioExecutor::new());
                match tls {
                    None => {
                        let _ = builder
                            .serve_connection(TokioIo::new(stream), serve(None))
                            .await;
                    }
                    Some(acceptor) => {
                        let Ok(stream) = acceptor.accept(stream).await else {
                            return;
                        };
                        let alpn = stream
                            .get_ref()
                            .1
                            .alpn_protocol()
                            .map(|p| String::from_utf8_lossy(p).into_owned());
                        let _ = builder
                            .serve_connection(TokioIo::new(stream), serve(alpn))
                            .await;
                    }
                }
            });
        }
    });
}

fn answer(state: &Switch, alpn: Option<&str>, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    if req.uri().path() == HEALTH_PATH {
        state.health_checks.fetch_add(1, Ordering::SeqCst);
        if req.version() == hyper::Version::HTTP_2 {
            state.health_checks_h2.fetch_add(1, Ordering::SeqCst);
        }
        let mut response = Response::new(Full::new(Bytes::from_static(b"health\n")));
        if !state.healthy.load(Ordering::SeqCst) {
            *response.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
        }
        return response;
    }
    state.served.fetch_add(1, Ordering::SeqCst);
    let authority = req
        .uri()
        .authority()
        .map(|a| a.to_string())
        .or_else(|| {
            req.headers()
                .get(hyper::header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_string)
        })
        .unwrap_or_default();
    let body = serde_json::json!({
        "backend": state.name,
        "method": req.method().as_str(),
        "path": req.uri().path(),
        "version": format!("{:?}", req.version()),
        "authority": authority,
        "alpn": alpn,
    })
    .to_string();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// A TLS server configuration from PEM files, offering ALPN `h2` then `http/1.1`.
fn tls_acceptor(name: &str, cert: &Path, key: &Path) -> TlsAcceptor {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .unwrap_or_else(|e| panic!("{name}: reading {}: {e}", cert.display()));
    let key = PrivateKeyDer::from_pem_file(key)
        .unwrap_or_else(|e| panic!("{name}: reading {}: {e}", key.display()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap_or_else(|e| panic!("{name}: TLS versions: {e}"))
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap_or_else(|e| panic!("{name}: TLS certificate: {e}"));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    TlsAcceptor::from(Arc::new(config))
}

/// A self-signed certificate for `127.0.0.1` (IP SAN, usable as its own CA) and its key, written
/// into `dir` by the `openssl` command line: `(cert.pem, key.pem)`.
pub fn loopback_certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap_or_else(|e| panic!("running openssl: {e}"));
    assert!(
        out.status.success(),
        "openssl req failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (cert, key)
}

/// The gRPC method a `GrpcBackend` serves.
pub const GRPC_METHOD_PREFIX: &str = "/envoy.service.ratelimit.v3.RateLimitService/";

/// A small gRPC server (tonic): `ShouldRateLimit` answers OK with the server's name as the
/// response's `raw_body` and the request's domain echoed in a response header, and counts calls.
pub struct GrpcBackend {
    addr: SocketAddr,
    calls: Arc<AtomicU64>,
    _server: ServerThread,
}

#[derive(Clone)]
struct Named {
    name: String,
    calls: Arc<AtomicU64>,
}

#[tonic::async_trait]
impl RateLimitService for Named {
    async fn should_rate_limit(
        &self,
        request: tonic::Request<RateLimitRequest>,
    ) -> Result<tonic::Response<RateLimitResponse>, tonic::Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let domain = request.into_inner().domain;
        if domain == "fail" {
            return Err(tonic::Status::unavailable(format!(
                "{} refuses domain fail",
                self.name
            )));
        }
        let mut response = tonic::Response::new(RateLimitResponse {
            overall_code: rate_limit_response::Code::Ok as i32,
            raw_body: self.name.clone().into_bytes(),
            ..RateLimitResponse::default()
        });
        if let Ok(v) = domain.parse() {
            response.metadata_mut().insert("x-echo-domain", v);
        }
        Ok(response)
    }
}

impl GrpcBackend {
    pub fn start(name: &str) -> GrpcBackend {
        let (listener, addr) = bind_loopback(name);
        let calls = Arc::new(AtomicU64::new(0));
        let service = Named {
            name: name.to_string(),
            calls: calls.clone(),
        };
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let label = name.to_string();
        let thread = std::thread::Builder::new()
            .name(format!("grpc-{name}"))
            .spawn(move || {
                runtime(&label).block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .unwrap_or_else(|e| panic!("{label}: listener: {e}"));
                    let incoming = tokio_stream_incoming(listener);
                    let _ = tonic::transport::Server::builder()
                        .add_service(RateLimitServiceServer::new(service))
                        .serve_with_incoming_shutdown(incoming, async {
                            let _ = rx.await;
                        })
                        .await;
                });
            })
            .unwrap_or_else(|e| panic!("grpc thread: {e}"));
        GrpcBackend {
            addr,
            calls,
            _server: ServerThread::running(addr, tx, thread),
        }
    }

    /// `http://127.0.0.1:PORT`, usable as an entry's `backend`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

/// Accepted connections as the stream tonic's server takes.
fn tokio_stream_incoming(listener: tokio::net::TcpListener) -> TcpListenerStream {
    TcpListenerStream::new(listener)
}

/// One gRPC call through `proxy` (Envoy's listener) with `:authority` `authority`: the
/// server's name (`raw_body`) and the echoed domain, or the gRPC status as a string.
pub async fn grpc_call(
    proxy: SocketAddr,
    authority: &str,
    domain: &str,
) -> Result<(String, String), String> {
    let origin: hyper::Uri = format!("http://{authority}")
        .parse()
        .map_err(|e| format!("origin {authority}: {e}"))?;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{proxy}"))
        .map_err(|e| e.to_string())?
        .origin(origin)
        .connect_timeout(std::time::Duration::from_secs(5))
        .timeout(std::time::Duration::from_secs(10))
        .connect()
        .await
        .map_err(|e| format!("connect {proxy}: {e}"))?;
    let mut client = RateLimitServiceClient::new(channel);
    let response = client
        .should_rate_limit(RateLimitRequest {
            domain: domain.to_string(),
            ..RateLimitRequest::default()
        })
        .await
        .map_err(|status| format!("{:?}: {}", status.code(), status.message()))?;
    let echoed = response
        .metadata()
        .get("x-echo-domain")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = response.into_inner();
    Ok((String::from_utf8_lossy(&body.raw_body).into_owned(), echoed))
}
