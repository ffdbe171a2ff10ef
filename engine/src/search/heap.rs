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
//!
//! `f` is compared rounded to 36 significant bits (the nearest multiple of 2^-36 of its
//! power of two, [`round_f`]), the relative margin [`super::IMPROVES_BY`] below which the
//! search already treats two costs as equal. Why: `f = g + h` is a floating-point sum whose
//! last bits depend on the order the path's steps were added in, so two nodes of the same true
//! `f` often came out an ulp or two apart, and the tie-break on `g` (which finishes the
//! deeper of two equally good nodes first) never saw them as tied. Rounded, they tie: A* on
//! `Berlin_1_1024` expands 8% fewer nodes (89.4k instead of 97.0k a query, over 250 sampled
//! rows; exactly warthog's count), `arena2` 2% fewer. Nothing else changes: by the argument at
//! [`super::IMPROVES_BY`], on uniform maps two different true costs differ by far more than
//! the rounding, so their order is kept; on weighted maps a true difference below 2^-36 of
//! `f` (a relative 1.5e-11) may be taken as a tie, as the search's margin already does.

/// `f` rounded to the nearest multiple of 2^-36 of its power of two (ties away from zero), as
/// bits. For non-negative finite `f` the rounded bit patterns still order like the values
/// (a carry out of the mantissa moves into the exponent, the next power of two).
#[inline]
fn round_f(f: f64) -> u64 {
    const DROP: u32 = 52 - 36;
    (f.to_bits() + (1 << (DROP - 1))) & !((1 << DROP) - 1)
}

/// One entry: `key = round_f(f) << 64 | (!g_f32_bits) << 32 | node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry(u128);

