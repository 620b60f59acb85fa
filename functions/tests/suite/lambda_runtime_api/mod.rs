//! A Lambda Runtime API on loopback — the part `lambda_runtime` 1.x calls: `invocation/next`
//! (held open until an event is queued, as Lambda does), `invocation/{id}/response`,
//! `invocation/{id}/error` and `init/error` — and a guard that runs a Lambda binary against it
//! with the environment Lambda gives a function.

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

const PREFIX: &str = "/2018-06-01/runtime";
pub const FUNCTION_NAME: &str = "gateway-test-function";
/// The deadline handed with each event: far enough out that no handler is cut short.
const DEADLINE_AHEAD: Duration = Duration::from_secs(120);
/// A held `next` poll gives up after this; the server is dropped with its test long before.
const HOLD_NEXT: Duration = Duration::from_secs(600);

/// How the runtime finished one invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum Completion {
    /// `POST …/{id}/response`: the handler's answer.
    Response(Value),
    /// `POST …/{id}/error`: the handler failed; `error_type` is the runtime's header.
    Error {
        error_type: Option<String>,
        body: Value,
    },
}

/// `POST /runtime/init/error`: the function failed before taking an event.
#[derive(Debug, Clone)]
pub struct InitError {
    pub body: Value,
}

#[derive(Default)]
struct State {
    queue: VecDeque<(String, Bytes)>,
    completions: HashMap<String, Completion>,
    init_errors: Vec<InitError>,
    /// Every request that matched no route, so a path the runtime calls and this server lacks
    /// shows up in a failure instead of hanging silently.
    unknown: Vec<String>,
}

struct Shared {
    state: Mutex<State>,
    /// Bumped on every change; waiters subscribe, check the state, then wait for a bump.
    changed: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread poisons nothing worth protecting: the state is plain data.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.lock());
        self.changed.send_modify(|n| *n += 1);
    }

    /// Waits (bounded) until `pick` finds something in the state.
    async fn wait_for<T>(
        &self,
        timeout: Duration,
        mut pick: impl FnMut(&mut State) -> Option<T>,
    ) -> Option<T> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let mut rx = self.changed.subscribe();
            if let Some(found) = pick(&mut self.lock()) {
                return Some(found);
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => return None,
            }
        }
    }
}

/// The server; dropping it stops it and every connection it holds open.
pub struct RuntimeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    server: JoinHandle<()>,
}

