//! Scratch memory of searches, checked out for a job's duration and reused.

use std::sync::{Mutex, PoisonError};

use pathd_engine::Searcher;

/// Idle searchers. The lock is held for one push or pop, never during a search: a job takes
/// a searcher out and puts it back when it is done.
#[derive(Default)]
pub struct Searchers(pub(super) Mutex<Vec<Searcher>>);

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
