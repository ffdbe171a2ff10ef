//! The LPA* queue `U`: a binary heap of `(k1, k2, cell)` with lazy deletion, shared by D* Lite
//! (keys with a heuristic and the key modifier `km`) and the goal trees (keys `[min, min]`).
//!
//! The paper's queue supports update and remove; a heap with re-push is simpler and faster,
//! and stays exact because of two facts the search loop relies on:
//! - `U` is by definition the set of inconsistent vertices (`g != rhs`), so an entry whose
//!   vertex is consistent when it surfaces is dropped;
//! - whenever a vertex's `min(g, rhs)` changes while it is inconsistent, a fresh entry is
//!   pushed, and keys only grow afterwards (the key modifier `km` makes keys pushed before the
//!   start moved lower bounds), so the newest entry of a vertex never surfaces after its true
//!   key; an older, lower entry surfaces first and is re-pushed at the true key.
//!
//! So decrease-key is a fresh push (the older entry surfaces later and is dropped or
//! re-pushed) and remove is implicit (a vertex made consistent has its entries dropped as
//! they surface). Why not the indexed heap of `search/heap.rs`: it keeps a slot per
//! vertex in a map-sized array, which the thousands of per-subscription searches on one map
//! cannot each afford (their vertex store is sparse for that reason), and a hash map in its
//! place would be updated at every sift step.
//!
//! Stale entries are garbage; [`Queue::should_compact`] says when rebuilding pays.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A D* Lite key: `[min(g, rhs) + h(start, s) + km, min(g, rhs)]`, compared lexicographically.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Key {
    pub k1: f64,
    pub k2: f64,
}

impl Key {
    /// Lexicographic `self < other`.
    #[inline]
    pub fn less(self, other: Key) -> bool {
        self.k1 < other.k1 || self.k1 == other.k1 && self.k2 < other.k2
    }
}

/// One heap entry. Keys are non-negative finite `f64`s stored as bit patterns, which order
/// exactly like the values.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    k1: u64,
    k2: u64,
    pub node: u32,
}

impl Entry {
    #[inline]
    pub fn key(&self) -> Key {
        Key {
            k1: f64::from_bits(self.k1),
            k2: f64::from_bits(self.k2),
        }
    }
}

impl Ord for Entry {
    /// "Greater" pops first: smaller `k1`, then smaller `k2` (the paper's order: a vertex
    /// before the vertices whose `g` it feeds), then smaller cell id (determinism).
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .k1
            .cmp(&self.k1)
            .then(other.k2.cmp(&self.k2))
            .then(other.node.cmp(&self.node))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The queue.
#[derive(Clone, Default)]
pub(crate) struct Queue {
    heap: BinaryHeap<Entry>,
    /// Length right after the last rebuild, the yardstick for [`Queue::should_compact`].
    rebuilt_len: usize,
}

impl Queue {
    #[inline]
    pub fn push(&mut self, key: Key, node: u32) {
        debug_assert!(key.k1 >= 0.0 && key.k2 >= 0.0 && key.k1.is_finite());
        self.heap.push(Entry {
            k1: key.k1.to_bits(),
            k2: key.k2.to_bits(),
            node,
        });
    }

    #[inline]
    pub fn peek(&self) -> Option<Entry> {
        self.heap.peek().copied()
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Entry> {
        self.heap.pop()
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<Entry>()
    }

    /// True when stale entries probably outnumber live ones.
    pub fn should_compact(&self) -> bool {
        self.heap.len() > 2 * self.rebuilt_len + 4096
    }

    /// Empties the queue, returning each queued cell once (sorted), for a rebuild with fresh
    /// keys.
    pub fn drain_cells(&mut self) -> Vec<u32> {
        let mut cells: Vec<u32> = self.heap.drain().map(|e| e.node).collect();
        cells.sort_unstable();
        cells.dedup();
        cells
    }

    /// Records the current length as the post-rebuild size.
    pub fn mark_rebuilt(&mut self) {
        self.heap.shrink_to_fit();
        self.rebuilt_len = self.heap.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_k1_then_k2_then_cell() {
        let mut q = Queue::default();
        let k = |k1, k2| Key { k1, k2 };
        q.push(k(5.0, 3.0), 1);
        q.push(k(5.0, 1.0), 9);
        q.push(k(4.0, 4.0), 7);
        q.push(k(5.0, 1.0), 2);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|e| e.node)).collect();
        assert_eq!(order, vec![7, 2, 9, 1]);
        assert!(k(1.0, 2.0).less(k(1.0, 3.0)) && !k(1.0, 3.0).less(k(1.0, 3.0)));
    }
}
