//! Landmark (differential) heuristics for uniform octile maps.
//!
//! For a few landmark cells `L`, the distance `d(L, n)` to every cell. By the triangle
//! inequality `|d(L, n) - d(L, g)| <= d(n, g)`, so the largest such difference over the
//! landmarks, or the octile distance when that is larger, is an admissible heuristic, and a
//! consistent one: each term changes by at most `d(n, m)` between two cells `n`, `m`, and
//! every search edge costs at least that (Goldberg and Harrelson's ALT; Sturtevant et al.'s
//! differential heuristics). Where the octile distance sees straight through a wall, the
//! landmarks see the way round it, so an A* or JPS+ search expands far fewer nodes whose
//! `f` falls short of the optimum.
//!
//! # Storage: exact integers in 2 bytes
//!
//! The argument above needs less than exact distances: any values `D(n)` with
//! `|D(a) - D(b)| <= c(a, b)` across every move `a -> b` of the map (a *potential*) give an
//! admissible and consistent heuristic `|D(n) - D(g)|`, by the same sum along a path.
//! The stored values are such a potential, exactly, in integers: the distances of a map
//! whose straight moves cost `unit` and diagonals `diag = floor(unit * sqrt 2)` (29 and 41
//! on most maps, so a diagonal counts `0.9997` of its length), divided by `unit`. Each move's
//! integer cost is at most `unit` times its real one, so `D = q / unit` is a potential for
//! the real map: no rounding slack, no inconsistency, and an update after a patch is exact
//! integer arithmetic (it equals a fresh measurement). The values fit a `u16` (`u16::MAX`
//! marks a cell the landmark cannot reach); `unit` is the largest of a few good ones whose
//! distances fit (a map with long winding paths, e.g. a 512x512 maze, gets 5 and 7, still
//! 99% of a diagonal). A map whose distances do not fit even at `unit = 1` gets no
//! landmarks.
//!
//! A cell's values are one row of 4, 8 or 16 `u16`s (8, 16 or 32 bytes, aligned, so a row
//! never straddles two cache lines), and rows are stored in copy-on-write chunks of 1024
//! cells, like [`crate::JumpTable`]'s: an update copies only the chunks whose values it
//! lowers, and every chunk no landmark reaches (walls, unreachable regions, the padding) is
//! one shared chunk. With 8 landmarks that is 16 bytes a cell, as much as the jump table.
//!
//! # Patches
//!
//! - A patch that only blocks cells only removes moves, so the old values stay a potential
//!   for the new version ([`Landmarks::carry_over`]: nothing to do).
//! - Any other patch ([`Landmarks::update`]): every move the new version has and the old one
//!   had still satisfies the bound, and every new move touches a cell within one step of a
//!   changed cell (an opened cell, or the side cell that makes a diagonal legal). A Dijkstra
//!   that starts from those cells with their old values, and only ever lowers a value,
//!   ends with the bound on every move: a popped cell relaxes all its moves with its final
//!   value, and a cell never pushed kept its old value and was not lowered by any popped
//!   neighbour. Its work is the region whose values drop, not the map. After openings alone
//!   it yields the new exact distances (distances only fall, and every fall starts at such a
//!   cell); after blocks it keeps some old, shorter ones, which stay admissible. Values only
//!   fall, so they keep fitting the `u16`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::grid::{Grid, Movement, Point};
use crate::search::{Estimate, Heuristic};

/// The most landmarks a map gets: beyond 16 a landmark cuts few expansions more (on
/// `16room_000`, 8 landmarks cut JPS+'s expansions 3.0x, 16 landmarks 4.1x) and every one
/// costs 2 bytes a cell and a Dijkstra over the map.
pub const MAX_LANDMARKS: usize = 16;

/// The memory a map's landmarks may take unless the caller says otherwise (pathd's
/// `--landmark-memory-mb` default): 16 landmarks up to about 780 K cells (a 886x886 map),
/// 8 up to 1.5 M (a 1024x1024 map takes 16.8 MB, as much as its jump table: 32 bytes a cell
/// for JPS+ with landmarks), 4 up to 3 M.
pub const DEFAULT_LANDMARK_MEMORY: u64 = 24 << 20;

