//! The open list: a binary heap with a total, documented order.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One open-list entry. Costs are non-negative finite `f64`s stored as their bit patterns,
/// which order exactly like the values and compare as plain integers.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Entry {
    f: u64,
    g: u64,
    node: u32,
}

impl Ord for Entry {
    /// "Greater" means "popped first": smaller f, then larger g, then smaller node index.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .f
            .cmp(&self.f)
            .then(self.g.cmp(&other.g))
            .then(other.node.cmp(&self.node))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Min-queue on `(f, -g, node)`, reused across searches.
#[derive(Default)]
pub(crate) struct OpenList {
    heap: BinaryHeap<Entry>,
}

impl OpenList {
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }

    #[inline]
    pub(crate) fn push(&mut self, f: f64, g: f64, node: u32) {
        debug_assert!(f >= 0.0 && g >= 0.0);
        self.heap.push(Entry {
            f: f.to_bits(),
            g: g.to_bits(),
            node,
        });
    }

    /// Pops the best entry as `(f, g, node)`.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(f64, f64, u32)> {
        self.heap
            .pop()
            .map(|e| (f64::from_bits(e.f), f64::from_bits(e.g), e.node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_f_then_larger_g_then_index() {
        let mut o = OpenList::default();
        o.push(5.0, 1.0, 7);
        o.push(4.0, 0.0, 9);
        o.push(5.0, 3.0, 8);
        o.push(5.0, 3.0, 2);
        let order: Vec<u32> = std::iter::from_fn(|| o.pop().map(|e| e.2)).collect();
        assert_eq!(order, vec![9, 2, 8, 7]);
    }
}