impl RuntimeApi {
    pub async fn start() -> RuntimeApi {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("binding the runtime API on 127.0.0.1:0: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("reading the runtime API's address: {e}"));
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            changed: watch::Sender::new(0),
        });
        let server = tokio::spawn(accept_loop(listener, shared.clone()));
        RuntimeApi {
            addr,
            shared,
            next_id: AtomicU64::new(1),
            server,
        }
    }

    /// `AWS_LAMBDA_RUNTIME_API`: `host:port`, no scheme, as Lambda sets it.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// Queues `event` and waits (bounded) for the function's answer to it.
    pub async fn invoke(&self, event: &Value, timeout: Duration) -> Option<Completion> {
        let id = format!(
            "8476a536-e9f4-11e8-9739-{:012}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let body = Bytes::from(serde_json::to_vec(event).unwrap_or_default());
        self.shared
            .update(|s| s.queue.push_back((id.clone(), body)));
        self.shared
            .wait_for(timeout, |s| s.completions.remove(&id))
            .await
    }

    /// Waits (bounded) for an init error report.
    pub async fn init_error(&self, timeout: Duration) -> Option<InitError> {
        self.shared
            .wait_for(timeout, |s| s.init_errors.first().cloned())
            .await
    }

    /// Requests that matched no Runtime API route.
    pub fn unknown_requests(&self) -> Vec<String> {
        self.shared.lock().unknown.clone()
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // Owned here so aborting this task closes every connection, held `next` polls included.
    let mut connections = JoinSet::new();
    while let Ok((stream, _)) = listener.accept().await {
        let shared = shared.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| serve(req, shared.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn serve(
    req: Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let error_type = req
        .headers()
        .get("lambda-runtime-function-error-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let Some(rest) = path.strip_prefix(PREFIX) else {
        return Ok(unknown(&shared, &method, &path));
    };
    match (&method, rest) {
        (&Method::GET, "/invocation/next") => Ok(next_event(&shared).await),
        (&Method::POST, "/init/error") => {
            shared.update(|s| {
                s.init_errors.push(InitError {
                    body: json_or_text(&body),
                })
            });
            Ok(accepted())
        }
        (&Method::POST, rest) => {
            let Some(tail) = rest.strip_prefix("/invocation/") else {
                return Ok(unknown(&shared, &method, &path));
            };
            let completion = if let Some(id) = tail.strip_suffix("/response") {
                (id, Completion::Response(json_or_text(&body)))
            } else if let Some(id) = tail.strip_suffix("/error") {
                let body = json_or_text(&body);
                (id, Completion::Error { error_type, body })
            } else {
                return Ok(unknown(&shared, &method, &path));
            };
            let (id, completion) = completion;
            shared.update(|s| {
                s.completions.insert(id.to_string(), completion);
            });
            Ok(accepted())
        }
        _ => Ok(unknown(&shared, &method, &path)),
    }
}

/// Answers one queued event, holding the poll open while the queue is empty (Lambda freezes the
/// function there; the runtime must simply wait).
async fn next_event(shared: &Shared) -> Response<Full<Bytes>> {
    let (id, body) = shared
        .wait_for(HOLD_NEXT, |s| s.queue.pop_front())
        .await
        .unwrap_or_default();
    let deadline = SystemTime::now()
        .checked_add(DEADLINE_AHEAD)
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis())
        .unwrap_or(0);
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .header("lambda-runtime-aws-request-id", id.as_str())
        .header("lambda-runtime-deadline-ms", deadline.to_string())
        .header(
            "lambda-runtime-invoked-function-arn",
            format!("arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION_NAME}"),
        )
        .header(
            "lambda-runtime-trace-id",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0",
        )
        .body(Full::new(body))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

fn accepted() -> Response<Full<Bytes>> {
    let mut rsp = Response::new(Full::new(Bytes::from_static(b"{\"status\":\"OK\"}")));
    *rsp.status_mut() = StatusCode::ACCEPTED;
    rsp
}

fn unknown(shared: &Shared, method: &Method, path: &str) -> Response<Full<Bytes>> {
    shared.update(|s| s.unknown.push(format!("{method} {path}")));
    let mut rsp = Response::new(Full::new(Bytes::new()));
    *rsp.status_mut() = StatusCode::NOT_FOUND;
    rsp
}

fn json_or_text(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// A Lambda binary running against a [`RuntimeApi`]; killed on drop.
pub struct LambdaProcess {
    child: Child,
    stdout: tempfile::NamedTempFile,
    stderr: tempfile::NamedTempFile,
}

impl LambdaProcess {
    /// Starts `bin` with a clean environment: what Lambda sets for a function, then `env`
    /// (the AWS endpoint and credentials, the gateway's settings).
    pub fn spawn(bin: &str, api: &RuntimeApi, env: &[(String, String)]) -> LambdaProcess {
        let stdout = tempfile::NamedTempFile::new()
            .unwrap_or_else(|e| panic!("creating a log file for {bin}: {e}"));
        let stderr = tempfile::NamedTempFile::new()
            .unwrap_or_else(|e| panic!("creating a log file for {bin}: {e}"));
        let out = stdout
            .reopen()
            .unwrap_or_else(|e| panic!("opening {bin}'s stdout file: {e}"));
        let err = stderr
            .reopen()
            .unwrap_or_else(|e| panic!("opening {bin}'s stderr file: {e}"));
        let child = Command::new(bin)
            .env_clear()
            .envs(lambda_env(api))
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {bin}: {e}"));
        LambdaProcess {
            child,
            stdout,
            stderr,
        }
    }

    /// Everything the process wrote so far, stdout then stderr.
    pub fn log_text(&self) -> String {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        format!(
            "--- stdout ---\n{}--- stderr ---\n{}",
            read(self.stdout.path()),
            read(self.stderr.path())
        )
    }

    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }

    /// The lines of stdout and stderr that parse as JSON objects (the tracing JSON format).
    pub fn json_lines(&self) -> Vec<Value> {
        [self.stdout.path(), self.stderr.path()]
            .iter()
            .flat_map(|p| {
                std::fs::read_to_string(p)
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .filter(Value::is_object)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// `Some(status)` when the process has already exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for LambdaProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What Lambda's `provided.al2023` runtime sets that `lambda_runtime` reads.
fn lambda_env(api: &RuntimeApi) -> Vec<(String, String)> {
    [
        ("AWS_LAMBDA_RUNTIME_API", api.address()),
        ("AWS_LAMBDA_FUNCTION_NAME", FUNCTION_NAME.to_string()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512".to_string()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_string()),
        (
            "AWS_LAMBDA_LOG_GROUP_NAME",
            format!("/aws/lambda/{FUNCTION_NAME}"),
        ),
        (
            "AWS_LAMBDA_LOG_STREAM_NAME",
            "2024/01/01/[$LATEST]0123456789abcdef".to_string(),
        ),
        ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".to_string()),
        ("LAMBDA_TASK_ROOT", "/var/task".to_string()),
        ("_HANDLER", "bootstrap".to_string()),
        ("TZ", ":UTC".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}
