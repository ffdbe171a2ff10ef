//! The one place CPU work starts: a fixed pool of search threads behind a bounded queue.
//!
//! Why a dedicated pool instead of `spawn_blocking`: the engine keeps its search scratch
//! memory in a thread-local (about 24 bytes per cell of the largest map seen), so the number
//! of threads that ever search must be fixed, not tokio's up-to-512 blocking threads.
//!
//! Admission is a semaphore of `threads + queue_depth` permits taken without waiting: when
//! none is left the caller gets `503 overloaded` at once. A job holds its permit until it
//! finishes on the worker, even if the client has gone, so the bound is real.
//!
//! Cancellation: each job gets an `AtomicBool` that a drop guard sets when the awaiting
//! future is dropped (axum drops a handler's future when the client disconnects). The engine
//! checks it inside its loop (`Limits::cancel`); a job still queued is skipped.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::error::ApiError;

/// The cancellation flag handed to every job.
pub type Cancel = Arc<AtomicBool>;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Handle to the search pool (cheap to clone).
#[derive(Clone)]
pub struct Compute {
    inner: Arc<Inner>,
}

struct Inner {
    /// Jobs go to the workers through this channel; the workers share the receiver.
    tx: mpsc::Sender<Job>,
    /// `threads + queue_depth` permits: admission without waiting (see module docs).
    admission: Arc<Semaphore>,
    threads: usize,
    queued: AtomicUsize,
    running: AtomicUsize,
    rejected: AtomicU64,
    cancelled: AtomicU64,
}

/// A snapshot of the pool's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// Worker threads.
    pub threads: usize,
    /// Jobs admitted and waiting for a worker.
    pub queued: usize,
    /// Jobs running now.
    pub running: usize,
    /// Jobs refused with `503 overloaded` since start.
    pub rejected: u64,
    /// Searches stopped because their client went away since start.
    pub cancelled: u64,
}

/// Sets the cancellation flag when dropped unless disarmed (the awaiting future finished).
struct CancelOnDrop(Option<Cancel>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(flag) = self.0.take() {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

/// Keeps workers occupied until dropped (see [`Compute::hold`]).
pub struct Hold {
    _release: Vec<oneshot::Sender<()>>,
}

impl Compute {
    /// Starts `threads` workers (at least 1) with room for `queue_depth` waiting jobs.
    pub fn new(threads: usize, queue_depth: usize) -> Self {
        let threads = threads.max(1);
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let rx = Arc::clone(&rx);
            std::thread::Builder::new()
                .name(format!("pathd-worker-{i}"))
                .spawn(move || {
                    loop {
                        // The lock is held only while waiting for the next job.
                        let job = match rx.lock() {
                            Ok(guard) => guard.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return, // every sender dropped: the pool is gone
                        }
                    }
                })
                .expect("spawn search worker");
        }
        metrics::gauge!("pathd_pool_threads").set(threads as f64);
        Compute {
            inner: Arc::new(Inner {
                tx,
                admission: Arc::new(Semaphore::new(threads + queue_depth)),
                threads,
                queued: AtomicUsize::new(0),
                running: AtomicUsize::new(0),
                rejected: AtomicU64::new(0),
                cancelled: AtomicU64::new(0),
            }),
        }
    }

    /// The pool's counters now.
    pub fn stats(&self) -> PoolStats {
        let i = &self.inner;
        PoolStats {
            threads: i.threads,
            queued: i.queued.load(Ordering::Relaxed),
            running: i.running.load(Ordering::Relaxed),
            rejected: i.rejected.load(Ordering::Relaxed),
            cancelled: i.cancelled.load(Ordering::Relaxed),
        }
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// Counts a search that stopped because its client went away.
    pub fn note_cancelled(&self) {
        self.inner.cancelled.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("pathd_searches_cancelled_total").increment(1);
    }

    fn try_admit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        Arc::clone(&self.inner.admission)
            .try_acquire_owned()
            .map_err(|_| {
                self.inner.rejected.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("pathd_pool_rejected_total").increment(1);
                ApiError::overloaded()
            })
    }

    /// Runs `f` on a worker, or answers `503 overloaded` at once when the pool and its queue
    /// are full. `f` gets the cancellation flag (set if this future is dropped).
    pub async fn run<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let permit = self.try_admit()?;
        self.run_admitted(permit, f).await
    }

    /// Like [`Compute::run`] but waits for room instead of refusing (startup loading).
    pub async fn run_waiting<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let permit = Arc::clone(&self.inner.admission)
            .acquire_owned()
            .await
            .map_err(ApiError::internal)?;
        self.run_admitted(permit, f).await
    }

    /// Runs `f` over `items` spread across up to `threads` workers (as many as there is
    /// room for, at least one, else `503`), answering in input order.
    pub async fn run_batch<I, T, F>(&self, items: Vec<I>, f: F) -> Result<Vec<T>, ApiError>
    where
        I: Send + 'static,
        T: Send + 'static,
        F: Fn(I, &Cancel) -> T + Send + Sync + 'static,
    {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let want = items.len().min(self.inner.threads);
        let mut permits = vec![self.try_admit()?];
        while permits.len() < want {
            match Arc::clone(&self.inner.admission).try_acquire_owned() {
                Ok(p) => permits.push(p),
                Err(_) => break,
            }
        }
        let chunk = items.len().div_ceil(permits.len());
        let f = Arc::new(f);
        let cancel: Cancel = Arc::new(AtomicBool::new(false));
        let guard = CancelOnDrop(Some(Arc::clone(&cancel)));
        let mut items = items.into_iter();
        let mut receivers = Vec::with_capacity(permits.len());
        for permit in permits {
            let part: Vec<I> = items.by_ref().take(chunk).collect();
            let f = Arc::clone(&f);
            let job = move |c: &Cancel| part.into_iter().map(|i| f(i, c)).collect::<Vec<T>>();
            receivers.push(self.submit(permit, Arc::clone(&cancel), job));
        }
        let mut out = Vec::new();
        for rx in receivers {
            out.extend(Self::receive(rx).await?);
        }
        guard.disarm();
        Ok(out)
    }

    /// Occupies `n` workers (and their admission permits) until the returned guard is
    /// dropped; returns once all `n` are running. For maintenance windows and for tests that
    /// need a saturated pool deterministically.
    pub async fn hold(&self, n: usize) -> Result<Hold, ApiError> {
        let mut release = Vec::new();
        let mut started = Vec::new();
        for _ in 0..n {
            let permit = self.try_admit()?;
            let (rel_tx, rel_rx) = oneshot::channel::<()>();
            let (go_tx, go_rx) = oneshot::channel::<()>();
            let cancel = Arc::new(AtomicBool::new(false));
            drop(self.submit(permit, cancel, move |_| {
                let _ = go_tx.send(());
                let _ = rel_rx.blocking_recv();
            }));
            release.push(rel_tx);
            started.push(go_rx);
        }
        for s in started {
            s.await.map_err(ApiError::internal)?;
        }
        Ok(Hold { _release: release })
    }

    async fn run_admitted<T, F>(&self, permit: OwnedSemaphorePermit, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let cancel: Cancel = Arc::new(AtomicBool::new(false));
        let guard = CancelOnDrop(Some(Arc::clone(&cancel)));
        let rx = self.submit(permit, cancel, f);
        let out = Self::receive(rx).await;
        guard.disarm();
        out
    }

    /// Queues `f` for a worker; the answer (or the panic) comes back on the receiver.
    fn submit<T, F>(
        &self,
        permit: OwnedSemaphorePermit,
        cancel: Cancel,
        f: F,
    ) -> oneshot::Receiver<std::thread::Result<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let inner = Arc::clone(&self.inner);
        inner.queued.fetch_add(1, Ordering::Relaxed);
        publish(&inner);
        let job_inner = Arc::clone(&inner);
        let job: Job = Box::new(move || {
            let inner = job_inner;
            inner.queued.fetch_sub(1, Ordering::Relaxed);
            inner.running.fetch_add(1, Ordering::Relaxed);
            publish(&inner);
            // A job whose client left while it waited is skipped; dropping `tx` tells the
            // (already gone) receiver nothing was computed.
            let out = (!cancel.load(Ordering::Relaxed))
                .then(|| catch_unwind(AssertUnwindSafe(|| f(&cancel))));
            inner.running.fetch_sub(1, Ordering::Relaxed);
            publish(&inner);
            // Free the slot before answering: a client that has its answer may send the
            // next request at once and must find the slot free.
            drop(permit);
            if let Some(out) = out {
                let _ = tx.send(out);
            }
        });
        if self.inner.tx.send(job).is_err() {
            // Workers are gone (cannot happen while `inner` lives); the receiver reports it.
            inner.queued.fetch_sub(1, Ordering::Relaxed);
        }
        rx
    }

    async fn receive<T>(rx: oneshot::Receiver<std::thread::Result<T>>) -> Result<T, ApiError> {
        match rx.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(panic)) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(ApiError::internal(format!("search job panicked: {msg}")))
            }
            Err(_) => Err(ApiError::internal("search job dropped without an answer")),
        }
    }
}

