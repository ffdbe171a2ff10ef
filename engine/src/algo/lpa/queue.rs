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
//!
//! The goal trees' forward repair (an A* from the agent, `goal_tree::route`) uses the same
//! queue with the keys `[f, g]` and the opposite tie rule on the second component (larger
//! `g` first, deeper first): [`Queue<true>`](Queue), which stores `k2`'s bits complemented
//! (for non-negative floats that reverses their order exactly).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A queue key, compared lexicographically: D* Lite's `[min(g, rhs) + h(start, s) + km,
/// min(g, rhs)]`, a goal tree's `[min(g, rhs), min(g, rhs)]`, or a forward repair's `[f, g]`.
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
/// exactly like the values (`k2` complemented in a [`Queue<true>`](Queue)).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Entry {
    k1: u64,
    k2: u64,
    node: u32,
}

impl Ord for Entry {
    /// "Greater" pops first: smaller `k1`, then smaller stored `k2` (the paper's order: a vertex
    /// before the vertices whose `g` it feeds; the larger `k2` first in a `Queue<true>`), then
    /// smaller cell id (determinism).
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

/// The queue; `DEEP`: ties on `k1` go to the larger `k2`.
#[derive(Clone, Default)]
pub(crate) struct Queue<const DEEP: bool = false> {
    heap: BinaryHeap<Entry>,
    /// Length right after the last rebuild, the yardstick for [`Queue::should_compact`].
    rebuilt_len: usize,
}

impl<const DEEP: bool> Queue<DEEP> {
    /// `k2`'s stored bits (complemented for `DEEP`: an involution).
    #[inline]
    fn k2_bits(bits: u64) -> u64 {
        if DEEP { !bits } else { bits }
    }

    #[inline]
    fn decode(e: &Entry) -> (Key, u32) {
        let key = Key {
            k1: f64::from_bits(e.k1),
            k2: f64::from_bits(Self::k2_bits(e.k2)),
        };
        (key, e.node)
    }

    #[inline]
    pub fn push(&mut self, key: Key, node: u32) {
        debug_assert!(key.k1 >= 0.0 && key.k2 >= 0.0 && key.k1.is_finite());
        self.heap.push(Entry {
            k1: key.k1.to_bits(),
            k2: Self::k2_bits(key.k2.to_bits()),
            node,
        });
    }

    /// The smallest entry's key and vertex.
    #[inline]
    pub fn peek(&self) -> Option<(Key, u32)> {
        self.heap.peek().map(Self::decode)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Key, u32)> {
        self.heap.pop().map(|e| Self::decode(&e))
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
        let mut q = Queue::<false>::default();
        let k = |k1, k2| Key { k1, k2 };
        q.push(k(5.0, 3.0), 1);
        q.push(k(5.0, 1.0), 9);
        q.push(k(4.0, 4.0), 7);
        q.push(k(5.0, 1.0), 2);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|e| e.1)).collect();
        assert_eq!(order, vec![7, 2, 9, 1]);
        assert!(k(1.0, 2.0).less(k(1.0, 3.0)) && !k(1.0, 3.0).less(k(1.0, 3.0)));
    }

    #[test]
    fn deep_order_is_k1_then_larger_k2_then_cell() {
        let mut q = Queue::<true>::default();
        let k = |k1, k2| Key { k1, k2 };
        for (key, node) in [(k(5.0, 3.0), 1), (k(5.0, 0.0), 9), (k(4.0, 4.0), 7)] {
            q.push(key, node);
        }
        q.push(k(5.0, 3.0), 0);
        q.push(k(5.0, 1e-300), 3);
        let popped: Vec<(Key, u32)> = std::iter::from_fn(|| q.pop()).collect();
        let order: Vec<u32> = popped.iter().map(|e| e.1).collect();
        assert_eq!(order, vec![7, 0, 1, 3, 9]);
        // Keys come back exactly.
        assert_eq!(popped[3].0, k(5.0, 1e-300));
        assert_eq!(popped[4].0, k(5.0, 0.0));
    }
}
