//! Canonical Dijkstra (Sturtevant and Rabin, "Canonical Orderings on Grids", IJCAI 2016):
//! a flood of a uniform octile map that puts only jump points on its open list, for the
//! rows of a distance table.
//!
//! JPS's canonical order ([`crate::algo::jps`], the Moving AI rule: diagonal first, then
//! straight; a straight run restarts where a side cell behind is blocked and the same side
//! cell ahead is open) holds an optimal path to every cell. The flood walks those canonical
//! paths from the source as rays: a popped jump point sends a ray along each of its
//! directions, every cell a ray crosses gets the ray's cost if that is no dearer than the
//! cost it has (so a cell's cost is always that of some path), a diagonal ray sends both
//! straight arms from each of its cells, and a straight ray stops at a forced cell, which
//! goes onto the open list with its directions (the ray's, the open side's and the diagonal
//! between them). Rays stop at a cell that already has a strictly cheaper cost (any cell
//! further along is then reached at least as cheaply through that cell's own canonical
//! path); on a tie they go on, so no optimal canonical path is ever cut, unless a ray in the
//! same direction already passed the cell at that cost: what follows depends only on the
//! cell, the direction and the cost, so it is scanned already (without this, maps with many
//! equally cheap ways, e.g. `Expedition`, rescanned long runs over and over: 40 times the
//! work).
//!
//! **Exact, and when a cost is final.** Every jump point of an optimal canonical path to a
//! cell is reached by its predecessor's ray at its optimal cost, never stopped (nothing is
//! cheaper than optimal), and pushed with the direction the path takes next; so when the
//! open list is empty every cell has its optimal cost. Open entries are taken in cost order
//! and a ray only assigns costs at least its jump point's, so once the entry taken costs
//! `k`, no cell cheaper than `k` changes any more: a target whose cost is at most `k` is
//! final, and the flood stops when every target is. An entry whose cell has become strictly
//! cheaper since it was pushed is on no optimal path and is skipped.
//!
//! Why: a plain Dijkstra queues and settles every cell; here the open list holds only the
//! jump points (a small share of the cells on game and city maps) and the rest are written
//! in passing by straight scans. Counters count the jump points taken (`expanded`) and the
//! costs written (`generated`); the expansion limit bounds the costs written (one jump point
//! can write a whole open map), and the clock and the cancellation flag are looked at every
//! few thousand of them, inside the rays.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::grid::{DIAG_SIDES, Grid, Movement, SQRT2};
use crate::query::{LimitKind, Limits, Stats};
use crate::search::{IMPROVES_BY, Scratch, limit_hit};

/// Check the clock and the cancellation flag every this many costs written.
const CHECK_EVERY: u64 = 4096;

/// The diagonal between two perpendicular cardinals of [`crate::grid::DIRS`].
fn diagonal(a: usize, b: usize) -> usize {
    match (a.min(b), a.max(b)) {
        (0, 1) => 4,
        (1, 2) => 5,
        (2, 3) => 6,
        (0, 3) => 7,
        _ => unreachable!("perpendicular cardinals"),
    }
}

/// The flood's state over one row.
struct Flood<'a> {
    cells: &'a [u8],
    offsets: [isize; 8],
    open: BinaryHeap<(Reverse<u64>, u32, u8)>,
    stats: Stats,
    limits: &'a Limits,
    /// Most costs written (the expansion limit: one jump point can write a whole open map).
    budget: u64,
    /// The limit that fired inside a ray, if one did: every ray stops at once.
    stopped: Option<LimitKind>,
}

