//! The one place CPU work starts: a fixed pool of search threads behind a bounded, fair
//! queue.
//!
//! Why a dedicated pool instead of `spawn_blocking`: a search needs scratch memory (an engine
//! [`Searcher`], about 20 bytes per cell of the largest map seen, kept and reused), so the
//! number of searches that ever run at once must be fixed, not tokio's up-to-512 blocking
//! threads. A job checks a searcher out of the pool's [`Searchers`] for its duration
//! ([`Compute::searcher`]); at most `threads` jobs run at once, so at most `threads`
//! searchers ever exist.
//!
//! Fairness: every request (a single query, a batch, an upload, a repair) gets its own
//! queue of jobs, and a batch puts its queries in as chunks: jobs of at most `chunk`
//! queries each ([`Compute::run_chunked`]; [`Compute::run_batch`] is one query a job). The
//! workers serve the requests round-robin, one job per turn: a worker takes the next job of
//! the request at the front of the ring and, if that request has more, moves it to the
//! back. A chunk runs its queries one after the other on one worker (one wake-up, one
//! searcher and one answer message for the lot), but gives way between two queries as soon
//! as a request of a single job (a single query, an upload, a repair) is waiting: it puts
//! the rest of itself back at the front of its batch's queue and ends its turn. So a query
//! that arrives behind a 200-query batch waits for about one query of that batch per worker
//! (plus the jobs already running), not for the whole batch; batches share the workers
//! evenly, a chunk at a time, and a chunk holds its worker for at most `chunk` queries.
//! Jobs are not preempted: a query runs to its own limits.
//!
//! Budget: each query of a batch keeps its own limits (`max_expansions` and `timeout_ms`,
//! capped by the server's maxima; the clock starts when the query starts on a worker), so a
//! batch costs at most `--max-batch` times the per-query limits. No batch-wide budget is
//! needed for the others' sake, since fairness already keeps a big batch from holding the
//! pool; the batch's own client is the one that waits for it.
//!
//! Admission is a semaphore of `threads + queue_depth` permits, one per *request*, taken
//! without waiting: when none is left the caller gets `503 overloaded` at once. A request
//! holds its permit until its last job has finished on a worker (or been skipped), even if
//! the client has gone, so the bound is real.
//!
//! Cancellation: each request gets an `AtomicBool` that a drop guard sets when the awaiting
//! future is dropped (axum drops a handler's future when the client disconnects). The engine
//! checks it inside its loop (`Limits::cancel`); a chunk checks it between two queries and
//! drops the rest; the request's jobs still queued are skipped when their turn comes.
//!
//! Panics: every job runs under `catch_unwind`; a panicking job answers `500 internal` to
//! its request and the worker carries on.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use pathd_engine::Searcher;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

mod chunks;
mod error;
mod sched;
mod searchers;

pub use error::PoolError;
use sched::{Sched, Shared, publish};
pub use searchers::{SearcherGuard, Searchers};

/// The cancellation flag handed to every job.
pub type Cancel = Arc<AtomicBool>;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// What a job sends back: its value, or the panic it raised.
type Answer<T> = oneshot::Receiver<std::thread::Result<T>>;

/// Handle to the search pool (cheap to clone).
#[derive(Clone)]
pub struct Compute {
    inner: Arc<Inner>,
}

/// Owned by the handles: dropping the last one lets the workers finish what is queued and
/// exit.
struct Inner {
    shared: Arc<Shared>,
    /// `threads + queue_depth` permits, one per request (see module docs).
    admission: Arc<Semaphore>,
    /// `threads` permits shared by every background driver (subscription and flow-field
    /// repairs): together they hold at most `threads` of the admission permits, so the
    /// `queue_depth` others stay for queries whatever the drivers do.
    background: Arc<Semaphore>,
    threads: usize,
}