/// Cells per chunk (as [`crate::JumpTable`]'s).
const CHUNK_SHIFT: usize = 10;
const CHUNK: usize = 1 << CHUNK_SHIFT;

/// A stored value: no way from the landmark (or never measured).
const FAR: u16 = u16::MAX;

/// Units per straight step tried, best first: each with `floor(unit * sqrt 2)` per
/// diagonal, those whose ratio comes closest to `sqrt 2` from below (a diagonal counts
/// 0.99999, 0.9997, 0.998, 0.99, 0.99 and 0.71 of its length).
const UNITS: [(u32, u32); 6] = [(169, 239), (29, 41), (17, 24), (10, 14), (5, 7), (1, 1)];

/// 16 values, aligned so that a row of 4, 8 or 16 never straddles a cache line.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Block([u16; 16]);

/// Distances from a few landmarks to every cell of one uniform octile map version.
#[derive(Clone)]
pub struct Landmarks {
    width: u32,
    height: u32,
    k: usize,
    /// Values per cell: `k` rounded up to 4, 8 or 16.
    stride: usize,
    /// Integer cost of a straight move and of a diagonal (see the module docs).
    unit: u32,
    diag: u32,
    /// Rows by padded cell, [`CHUNK`] cells a chunk (`CHUNK * stride / 16` blocks).
    chunks: Vec<Arc<[Block]>>,
    points: Vec<Point>,
}

impl std::fmt::Debug for Landmarks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Landmarks")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("unit", &(self.unit, self.diag))
            .field("points", &self.points)
            .finish()
    }
}

impl Landmarks {
    /// How many landmarks `grid` gets within `budget` bytes: 16, 8 or 4 (a row of 4, 8 or
    /// 16 distances per cell, 2 bytes each, the most that fits); 0 when not even 4 fit, or
    /// the map is not uniform octile.
    ///
    /// ```
    /// use pathd_engine::{Grid, Landmarks, Movement};
    /// let grid = Grid::from_costs(98, 98, vec![1; 98 * 98], Movement::Octile).unwrap();
    /// // 100 x 100 padded cells, 20 KB a landmark.
    /// assert_eq!(Landmarks::affordable(&grid, 64 << 20), 16);
    /// assert_eq!(Landmarks::affordable(&grid, 250_000), 8);
    /// assert_eq!(Landmarks::affordable(&grid, 100_000), 4);
    /// assert_eq!(Landmarks::affordable(&grid, 50_000), 0);
    /// ```
    pub fn affordable(grid: &Grid, budget: u64) -> usize {
        if grid.movement() != Movement::Octile || !grid.is_uniform() {
            return 0;
        }
        let per = grid.padded_len() as u64 * size_of::<u16>() as u64;
        [16, 8, 4]
            .into_iter()
            .find(|&k| k as u64 * per <= budget)
            .unwrap_or(0)
    }

