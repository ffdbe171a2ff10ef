//! Each map's write order and its bounded queue of admitted writes.
//!
//! A write of a map is *admitted* (counted against `--max-pending-writes`, else `503
//! overloaded` at once) before its task is spawned, and counted until it has its answer;
//! the write order (a FIFO mutex) then runs the map's writes one at a time. A name's entry
//! lives only while a write is pending or the order is held or awaited, so names seen once
//! (refused with `too_many_maps`, or deleted) cost nothing.

use std::sync::Arc;

use tokio::sync::OwnedMutexGuard;

use super::{Maps, MapsError};

/// One map's write order and its admitted writes (see `Inner::writers`).
#[derive(Default)]
pub(super) struct WriteQueue {
    /// The write order: one write (or subscription registration) at a time, FIFO.
    order: Arc<tokio::sync::Mutex<()>>,
    /// Writes admitted and not yet answered.
    pending: usize,
}

/// Holds a map's write order (see [`Maps::write_order`]); the entry is pruned on drop when
/// nothing else uses it.
pub struct WriteOrder {
    guard: Option<OwnedMutexGuard<()>>,
    maps: Maps,
    name: String,
}

impl Drop for WriteOrder {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.maps.release(&self.name, false);
    }
}

/// One admitted write of a map, counted until it has its answer.
pub(super) struct Admitted {
    maps: Maps,
    name: String,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.maps.release(&self.name, true);
    }
}

impl Maps {
    /// Holds `name`'s write order until the guard is dropped: no write of that map lands
    /// meanwhile (subscriptions take it between their first search and registration).
    pub async fn write_order(&self, name: &str) -> WriteOrder {
        let m = Arc::clone(
            &self
                .inner
                .writers
                .lock()
                .expect("writers lock")
                .entry(name.to_owned())
                .or_default()
                .order,
        );
        let mut order = WriteOrder {
            guard: None,
            maps: self.clone(),
            name: name.to_owned(),
        };
        order.guard = Some(m.lock_owned().await);
        order
    }

    /// For read-only work that registers optimistically (flow fields, subscriptions): the
    /// write order on its last try (`attempt == tries`), so a map written without pause
    /// still lets it through; nothing before.
    pub async fn last_resort_order(
        &self,
        name: &str,
        attempt: usize,
        tries: usize,
    ) -> Option<WriteOrder> {
        if attempt < tries {
            return None;
        }
        Some(self.write_order(name).await)
    }

    /// Names with a write-queue entry (for tests: an entry lives only while in use).
    pub fn write_queues(&self) -> usize {
        self.inner.writers.lock().expect("writers lock").len()
    }

    /// Admits one write of `name`, or refuses it when the map already has `max_pending`.
    pub(super) fn admit(&self, name: &str) -> Result<Admitted, MapsError> {
        let mut writers = self.inner.writers.lock().expect("writers lock");
        let q = writers.entry(name.to_owned()).or_default();
        if q.pending >= self.inner.max_pending {
            metrics::counter!("pathd_writes_refused_total").increment(1);
            return Err(MapsError::Overloaded(self.inner.max_pending));
        }
        q.pending += 1;
        Ok(Admitted {
            maps: self.clone(),
            name: name.to_owned(),
        })
    }

    /// Ends one use of `name`'s entry (an admitted write when `write`); removes the entry
    /// once no write is pending and nobody holds or waits for its order. (Every holder
    /// clones the order's `Arc` under the `writers` lock, so the count cannot grow while
    /// this looks at it.)
    fn release(&self, name: &str, write: bool) {
        let mut writers = self.inner.writers.lock().expect("writers lock");
        if let Some(q) = writers.get_mut(name) {
            if write {
                q.pending -= 1;
            }
            if q.pending == 0 && Arc::strong_count(&q.order) == 1 {
                writers.remove(name);
            }
        }
    }
}
