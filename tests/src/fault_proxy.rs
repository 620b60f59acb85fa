//! A fault-injecting HTTP proxy between the AWS SDK and moto's server, on loopback only: the
//! fault suite (`tests/tests/faults.rs`) points the SDK's endpoint at it and tells it which call
//! to break, how and how often. Everything else passes through to moto untouched, so what the
//! server decides (conditional writes, versions) is still decided by the server.
//!
//! Faults before the server acts: throttling and 5xx answers in each service's own error shape,
//! a connection reset before any answer, a stall (no answer at all). Faults after it acted: the
//! answer lost (the server did the work, the caller never hears), a body reset half-way, a body
//! shorter than its `Content-Length`, a body whose bytes are corrupted.

use crate::serve::ServerThread;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which AWS call a fault applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// A DynamoDB operation, by its name (`TransactWriteItems`, `Scan`, `GetItem`, …).
    Dynamo(&'static str),
    /// An S3 request: method (`HEAD`, `GET`, `PUT`) on a key ending in `key`.
    S3 { method: &'static str, key: &'static str },
    /// CloudWatch `PutMetricData`.
    PutMetricData,
    /// STS `GetCallerIdentity`.
    GetCallerIdentity,
}

/// How it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The service's own throttling answer (DynamoDB `ThrottlingException`, S3 503 `SlowDown`,
    /// CloudWatch `Throttling`), before the server sees the request.
    Throttle,
    /// 500 `InternalError`, before the server sees the request.
    ServerError,
    /// The connection closes before any answer; the server never sees the request.
    ResetBeforeAnswer,
    /// No answer at all, for this long, then the connection closes; the server never sees it.
    Stall(Duration),
    /// The server acts, and its answer is lost: the connection closes without one.
    LoseAnswer,
    /// The server acts; its answer's body breaks off half-way (connection reset).
    ResetMidBody,
    /// The server acts; its answer's body ends early, short of its `Content-Length`.
    Truncate,
    /// The server acts; bytes in the middle of its answer's body are changed.
    Corrupt,
    /// The server acts; its answer's body stops half-way and nothing more comes for this long.
    StallMidBody(Duration),
}

#[derive(Debug, Clone)]
struct Rule {
    call: Call,
    fault: Fault,
    left: usize,
}

#[derive(Debug, Default)]
struct State {
    rules: Vec<Rule>,
    fired: Vec<(Call, Fault)>,
}

/// The proxy, running until it drops.
pub struct FaultProxy {
    server: ServerThread,
    state: Arc<Mutex<State>>,
}

