//! A loopback HTTP/1.1 server (hyper) that answers every request from a function of what it
//! received: what a test puts where a dependency would be (CloudFormation's ResponseURL, a
//! throttling DynamoDB). It counts connections, can hold them without answering (a hung
//! dependency), runs on its own thread and runtime, and stops when its guard drops.

use crate::serve::ServerThread;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl Received {
    /// The header `name`'s value, when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// What the server answers.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn status(status: u16) -> Answer {
        Answer {
            status,
            ..Answer::default()
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn body(mut self, body: &str) -> Answer {
        self.body = body.to_string();
        self
    }
}

/// How the server treats a connection.
pub enum Behaviour {
    /// Every request on it is answered by the function.
    Answer(Box<dyn Fn(Received) -> Answer + Send + Sync>),
    /// It is accepted and held open; nothing is read or answered (a hung dependency).
    Hang,
}

pub struct StubServer {
    connections: Arc<AtomicUsize>,
    server: ServerThread,
}

impl StubServer {
    /// A server answering every request with `answer(request)`.
    pub fn answering(answer: impl Fn(Received) -> Answer + Send + Sync + 'static) -> StubServer {
        StubServer::start(Behaviour::Answer(Box::new(answer)))
    }

    /// Starts the server on a free loopback port (bound before this returns).
    pub fn start(behaviour: Behaviour) -> StubServer {
        let connections = Arc::new(AtomicUsize::new(0));
        let server = {
            let connections = connections.clone();
            ServerThread::start("stub-server", move |listener| {
                serve(listener, Arc::new(behaviour), connections)
            })
        };
        StubServer {
            connections,
            server,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The shared connection counter, for a caller that keeps it after the guard.
    pub fn connection_counter(&self) -> Arc<AtomicUsize> {
        self.connections.clone()
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    behaviour: Arc<Behaviour>,
    connections: Arc<AtomicUsize>,
) {
    let mut held = Vec::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        connections.fetch_add(1, Ordering::SeqCst);
        if let Behaviour::Hang = *behaviour {
            held.push(stream);
            continue;
        }
        let behaviour = behaviour.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let behaviour = behaviour.clone();
                async move { Ok::<_, Infallible>(respond(&behaviour, req).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn respond(behaviour: &Behaviour, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let Behaviour::Answer(answer) = behaviour else {
        return Response::new(Full::new(Bytes::new()));
    };
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let received = Received {
        method: parts.method.to_string(),
        target: parts
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        headers: parts.headers,
        body,
    };
    let answer = answer(received);
    let mut response = Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() = hyper::StatusCode::from_u16(answer.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in answer.headers {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(&value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn answers_from_what_it_received_and_counts_connections() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stub = {
            let seen = seen.clone();
            StubServer::answering(move |r| {
                seen.lock().expect("lock").push(r.target.clone());
                Answer::status(418).header("x-a", "b").body(&r.method)
            })
        };
        let r = crate::http::request(stub.addr(), "DELETE", "h", "/x?y=1").expect("answer");
        assert_eq!(
            (r.status, r.body.as_str(), r.header("x-a")),
            (418, "DELETE", Some("b"))
        );
        assert_eq!(*seen.lock().expect("lock"), vec!["/x?y=1".to_string()]);
        assert_eq!(stub.connections(), 1);
    }

    #[test]
    fn a_hanging_server_accepts_and_never_answers() {
        let stub = StubServer::start(Behaviour::Hang);
        // The kit's client gives up after its read timeout; a short raw read shows the silence.
        let mut conn = std::net::TcpStream::connect(stub.addr()).expect("connect");
        conn.set_read_timeout(Some(std::time::Duration::from_millis(300)))
            .expect("timeout");
        use std::io::{Read, Write};
        conn.write_all(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            .expect("write");
        let mut buf = [0u8; 16];
        assert!(
            conn.read(&mut buf).is_err(),
            "a hanging server must not answer"
        );
        assert_eq!(stub.connections(), 1);
    }
}