impl Entry {
    #[inline]
    fn new(f: f64, g: f64, node: u32) -> Self {
        let tie = (!(g as f32).to_bits() as u64) << 32 | node as u64;
        Entry((round_f(f) as u128) << 64 | tie as u128)
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
/// never freed). Each node is in the queue at most once: `pos[node]` is its slot while it is
/// open, so an improvement moves the existing entry instead of adding a stale one.
///
/// The smallest entry may be held apart from the heap, in `best`: an entry pushed while it is
/// smaller than everything queued goes there instead of into the heap, and the next pop takes
/// it without touching the heap. Why: an expansion's best successor usually continues its
/// path at the same `f` with a larger `g`, so it is exactly the next node expanded (the tie
/// rule), and through the heap it cost a sift-up to the root and, at the pop, a sift-down of
/// the heap's last entry from the root to the bottom. Held apart it costs one comparison. The
/// order is unchanged: `best`, when set, is smaller than every heap entry.
#[derive(Default)]
pub(crate) struct OpenList {
    heap: Vec<Entry>,
    /// The smallest entry, kept out of the heap (see above); smaller than all of `heap`.
    best: Option<Entry>,
    /// Heap slot of each node id currently in the heap, [`IN_BEST`] for the one in `best`
    /// (garbage for the others).
    pos: Vec<u32>,
}

const ARITY: usize = 4;

/// `pos` of the node held in `best`.
const IN_BEST: u32 = u32::MAX;

impl OpenList {
    /// Empties the queue and makes room for node ids below `len`.
    #[inline]
    pub(crate) fn begin(&mut self, len: usize) {
        self.heap.clear();
        self.best = None;
        if self.pos.len() < len {
            self.pos.resize(len, 0);
        }
    }

    /// Adds `node`, which must not be queued.
    #[inline]
    pub(crate) fn push(&mut self, f: f64, g: f64, node: u32) {
        debug_assert!(f >= 0.0 && g >= 0.0);
        let e = Entry::new(f, g, node);
        match self.best {
            Some(b) if e < b => {
                // The new entry is the smallest; the old best becomes the heap's smallest.
                self.heap_push(b);
                self.set_best(e);
            }
            Some(_) => self.heap_push(e),
            None if self.heap.first().is_none_or(|&t| e < t) => self.set_best(e),
            None => self.heap_push(e),
        }
    }

    /// Gives `node`, which must be queued, its new (improved) key.
    #[inline]
    pub(crate) fn update(&mut self, f: f64, g: f64, node: u32) {
        let e = Entry::new(f, g, node);
        let i = self.pos[node as usize];
        if i == IN_BEST {
            debug_assert_eq!(self.best.map(Entry::node), Some(node));
            // A smaller g can round to the same f and then orders later (ties prefer larger
            // g), so the new key is not always still below the heap.
            if self.heap.first().is_none_or(|&t| e < t) {
                self.best = Some(e);
            } else {
                self.best = None;
                self.heap_push(e);
            }
            return;
        }
        let i = i as usize;
        debug_assert_eq!(self.heap[i].node(), node);
        let smallest = match self.best {
            Some(b) => e < b,
            None => e < self.heap[0],
        };
        if smallest {
            // The next node to pop (in A*, typically the cell that continues the path just
            // expanded, reached before from a neighbour): out of the heap into `best`, which
            // costs a sift from its slot, usually near the bottom, instead of one up to the
            // root and one down from it at the pop.
            self.remove_at(i);
            if let Some(b) = self.best {
                self.heap_push(b);
            }
            self.set_best(e);
        } else if e < self.heap[i] {
            // A smaller g can round to the same f and then orders later (ties prefer larger g).
            self.sift_up(i, e);
        } else {
            self.sift_down(i, e);
        }
    }

    /// Pops the smallest entry as `(f, node)` (`f` as rounded for the order).
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(f64, u32)> {
        let top = match self.best.take() {
            Some(b) => b,
            None => {
                let top = *self.heap.first()?;
                let last = self.heap.pop().unwrap();
                if !self.heap.is_empty() {
                    self.sift_down(0, last);
                }
                top
            }
        };
        Some((top.f(), top.node()))
    }

    #[inline]
    fn set_best(&mut self, e: Entry) {
        self.best = Some(e);
        self.pos[e.node() as usize] = IN_BEST;
    }

    /// Takes the entry at heap slot `i` out of the heap.
    #[inline]
    fn remove_at(&mut self, i: usize) {
        let last = self.heap.pop().expect("slot i is in the heap");
        if i < self.heap.len() {
            if i > 0 && last < self.heap[(i - 1) / ARITY] {
                self.sift_up(i, last);
            } else {
                self.sift_down(i, last);
            }
        }
    }

    /// Adds `e` to the heap proper.
    #[inline]
    fn heap_push(&mut self, e: Entry) {
        let i = self.heap.len();
        self.heap.push(e);
        self.sift_up(i, e);
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
                let k = min_of_4(kids);
                (c + k, kids[k])
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

/// The index of the smallest of four entries (keys are unique: they end in the node id).
///
/// Comparisons turned into index arithmetic rather than `if`s, which the compiler made
/// partly into branches: which child is smallest is as good as random, and the pops'
/// sift-downs were the largest source of mispredicted branches in A* and JPS+.
#[inline(always)]
fn min_of_4(kids: &[Entry; ARITY]) -> usize {
    let a = usize::from(kids[1] < kids[0]);
    let b = 2 + usize::from(kids[3] < kids[2]);
    let pick_b = usize::from(kids[b] < kids[a]);
    a + pick_b * (b - a)
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
    fn f_one_ulp_apart_ties_and_larger_g_goes_first() {
        // The same true cost 5 + 2 sqrt2 summed in two orders (arena2's example at
        // IMPROVES_BY): an ulp apart, so without rounding the smaller sum would go first
        // whatever its g.
        let (a, b) = (7.65685424949238f64, 7.656854249492381f64);
        assert!(a < b);
        let mut o = OpenList::default();
        o.begin(16);
        o.push(a, 2.0, 3);
        o.push(b, 5.0, 4);
        o.push(7.6568, 9.0, 5);
        o.push(7.657, 9.0, 1);
        let order: Vec<u32> = std::iter::from_fn(|| o.pop().map(|e| e.1)).collect();
        assert_eq!(order, vec![5, 4, 3, 1]);
    }

    #[test]
    fn rounding_keeps_the_order_of_values() {
        let mut x = 99u64;
        let mut prev = (0.0f64, round_f(0.0));
        let mut values: Vec<f64> = (0..5000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 11) as f64 / (1u64 << 40) as f64 * 4096.0
            })
            .collect();
        // Powers of two and their neighbours, where a rounding carries into the exponent.
        for k in 0..20 {
            let p = (1u64 << k) as f64;
            values.extend([p, f64::from_bits(p.to_bits() - 1), p.next_up()]);
        }
        values.sort_by(f64::total_cmp);
        for v in values {
            let r = round_f(v);
            assert!(r >= prev.1, "{} rounds below {}", v, prev.0);
            assert!((f64::from_bits(r) - v).abs() <= v * 1e-10);
            prev = (v, r);
        }
    }

    #[test]
    fn interleaved_pushes_updates_and_pops_follow_a_sorted_reference() {
        // Pops between the pushes and updates keep `best` in play (an entry smaller than
        // the heap held apart); the reference is a sorted set of the same keys.
        for seed in 1..40u64 {
            let mut x = seed;
            let mut rnd = move || {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                x >> 33
            };
            let mut o = OpenList::default();
            o.begin(300);
            let mut reference = std::collections::BTreeSet::<Entry>::new();
            let mut key: Vec<Option<Entry>> = vec![None; 300];
            let mut floor = 0.0;
            for step in 0..3000 {
                let node = (rnd() % 300) as u32;
                // Small integer f's and g's: many ties, as on a grid; never below the last
                // pop, as in A*.
                let f = floor + (rnd() % 6) as f64;
                let g = (rnd() % 5) as f64;
                let e = Entry::new(f, g, node);
                match (rnd() % 3, key[node as usize]) {
                    (0, _) if !reference.is_empty() => {
                        let want = reference.pop_first().unwrap();
                        let (got_f, got) = o.pop().unwrap();
                        assert_eq!(
                            (got_f, got),
                            (want.f(), want.node()),
                            "seed {seed} step {step}"
                        );
                        key[got as usize] = None;
                        floor = got_f;
                    }
                    (_, None) => {
                        o.push(f, g, node);
                        reference.insert(e);
                        key[node as usize] = Some(e);
                    }
                    (_, Some(old)) => {
                        // Any new key, smaller or not (a smaller g can order later).
                        o.update(f, g, node);
                        reference.remove(&old);
                        reference.insert(e);
                        key[node as usize] = Some(e);
                    }
                }
            }
            while let Some(want) = reference.pop_first() {
                assert_eq!(o.pop(), Some((want.f(), want.node())), "seed {seed}");
            }
            assert!(o.pop().is_none(), "seed {seed}");
        }
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