    /// Picks `k` landmarks (at most [`MAX_LANDMARKS`]) in the map's largest connected
    /// component by farthest-point selection (the first is the cell farthest from the
    /// component's first cell; each next one the cell farthest from its nearest landmark so
    /// far) and measures their distances to every cell: `k + 1` Dijkstra searches (a few
    /// more when the first unit tried does not fit). Queries in the other components get the
    /// octile distance alone. `None` for maps that are not uniform octile, have no open cell,
    /// whose distances do not fit (module docs), or for `k == 0`.
    ///
    /// ```
    /// use pathd_engine::{Grid, Landmarks, Movement, Point};
    /// let grid = Grid::from_costs(5, 1, vec![1; 5], Movement::Octile).unwrap();
    /// let l = Landmarks::build(&grid, 2).unwrap();
    /// assert_eq!(l.points(), &[Point::new(4, 0), Point::new(0, 0)]);
    /// ```
    pub fn build(grid: &Grid, k: usize) -> Option<Landmarks> {
        let k = k.min(MAX_LANDMARKS);
        if grid.movement() != Movement::Octile || !grid.is_uniform() || k == 0 {
            return None;
        }
        let first = grid.pidx(largest_component(grid)?);
        let cells = grid.cells();
        let pw = grid.padded_width();
        let mut dial = Dial::default();
        'units: for &(unit, diag) in first_unit(grid) {
            dial.run(&cells[..], pw, &[(first, 0)], unit, diag);
            let seed = &dial.dist;
            let mut next = farthest(seed, |n| seed[n]);
            let mut l = Landmarks::blank(grid.width(), grid.height(), k, unit, diag);
            let mut nearest = vec![u32::MAX; grid.padded_len()];
            for i in 0..k {
                dial.run(&cells[..], pw, &[(next, 0)], unit, diag);
                if !l.store(i, &dial.dist) {
                    continue 'units;
                }
                for (near, &v) in nearest.iter_mut().zip(&dial.dist) {
                    *near = (*near).min(v);
                }
                l.points.push(grid.ppoint(next));
                next = farthest(&dial.dist, |n| nearest[n]);
            }
            l.share_far();
            return Some(l);
        }
        None
    }

    /// Whether these landmarks can serve `grid`: same size, uniform octile. That they were
    /// measured on this version, or on an earlier one that it differs from only by blocked
    /// cells, is the caller's business ([`Landmarks::carry_over`]).
    pub fn fits(&self, grid: &Grid) -> bool {
        grid.width() == self.width
            && grid.height() == self.height
            && grid.movement() == Movement::Octile
            && grid.is_uniform()
    }

    /// Whether these landmarks, valid for the version before a patch, stay valid for `grid`,
    /// the version after it, whose cells differ at most at `changed`: true when every changed
    /// cell is now blocked (distances can then only have grown, see the module docs).
    ///
    /// ```
    /// use pathd_engine::{Grid, Landmarks, Movement, Patch, Point};
    /// let grid = Grid::from_costs(8, 8, vec![1; 64], Movement::Octile).unwrap();
    /// let l = Landmarks::build(&grid, 4).unwrap();
    /// let wall = Patch { cells: vec![(Point::new(3, 4), 0)], rects: vec![] };
    /// let (walled, changed) = grid.apply_patch(&wall).unwrap().unwrap();
    /// assert!(l.carry_over(&walled, &changed));
    /// let open = Patch { cells: vec![(Point::new(3, 4), 1)], rects: vec![] };
    /// let (reopened, changed) = walled.apply_patch(&open).unwrap().unwrap();
    /// assert!(!l.carry_over(&reopened, &changed));
    /// ```
    pub fn carry_over(&self, grid: &Grid, changed: &[Point]) -> bool {
        self.fits(grid) && changed.iter().all(|&p| !grid.is_passable(p))
    }

    /// The landmarks of `grid`, a later version of the map these were measured for (or
    /// updated to), whose cells differ from it at most at `changed`: the values a patch can
    /// lower are lowered (module docs, "Patches"), the others kept; the landmark cells stay
    /// (a landmark that is now blocked still bounds distances through its old values). Only
    /// the chunks whose values fall are copied; the others are shared with `self`.
    /// `None` when the map no longer fits (resized, weighted or cardinal).
    ///
    /// ```
    /// use pathd_engine::{Grid, Landmarks, Movement, Patch, Point, Rect};
    /// // A wall across the middle row with one gap at x = 1; then a second gap at x = 6.
    /// let mut costs = vec![1; 64];
    /// (0..8).filter(|&x| x != 1).for_each(|x| costs[4 * 8 + x] = 0);
    /// let grid = Grid::from_costs(8, 8, costs, Movement::Octile).unwrap();
    /// let l = Landmarks::at(&grid, &[Point::new(7, 0)]).unwrap();
    /// let gap = Patch { cells: vec![(Point::new(6, 4), 1)], rects: vec![] };
    /// let (next, changed) = grid.apply_patch(&gap).unwrap().unwrap();
    /// let updated = l.update(&next, &changed).unwrap();
    /// let fresh = l.remeasured(&next).unwrap();
    /// // (7, 7): round by the first gap 4 + 6 sqrt 2 ... now straight through the new one.
    /// assert_eq!(updated.distance(0, Point::new(7, 7)), fresh.distance(0, Point::new(7, 7)));
    /// assert!(updated.distance(0, Point::new(7, 7)) < l.distance(0, Point::new(7, 7)));
    /// ```
    pub fn update(&self, grid: &Grid, changed: &[Point]) -> Option<Landmarks> {
        self.update_within(grid, changed, usize::MAX)
    }

    /// [`Landmarks::update`], giving up (`None`) once it has settled more than `work` cells
    /// over all landmarks: a patch's write path can afford the update of a small change
    /// (most lower a few hundred values) and leave a big one (a door that shortens the way
    /// to half the map) to a background lane.
    ///
    /// ```
    /// use pathd_engine::{Grid, Landmarks, Movement, Patch, Point};
    /// let mut costs = vec![1; 64];
    /// (0..8).filter(|&x| x != 1).for_each(|x| costs[4 * 8 + x] = 0);
    /// let grid = Grid::from_costs(8, 8, costs, Movement::Octile).unwrap();
    /// let l = Landmarks::at(&grid, &[Point::new(7, 0)]).unwrap();
    /// let gap = Patch { cells: vec![(Point::new(6, 4), 1)], rects: vec![] };
    /// let (next, changed) = grid.apply_patch(&gap).unwrap().unwrap();
    /// assert!(l.update_within(&next, &changed, 3).is_none());
    /// assert!(l.update_within(&next, &changed, 1000).is_some());
    /// ```
    pub fn update_within(&self, grid: &Grid, changed: &[Point], work: usize) -> Option<Landmarks> {
        if !self.fits(grid) {
            return None;
        }
        let mut work = work;
        let mut next = self.clone();
        let pw = grid.padded_width();
        let cells = grid.cells();
        // Every open cell within one step of a changed cell.
        let mut seeds: Vec<usize> = changed
            .iter()
            .flat_map(|&p| {
                let c = grid.pidx(p);
                (0..3).flat_map(move |dy| (0..3).map(move |dx| c + dy * pw + dx - pw - 1))
            })
            .filter(|&n| cells[n] != 0)
            .collect();
        seeds.sort_unstable();
        seeds.dedup();
        let steps = Steps::new(pw, self.unit, self.diag);
        let mut heap = BinaryHeap::new();
        for i in 0..self.k {
            heap.clear();
            heap.extend(seeds.iter().filter_map(|&s| {
                let v = next.get(s, i);
                (v != FAR).then_some(Reverse((u32::from(v), s as u32)))
            }));
            while let Some(Reverse((g, n))) = heap.pop() {
                let n = n as usize;
                if g > u32::from(next.get(n, i)) {
                    continue;
                }
                work = work.checked_sub(1)?;
                steps.each(&cells[..], n, |m, c| {
                    let v = g + c;
                    if v < u32::from(next.get(m, i)) {
                        // v < FAR: it fits.
                        next.set(m, i, v as u16);
                        heap.push(Reverse((v, m as u32)));
                    }
                });
            }
        }
        Some(next)
    }

    /// Measures the distances from the given cells (at most [`MAX_LANDMARKS`], each open)
    /// instead of picking them: for comparisons, e.g. of an [`Landmarks::update`] with a fresh
    /// measurement from the same cells. `None` if one is blocked or off the map, the map is
    /// not uniform octile, or its distances do not fit.
    pub fn at(grid: &Grid, points: &[Point]) -> Option<Landmarks> {
        first_unit(grid)
            .iter()
            .find_map(|&(unit, diag)| Landmarks::measured(grid, points, unit, diag))
    }

    /// A fresh measurement on `grid` from the same cells, in the same units: what
    /// [`Landmarks::update`] after openings alone equals. `None` as for [`Landmarks::at`]
    /// (or when they no longer fit in these units).
    pub fn remeasured(&self, grid: &Grid) -> Option<Landmarks> {
        Landmarks::measured(grid, &self.points, self.unit, self.diag)
    }

    fn measured(grid: &Grid, points: &[Point], unit: u32, diag: u32) -> Option<Landmarks> {
        if grid.movement() != Movement::Octile
            || !grid.is_uniform()
            || points.is_empty()
            || points.len() > MAX_LANDMARKS
            || !points.iter().all(|&p| grid.is_passable(p))
        {
            return None;
        }
        let mut l = Landmarks::blank(grid.width(), grid.height(), points.len(), unit, diag);
        let cells = grid.cells();
        let mut dial = Dial::default();
        for (i, &p) in points.iter().enumerate() {
            dial.run(
                &cells[..],
                grid.padded_width(),
                &[(grid.pidx(p), 0)],
                unit,
                diag,
            );
            if !l.store(i, &dial.dist) {
                return None;
            }
            l.points.push(p);
        }
        l.share_far();
        Some(l)
    }

    /// The stored distance from landmark `i` to cell `p` (infinity where unreachable): a
    /// lower bound on the distance (exact but for diagonals counted `diag / unit`).
    pub fn distance(&self, i: usize, p: Point) -> f32 {
        let pw = (self.width + 2) as usize;
        match self.get((p.y as usize + 1) * pw + p.x as usize + 1, i) {
            FAR => f32::INFINITY,
            v => (f64::from(v) / f64::from(self.unit)) as f32,
        }
    }

    /// A table for `k` landmarks of a `width x height` map, every value [`FAR`], no points
    /// yet.
    fn blank(width: u32, height: u32, k: usize, unit: u32, diag: u32) -> Landmarks {
        let stride = stride(k);
        let cells = (width as usize + 2) * (height as usize + 2);
        let far: Arc<[Block]> = vec![Block([FAR; 16]); CHUNK * stride / 16].into();
        Landmarks {
            width,
            height,
            k,
            stride,
            unit,
            diag,
            chunks: vec![far; cells.div_ceil(CHUNK)],
            points: Vec::with_capacity(k),
        }
    }

    /// Stores `d` (by padded cell, `u32::MAX` unreachable) as landmark `i`'s values; false
    /// when one does not fit a `u16`.
    fn store(&mut self, i: usize, d: &[u32]) -> bool {
        for (n, &v) in d.iter().enumerate() {
            if v == u32::MAX {
                continue;
            }
            if v >= u32::from(FAR) {
                return false;
            }
            self.set(n, i, v as u16);
        }
        true
    }

    /// Makes every chunk no landmark reaches one shared chunk.
    fn share_far(&mut self) {
        let far: Arc<[Block]> = vec![Block([FAR; 16]); CHUNK * self.stride / 16].into();
        for c in &mut self.chunks {
            if c.iter().all(|b| b.0 == [FAR; 16]) {
                *c = Arc::clone(&far);
            }
        }
    }

    #[inline(always)]
    fn get(&self, n: usize, i: usize) -> u16 {
        let at = (n & (CHUNK - 1)) * self.stride + i;
        self.chunks[n >> CHUNK_SHIFT][at >> 4].0[at & 15]
    }

    /// Writes one value, copying its chunk first if it is shared.
    fn set(&mut self, n: usize, i: usize, v: u16) {
        let at = (n & (CHUNK - 1)) * self.stride + i;
        let chunk = &mut self.chunks[n >> CHUNK_SHIFT];
        if Arc::get_mut(chunk).is_none() {
            *chunk = Arc::from(&chunk[..]);
        }
        Arc::get_mut(chunk).expect("unique after the copy")[at >> 4].0[at & 15] = v;
    }

    /// The landmark cells, in the order they were picked.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Heap bytes held (a chunk shared with other versions counted in full, the shared
    /// unreached chunk once).
    pub fn memory_bytes(&self) -> usize {
        let mut seen: Vec<*const Block> = self.chunks.iter().map(|c| c.as_ptr()).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len() * CHUNK * self.stride * size_of::<u16>()
            + self.chunks.len() * size_of::<Arc<[Block]>>()
            + self.points.len() * size_of::<Point>()
    }

    /// How many chunks `self` and `other` share (the same allocation): after an
    /// [`Landmarks::update`], all but the ones it wrote.
    pub fn shared_chunks(&self, other: &Landmarks) -> usize {
        self.chunks
            .iter()
            .zip(&other.chunks)
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }

    /// The values of padded cell `n`, by landmark.
    #[inline(always)]
    fn row(&self, n: usize) -> &[u16] {
        let at = (n & (CHUNK - 1)) * self.stride;
        let block = &self.chunks[n >> CHUNK_SHIFT][at >> 4].0;
        &block[at & 15..(at & 15) + self.k]
    }

    /// The heuristic towards padded `goal`, on top of the octile `base`.
    pub(crate) fn towards(&self, base: Heuristic, goal: usize) -> LandmarkHeuristic<'_> {
        let mut at_goal = [FAR; MAX_LANDMARKS];
        at_goal[..self.k].copy_from_slice(self.row(goal));
        LandmarkHeuristic {
            base,
            landmarks: self,
            at_goal,
            // A hair under 1 / unit: the product must not round above the quotient.
            scale: (1.0 - 1e-12) / f64::from(self.unit),
        }
    }
}

