//! Batches on the pool: a request's items in jobs of at most `chunk` items each (see the
//! module docs of [`super`] for how the workers share them).
//!
//! A chunk's turn gathers what its items give into one *part* of the caller's choosing (a
//! `Vec` of answers, or the bytes of their answers written on the worker); the turn that
//! answers the batch's last items sends every part back in one message (one wake-up of
//! the waiting request). Writing on the worker matters for long answers: whatever a
//! search allocates (its path) is then freed by the thread that allocated it, instead of
//! crossing to the runtime's thread, where the allocator's slow path (another thread's
//! arena) showed up in `perf` as a tenth of a batch's CPU.

use tokio::sync::mpsc;

use super::*;

impl Compute {
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
        let parts = self
            .run_lazy(
                items,
                1,
                move |item, cancel, _: &mut ChunkSearcher<'_>, part| {
                    *part = Some(f(item, cancel));
                },
            )
            .await?;
        Ok(parts.into_iter().flatten().collect())
    }

    /// Runs `f` over `items` as one request of the fair queue (one admission permit, else
    /// `503`), in jobs of at most `chunk` items: each job runs its items one after the
    /// other on one worker with one searcher (checked out at its first item, handed to
    /// every item) and sends their answers back at once. A chunk gives way to a waiting
    /// single-job request between two items and stops at the first item after its client
    /// left (see module docs). Answers in input order.
    pub async fn run_chunked<I, T, F>(
        &self,
        items: Vec<I>,
        chunk: usize,
        f: F,
    ) -> Result<Vec<T>, PoolError>
    where
        I: Send + 'static,
        T: Send + 'static,
        F: Fn(I, &Cancel, &mut Searcher) -> T + Send + Sync + 'static,
    {
        let n = items.len();
        let parts = self
            .run_parts(items, chunk, move |item, cancel, s, part: &mut Vec<T>| {
                part.push(f(item, cancel, s));
            })
            .await?;
        let mut out = Vec::with_capacity(n);
        for part in parts {
            out.extend(part);
        }
        Ok(out)
    }

    /// [`Compute::run_chunked`], each turn of a chunk gathering its items' answers into one
    /// part: `f` adds item `i`'s answer to the part of its turn (a new `P::default()` at
    /// each turn). Answers the parts in input order: item after item, the parts hold
    /// every item's answer once, in order.
    pub async fn run_parts<I, P, F>(
        &self,
        items: Vec<I>,
        chunk: usize,
        f: F,
    ) -> Result<Vec<P>, PoolError>
    where
        I: Send + 'static,
        P: Default + Send + 'static,
        F: Fn(I, &Cancel, &mut Searcher, &mut P) + Send + Sync + 'static,
    {
        self.run_lazy(
            items,
            chunk,
            move |item, cancel, s: &mut ChunkSearcher<'_>, part| f(item, cancel, s.get(), part),
        )
        .await
    }

    /// [`Compute::run_parts`] with the searcher checked out only if an item asks for it.
    async fn run_lazy<I, P, F>(
        &self,
        mut items: Vec<I>,
        chunk: usize,
        f: F,
    ) -> Result<Vec<P>, PoolError>
    where
        I: Send + 'static,
        P: Default + Send + 'static,
        F: Fn(I, &Cancel, &mut ChunkSearcher<'_>, &mut P) + Send + Sync + 'static,
    {
        let n = items.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let chunk = chunk.max(1);
        let permit = self.try_admit()?;
        let cancel: Cancel = Arc::new(AtomicBool::new(false));
        let guard = CancelOnDrop(Some(Arc::clone(&cancel)));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let parts = Mutex::new(Vec::with_capacity(n.div_ceil(chunk)));
        let shared = Arc::clone(&self.inner.shared);
        let batch = Arc::new(Batch {
            id: shared.new_id(),
            f,
            cancel,
            unanswered: AtomicUsize::new(n),
            parts,
            permit: Mutex::new(Some(permit)),
            tx,
            shared: Arc::clone(&shared),
        });
        let mut jobs = VecDeque::with_capacity(n.div_ceil(chunk));
        while !items.is_empty() {
            let at = (items.len() - 1) / chunk * chunk;
            let tail = items.split_off(at);
            jobs.push_front(Batch::job(Arc::clone(&batch), at, tail.into_iter()));
        }
        let id = batch.id;
        drop(batch); // the jobs hold it (and the permit) now
        shared.enqueue(id, jobs, false);
        let mut parts = match rx.recv().await {
            Some(Ok(parts)) => parts,
            Some(Err(panic)) => return Err(panicked(panic)),
            None => return Err(PoolError::Stopped("search job dropped without an answer")),
        };
        guard.disarm();
        parts.sort_unstable_by_key(|&(at, _)| at);
        Ok(parts.into_iter().map(|(_, part)| part).collect())
    }
}

