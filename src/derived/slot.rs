//! [`Slot`]: one derived structure of one map version, and where it is in its life.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where a slot's structure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Nothing asked for it yet (or the map gets none).
    Idle,
    /// A build is queued or running.
    Building,
    /// Built (or derived from the previous version's); queries use it.
    Ready,
    /// Its build panicked; the next version builds it again.
    Failed,
    /// Dropped to keep derived memory within `--derived-memory-mb`; rebuilt on demand.
    Evicted,
}

impl Status {
    /// The wire name (`None` while idle: the summary leaves the structure out).
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            Status::Idle => None,
            Status::Building => Some("building"),
            Status::Ready => Some("ready"),
            Status::Failed => Some("failed"),
            Status::Evicted => Some("evicted"),
        }
    }
}

/// A logical clock for least-recently-used eviction: every use of a structure takes the
/// next tick.
static CLOCK: AtomicU64 = AtomicU64::new(1);

/// One derived structure of one map version. A short mutex guards the state (never held
/// while building or searching): readers clone the `Arc` and let go, so an eviction never
/// pulls a structure out from under a running query.
#[derive(Debug)]
pub struct Slot<T> {
    inner: Mutex<Inner<T>>,
}

#[derive(Debug)]
struct Inner<T> {
    status: Status,
    value: Option<Arc<T>>,
    /// `build`, `update` or `carried`.
    made_by: &'static str,
    took_us: u64,
    /// Why the build failed (the panic's message).
    error: Option<String>,
    /// [`CLOCK`] tick of the last use.
    last_used: u64,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot {
            inner: Mutex::new(Inner {
                status: Status::Idle,
                value: None,
                made_by: "build",
                took_us: 0,
                error: None,
                last_used: 0,
            }),
        }
    }
}

impl<T> Slot<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The structure, when ready; counts as a use (for eviction).
    pub fn get(&self) -> Option<Arc<T>> {
        let mut s = self.lock();
        let v = s.value.clone();
        if v.is_some() {
            s.last_used = CLOCK.fetch_add(1, Ordering::Relaxed);
        }
        v
    }

    /// The structure, when ready, without counting a use (summaries, derivations).
    pub fn peek(&self) -> Option<Arc<T>> {
        self.lock().value.clone()
    }

    /// Marks a build as started; true when it was not (idle or evicted), so the caller
    /// queues it. Exactly one caller gets `true` per build.
    pub fn start(&self) -> bool {
        let mut s = self.lock();
        if matches!(s.status, Status::Idle | Status::Evicted) {
            s.status = Status::Building;
            true
        } else {
            false
        }
    }

    /// Back to idle (a build that found nothing to make).
    pub fn reset(&self) {
        let mut s = self.lock();
        if s.status == Status::Building {
            s.status = Status::Idle;
        }
    }

    /// Installs the structure (`made_by` how, in `took`); a second one is ignored.
    pub fn set(&self, value: Arc<T>, made_by: &'static str, took: Duration) {
        let mut s = self.lock();
        if s.value.is_some() {
            return;
        }
        *s = Inner {
            status: Status::Ready,
            value: Some(value),
            made_by,
            took_us: took.as_micros() as u64,
            error: None,
            last_used: CLOCK.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Records that the build failed with `error`.
    pub fn fail(&self, error: String) {
        let mut s = self.lock();
        if s.value.is_none() {
            s.status = Status::Failed;
            s.error = Some(error);
        }
    }

    /// Drops a ready structure (queries holding it finish with it); true when it was
    /// ready.
    pub fn evict(&self) -> bool {
        let mut s = self.lock();
        if s.status != Status::Ready {
            return false;
        }
        s.status = Status::Evicted;
        s.value = None;
        true
    }

    /// Where the structure is.
    pub fn status(&self) -> Status {
        self.lock().status
    }

    /// Why its build failed, if it did.
    pub fn error(&self) -> Option<String> {
        self.lock().error.clone()
    }

    /// How it was made: `build`, `update` or `carried`.
    pub fn made_by(&self) -> &'static str {
        self.lock().made_by
    }

    /// How long making it took, in microseconds.
    pub fn took_us(&self) -> u64 {
        self.lock().took_us
    }

    /// The clock tick of its last use (0: never used).
    pub fn last_used(&self) -> u64 {
        self.lock().last_used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_goes_through_its_states_once_per_build() {
        let s = Slot::<u32>::default();
        assert_eq!(s.status(), Status::Idle);
        assert!(s.start() && !s.start(), "one caller queues the build");
        s.fail("boom".into());
        assert_eq!(
            (s.status(), s.error().as_deref()),
            (Status::Failed, Some("boom"))
        );
        assert!(!s.start(), "a failed version is not built again");
        let s = Slot::<u32>::default();
        assert!(s.start());
        s.set(Arc::new(7), "build", Duration::from_micros(5));
        assert_eq!(
            (s.status(), s.get().as_deref(), s.took_us()),
            (Status::Ready, Some(&7), 5)
        );
        let held = s.get().unwrap();
        assert!(s.evict() && !s.evict());
        assert_eq!((s.status(), s.get(), *held), (Status::Evicted, None, 7));
        assert!(s.start(), "an evicted structure is rebuilt on demand");
    }

    #[test]
    fn uses_move_the_clock() {
        let (a, b) = (Slot::<u8>::default(), Slot::<u8>::default());
        a.set(Arc::new(1), "build", Duration::ZERO);
        b.set(Arc::new(2), "build", Duration::ZERO);
        assert!(a.last_used() < b.last_used());
        a.get();
        assert!(a.last_used() > b.last_used());
        let before = b.last_used();
        b.peek();
        assert_eq!(b.last_used(), before, "a peek is not a use");
    }
}