/// A snapshot of the pool's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// Worker threads.
    pub threads: usize,
    /// Jobs admitted and waiting for a worker (a batch counts one per chunk).
    pub queued: usize,
    /// Jobs running now.
    pub running: usize,
    /// Requests refused with `503 overloaded` since start.
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
    /// Starts `threads` workers (at least 1) with room for `queue_depth` waiting requests.
    pub fn new(threads: usize, queue_depth: usize) -> Self {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            sched: Mutex::new(Sched::default()),
            ready: Condvar::new(),
            singles_waiting: AtomicUsize::new(0),
            next_id: AtomicU64::new(0),
            searchers: Searchers::default(),
            queued: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            rejected: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
        });
        for i in 0..threads {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("pathd-worker-{i}"))
                .spawn(move || {
                    while let Some(job) = shared.next_job() {
                        job();
                    }
                })
                .expect("spawn search worker");
        }
        metrics::gauge!("pathd_pool_threads").set(threads as f64);
        Compute {
            inner: Arc::new(Inner {
                shared,
                admission: Arc::new(Semaphore::new(threads + queue_depth)),
                background: Arc::new(Semaphore::new(threads)),
                threads,
            }),
        }
    }

    /// The pool's counters now.
    pub fn stats(&self) -> PoolStats {
        let s = &self.inner.shared;
        PoolStats {
            threads: self.inner.threads,
            queued: s.queued.load(Ordering::Relaxed),
            running: s.running.load(Ordering::Relaxed),
            rejected: s.rejected.load(Ordering::Relaxed),
            cancelled: s.cancelled.load(Ordering::Relaxed),
        }
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// A searcher for the calling job, handed back to the pool when the guard drops.
    pub fn searcher(&self) -> SearcherGuard<'_> {
        self.inner.shared.searchers.checkout()
    }

    /// Counts a search that stopped because its client went away.
    pub fn note_cancelled(&self) {
        self.inner.shared.cancelled.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("pathd_searches_cancelled_total").increment(1);
    }

    fn try_admit(&self) -> Result<OwnedSemaphorePermit, PoolError> {
        Arc::clone(&self.inner.admission)
            .try_acquire_owned()
            .map_err(|_| {
                self.inner.shared.rejected.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("pathd_pool_rejected_total").increment(1);
                PoolError::Overloaded
            })
    }

    /// Runs `f` on a worker, or answers `503 overloaded` at once when the pool and its queue
    /// are full. `f` gets the cancellation flag (set if this future is dropped).
    pub async fn run<T, F>(&self, f: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let permit = self.try_admit()?;
        self.run_admitted(permit, f).await
    }

    /// Background work (repairs): like [`Compute::run_waiting`], but first takes one of the
    /// `threads` lanes that every background driver shares, so background work never holds
    /// more than `threads` admission permits, however many drivers there are.
    pub async fn run_background<T, F>(&self, f: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let _lane = Arc::clone(&self.inner.background)
            .acquire_owned()
            .await
            .map_err(|_| PoolError::Stopped("the search pool stopped"))?;
        self.run_waiting(f).await
    }

    /// Like [`Compute::run`] but waits for room instead of refusing (startup loading).
    pub async fn run_waiting<T, F>(&self, f: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let permit = Arc::clone(&self.inner.admission)
            .acquire_owned()
            .await
            .map_err(|_| PoolError::Stopped("the search pool stopped"))?;
        self.run_admitted(permit, f).await
    }

    /// Occupies `n` workers (and their admission permits) until the returned guard is
    /// dropped; returns once all `n` are running. For maintenance windows and for tests that
    /// need a saturated pool deterministically.
    pub async fn hold(&self, n: usize) -> Result<Hold, PoolError> {
        let mut release = Vec::new();
        let mut started = Vec::new();
        for _ in 0..n {
            let permit = self.try_admit()?;
            let (rel_tx, rel_rx) = oneshot::channel::<()>();
            let (go_tx, go_rx) = oneshot::channel::<()>();
            let cancel = Arc::new(AtomicBool::new(false));
            let (job, rx) = self.job(Arc::new(permit), cancel, move |_| {
                let _ = go_tx.send(());
                let _ = rel_rx.blocking_recv();
            });
            drop(rx);
            let shared = &self.inner.shared;
            shared.enqueue(shared.new_id(), VecDeque::from([job]), true);
            release.push(rel_tx);
            started.push(go_rx);
        }
        for s in started {
            s.await
                .map_err(|_| PoolError::Stopped("the search pool stopped"))?;
        }
        Ok(Hold { _release: release })
    }

    async fn run_admitted<T, F>(&self, permit: OwnedSemaphorePermit, f: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let cancel: Cancel = Arc::new(AtomicBool::new(false));
        let guard = CancelOnDrop(Some(Arc::clone(&cancel)));
        let (job, rx) = self.job(Arc::new(permit), cancel, f);
        let shared = &self.inner.shared;
        shared.enqueue(shared.new_id(), VecDeque::from([job]), true);
        let out = Self::receive(rx).await;
        guard.disarm();
        out
    }

    /// Wraps `f` as a job of a request holding `permit`; the answer (or the panic) comes
    /// back on the receiver. The caller queues the job.
    fn job<T, F>(&self, permit: Arc<OwnedSemaphorePermit>, cancel: Cancel, f: F) -> (Job, Answer<T>)
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let shared = Arc::clone(&self.inner.shared);
        let job: Job = Box::new(move || {
            shared.queued.fetch_sub(1, Ordering::Relaxed);
            // A job whose client left while it waited is skipped; dropping `tx` tells the
            // (already gone) receiver nothing was computed.
            let out = if cancel.load(Ordering::Relaxed) {
                publish(&shared);
                None
            } else {
                shared.running.fetch_add(1, Ordering::Relaxed);
                publish(&shared);
                let out = catch_unwind(AssertUnwindSafe(|| f(&cancel)));
                shared.running.fetch_sub(1, Ordering::Relaxed);
                publish(&shared);
                Some(out)
            };
            // Free the slot before answering: a client that has its answer may send the
            // next request at once and must find the slot free. (A batch's permit is freed
            // with its last job.)
            drop(permit);
            if let Some(out) = out {
                let _ = tx.send(out);
            }
        });
        (job, rx)
    }

    async fn receive<T>(rx: Answer<T>) -> Result<T, PoolError> {
        match rx.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(panic)) => Err(panicked(panic)),
            Err(_) => Err(PoolError::Stopped("search job dropped without an answer")),
        }
    }
}

/// `500 internal` for a job that panicked, with the panic's message.
fn panicked(panic: Box<dyn std::any::Any + Send>) -> PoolError {
    let msg = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    PoolError::Panicked(msg)
}

#[cfg(test)]
mod tests;
