//! How long each step of a delivery took, one log line per step (`step timed`, fields `step` and
//! `ms`), so a slow publish → serving can be taken apart (the scale bench collects these lines;
//! docs/benchmarks.md). Reading and writing interleave while a bundle streams in, so the time
//! spent inside the body's reads and inside the staged files' writes is summed apart
//! ([`Spent`]); what is left of the read is verification.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Logs that `step` took `took`.
pub fn step_took(step: &str, took: Duration) {
    tracing::info!(step, ms = millis(took), "step timed");
}

/// Logs that `step` took the time since `started`; the time now, for the next step.
pub fn step_since(step: &str, started: Instant) -> Instant {
    let now = Instant::now();
    step_took(step, now.saturating_duration_since(started));
    now
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

/// Time spent inside the calls of the readers or writers given [`Spent::reader`] or
/// [`Spent::writer`], summed (across threads).
#[derive(Debug, Clone, Default)]
pub struct Spent(Arc<AtomicU64>);

impl Spent {
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }

    /// `inner`, its reads timed into this sum. Meant for large reads (a buffer's refills).
    pub fn reader<R>(&self, inner: R) -> Timed<R> {
        Timed {
            inner,
            spent: self.clone(),
        }
    }

    /// `inner`, its writes and flushes timed into this sum. Meant beneath a buffer.
    pub fn writer<W>(&self, inner: W) -> Timed<W> {
        Timed {
            inner,
            spent: self.clone(),
        }
    }

    fn add<T>(&self, call: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let result = call();
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(nanos, Ordering::Relaxed);
        result
    }
}

/// A reader or writer whose calls count into a [`Spent`].
#[derive(Debug)]
pub struct Timed<T> {
    inner: T,
    spent: Spent,
}

impl<R: Read> Read for Timed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let inner = &mut self.inner;
        self.spent.add(|| inner.read(buf))
    }
}

impl<W: Write> Write for Timed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let inner = &mut self.inner;
        self.spent.add(|| inner.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        let inner = &mut self.inner;
        self.spent.add(|| inner.flush())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_pass_through_and_count() {
        let spent = Spent::default();
        let mut out = spent.writer(Vec::new());
        io::copy(&mut spent.reader(&b"some bytes"[..]), &mut out).expect("copies");
        assert_eq!(out.inner, b"some bytes");
    }
}
