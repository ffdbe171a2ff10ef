//! Measuring a landmark's distances: where landmarks go (the largest component, farthest
//! cells), which integer unit a map's distances fit in, and the Dial queue over the
//! integer-cost moves that measures and updates them.

use super::{FAR, UNITS};
use crate::grid::{DIAG_SIDES, DIRS, Grid, Point};

/// Values per cell for `k` landmarks: 4, 8 or 16 (dividing a 32-byte block).
pub(super) fn stride(k: usize) -> usize {
    k.next_power_of_two().max(4)
}

/// The units to try for `grid`, finest first: starting with the finest whose distances fit
/// when no path is longer than `width + height` steps (true of open maps; a maze's longer
/// ones fall to the next).
pub(super) fn first_unit(grid: &Grid) -> &'static [(u32, u32)] {
    let span = u64::from(grid.width()) + u64::from(grid.height());
    let from = UNITS
        .iter()
        .position(|&(u, _)| u64::from(u) * span < u64::from(FAR))
        .unwrap_or(UNITS.len() - 1);
    &UNITS[from..]
}

/// The first cell (row-major) of the component with the most cells.
pub(super) fn largest_component(grid: &Grid) -> Option<Point> {
    let mut sizes: std::collections::HashMap<u32, (usize, Point)> = Default::default();
    for y in 0..grid.height() {
        for x in 0..grid.width() {
            let p = Point::new(x, y);
            if let Some(c) = grid.component(p) {
                sizes.entry(c).or_insert((0, p)).0 += 1;
            }
        }
    }
    // The largest, the first-found of equal sizes (row-major order of first cells).
    sizes
        .into_values()
        .max_by_key(|&(n, p)| (n, std::cmp::Reverse((p.y, p.x))))
        .map(|(_, p)| p)
}

/// The reachable cell (`d` not `u32::MAX`) with the largest `key`, the first of equals.
pub(super) fn farthest(d: &[u32], key: impl Fn(usize) -> u32) -> usize {
    let mut best = (0, usize::MAX);
    for (n, &v) in d.iter().enumerate() {
        if v != u32::MAX && (best.1 == usize::MAX || key(n) > best.0) {
            best = (key(n), n);
        }
    }
    best.1
}

/// The moves of the padded octile map (no corner cutting) with their integer costs.
pub(super) struct Steps {
    offsets: [isize; 8],
    cost: [u32; 8],
}

impl Steps {
    pub(super) fn new(pw: usize, unit: u32, diag: u32) -> Steps {
        Steps {
            offsets: DIRS.map(|(dx, dy)| dy as isize * pw as isize + dx as isize),
            cost: [unit, unit, unit, unit, diag, diag, diag, diag],
        }
    }

    /// Calls `f(m, cost)` for every legal move out of open padded cell `n`.
    #[inline(always)]
    pub(super) fn each(&self, cells: &[u8], n: usize, mut f: impl FnMut(usize, u32)) {
        let mut open = [false; 4];
        for (d, o) in open.iter_mut().enumerate() {
            let m = n.wrapping_add_signed(self.offsets[d]);
            *o = cells[m] != 0;
            if *o {
                f(m, self.cost[d]);
            }
        }
        for (d, &(a, b)) in DIAG_SIDES.iter().enumerate() {
            let m = n.wrapping_add_signed(self.offsets[4 + d]);
            if open[a] && open[b] && cells[m] != 0 {
                f(m, self.cost[4 + d]);
            }
        }
    }
}

/// Dijkstra with integer move costs on a bucket queue (Dial's): every open list entry lies
/// within `diag` of the smallest, so `diag + 1` buckets in a ring hold them all.
#[derive(Default)]
pub(super) struct Dial {
    /// Distance by padded cell (`u32::MAX`: unreached), after [`Dial::run`].
    pub(super) dist: Vec<u32>,
    buckets: Vec<Vec<u32>>,
}

impl Dial {
    /// Distances from the `(cell, value)` sources to every cell, until the open list is
    /// empty.
    pub(super) fn run(
        &mut self,
        cells: &[u8],
        pw: usize,
        from: &[(usize, u32)],
        unit: u32,
        diag: u32,
    ) {
        self.dist.clear();
        self.dist.resize(cells.len(), u32::MAX);
        let ring = diag as usize + 1;
        self.buckets.resize_with(ring, Vec::new);
        self.buckets.iter_mut().for_each(Vec::clear);
        let steps = Steps::new(pw, unit, diag);
        let mut pending = 0usize;
        let mut d = u32::MAX;
        for &(n, v) in from {
            self.dist[n] = v;
            self.buckets[v as usize % ring].push(n as u32);
            pending += 1;
            d = d.min(v);
        }
        while pending > 0 {
            let b = d as usize % ring;
            // Every move costs at least 1: nothing is pushed into the bucket being emptied.
            while let Some(n) = self.buckets[b].pop() {
                pending -= 1;
                let n = n as usize;
                if self.dist[n] != d {
                    continue;
                }
                let (dist, buckets) = (&mut self.dist, &mut self.buckets);
                steps.each(cells, n, |m, c| {
                    let v = d + c;
                    if v < dist[m] {
                        dist[m] = v;
                        buckets[v as usize % ring].push(m as u32);
                        pending += 1;
                    }
                });
            }
            d += 1;
        }
    }
}
