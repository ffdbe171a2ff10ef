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
//! queue of jobs, and a batch puts each of its queries in as a separate job. The workers
//! serve the requests round-robin, one job per turn: a worker takes the next job of the
//! request at the front of the ring and, if that request has more, moves it to the back.
//! So a query that arrives behind a 200-query batch waits for about one job of that batch
//! (plus the jobs already running), not for the whole batch, and several batches share the
//! workers evenly. Jobs are not preempted: a job runs to its own limits.
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
//! checks it inside its loop (`Limits::cancel`); the request's jobs still queued are
//! skipped when their turn comes.
//!
//! Panics: every job runs under `catch_unwind`; a panicking job answers `500 internal` to
//! its request and the worker carries on.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use pathd_engine::Searcher;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

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
    /// The jobs' search memory (see module docs).
    searchers: Searchers,
}

/// Idle searchers. The lock is held for one push or pop, never during a search: a job takes
/// a searcher out and puts it back when it is done.
#[derive(Default)]
pub struct Searchers(Mutex<Vec<Searcher>>);

impl Searchers {
    /// An idle searcher (a new one when none is idle), handed back when the guard drops.
    pub fn checkout(&self) -> SearcherGuard<'_> {
        let idle = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        SearcherGuard {
            pool: self,
            searcher: Some(idle.unwrap_or_default()),
        }
    }
}

/// A searcher checked out of [`Searchers`]; derefs to it.
pub struct SearcherGuard<'a> {
    pool: &'a Searchers,
    searcher: Option<Searcher>,
}

impl std::ops::Deref for SearcherGuard<'_> {
    type Target = Searcher;
    fn deref(&self) -> &Searcher {
        self.searcher.as_ref().expect("held until drop")
    }
}

impl std::ops::DerefMut for SearcherGuard<'_> {
    fn deref_mut(&mut self) -> &mut Searcher {
        self.searcher.as_mut().expect("held until drop")
    }
}

impl Drop for SearcherGuard<'_> {
    fn drop(&mut self) {
        // A search that panicked may have left the searcher half-way: drop it, a new one
        // takes its place on the next checkout.
        if std::thread::panicking() {
            return;
        }
        if let Some(s) = self.searcher.take() {
            self.pool
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(s);
        }
    }
}

/// What the workers and the queued jobs share.
struct Shared {
    sched: Mutex<Sched>,
    /// Signalled when a request is queued or the pool closes.
    ready: Condvar,
    queued: AtomicUsize,
    running: AtomicUsize,
    rejected: AtomicU64,
    cancelled: AtomicU64,
}

