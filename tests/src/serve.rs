//! A loopback server on its own thread and runtime, so it works under any test harness (plain
//! or async tests), stopped and joined when its guard drops: what the kit's backends and stub
//! servers run on.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::thread::JoinHandle;

pub(crate) struct ServerThread {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Binds a free loopback port now (so the address is known and taken before this returns)
    /// and runs `serve(listener)` on a thread called `name` until the guard drops.
    pub(crate) fn start<F, Fut>(name: &str, serve: F) -> ServerThread
    where
        F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let (listener, addr) = bind_loopback(name);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread_name = name.to_string();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                runtime(&thread_name).block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .unwrap_or_else(|e| panic!("{thread_name}: listener: {e}"));
                    tokio::select! {
                        _ = rx => {}
                        _ = serve(listener) => {}
                    }
                });
            })
            .unwrap_or_else(|e| panic!("{name}: thread: {e}"));
        ServerThread::running(addr, tx, thread)
    }

    /// A server already running on `thread` (bound to `addr`), told to stop through `shutdown`
    /// and joined when the guard drops.
    pub(crate) fn running(
        addr: SocketAddr,
        shutdown: tokio::sync::oneshot::Sender<()>,
        thread: JoinHandle<()>,
    ) -> ServerThread {
        ServerThread {
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A free loopback port, bound now and non-blocking (ready for tokio); `name` labels the panic
/// when the machine has none to give.
pub(crate) fn bind_loopback(name: &str) -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap_or_else(|e| panic!("{name}: binding 127.0.0.1:0: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{name}: local address: {e}"));
    listener
        .set_nonblocking(true)
        .unwrap_or_else(|e| panic!("{name}: non-blocking listener: {e}"));
    (listener, addr)
}

/// The current-thread runtime a server thread runs on.
pub(crate) fn runtime(name: &str) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{name}: runtime: {e}"))
}
