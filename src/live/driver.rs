//! One repair driver for every kind of live thing (subscription groups, flow fields, live
//! plans): the kinds queue their own work per thing and [`Driver::schedule`] the thing once;
//! the driver task hands scheduled things to the search pool, never to the async runtime.
//!
//! Why one piece: the admission rules are the server's, not a kind's. Every job is admitted
//! with [`Compute::run_background`] (it *waits* for a worker instead of being dropped when
//! the pool is saturated), and each driver runs at most one job per worker thread at a
//! time, so repairs never make a query get `503` on their own while queries keep their own
//! admission. Things are taken in arrival order, in jobs of at most `job` things (short
//! jobs let queued queries interleave with a large fan-out), and a kind may split its work
//! into passes over the whole batch (subscriptions answer every group first, then settle
//! every tree, so no group's background work holds up another's events).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::compute::Compute;

/// The things of one kind with work scheduled, and the wake-up of their driver task.
pub struct Driver<T> {
    /// Scheduled things, in arrival order (each kind schedules a thing once until its work
    /// is drained, under its own `scheduled` flag).
    dirty: Mutex<VecDeque<Arc<T>>>,
    /// Wakes the driver task.
    wake: Notify,
}

impl<T> Default for Driver<T> {
    fn default() -> Self {
        Driver {
            dirty: Mutex::default(),
            wake: Notify::new(),
        }
    }
}

/// How a kind's work runs on a pool thread: `work(thing, pass)` for every pass.
pub struct Plan<T, F> {
    /// The kind, for logs.
    pub what: &'static str,
    /// Most things in one job.
    pub job: usize,
    /// Passes over each batch (at least 1).
    pub passes: usize,
    /// The work of one thing in one pass.
    pub work: F,
    /// Called for each thing of a job the pool refused or lost (it stopped, or the job
    /// panicked): whoever waits on its work gets an answer.
    pub failed: fn(&Arc<T>),
}

impl<T: Send + Sync + 'static> Driver<T> {
    /// Queues `things` for the driver task (and wakes it when there is any).
    pub fn schedule(&self, things: impl IntoIterator<Item = Arc<T>>) {
        let mut dirty = self.dirty.lock().expect("dirty lock");
        let before = dirty.len();
        dirty.extend(things);
        let any = dirty.len() > before;
        drop(dirty);
        if any {
            self.wake.notify_one();
        }
    }

    /// The driver task: runs scheduled things as `plan` says until `shutdown`.
    pub async fn run<F>(&self, compute: Compute, shutdown: CancellationToken, plan: Plan<T, F>)
    where
        F: Fn(&Arc<T>, usize) + Clone + Send + Sync + 'static,
    {
        loop {
            let batch: Vec<Arc<T>> = self.dirty.lock().expect("dirty lock").drain(..).collect();
            if batch.is_empty() {
                tokio::select! {
                    _ = self.wake.notified() => continue,
                    _ = shutdown.cancelled() => return,
                }
            }
            for pass in 0..plan.passes.max(1) {
                run_jobs(&compute, &batch, &plan, pass).await;
            }
        }
    }
}

/// Runs `things` on the pool in jobs of at most `plan.job`, one job per worker thread.
async fn run_jobs<T, F>(compute: &Compute, things: &[Arc<T>], plan: &Plan<T, F>, pass: usize)
where
    T: Send + Sync + 'static,
    F: Fn(&Arc<T>, usize) + Clone + Send + Sync + 'static,
{
    let jobs: Vec<Vec<Arc<T>>> = things.chunks(plan.job.max(1)).map(<[_]>::to_vec).collect();
    futures_util::stream::iter(jobs)
        .for_each_concurrent(compute.threads(), |job| {
            let work = plan.work.clone();
            async move {
                let mine = job.clone();
                let run = compute.run_background(move |_| {
                    for thing in &mine {
                        work(thing, pass);
                    }
                });
                if let Err(e) = run.await {
                    tracing::error!(error = %e, kind = plan.what, "repair job failed");
                    job.iter().for_each(plan.failed);
                }
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn every_scheduled_thing_runs_once_per_pass_in_jobs() {
        let driver = Arc::new(Driver::<AtomicUsize>::default());
        let compute = Compute::new(2, 4);
        let shutdown = CancellationToken::new();
        let things: Vec<Arc<AtomicUsize>> = (0..5).map(|_| Arc::new(AtomicUsize::new(0))).collect();
        driver.schedule(things.iter().cloned());
        let task = {
            let (d, c, s) = (Arc::clone(&driver), compute.clone(), shutdown.clone());
            tokio::spawn(async move {
                let plan = Plan {
                    what: "test",
                    job: 2,
                    passes: 2,
                    work: |t: &Arc<AtomicUsize>, pass: usize| {
                        t.fetch_add(1 + pass * 10, Ordering::SeqCst);
                    },
                    failed: |_| {},
                };
                d.run(c, s, plan).await
            })
        };
        let t = std::time::Instant::now();
        while things.iter().any(|t| t.load(Ordering::SeqCst) != 12) {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(10),
                "never ran"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        shutdown.cancel();
        task.await.unwrap();
        assert!(things.iter().all(|t| t.load(Ordering::SeqCst) == 12));
    }
}
