//! The fair round-robin queue the workers take jobs from, and the counters they publish.

use super::*;

/// What the workers and the queued jobs share.
pub(super) struct Shared {
    pub(super) sched: Mutex<Sched>,
    /// Signalled when a request is queued or the pool closes.
    pub(super) ready: Condvar,
    /// Requests of a single job in the ring: a chunk gives way to them (see module docs).
    pub(super) singles_waiting: AtomicUsize,
    /// Names the requests, for a chunk that puts the rest of itself back in its queue.
    pub(super) next_id: AtomicU64,
    /// The jobs' search memory (see module docs).
    pub(super) searchers: Searchers,
    pub(super) queued: AtomicUsize,
    pub(super) running: AtomicUsize,
    pub(super) rejected: AtomicU64,
    pub(super) cancelled: AtomicU64,
}

/// The round-robin ring of requests with jobs waiting.
#[derive(Default)]
pub(super) struct Sched {
    pub(super) ring: VecDeque<Request>,
    pub(super) closed: bool,
}

/// One request's jobs waiting in the ring.
pub(super) struct Request {
    pub(super) id: u64,
    /// A request of one job (not a batch): chunks give way to it.
    pub(super) single: bool,
    pub(super) jobs: VecDeque<Job>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, Sched> {
        // Jobs never run under the lock, so a poisoned lock still holds a sound ring.
        self.sched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new request's id.
    pub(super) fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Queues one request's jobs (at the back of the ring); `single`: a request of one job
    /// that chunks give way to.
    pub(super) fn enqueue(&self, id: u64, jobs: VecDeque<Job>, single: bool) {
        if jobs.is_empty() {
            return;
        }
        let n = jobs.len();
        self.queued.fetch_add(n, Ordering::Relaxed);
        publish(self);
        {
            let mut sched = self.lock();
            sched.ring.push_back(Request { id, single, jobs });
            if single {
                self.singles_waiting.fetch_add(1, Ordering::Relaxed);
            }
        }
        if n == 1 {
            self.ready.notify_one();
        } else {
            self.ready.notify_all();
        }
    }

    /// Puts `job` back at the front of request `id`'s queue (at the back of the ring when
    /// the request has nothing else queued): the rest of a chunk that gave way.
    pub(super) fn requeue(&self, id: u64, job: Job) {
        self.queued.fetch_add(1, Ordering::Relaxed);
        {
            let mut sched = self.lock();
            match sched.ring.iter_mut().find(|r| r.id == id) {
                Some(request) => request.jobs.push_front(job),
                None => sched.ring.push_back(Request {
                    id,
                    single: false,
                    jobs: VecDeque::from([job]),
                }),
            }
        }
        self.ready.notify_one();
    }

    /// The next job in round-robin order; `None` once the pool is closed and drained.
    pub(super) fn next_job(&self) -> Option<Job> {
        let mut sched = self.lock();
        loop {
            if let Some(mut request) = sched.ring.pop_front() {
                let job = request.jobs.pop_front();
                if !request.jobs.is_empty() {
                    sched.ring.push_back(request);
                } else if request.single {
                    self.singles_waiting.fetch_sub(1, Ordering::Relaxed);
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

pub(super) fn publish(shared: &Shared) {
    metrics::gauge!("pathd_pool_queue_depth").set(shared.queued.load(Ordering::Relaxed) as f64);
    metrics::gauge!("pathd_pool_busy").set(shared.running.load(Ordering::Relaxed) as f64);
}
