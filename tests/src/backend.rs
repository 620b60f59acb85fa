//! Loopback HTTP backends for tests: each answers every request with a JSON body naming itself
//! and echoing the method and path (`{"backend":"billing","method":"GET","path":"/invoices/7"}`),
//! and counts what it served. Each runs on its own thread and runtime, so it works under any
//! test harness, and stops when its guard drops.

use crate::serve::ServerThread;
use gateway_proc_kit::backend::Echo;
use std::net::SocketAddr;

pub use gateway_proc_kit::backend::{expected_body, ECHOED, FAILING_PREFIX};

/// The process kit's echo server on a free loopback port, on its own thread and runtime.
pub struct Backend {
    echo: Echo,
    server: ServerThread,
}

impl Backend {
    /// Starts a backend called `name` on a free loopback port (bound before this returns).
    pub fn start(name: &str) -> Backend {
        let echo = Echo::new(name);
        let server = {
            let echo = echo.clone();
            ServerThread::start(&format!("backend-{name}"), move |listener| {
                gateway_proc_kit::backend::serve(listener, echo)
            })
        };
        Backend { echo, server }
    }

    pub fn name(&self) -> &str {
        self.echo.name()
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// `http://127.0.0.1:PORT`, usable as an entry's `backend`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.echo.requests()
    }
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
