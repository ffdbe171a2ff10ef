//! [`Builders`]: the one supervised pool that builds derived state in the background.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak, mpsc};
use std::thread::JoinHandle;

use crate::derived::MapEntry;

/// Work for one entry: builds something into one of its slots.
type Work = Box<dyn FnOnce(&Arc<MapEntry>) + Send>;
/// Records a failed build (the panic's message) in the entry's slot.
type Fail = Box<dyn FnOnce(&MapEntry, String) + Send>;

enum Message {
    Job {
        /// Weak: a version replaced or deleted while queued is dropped, not built.
        entry: Weak<MapEntry>,
        work: Work,
        fail: Fail,
    },
    Stop,
}

/// Named lanes of builder threads (one thread a lane, a FIFO queue each), started when a
/// builder asks for a lane and joined by [`Builders::shutdown`] (which [`crate::run`]
/// calls). Every job runs under `catch_unwind`: a panic is logged, counted
/// (`pathd_derived_failures_total{kind}`) and recorded in the structure's slot as
/// `failed` with its message, and the lane goes on with the next job. Lanes are separate
/// so that a quick build never waits behind a slow one of another kind (a small map's
/// jump table behind a big map's landmarks).
pub struct Builders {
    lanes: Mutex<Vec<(mpsc::Sender<Message>, JoinHandle<()>)>>,
    /// Set by shutdown: queued jobs are skipped.
    stop: Arc<AtomicBool>,
    /// Test-only fault hook (see [`crate::Config::test_fail_builds_of`]).
    fail_builds_of: Option<String>,
}

/// A queue into one lane.
pub struct Lane {
    kind: &'static str,
    tx: Mutex<mpsc::Sender<Message>>,
}

impl Builders {
    /// A pool with no lanes yet; `fail_builds_of` is the test-only fault hook.
    pub fn new(fail_builds_of: Option<String>) -> Arc<Self> {
        Arc::new(Builders {
            lanes: Mutex::default(),
            stop: Arc::new(AtomicBool::new(false)),
            fail_builds_of,
        })
    }

    /// Starts the lane for `kind` (a thread named `pathd-<kind>`). A lane whose thread
    /// cannot be started drops its jobs (logged): its structures stay `building`, and the
    /// queries that can fall back do.
    pub fn lane(&self, kind: &'static str) -> Lane {
        let (tx, rx) = mpsc::channel::<Message>();
        let stop = Arc::clone(&self.stop);
        let hook = self.fail_builds_of.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("pathd-{kind}"))
            .spawn(move || run_lane(kind, &rx, &stop, hook.as_deref()));
        match spawned {
            Ok(handle) => self
                .lanes
                .lock()
                .expect("lanes lock")
                .push((tx.clone(), handle)),
            Err(e) => tracing::error!(error = %e, kind, "could not start a builder lane"),
        }
        Lane {
            kind,
            tx: Mutex::new(tx),
        }
    }

    /// Stops every lane: queued jobs are skipped, the running ones finish, the threads are
    /// joined. Blocks: call it off the async runtime.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Release);
        let lanes = std::mem::take(&mut *self.lanes.lock().expect("lanes lock"));
        for (tx, _) in &lanes {
            let _ = tx.send(Message::Stop);
        }
        for (_, handle) in lanes {
            let _ = handle.join();
        }
    }
}

impl Lane {
    /// Queues `work` for `entry`; `fail` records a panic of it in the entry's slot.
    pub fn send(
        &self,
        entry: &Arc<MapEntry>,
        work: impl FnOnce(&Arc<MapEntry>) + Send + 'static,
        fail: impl FnOnce(&MapEntry, String) + Send + 'static,
    ) {
        let msg = Message::Job {
            entry: Arc::downgrade(entry),
            work: Box::new(work),
            fail: Box::new(fail),
        };
        if self.tx.lock().expect("lane lock").send(msg).is_err() {
            tracing::debug!(kind = self.kind, "builder lane stopped; job dropped");
        }
    }
}

fn run_lane(
    kind: &'static str,
    rx: &mpsc::Receiver<Message>,
    stop: &AtomicBool,
    hook: Option<&str>,
) {
    while let Ok(Message::Job { entry, work, fail }) = rx.recv() {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let Some(entry) = entry.upgrade() else {
            continue;
        };
        let run = AssertUnwindSafe(|| {
            if hook == Some(entry.name.as_str()) && entry.version == 1 {
                panic!("test-only fault in the {kind} build of {}", entry.name);
            }
            work(&entry)
        });
        if let Err(panic) = catch_unwind(run) {
            let why = message(panic.as_ref());
            tracing::error!(
                map = %entry.name, version = entry.version, kind, error = %why,
                "a derived structure failed to build; the map's next version builds it again"
            );
            metrics::counter!("pathd_derived_failures_total", "kind" => kind).increment(1);
            fail(&entry, why);
        }
    }
}

/// A panic payload's message.
fn message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "the build panicked".to_owned()
    }
}
