//! Steady client traffic through Envoy while bundles are delivered: loops that request one
//! route without pause and count every answer that is not a 200.

use super::{client, send};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bounds on one loop's traffic, whatever happens.
const MAX_REQUESTS_PER_LOOP: u64 = 200_000;
const MAX_LOOP_TIME: Duration = Duration::from_secs(600);

/// Answers counted by the loops that share it; the first few failures kept as samples.
#[derive(Default)]
pub struct Tally {
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    pub samples: Mutex<Vec<String>>,
}

impl Tally {
    pub fn ok(&self) -> u64 {
        self.ok.load(Ordering::SeqCst)
    }

    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::SeqCst)
    }

    pub fn samples(&self) -> Vec<String> {
        self.samples.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Fails the test, with the samples, when any request on `route` failed.
    pub fn assert_none_failed(&self, route: &str) {
        assert_eq!(
            self.failed(),
            0,
            "failed requests on {route}: {:?}",
            self.samples()
        );
    }
}

/// Traffic loops (see [`traffic`]) that stop together.
#[derive(Default)]
pub struct Loops {
    stop: Arc<AtomicBool>,
    running: Vec<tokio::task::JoinHandle<()>>,
}

impl Loops {
    /// One more loop on `host` `path` through `listener`, counted into `tally`.
    pub fn start(
        &mut self,
        listener: std::net::SocketAddr,
        host: &'static str,
        path: &'static str,
        tally: &Arc<Tally>,
    ) {
        let stop = self.stop.clone();
        self.running
            .push(traffic(listener, host, path, stop, tally.clone()));
    }

    /// Stops every loop and waits for each to end.
    pub async fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        for running in self.running {
            running.await.expect("traffic loop");
        }
    }
}

/// Steady traffic on the route the delivery tests move between clusters (`billing`
/// `/invoices/7`) and on one that never changes (`shop` `/cart`).
pub struct MovingAndUnchanged {
    pub moving: Arc<Tally>,
    pub unchanged: Arc<Tally>,
    loops: Loops,
}

impl MovingAndUnchanged {
    /// Once `first_backend` answers the moving route, `per_route` loops on each route.
    pub async fn start(gw: &super::Gateway, first_backend: &str, per_route: usize) -> Self {
        gw.wait_served_by(
            "billing",
            "/invoices/7",
            first_backend,
            Duration::from_secs(10),
        )
        .await;
        let mut traffic = MovingAndUnchanged {
            moving: Arc::default(),
            unchanged: Arc::default(),
            loops: Loops::default(),
        };
        for _ in 0..per_route {
            let listener = gw.listener();
            let loops = &mut traffic.loops;
            loops.start(listener, "billing", "/invoices/7", &traffic.moving);
            loops.start(listener, "shop", "/cart", &traffic.unchanged);
        }
        traffic
    }

    /// Stops the loops and prints the counts; fails the test when any request failed.
    pub async fn stop(self) -> (Arc<Tally>, Arc<Tally>) {
        self.loops.stop().await;
        let (moving, unchanged) = (self.moving, self.unchanged);
        println!(
            "moving route: {} ok, {} failed; unchanged route: {} ok, {} failed",
            moving.ok(),
            moving.failed(),
            unchanged.ok(),
            unchanged.failed()
        );
        moving.assert_none_failed("the moving route");
        unchanged.assert_none_failed("the unchanged route");
        (moving, unchanged)
    }
}

/// A loop sending `GET {path}` with `Host: {host}` through `listener` every 2 ms until `stop`.
pub fn traffic(
    listener: std::net::SocketAddr,
    host: &'static str,
    path: &'static str,
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let client = client();
        let started = Instant::now();
        let mut sent = 0;
        while !stop.load(Ordering::SeqCst)
            && sent < MAX_REQUESTS_PER_LOOP
            && started.elapsed() < MAX_LOOP_TIME
        {
            sent += 1;
            match send(&client, listener, "GET", host, path).await {
                Ok((200, _)) => {
                    tally.ok.fetch_add(1, Ordering::SeqCst);
                }
                other => {
                    tally.failed.fetch_add(1, Ordering::SeqCst);
                    let mut samples = tally.samples.lock().unwrap_or_else(|p| p.into_inner());
                    if samples.len() < 10 {
                        samples.push(format!("{host}{path}: {other:?}"));
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
}
