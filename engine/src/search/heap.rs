//! The open list: a 4-ary min-heap of 16-byte entries with decrease-key and a total,
//! documented order.
//!
//! Why this shape: a search pops every node it expands, so the heap is the hottest structure
//! after the node records. A 4-ary heap is half as deep as a binary one and its four children
//! share a cache line; 16-byte entries (two `u64`s compared as one `u128`) keep it compact;
//! decrease-key (a slot index per node) keeps each node in it once, where re-pushing left
//! about as many stale entries as live ones on `arena2`, every one costing a full pop.
//!
//! Order (smallest first): `f`, then larger `g`, then smaller node index. Costs are
//! non-negative finite `f64`s; their bit patterns order exactly like the values. `g` is kept at
//! `f32` precision for the tie-break only (the search reads a node's exact `g` from its
//! record), which keeps the order total and deterministic.

/// One entry: `key = f_bits << 64 | (!g_f32_bits) << 32 | node`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry(u128);

impl Entry {
    #[inline]
    fn new(f: f64, g: f64, node: u32) -> Self {
        let tie = (!(g as f32).to_bits() as u64) << 32 | node as u64;
        Entry((f.to_bits() as u128) << 64 | tie as u128)
    }

    #[inline]
    fn node(self) -> u32 {
        self.0 as u32
    }

    #[inline]
    fn f(self) -> f64 {
        f64::from_bits((self.0 >> 64) as u64)
    }
}

/// Min-queue on `(f, -g, node)` with decrease-key, reused across searches (its buffers are
/// never freed). Each node is in the heap at most once: `pos[node]` is its slot while it is
/// open, so an improvement moves the existing entry instead of adding a stale one.
#[derive(Default)]
pub(crate) struct OpenList {
    heap: Vec<Entry>,
    /// Heap slot of each node id currently in the heap (garbage for the others).
    pos: Vec<u32>,
}

const ARITY: usize = 4;

impl OpenList {
    /// Empties the heap and makes room for node ids below `len`.
    #[inline]
    pub(crate) fn begin(&mut self, len: usize) {
        self.heap.clear();
        if self.pos.len() < len {
            self.pos.resize(len, 0);
        }
    }

    /// Adds `node`, which must not be in the heap.
    #[inline]
    pub(crate) fn push(&mut self, f: f64, g: f64, node: u32) {
        debug_assert!(f >= 0.0 && g >= 0.0);
        let i = self.heap.len();
        let e = Entry::new(f, g, node);
        self.heap.push(e);
        self.sift_up(i, e);
    }

    /// Gives `node`, which must be in the heap, its new (improved) key.
    #[inline]
    pub(crate) fn update(&mut self, f: f64, g: f64, node: u32) {
        let i = self.pos[node as usize] as usize;
        let e = Entry::new(f, g, node);
        debug_assert_eq!(self.heap[i].node(), node);
        // A smaller g can round to the same f and then orders later (ties prefer larger g).
        if e < self.heap[i] {
            self.sift_up(i, e);
        } else {
            self.sift_down(i, e);
        }
    }

    /// Pops the smallest entry as `(f, node)`.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(f64, u32)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().unwrap();
        if !self.heap.is_empty() {
            self.sift_down(0, last);
        }
        Some((top.f(), top.node()))
    }

    /// Places `e` at slot `i` or above, moving larger parents down.
    #[inline]
    fn sift_up(&mut self, mut i: usize, e: Entry) {
        while i > 0 {
            let p = (i - 1) / ARITY;
            let pe = self.heap[p];
            if pe <= e {
                break;
            }
            self.heap[i] = pe;
            self.pos[pe.node() as usize] = i as u32;
            i = p;
        }
        self.heap[i] = e;
        self.pos[e.node() as usize] = i as u32;
    }

    /// Places `e` at slot `i` or below, moving smaller children up.
    #[inline]
    fn sift_down(&mut self, mut i: usize, e: Entry) {
        let n = self.heap.len();
        loop {
            let c = i * ARITY + 1;
            let (best, be) = if c + ARITY <= n {
                // Full set of children: a branch-free tournament.
                let kids: &[Entry; ARITY] = self.heap[c..c + ARITY].try_into().unwrap();
                let (a, ia) = min2(kids[0], c, kids[1], c + 1);
                let (b, ib) = min2(kids[2], c + 2, kids[3], c + 3);
                let (m, im) = min2(a, ia, b, ib);
                (im, m)
            } else if c < n {
                let mut best = c;
                let mut be = self.heap[c];
                for (k, &ke) in self.heap.iter().enumerate().take(n).skip(c + 1) {
                    if ke < be {
                        best = k;
                        be = ke;
                    }
                }
                (best, be)
            } else {
                break;
            };
            if be >= e {
                break;
            }
            self.heap[i] = be;
            self.pos[be.node() as usize] = i as u32;
            i = best;
        }
        self.heap[i] = e;
        self.pos[e.node() as usize] = i as u32;
    }
}

/// The smaller of two entries with its index (the first on ties, which cannot happen: node
/// ids make keys unique per push, and equal keys order the same either way).
#[inline(always)]
fn min2(a: Entry, ia: usize, b: Entry, ib: usize) -> (Entry, usize) {
    if b < a { (b, ib) } else { (a, ia) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_f_then_larger_g_then_index() {
        let mut o = OpenList::default();
        o.begin(16);
        o.push(5.0, 1.0, 7);
        o.push(4.0, 0.0, 9);
        o.push(5.0, 3.0, 8);
        o.push(5.0, 3.0, 2);
        let order: Vec<u32> = std::iter::from_fn(|| o.pop().map(|e| e.1)).collect();
        assert_eq!(order, vec![9, 2, 8, 7]);
    }

    #[test]
    fn pops_in_sorted_order_after_updates() {
        let mut o = OpenList::default();
        o.begin(2000);
        let mut want = Vec::new();
        let mut x = 12345u64;
        for i in 0..2000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let f = (x >> 40) as f64 / 7.0;
            let g = ((x >> 20) & 0xff) as f64;
            o.push(f + 50.0, g, i);
            if i % 3 == 0 {
                // Improve a third of them (the same g, a smaller f).
                o.update(f, g, i);
            }
            let f = if i % 3 == 0 { f } else { f + 50.0 };
            want.push((f.to_bits(), !(g as f32).to_bits(), i));
        }
        want.sort();
        let got: Vec<u32> = std::iter::from_fn(|| o.pop().map(|e| e.1)).collect();
        assert_eq!(got, want.iter().map(|w| w.2).collect::<Vec<_>>());
        assert!(o.pop().is_none());
    }
}