/// The round-robin ring of requests with jobs waiting.
#[derive(Default)]
struct Sched {
    ring: VecDeque<VecDeque<Job>>,
    closed: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Sched> {
        // Jobs never run under the lock, so a poisoned lock still holds a sound ring.
        self.sched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one request's jobs (at the back of the ring).
    fn enqueue(&self, jobs: VecDeque<Job>) {
        if jobs.is_empty() {
            return;
        }
        let n = jobs.len();
        self.queued.fetch_add(n, Ordering::Relaxed);
        publish(self);
        self.lock().ring.push_back(jobs);
        if n == 1 {
            self.ready.notify_one();
        } else {
            self.ready.notify_all();
        }
    }

    /// The next job in round-robin order; `None` once the pool is closed and drained.
    fn next_job(&self) -> Option<Job> {
        let mut sched = self.lock();
        loop {
            if let Some(mut request) = sched.ring.pop_front() {
                let job = request.pop_front();
                if !request.is_empty() {
                    sched.ring.push_back(request);
                }
                match job {
                    Some(job) => return Some(job),
                    None => continue, // never queued empty; skip defensively
                }
            }
            if sched.closed {
                return None;
            }
            sched = self
                .ready
                .wait(sched)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.ready.notify_all();
    }
}

/// A snapshot of the pool's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// Worker threads.
    pub threads: usize,
    /// Jobs admitted and waiting for a worker (a batch counts one per query).
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

/// Why the pool did not run a job. The edge maps it to HTTP ([`crate::error`]): `Overloaded`
/// is `503 overloaded` with `Retry-After`, the others `500 internal` (their detail logged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolError {
    /// Every worker is busy and the queue is full.
    Overloaded,
    /// The job panicked (the message); the worker carried on.
    Panicked(String),
    /// The pool stopped before the job answered.
    Stopped(&'static str),
}

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PoolError::Overloaded => {
                f.write_str("every search worker is busy and the queue is full; retry shortly")
            }
            PoolError::Panicked(m) => write!(f, "search job panicked: {m}"),
            PoolError::Stopped(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PoolError {}

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
                searchers: Searchers::default(),
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
        self.inner.searchers.checkout()
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

    /// Runs `f` over `items`, one job per item, as one request of the fair queue (one
    /// admission permit, else `503`): the workers interleave its jobs with other
    /// requests' (see module docs) and run them in parallel when nothing else waits.
    /// Answers in input order.
    pub async fn run_batch<I, T, F>(&self, items: Vec<I>, f: F) -> Result<Vec<T>, PoolError>
    where
        I: Send + 'static,
        T: Send + 'static,
        F: Fn(I, &Cancel) -> T + Send + Sync + 'static,
    {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let permit = Arc::new(self.try_admit()?);
        let f = Arc::new(f);
        let cancel: Cancel = Arc::new(AtomicBool::new(false));
        let guard = CancelOnDrop(Some(Arc::clone(&cancel)));
        let mut receivers = Vec::with_capacity(items.len());
        let jobs = items
            .into_iter()
            .map(|item| {
                let f = Arc::clone(&f);
                let (job, rx) = self.job(Arc::clone(&permit), Arc::clone(&cancel), move |c| {
                    f(item, c)
                });
                receivers.push(rx);
                job
            })
            .collect();
        drop(permit); // the jobs hold it now
        self.inner.shared.enqueue(jobs);
        let mut out = Vec::with_capacity(receivers.len());
        for rx in receivers {
            out.push(Self::receive(rx).await?);
        }
        guard.disarm();
        Ok(out)
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
            self.inner.shared.enqueue(VecDeque::from([job]));
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
        self.inner.shared.enqueue(VecDeque::from([job]));
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
            Ok(Err(panic)) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(PoolError::Panicked(msg))
            }
            Err(_) => Err(PoolError::Stopped("search job dropped without an answer")),
        }
    }
}

fn publish(shared: &Shared) {
    metrics::gauge!("pathd_pool_queue_depth").set(shared.queued.load(Ordering::Relaxed) as f64);
    metrics::gauge!("pathd_pool_busy").set(shared.running.load(Ordering::Relaxed) as f64);
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
        assert_eq!(e, PoolError::Overloaded);
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

    /// Jobs reuse idle searchers (at most one per concurrently running job), and a job that
    /// panics with a searcher out does not hand it back.
    #[tokio::test]
    async fn searchers_are_checked_out_reused_and_dropped_on_panic() {
        let c = Compute::new(2, 4);
        let grid = pathd_engine::Grid::from_costs(4, 1, vec![1; 4], pathd_engine::Movement::Octile)
            .unwrap();
        let idle = |c: &Compute| c.inner.searchers.0.lock().unwrap().len();
        let q = pathd_engine::Query::new(
            pathd_engine::Point::new(0, 0),
            pathd_engine::Point::new(3, 0),
        );
        for _ in 0..20 {
            let (c2, g, q) = (c.clone(), grid.clone(), q.clone());
            let cost = c
                .run(move |_| c2.searcher().find_path(&g, &q).unwrap().cost)
                .await
                .unwrap();
            assert_eq!(cost, 3.0);
        }
        assert_eq!(idle(&c), 1, "sequential jobs share one searcher");
        {
            let (a, b) = (c.searcher(), c.searcher());
            assert_eq!(idle(&c), 0);
            drop((a, b));
        }
        assert_eq!(idle(&c), 2);
        let c2 = c.clone();
        let e = c
            .run(move |_| {
                let _s = c2.searcher();
                panic!("boom")
            })
            .await
            .unwrap_err();
        assert_eq!(e, PoolError::Panicked("boom".into()), "the detail is kept");
        assert_eq!(idle(&c), 1, "the panicking job's searcher is dropped");
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
        assert_eq!(e, PoolError::Panicked("boom".into()));
        assert_eq!(
            c.run(|_| 7).await.unwrap(),
            7,
            "a panic must not kill the worker"
        );
    }
}