impl Flood<'_> {
    /// Offers cost `g` to `n` from a ray in direction `d`: `false` when the ray stops
    /// there (`n` is strictly cheaper already, or a ray in the same direction passed it at
    /// the same cost: what lies beyond is then scanned already), else records it. A cell's
    /// parent field holds the directions of the rays that passed it at its current cost.
    #[inline]
    fn offer(&mut self, scratch: &mut Scratch, n: usize, g: f64, d: usize) -> bool {
        let (nodes, _, _) = scratch.parts();
        let (n, bit) = (n as u32, 1u32 << d);
        let old = nodes.g(n);
        if g > old * (1.0 + IMPROVES_BY) {
            return false;
        }
        if g >= old * (1.0 - IMPROVES_BY) {
            let passed = nodes.parent(n);
            if passed & bit != 0 {
                return false;
            }
            nodes.touch(n, old, passed | bit);
            return true;
        }
        nodes.touch(n, g, bit);
        self.stats.generated += 1;
        if self.stats.generated >= self.budget {
            self.stopped = Some(LimitKind::Expansions);
        } else if self.stats.generated % CHECK_EVERY == 0 {
            self.stopped = limit_hit(self.limits);
        }
        self.stopped.is_none()
    }

    /// The straight ray from `from` (cost `g`) in cardinal direction `d`.
    fn straight(&mut self, scratch: &mut Scratch, from: usize, mut g: f64, d: usize) {
        let o = self.offsets[d];
        let sides = if d % 2 == 0 { [1, 3] } else { [0, 2] };
        let mut prev = from;
        loop {
            let x = prev.wrapping_add_signed(o);
            if self.cells[x] == 0 {
                return;
            }
            g += 1.0;
            if !self.offer(scratch, x, g, d) {
                return;
            }
            let mut dirs = 0u8;
            for s in sides {
                let os = self.offsets[s];
                if self.cells[prev.wrapping_add_signed(os)] == 0
                    && self.cells[x.wrapping_add_signed(os)] != 0
                {
                    dirs |= 1 << s | 1 << diagonal(d, s);
                }
            }
            if dirs != 0 {
                // A jump point: it goes on from the open list.
                self.open
                    .push((Reverse(g.to_bits()), x as u32, dirs | 1 << d));
                return;
            }
            prev = x;
        }
    }

    /// The diagonal ray from `from` (cost `g`) in diagonal direction `d`, with both straight
    /// arms from each of its cells.
    fn diagonal(&mut self, scratch: &mut Scratch, from: usize, mut g: f64, d: usize) {
        let (a, b) = DIAG_SIDES[d - 4];
        let (oa, ob, od) = (self.offsets[a], self.offsets[b], self.offsets[d]);
        let mut cur = from;
        loop {
            let next = cur.wrapping_add_signed(od);
            if self.cells[cur.wrapping_add_signed(oa)] == 0
                || self.cells[cur.wrapping_add_signed(ob)] == 0
                || self.cells[next] == 0
            {
                return;
            }
            g += SQRT2;
            if !self.offer(scratch, next, g, d) {
                return;
            }
            self.straight(scratch, next, g, a);
            self.straight(scratch, next, g, b);
            if self.stopped.is_some() {
                return;
            }
            cur = next;
        }
    }
}

/// Floods a uniform octile `grid` from padded node `start` until every node of `targets`
/// has its final cost (read them with `scratch.nodes().g`), or a limit fires.
pub(crate) fn flood(
    grid: &Grid,
    scratch: &mut Scratch,
    start: u32,
    targets: &[u32],
    limits: &Limits,
) -> (Stats, Option<LimitKind>) {
    debug_assert!(grid.is_uniform() && grid.movement() == Movement::Octile);
    let started = crate::clock::Instant::now();
    scratch.begin(grid.padded_len());
    let cells = grid.cells();
    let mut f = Flood {
        cells: &cells,
        offsets: grid.offsets(),
        open: BinaryHeap::new(),
        stats: Stats::default(),
        limits,
        budget: limits.max_expansions.unwrap_or(u64::MAX),
        stopped: None,
    };
    let (nodes, _, _) = scratch.parts();
    nodes.touch(start, 0.0, u32::MAX); // every direction has passed it
    f.open.push((Reverse(0f64.to_bits()), start, 0xff));
    let mut pending: Vec<u32> = targets.to_vec();
    let mut checked = f64::NEG_INFINITY;
    let mut limit = None;
    while let Some((Reverse(bits), n, dirs)) = f.open.pop() {
        let g = f64::from_bits(bits);
        // Targets no dearer than the cost taken are final (module docs); looked at once per
        // unit of cost, a few hundred times a row.
        if g >= checked + 1.0 || f.open.is_empty() {
            let nodes = scratch.nodes();
            pending.retain(|&t| nodes.g(t) > g * (1.0 + IMPROVES_BY));
            checked = g;
            if pending.is_empty() {
                break;
            }
        }
        if g > scratch.nodes().g(n) * (1.0 + IMPROVES_BY) {
            continue; // strictly cheaper since: on no optimal path
        }
        if f.stats.expanded == 0 {
            if let Some(kind) = limit_hit(limits) {
                limit = Some(kind);
                break;
            }
        }
        f.stats.expanded += 1;
        for d in 0..8 {
            if dirs & 1 << d == 0 {
                continue;
            }
            if d < 4 {
                f.straight(scratch, n as usize, g, d);
            } else {
                f.diagonal(scratch, n as usize, g, d);
            }
        }
        if let Some(kind) = f.stopped {
            limit = Some(kind);
            break;
        }
    }
    let mut stats = f.stats;
    stats.elapsed = started.elapsed();
    (stats, limit)
}
