//! A loopback backend for route-policy tests (docs/design.md#route-policy), on hyper and
//! tokio-tungstenite, recording every request Envoy forwards:
//!
//! - a request whose path contains `/slow` is answered after [`SLOW_ANSWER`];
//! - a request whose path contains `/flaky` fails (503) every other time, counted per first path
//!   segment: the 1st, 3rd, … fail, the 2nd, 4th, … succeed;
//! - a request with `Upgrade: websocket` gets the handshake (`101`, `Sec-WebSocket-Accept`) and
//!   then has each message it sends echoed back until it closes;
//! - a request whose path contains `/cookies` is answered with the cookies in [`COOKIES`] (one
//!   scoped to the base domain, one to its own host, one to a name below it, one host-only);
//! - anything else is answered 200 with JSON `{"method", "path", "headers"}` (the request as
//!   received) and the response headers [`RESPONSE_HEADERS`].
//!
//! Every request is recorded ([`PolicyBackend::seen`]); each connection is a task of its own, so
//! a slow answer holds nobody else up.

use crate::serve::ServerThread;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE, SET_COOKIE, UPGRADE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

/// How long a `/slow` request waits for its answer.
pub const SLOW_ANSWER: Duration = Duration::from_secs(3);
/// Headers every plain answer carries, for tests that remove or keep them.
pub const RESPONSE_HEADERS: [(&str, &str); 3] = [
    ("server", "policy-backend"),
    ("x-backend-secret", "internal-build-42"),
    ("x-backend-kept", "yes"),
];

/// What a `/cookies` request is answered with: a backend trying to set state for every tenant
/// (`Domain` the base domain, or its parent), and cookies of its own host.
pub const COOKIES: [&str; 5] = [
    "tenant=1; Domain=api.example.com; Path=/; Secure",
    "parent=2; domain=.EXAMPLE.com; HttpOnly",
    "own=3; Domain=policy.api.example.com; Path=/",
    "below=4; Domain=eu.policy.api.example.com",
    "plain=5; Secure",
];

/// One request as the backend received it: header names lowercased (a repeated header keeps
/// its last value).
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
}

#[derive(Default)]
struct State {
    seen: Mutex<Vec<Seen>>,
    flaky: Mutex<BTreeMap<String, u64>>,
}

pub struct PolicyBackend {
    server: ServerThread,
    state: Arc<State>,
}

impl PolicyBackend {
    pub fn start() -> PolicyBackend {
        let state = Arc::new(State::default());
        let shared = state.clone();
        let server = ServerThread::start("policy backend", move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(answer(req, &state).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        PolicyBackend { server, state }
    }

    /// `http://127.0.0.1:PORT`, usable as an entry's `backend`.
    pub fn url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// Every request received so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.state
            .seen
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Requests received so far whose path starts with `prefix`.
    pub fn seen_under(&self, prefix: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.path.starts_with(prefix))
            .collect()
    }
}

async fn answer(mut req: Request<Incoming>, state: &State) -> Response<Full<Bytes>> {
    let seen = Seen {
        method: req.method().to_string(),
        path: req
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        headers: req
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
    };
    state
        .seen
        .lock()
        .map(|mut s| s.push(seen.clone()))
        .unwrap_or(());
    let wants_websocket = req
        .headers()
        .get(UPGRADE)
        .is_some_and(|u| u.as_bytes().eq_ignore_ascii_case(b"websocket"));
    if wants_websocket {
        return websocket(&mut req);
    }
    // Requests in these tests carry no body worth reading; drain what is sent.
    let _ = req.into_body().collect().await;
    if seen.path.contains("/slow") {
        tokio::time::sleep(SLOW_ANSWER).await;
    }
    if seen.path.contains("/flaky") {
        let segment = seen.path.split('/').nth(1).unwrap_or("").to_string();
        let n = state
            .flaky
            .lock()
            .map(|mut m| {
                let n = m.entry(segment).or_insert(0);
                *n += 1;
                *n
            })
            .unwrap_or(1);
        if n % 2 == 1 {
            return json(StatusCode::SERVICE_UNAVAILABLE, "{\"error\":\"flaky\"}".into());
        }
    }
    let body = serde_json::json!({
        "method": seen.method, "path": seen.path, "headers": seen.headers
    });
    let mut response = json(StatusCode::OK, body.to_string());
    let headers = response.headers_mut();
    for (name, value) in RESPONSE_HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if seen.path.contains("/cookies") {
        for c in COOKIES {
            headers.append(SET_COOKIE, HeaderValue::from_static(c));
        }
    }
    response
}

fn json(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Answers the handshake and echoes every message on the upgraded connection.
fn websocket(req: &mut Request<Incoming>) -> Response<Full<Bytes>> {
    let key = req
        .headers()
        .get("sec-websocket-key")
        .map(|k| derive_accept_key(k.as_bytes()))
        .unwrap_or_default();
    let upgrade = hyper::upgrade::on(req);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else {
            return;
        };
        let mut ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        while let Some(Ok(message)) = ws.next().await {
            if message.is_close() {
                let _ = ws.close(None).await;
                return;
            }
            if (message.is_text() || message.is_binary()) && ws.send(message).await.is_err() {
                return;
            }
        }
    });
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(accept) = HeaderValue::from_str(&key) {
        headers.insert("sec-websocket-accept", accept);
    }
    response
}