/// A searcher for a chunk's items, checked out at the first item that asks for one and
/// handed back when the chunk's turn ends.
struct ChunkSearcher<'a> {
    pool: &'a Searchers,
    held: Option<SearcherGuard<'a>>,
}

impl ChunkSearcher<'_> {
    fn get(&mut self) -> &mut Searcher {
        self.held.get_or_insert_with(|| self.pool.checkout())
    }
}

/// What a batch's chunks send back: every part with the index of its first item (sent
/// once, by the turn that answers the last items: one wake-up of the waiting request, not
/// one a turn), or the panic of one.
type Parts<P> = std::thread::Result<Vec<(usize, P)>>;

/// A batch run in chunks ([`Compute::run_parts`]).
struct Batch<P, F> {
    id: u64,
    f: F,
    cancel: Cancel,
    /// Items not answered yet: the chunk that answers the last ones frees the permit
    /// before it sends them (as a single job does).
    unanswered: AtomicUsize,
    /// The parts answered so far, each with the index of its first item.
    parts: Mutex<Vec<(usize, P)>>,
    /// The batch's admission permit, held until its last item is answered or its last
    /// job is gone.
    permit: Mutex<Option<OwnedSemaphorePermit>>,
    tx: mpsc::UnboundedSender<Parts<P>>,
    shared: Arc<Shared>,
}

impl<P, F> Batch<P, F>
where
    P: Default + Send + 'static,
{
    /// The job that runs `items`, the first of them item `at` of the batch.
    fn job<I>(batch: Arc<Self>, at: usize, items: std::vec::IntoIter<I>) -> Job
    where
        I: Send + 'static,
        F: Fn(I, &Cancel, &mut ChunkSearcher<'_>, &mut P) + Send + Sync + 'static,
    {
        Box::new(move || batch.run(at, items))
    }

    /// One turn of a chunk: its items until the last, a cancel, or a single-job request
    /// waiting (then the rest goes back to the front of the batch's queue).
    fn run<I>(self: Arc<Self>, at: usize, mut items: std::vec::IntoIter<I>)
    where
        I: Send + 'static,
        F: Fn(I, &Cancel, &mut ChunkSearcher<'_>, &mut P) + Send + Sync + 'static,
    {
        let shared = &*self.shared;
        shared.queued.fetch_sub(1, Ordering::Relaxed);
        // A chunk whose client left while it waited is skipped (its items dropped).
        if self.cancel.load(Ordering::Relaxed) {
            publish(shared);
            return;
        }
        shared.running.fetch_add(1, Ordering::Relaxed);
        publish(shared);
        let mut part = P::default();
        let mut done = 0;
        let out = catch_unwind(AssertUnwindSafe(|| {
            let mut searcher = ChunkSearcher {
                pool: &shared.searchers,
                held: None,
            };
            while let Some(item) = items.next() {
                (self.f)(item, &self.cancel, &mut searcher, &mut part);
                done += 1;
                if items.as_slice().is_empty()
                    || self.cancel.load(Ordering::Relaxed)
                    || shared.singles_waiting.load(Ordering::Relaxed) > 0
                {
                    break;
                }
            }
        }));
        shared.running.fetch_sub(1, Ordering::Relaxed);
        publish(shared);
        if let Err(panic) = out {
            let _ = self.tx.send(Err(panic));
            return;
        }
        if !items.as_slice().is_empty() && !self.cancel.load(Ordering::Relaxed) {
            // Gave way: the rest waits for the batch's next turn.
            let id = self.id;
            let rest = Self::job(Arc::clone(&self), at + done, items);
            shared.requeue(id, rest);
        }
        let all = {
            let mut parts = self.parts.lock().unwrap_or_else(PoisonError::into_inner);
            parts.push((at, part));
            // Under the lock, so the turn that answers the last items finds every part.
            (self.unanswered.fetch_sub(done, Ordering::Relaxed) == done)
                .then(|| std::mem::take(&mut *parts))
        };
        if let Some(all) = all {
            // Free the slot before answering (see `Compute::job`).
            drop(
                self.permit
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(),
            );
            let _ = self.tx.send(Ok(all));
        }
    }
}
