//! The two sample backends, served in-process by the process kit's echo server: each answers
//! every request with JSON naming itself and echoing what it received (the Host too), so a
//! response shows which backend Envoy chose.

use gateway_proc_kit::backend::{serve, Echo};
use std::net::SocketAddr;
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
        let task = tokio::spawn(serve(listener, Echo::new(&name).for_people()));
        Ok(SampleBackend { name, addr, task })
    }
}

impl Drop for SampleBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}
