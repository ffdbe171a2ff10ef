//! The flat padded copy of the costs the searches read, and the change lists that let a
//! patched grid take its predecessor's copy and rewrite only what changed (see [`Grid`]).

use std::sync::{Arc, Mutex};

use super::{Grid, Point};
use crate::tiles::Tiles;

/// The cells changed since some earlier version, as a shared list of lists: extending it
/// for the next version is `O(its own changes)`.
pub(crate) struct ChangeList {
    prev: Option<Arc<ChangeList>>,
    points: Vec<Point>,
    total: usize,
}

impl ChangeList {
    /// `prev` followed by `points`.
    pub(crate) fn extend(prev: Option<&Arc<ChangeList>>, points: &[Point]) -> Arc<ChangeList> {
        Arc::new(ChangeList {
            prev: prev.cloned(),
            points: points.to_vec(),
            total: prev.map_or(0, |p| p.total) + points.len(),
        })
    }

    /// Number of points, duplicates included.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// Calls `f` on every point (in no particular order; duplicates possible).
    pub(crate) fn for_each(&self, mut f: impl FnMut(Point)) {
        let mut cur = Some(self);
        while let Some(l) = cur {
            l.points.iter().copied().for_each(&mut f);
            cur = l.prev.as_deref();
        }
    }
}

/// A flat padded cost array: cheap to clone, derefs to the cells.
#[derive(Clone)]
pub(crate) struct Cells(Arc<Vec<u8>>);

impl std::ops::Deref for Cells {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// State of a version's flat array (see [`Grid`]).
#[derive(Clone)]
pub(super) enum FlatState {
    /// Materialised.
    Ready(Arc<Vec<u8>>),
    /// To be taken (or copied) from an earlier version's slot, then the listed cells
    /// rewritten.
    Derive {
        base: Arc<FlatSlot>,
        changes: Arc<ChangeList>,
    },
    /// To be built from the tiles.
    Empty,
}

/// One version's flat array, behind a lock so a later version can take it.
pub(crate) struct FlatSlot {
    state: Mutex<FlatState>,
}

impl FlatSlot {
    pub(super) fn new(state: FlatState) -> Self {
        FlatSlot {
            state: Mutex::new(state),
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, FlatState> {
        // The state is replaced whole, never left half-written: a poisoned lock is usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This slot's array for a later version: taken when nobody else holds it (the slot is
    /// left empty and rebuilds on its own next use), else copied. `None` if not
    /// materialised.
    pub(super) fn take_or_copy(&self) -> Option<Vec<u8>> {
        let mut st = self.lock();
        let FlatState::Ready(a) = &*st else {
            return None;
        };
        if Arc::strong_count(a) > 1 {
            return Some(a.to_vec());
        }
        let FlatState::Ready(a) = std::mem::replace(&mut *st, FlatState::Empty) else {
            unreachable!("matched above")
        };
        Some(Arc::try_unwrap(a).unwrap_or_else(|a| a.to_vec()))
    }
}

/// Largest number of pending changed cells a lazily derived structure accumulates before a
/// version gives up on deriving and rebuilds from scratch.
pub(super) fn derive_cap(cells: usize) -> usize {
    (cells / 16).max(4096)
}

/// The padded flat array of tiled costs.
pub(super) fn build_flat(costs: &Tiles<u8>) -> Vec<u8> {
    let (w, h) = (costs.width() as usize, costs.height() as usize);
    let pw = w + 2;
    let mut cells = vec![0u8; pw * (h + 2)];
    for y in 0..h {
        let s = (y + 1) * pw + 1;
        costs.read_row(y as u32, &mut cells[s..s + w]);
    }
    cells
}

/// Histogram of passable costs of a padded (or any) cost array.
pub(super) fn histogram(cells: &[u8]) -> [u32; 256] {
    let mut hist = [0u32; 256];
    for &c in cells {
        hist[c as usize] += 1;
    }
    hist[0] = 0;
    hist
}

impl Grid {
    /// The padded cost array (`padded_len` cells, border 0), materialised on first use (see
    /// [`Grid`]). Searches take it once and index it in their loops.
    pub(crate) fn cells(&self) -> Cells {
        let mut st = self.flat.lock();
        if let FlatState::Ready(a) = &*st {
            return Cells(Arc::clone(a));
        }
        let cells = match std::mem::replace(&mut *st, FlatState::Empty) {
            FlatState::Derive { base, changes } => match base.take_or_copy() {
                Some(mut cells) => {
                    changes.for_each(|p| cells[self.pidx(p)] = self.costs.get(p.x, p.y));
                    cells
                }
                None => build_flat(&self.costs),
            },
            _ => build_flat(&self.costs),
        };
        let a = Arc::new(cells);
        *st = FlatState::Ready(Arc::clone(&a));
        Cells(a)
    }
}