fn publish(inner: &Inner) {
    metrics::gauge!("pathd_pool_queue_depth").set(inner.queued.load(Ordering::Relaxed) as f64);
    metrics::gauge!("pathd_pool_busy").set(inner.running.load(Ordering::Relaxed) as f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn answers_and_refuses_when_full() {
        let c = Compute::new(1, 0);
        assert_eq!(c.run(|_| 2 + 2).await.unwrap(), 4);
        let hold = c.hold(1).await.unwrap();
        let e = c.run(|_| ()).await.unwrap_err();
        assert_eq!((e.code, e.retry_after), ("overloaded", Some(1)));
        assert_eq!(c.stats().rejected, 1);
        drop(hold);
        // The held worker frees its permit as soon as it sees the release.
        let mut tries = 0;
        while c.run(|_| ()).await.is_err() {
            tries += 1;
            assert!(tries < 10_000, "pool never freed");
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn dropping_the_future_sets_the_cancel_flag() {
        let c = Compute::new(1, 1);
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let (started_tx, started_rx) = oneshot::channel();
        let c2 = c.clone();
        let fut = async move {
            c2.run(move |cancel| {
                let _ = started_tx.send(());
                while !cancel.load(Ordering::Relaxed) {
                    std::thread::yield_now();
                }
                seen_tx.send(true).unwrap();
            })
            .await
        };
        let task = tokio::spawn(fut);
        started_rx.await.unwrap();
        task.abort();
        let seen =
            tokio::task::spawn_blocking(move || seen_rx.recv_timeout(Duration::from_secs(30)))
                .await
                .unwrap();
        assert_eq!(seen, Ok(true));
    }

    #[tokio::test]
    async fn batches_keep_input_order_and_survive_panics() {
        let c = Compute::new(2, 4);
        let out = c
            .run_batch((0..100).collect(), |i: u32, _| i * 2)
            .await
            .unwrap();
        assert_eq!(out, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        let e = c.run(|_| -> u32 { panic!("boom") }).await.unwrap_err();
        assert_eq!(e.code, "internal");
        assert_eq!(
            c.run(|_| 7).await.unwrap(),
            7,
            "a panic must not kill the worker"
        );
    }
}