impl FaultProxy {
    /// Starts a proxy to moto's server at `upstream` (a loopback address).
    pub fn start(upstream: SocketAddr) -> FaultProxy {
        assert!(upstream.ip().is_loopback(), "the fault proxy forwards to loopback only");
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let server = ServerThread::start("fault-proxy", move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = shared.clone();
                // Kept so a fault can make this connection's close a reset (RST), not a FIN.
                let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
                tokio::spawn(async move {
                    let service =
                        service_fn(move |req| handle(req, upstream, state.clone(), fd));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        FaultProxy { server, state }
    }

    /// `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// Environment for a subprocess whose AWS calls go through the proxy.
    pub fn aws_env(&self) -> Vec<(String, String)> {
        gateway_proc_kit::moto::aws_env(&self.endpoint())
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// SDK configuration whose calls go through the proxy.
    pub async fn sdk_config(&self) -> aws_config::SdkConfig {
        gateway_proc_kit::moto::sdk_config(&self.endpoint()).await
    }

    /// Breaks the next `times` requests of `call` with `fault`.
    pub fn inject(&self, call: Call, fault: Fault, times: usize) {
        self.lock().rules.push(Rule {
            call,
            fault,
            left: times,
        });
    }

    /// Drops every fault not yet fired.
    pub fn clear(&self) {
        self.lock().rules.clear();
    }

    /// The faults that fired so far, in order.
    pub fn fired(&self) -> Vec<(Call, Fault)> {
        self.lock().fired.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What an incoming request is, by the AWS protocol it speaks.
fn classify(req: &Request<Bytes>) -> Option<Call> {
    let header = |n: &str| req.headers().get(n).and_then(|v| v.to_str().ok());
    if let Some(target) = header("x-amz-target") {
        let op = target.rsplit('.').next().unwrap_or(target);
        return DYNAMO_OPS.iter().find(|o| **o == op).map(|o| Call::Dynamo(o));
    }
    let path = req.uri().path();
    let body = String::from_utf8_lossy(req.body());
    if path.contains("PutMetricData") || body.contains("Action=PutMetricData") {
        return Some(Call::PutMetricData);
    }
    if body.contains("Action=GetCallerIdentity") || path.contains("GetCallerIdentity") {
        return Some(Call::GetCallerIdentity);
    }
    let method = req.method().as_str();
    S3_METHODS
        .iter()
        .find(|m| **m == method)
        .map(|m| Call::S3 { method: m, key: "" })
        .filter(|_| path.matches('/').count() >= 2)
}

const DYNAMO_OPS: [&str; 10] = [
    "TransactWriteItems",
    "TransactGetItems",
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "BatchWriteItem",
    "DescribeTable",
];
const S3_METHODS: [&str; 4] = ["HEAD", "GET", "PUT", "DELETE"];

impl Call {
    fn matches(&self, seen: &Call, path: &str) -> bool {
        match (self, seen) {
            (Call::S3 { method, key }, Call::S3 { method: m, .. }) => {
                method == m && path.ends_with(key)
            }
            _ => self == seen,
        }
    }
}

type ProxyBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into()).map_err(|never| match never {}).boxed()
}

async fn handle(
    req: Request<Incoming>,
    upstream: SocketAddr,
    state: Arc<Mutex<State>>,
    fd: std::os::fd::RawFd,
) -> Result<Response<ProxyBody>, std::io::Error> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes();
    let req = Request::from_parts(parts, body);
    let fault = classify(&req).and_then(|call| {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        let path = req.uri().path().to_string();
        let rule = s
            .rules
            .iter_mut()
            .find(|r| r.left > 0 && r.call.matches(&call, &path))?;
        rule.left -= 1;
        let fired = (rule.call.clone(), rule.fault);
        s.fired.push(fired.clone());
        Some(fired)
    });
    let head = req.method() == hyper::Method::HEAD;
    match fault {
        Some((call, Fault::Throttle)) => return Ok(throttled(&call, head)),
        Some((_, Fault::ServerError)) => return Ok(server_error(head)),
        Some((_, Fault::ResetBeforeAnswer)) => return Err(std::io::Error::other("injected reset")),
        Some((_, Fault::Stall(d))) => {
            tokio::time::sleep(d).await;
            return Err(std::io::Error::other("injected stall"));
        }
        _ => {}
    }
    let answer = forward(req, upstream).await?;
    let Some((_, fault)) = fault else {
        return Ok(answer.map(full));
    };
    let (parts, body) = answer.into_parts();
    let half = body.len() / 2;
    match fault {
        Fault::LoseAnswer => Err(std::io::Error::other("injected: answer lost")),
        Fault::Corrupt => {
            let mut bytes = body.to_vec();
            for b in bytes.iter_mut().skip(half).take(16) {
                *b ^= 0x5a;
            }
            Ok(Response::from_parts(parts, full(bytes)))
        }
        Fault::Truncate => {
            // The declared length stays; the connection ends after half of it.
            let cut = BrokenBody::new(body.slice(..half), Then::fail(std::io::ErrorKind::UnexpectedEof));
            Ok(Response::from_parts(parts, cut.boxed()))
        }
        Fault::ResetMidBody => {
            reset_on_close(fd);
            let cut = BrokenBody::new(body.slice(..half), Then::fail(std::io::ErrorKind::ConnectionReset));
            Ok(Response::from_parts(parts, cut.boxed()))
        }
        Fault::StallMidBody(d) => {
            let cut = BrokenBody::new(body.slice(..half), Then::stall(d, std::io::ErrorKind::ConnectionReset));
            Ok(Response::from_parts(parts, cut.boxed()))
        }
        Fault::Throttle | Fault::ServerError | Fault::ResetBeforeAnswer | Fault::Stall(_) => {
            unreachable!("answered above")
        }
    }
}

/// Makes the connection's close a reset: the peer reads `ECONNRESET`, as from a network that
/// dropped it. The connection is open for as long as its request is served, so the descriptor
/// is valid here.
fn reset_on_close(fd: std::os::fd::RawFd) {
    // SAFETY: `fd` is the accepted stream's descriptor, open while its request is handled.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let _ = socket2::SockRef::from(&borrowed).set_linger(Some(Duration::ZERO));
}

/// One request to moto over a fresh connection, its answer collected.
async fn forward(req: Request<Bytes>, upstream: SocketAddr) -> Result<Response<Bytes>, std::io::Error> {
    let stream = tokio::net::TcpStream::connect(upstream).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(conn);
    let (parts, body) = req.into_parts();
    let answer = sender
        .send_request(Request::from_parts(parts, Full::new(body)))
        .await
        .map_err(std::io::Error::other)?;
    let (parts, body) = answer.into_parts();
    let body = body.collect().await.map_err(std::io::Error::other)?.to_bytes();
    Ok(Response::from_parts(parts, body))
}

fn throttled(call: &Call, head: bool) -> Response<ProxyBody> {
    let (status, content_type, body) = match call {
        Call::Dynamo(_) => (
            400,
            "application/x-amz-json-1.0",
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#.to_string(),
        ),
        Call::S3 { .. } => (
            503,
            "application/xml",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>".to_string(),
        ),
        Call::PutMetricData | Call::GetCallerIdentity => (
            400,
            "text/xml",
            "<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>fault</RequestId></ErrorResponse>".to_string(),
        ),
    };
    let mut r = Response::builder()
        .status(status)
        .header("content-type", content_type);
    if let Call::Dynamo(_) = call {
        r = r.header("x-amzn-errortype", "ThrottlingException");
    }
    r.body(full(if head { String::new() } else { body }))
        .expect("a valid answer")
}

fn server_error(head: bool) -> Response<ProxyBody> {
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>";
    Response::builder()
        .status(500)
        .header("content-type", "application/xml")
        .body(full(if head { "" } else { body }))
        .expect("a valid answer")
}

/// What a broken body does after its first half: after a pause (so the half already sent
/// reaches the client before the connection goes), the connection closes with `kind`.
struct Then {
    pause: std::pin::Pin<Box<tokio::time::Sleep>>,
    kind: std::io::ErrorKind,
}

impl Then {
    fn fail(kind: std::io::ErrorKind) -> Then {
        Then::stall(Duration::from_millis(100), kind)
    }

    fn stall(d: Duration, kind: std::io::ErrorKind) -> Then {
        Then {
            pause: Box::pin(tokio::time::sleep(d)),
            kind,
        }
    }
}

/// A body that sends `first`, then breaks as `then` says.
struct BrokenBody {
    first: Option<Bytes>,
    then: Option<Then>,
}

impl BrokenBody {
    fn new(first: Bytes, then: Then) -> BrokenBody {
        BrokenBody {
            first: Some(first),
            then: Some(then),
        }
    }
}

impl hyper::body::Body for BrokenBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        use std::future::Future;
        use std::task::Poll;
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        match self.then.as_mut() {
            None => Poll::Ready(None),
            Some(then) => match then.pause.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let kind = then.kind;
                    self.then = None;
                    Poll::Ready(Some(Err(std::io::Error::new(kind, "injected: body broken off"))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}