mod measure;

use measure::{Dial, Steps, farthest, first_unit, largest_component, stride};

/// `max(octile, max_i |q_i(n) - q_i(goal)| / unit)` (see the module docs).
pub(crate) struct LandmarkHeuristic<'a> {
    base: Heuristic,
    landmarks: &'a Landmarks,
    at_goal: [u16; MAX_LANDMARKS],
    scale: f64,
}

impl Estimate for LandmarkHeuristic<'_> {
    #[inline]
    fn h(&self, node: u32) -> f64 {
        let row = self.landmarks.row(node as usize);
        let mut best = 0u32;
        for (&a, &b) in row.iter().zip(&self.at_goal) {
            // A landmark that cannot reach one of them: no bound.
            let diff = if a == FAR || b == FAR {
                0
            } else {
                u32::from(a.abs_diff(b))
            };
            best = best.max(diff);
        }
        self.base.h(node).max(f64::from(best) * self.scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Patch, Rect};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn random_grid(rng: &mut StdRng, w: u32, h: u32, density: f64) -> Grid {
        let costs = (0..w * h)
            .map(|_| u8::from(!rng.random_bool(density)))
            .collect();
        Grid::from_costs(w, h, costs, Movement::Octile).unwrap()
    }

    /// A few cells and a rectangle, all set to `cost`.
    fn random_patch(rng: &mut StdRng, w: u32, h: u32, cost: u8) -> Patch {
        let cells = (0..rng.random_range(0..4))
            .map(|_| {
                let p = Point::new(rng.random_range(0..w), rng.random_range(0..h));
                (p, cost)
            })
            .collect();
        let (x, y) = (rng.random_range(0..w), rng.random_range(0..h));
        let rects = vec![Rect {
            x,
            y,
            width: rng.random_range(1..=(w - x).min(4)),
            height: rng.random_range(1..=(h - y).min(4)),
            cost,
        }];
        Patch { cells, rects }
    }

    /// Real (f64) distances from padded `from` to every padded cell: the reference.
    fn reference(grid: &Grid, from: usize) -> Vec<f64> {
        let cells = grid.cells();
        let steps = Steps::new(grid.padded_width(), 1, 2);
        let mut dist = vec![f64::INFINITY; cells.len()];
        let mut heap = BinaryHeap::new();
        dist[from] = 0.0;
        heap.push(Reverse((0u64, from)));
        while let Some(Reverse((bits, n))) = heap.pop() {
            let g = f64::from_bits(bits);
            if g > dist[n] {
                continue;
            }
            steps.each(&cells[..], n, |m, c| {
                let v = g + if c == 1 {
                    1.0
                } else {
                    std::f64::consts::SQRT_2
                };
                if v < dist[m] {
                    dist[m] = v;
                    heap.push(Reverse((v.to_bits(), m)));
                }
            });
        }
        dist
    }

    /// Every value of `l` is a potential on `grid` (module docs): across every move, both
    /// values unreached or both reached and within the move's integer cost.
    fn assert_potential(l: &Landmarks, grid: &Grid, what: &str) {
        let cells = grid.cells();
        let steps = Steps::new(grid.padded_width(), l.unit, l.diag);
        for n in (0..cells.len()).filter(|&n| cells[n] != 0) {
            steps.each(&cells[..], n, |m, c| {
                for i in 0..l.k {
                    let (a, b) = (l.get(n, i), l.get(m, i));
                    assert!(
                        (a == FAR) == (b == FAR) && (a == FAR || u32::from(a.abs_diff(b)) <= c),
                        "{what}: landmark {i}, move {n} -> {m}: {a} and {b}"
                    );
                }
            });
        }
    }

    /// Chunks whose values an update did not change are still the old version's.
    fn assert_shares_unchanged(next: &Landmarks, prev: &Landmarks, what: &str) {
        for (c, (a, b)) in next.chunks.iter().zip(&prev.chunks).enumerate() {
            let same = a.iter().zip(b.iter()).all(|(x, y)| x.0 == y.0);
            assert!(
                !same || Arc::ptr_eq(a, b),
                "{what}: chunk {c} copied unchanged"
            );
        }
    }

    /// After patches that only open cells, updated landmarks are exactly a fresh measurement
    /// from the same cells, and share every chunk they did not change.
    #[test]
    fn updates_after_openings_equal_fresh_measurements() {
        for seed in 0..40u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let (w, h) = (rng.random_range(3..=70), rng.random_range(3..=50));
            let density = rng.random_range(0.1..0.5);
            let mut grid = random_grid(&mut rng, w, h, density);
            let Some(mut l) = Landmarks::build(&grid, rng.random_range(1..=16)) else {
                continue;
            };
            for step in 0..8 {
                let patch = random_patch(&mut rng, w, h, 1);
                let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                    continue;
                };
                let what = format!("seed {seed} step {step}");
                let updated = l.update(&next, &changed).unwrap();
                let fresh = l.remeasured(&next).unwrap();
                for n in 0..next.padded_len() {
                    if next.cells()[n] != 0 {
                        assert_eq!(updated.row(n), fresh.row(n), "{what}: cell {n}");
                    }
                }
                assert_potential(&updated, &next, &what);
                assert_shares_unchanged(&updated, &l, &what);
                (grid, l) = (next, updated);
            }
        }
    }

    /// Under random walls and openings (walls carried over, openings updated), the values
    /// stay a potential and the heuristic stays below the reference distance to every goal.
    #[test]
    fn heuristic_stays_admissible_under_patches() {
        for seed in 0..30u64 {
            let mut rng = StdRng::seed_from_u64(100 + seed);
            let (w, h) = (rng.random_range(3..=50), rng.random_range(3..=40));
            let density = rng.random_range(0.1..0.4);
            let mut grid = random_grid(&mut rng, w, h, density);
            let Some(mut l) = Landmarks::build(&grid, rng.random_range(1..=8)) else {
                continue;
            };
            for step in 0..10 {
                let cost = u8::from(rng.random_bool(0.5));
                let patch = random_patch(&mut rng, w, h, cost);
                let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                    continue;
                };
                if !l.carry_over(&next, &changed) {
                    l = l.update(&next, &changed).unwrap();
                }
                grid = next;
                let what = format!("seed {seed} step {step}");
                assert_potential(&l, &grid, &what);
                let cells = grid.cells();
                for _ in 0..3 {
                    let goal = rng.random_range(0..cells.len());
                    if cells[goal] == 0 {
                        continue;
                    }
                    let truth = reference(&grid, goal);
                    let h = l.towards(Heuristic::new(&grid, grid.ppoint(goal)), goal);
                    for n in (0..cells.len()).filter(|&n| cells[n] != 0) {
                        assert!(
                            h.h(n as u32) <= truth[n] + 1e-9,
                            "{what}: h({n}) = {} above {}",
                            h.h(n as u32),
                            truth[n]
                        );
                    }
                }
            }
        }
    }

    /// A map with long winding paths gets a coarser unit, and its values stay exact.
    #[test]
    fn long_paths_get_a_coarser_unit() {
        // A serpentine corridor: every other row open, joined at alternate ends.
        let (w, h) = (100u32, 99u32);
        let costs = (0..h)
            .flat_map(|y| {
                (0..w).map(move |x| {
                    let joint = if y % 4 == 1 { x == w - 1 } else { x == 0 };
                    u8::from(y % 2 == 0 || joint)
                })
            })
            .collect();
        let grid = Grid::from_costs(w, h, costs, Movement::Octile).unwrap();
        let l = Landmarks::at(&grid, &[Point::new(0, 0)]).unwrap();
        assert!(l.unit < 29, "unit {}", l.unit);
        // The far end of the corridor: 50 rows of 99 steps and 49 joints of 2, no diagonal.
        let truth = reference(&grid, grid.pidx(Point::new(0, 0)));
        let end = grid.pidx(Point::new(0, h - 1));
        assert_eq!(truth[end], 50.0 * 99.0 + 49.0 * 2.0);
        assert_eq!(l.distance(0, Point::new(0, h - 1)) as f64, truth[end]);
        assert!(Landmarks::build(&grid, 4).is_some());
    }
}
