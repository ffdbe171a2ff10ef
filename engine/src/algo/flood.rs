//! A Dijkstra flood on a bucket queue, for searches with no goal to aim at (distance table
//! rows): exact, and without the heap's ordering work.
//!
//! **Why it is exact.** Buckets are `delta` wide, `delta` the smallest step cost of the map
//! (a straight step between two cells of the smallest cost, [`Grid::min_cost`]). Take the
//! bucket `k` being emptied, `[k delta, (k + 1) delta)`: every node of a smaller bucket is
//! settled, and a node `u` here reached with cost `g(u)` cannot improve any more: a cheaper
//! path to it would end with a step from some node `v` with `g(v) <= g(u) - delta <
//! k delta`, settled already and relaxed into `u` with its final cost. So the nodes of one
//! bucket can be settled in any order, and relaxing them only fills later buckets (a step
//! adds at least `delta`). Rounding can put a successor exactly on the bucket edge into
//! the bucket being emptied; it is then settled with that bucket, which is as exact as the
//! costs it is compared with ([`IMPROVES_BY`]).
//!
//! Buckets live in a ring of `ceil(max_step / delta) + 2` slots (`max_step` the dearest step,
//! a diagonal between two cells of the largest cost), enough that a successor never lands in
//! the slot being emptied; an improved node is pushed again and its stale entries are
//! skipped when popped (it is settled by then). The node records are the core's
//! ([`Scratch`]), so a flood reuses a searcher's memory like any search.
//!
//! Why not the core ([`crate::search::best_first`] with `h = 0`): the 4-ary heap keeps
//! an exact order the flood does not need; without it a table on `Berlin_0_1024` took 1/1.6
//! of the time (`examples/matrix_bench.rs`). Uniform octile maps take canonical Dijkstra
//! instead ([`crate::algo::canonical`]), many times faster again.

use crate::grid::{Grid, Movement, SQRT2, UNIFORM_STEPS, moves, moves_by};
use crate::query::{LimitKind, Limits, Stats};
use crate::search::{IMPROVES_BY, Scratch, limit_hit};

/// Check the clock and the cancellation flag every this many settled nodes.
const CHECK_EVERY: u64 = 1024;

/// Floods `grid` from padded node `start` until `settle(node)` returns true for a settled
/// node (or every reachable node is settled, or a limit fires). Settled nodes read as
/// expanded in `scratch`, with their final costs.
pub(crate) fn flood(
    grid: &Grid,
    scratch: &mut Scratch,
    start: u32,
    limits: &Limits,
    mut settle: impl FnMut(u32) -> bool,
) -> (Stats, Option<LimitKind>) {
    let started = crate::clock::Instant::now();
    let mut stats = Stats::default();
    scratch.begin(grid.padded_len());
    let (nodes, _, _) = scratch.parts();
    let cells = grid.cells();
    let offsets = grid.offsets();
    let octile = grid.movement() == Movement::Octile;
    let uniform = grid.is_uniform();
    let delta = grid.min_cost().max(1) as f64;
    let max_step = SQRT2 * grid.max_cost().max(1) as f64;
    let ring = (max_step / delta).ceil() as usize + 2;
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); ring];
    let mut spare = Vec::new();
    let max_exp = limits.max_expansions.unwrap_or(u64::MAX);
    let inv = 1.0 / delta;

    nodes.touch(start, 0.0, start);
    buckets[0].push(start);
    let mut pending = 1usize;
    let mut k = 0usize;
    let mut limit = None;
    'flood: while pending > 0 {
        let slot = k % ring;
        // Emptied until nothing lands in it any more (see the module docs on rounding).
        while !buckets[slot].is_empty() {
            std::mem::swap(&mut buckets[slot], &mut spare);
            for &n in &spare {
                pending -= 1;
                let (g, closed) = nodes.cost_and_closed(n);
                if closed {
                    continue; // a stale entry of a node improved since
                }
                if stats.expanded >= max_exp {
                    limit = Some(LimitKind::Expansions);
                    break 'flood;
                }
                if stats.expanded % CHECK_EVERY == 0 {
                    if let Some(kind) = limit_hit(limits) {
                        limit = Some(kind);
                        break 'flood;
                    }
                }
                stats.expanded += 1;
                nodes.mark_expanded(n);
                if settle(n) {
                    break 'flood;
                }
                let mut out = [(0u32, 0.0f64); 8];
                let cell = |m: usize| cells[m];
                let moved = if uniform {
                    let step = |d: usize, _| UNIFORM_STEPS[d];
                    moves_by(&offsets, octile, n as usize, g, cell, step, &mut out)
                } else {
                    moves(
                        &offsets,
                        octile,
                        n as usize,
                        cells[n as usize],
                        g,
                        cell,
                        &mut out,
                    )
                };
                for &(m, gm) in &out[..moved] {
                    let (old, closed) = nodes.cost_and_closed(m);
                    if closed || gm >= old * (1.0 - IMPROVES_BY) {
                        continue;
                    }
                    nodes.touch(m, gm, n);
                    // At least bucket k (rounding), at most k + ring - 2.
                    let b = ((gm * inv) as usize).max(k);
                    buckets[b % ring].push(m);
                    pending += 1;
                    stats.generated += 1;
                }
            }
            spare.clear();
        }
        k += 1;
    }
    stats.elapsed = started.elapsed();
    (stats, limit)
}
