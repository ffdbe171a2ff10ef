//! Landmark (differential) heuristics for uniform octile maps.
//!
//! For a few landmark cells `L`, the exact distance `d(L, n)` to every cell. By the triangle
//! inequality `|d(L, n) - d(L, g)| <= d(n, g)`, so the largest such difference over the
//! landmarks, or the octile distance when that is larger, is an admissible heuristic, and a
//! consistent one: each term changes by at most `d(n, m)` between two cells `n`, `m`, and
//! every search edge costs at least that (Goldberg and Harrelson's ALT; Sturtevant et al.'s
//! differential heuristics). Where the octile distance sees straight through a wall, the
//! landmarks see the way round it, so an A* or JPS+ search expands far fewer nodes whose
//! `f` falls short of the optimum.
//!
//! # Precision
//!
//! Distances are measured in `f64` and stored as `f32` (4 bytes a landmark and cell), each
//! within a relative `2^-24` of the measured value; the difference of two stored values is
//! then within `2^-23` times their sum of the true difference, and the heuristic subtracts
//! `2^-22` of that sum: it stays admissible. It is consistent only up to that slack (about
//! `5e-4` between two cells 1000 steps from a landmark), which the search's improvement
//! margin and its reopening of closed nodes absorb: an answer can exceed the optimum by at
//! most the slack, and on a uniform map two different path costs of up to a few thousand
//! steps differ by far more than that (see `search::IMPROVES_BY`), so the answer is the
//! optimum. The tests compare every answer with the benchmarks' optima and a reference
//! Dijkstra.
//!
//! # Patches
//!
//! The argument above needs less than exact distances: any values `D(n)` with
//! `|D(a) - D(b)| <= c(a, b)` across every move `a -> b` of the map (a *potential*) give an
//! admissible and consistent heuristic `|D(n) - D(g)|`, by the same sum along a path.
//! Exact distances are one such potential, and two cheaper ones follow a patch:
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
//!   cell); after blocks it keeps some old, shorter ones, which stay admissible. It runs in
//!   `f64` from the stored values and rounds once when storing, so the precision argument
//!   above holds for its output too.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::grid::{Grid, Movement, Point, UNIFORM_STEPS, moves_by};
use crate::query::Limits;
use crate::search::{Estimate, GridExpander, Heuristic, Run, Scratch, Zero, best_first};

/// The most landmarks a map gets: beyond 16 a landmark cuts few expansions more (on
/// `16room_000`, 8 landmarks cut JPS+'s expansions 3.0x, 16 landmarks 4.1x) and every one
/// costs 4 bytes a cell and a Dijkstra over the map.
pub const MAX_LANDMARKS: usize = 16;

/// The memory a map's landmarks may take unless the caller says otherwise (pathd's
/// `--landmark-memory-mb` default): 16 landmarks up to about 1.5 M cells (a 1024x1024 map
/// takes 67 MB), 8 up to 3 M, 4 up to 6 M.
pub const DEFAULT_LANDMARK_MEMORY: u64 = 96 << 20;

/// Distances from a few landmarks to every cell of one uniform octile map version.
#[derive(Clone)]
pub struct Landmarks {
    width: u32,
    height: u32,
    k: usize,
    /// Floats per cell: `k` rounded up to 4, 8 or 16, so that a cell's row never straddles
    /// two cache lines.
    stride: usize,
    /// Where row 0 starts in `dist`: the first 64-byte boundary of the allocation. (Only a
    /// matter of speed: a row read across two lines is one more cache miss per heuristic
    /// evaluation, and with 15 landmarks almost every row did.)
    offset: usize,
    /// `dist[offset + n * stride + i]`: distance from landmark `i` to padded cell `n`
    /// (infinity where it cannot be reached).
    dist: Vec<f32>,
    points: Vec<Point>,
}

impl std::fmt::Debug for Landmarks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Landmarks")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("points", &self.points)
            .finish()
    }
}

impl Landmarks {
    /// How many landmarks `grid` gets within `budget` bytes: 16, 8 or 4 (a row of 4, 8 or
    /// 16 distances per cell, 4 bytes each, the most that fits); 0 when not even 4 fit, or
    /// the map is not uniform octile.
    ///
    /// ```
    /// use pathd_engine::{Grid, Landmarks, Movement};
    /// let grid = Grid::from_costs(98, 98, vec![1; 98 * 98], Movement::Octile).unwrap();
    /// // 100 x 100 padded cells, 40 KB a landmark.
    /// assert_eq!(Landmarks::affordable(&grid, 64 << 20), 16);
    /// assert_eq!(Landmarks::affordable(&grid, 500_000), 8);
    /// assert_eq!(Landmarks::affordable(&grid, 200_000), 4);
    /// assert_eq!(Landmarks::affordable(&grid, 100_000), 0);
    /// ```
    pub fn affordable(grid: &Grid, budget: u64) -> usize {
        if grid.movement() != Movement::Octile || !grid.is_uniform() {
            return 0;
        }
        let per = grid.padded_len() as u64 * size_of::<f32>() as u64;
        [16, 8, 4]
            .into_iter()
            .find(|&k| k as u64 * per <= budget)
            .unwrap_or(0)
    }

    /// Picks `k` landmarks (at most [`MAX_LANDMARKS`]) in the map's largest connected
    /// component by farthest-point selection (the first is the cell farthest from the
    /// component's first cell; each next one the cell farthest from its nearest landmark so
    /// far) and measures their distances to every cell: `k + 1` Dijkstra searches. Queries in
    /// the other components get the octile distance alone. `None` for maps that are not
    /// uniform octile, have no open cell, or for `k == 0`.
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
        let mut scratch = Scratch::default();
        let seed = distances(grid, &mut scratch, first);
        let mut next = farthest(&seed, |n| seed[n]);
        let mut l = Landmarks::empty(grid, k);
        let mut nearest = vec![f32::INFINITY; grid.padded_len()];
        for i in 0..k {
            let d = distances(grid, &mut scratch, next);
            l.store(i, &d);
            for (near, &v) in nearest.iter_mut().zip(&d) {
                *near = near.min(v);
            }
            l.points.push(grid.ppoint(next));
            next = farthest(&d, |n| nearest[n]);
        }
        Some(l)
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
    /// (a landmark that is now blocked still bounds distances through its old values).
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
    /// let fresh = Landmarks::at(&next, &[Point::new(7, 0)]).unwrap();
    /// // (7, 7): round by the first gap 4 + 6 sqrt 2 ... now straight through the new one.
    /// assert_eq!(updated.distance(0, Point::new(7, 7)), fresh.distance(0, Point::new(7, 7)));
    /// assert!(updated.distance(0, Point::new(7, 7)) < l.distance(0, Point::new(7, 7)));
    /// ```
    pub fn update(&self, grid: &Grid, changed: &[Point]) -> Option<Landmarks> {
        if !self.fits(grid) {
            return None;
        }
        let mut next = self.realigned();
        let len = grid.padded_len();
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
        let offsets = crate::grid::DIRS.map(|(dx, dy)| dy as isize * pw as isize + dx as isize);
        let mut value = vec![0.0f64; len];
        let mut heap = BinaryHeap::new();
        for i in 0..self.k {
            // The stored values in f64; only the lowered ones are written back.
            for (n, v) in value.iter_mut().enumerate() {
                *v = next.dist[next.offset + n * next.stride + i] as f64;
            }
            heap.clear();
            heap.extend(
                seeds
                    .iter()
                    .filter(|&&s| value[s].is_finite())
                    .map(|&s| Reverse((value[s].to_bits(), s))),
            );
            let mut moves = [(0u32, 0.0f64); 8];
            while let Some(Reverse((bits, n))) = heap.pop() {
                let g = f64::from_bits(bits);
                if g > value[n] {
                    continue;
                }
                let k = moves_by(
                    &offsets,
                    true,
                    n,
                    g,
                    |m| cells[m],
                    |d, _| UNIFORM_STEPS[d],
                    &mut moves,
                );
                for &(m, v) in &moves[..k] {
                    let m = m as usize;
                    if v < value[m] {
                        value[m] = v;
                        next.dist[next.offset + m * next.stride + i] = v as f32;
                        heap.push(Reverse((v.to_bits(), m)));
                    }
                }
            }
        }
        Some(next)
    }

    /// Measures the distances from the given cells (at most [`MAX_LANDMARKS`], each open)
    /// instead of picking them: for comparisons, e.g. of an [`Landmarks::update`] with a fresh
    /// measurement from the same cells. `None` if one is blocked or off the map, or the map
    /// is not uniform octile.
    pub fn at(grid: &Grid, points: &[Point]) -> Option<Landmarks> {
        if grid.movement() != Movement::Octile
            || !grid.is_uniform()
            || points.is_empty()
            || points.len() > MAX_LANDMARKS
            || !points.iter().all(|&p| grid.is_passable(p))
        {
            return None;
        }
        let mut l = Landmarks::empty(grid, points.len());
        let mut scratch = Scratch::default();
        for (i, &p) in points.iter().enumerate() {
            let d = distances(grid, &mut scratch, grid.pidx(p));
            l.store(i, &d);
            l.points.push(p);
        }
        Some(l)
    }

    /// The stored distance from landmark `i` to cell `p` (infinity where unreachable).
    pub fn distance(&self, i: usize, p: Point) -> f32 {
        let pw = (self.width + 2) as usize;
        self.row((p.y as usize + 1) * pw + p.x as usize + 1)[i]
    }

    /// A table for `k` landmarks of `grid`, every distance infinite, no points yet.
    fn empty(grid: &Grid, k: usize) -> Landmarks {
        Landmarks::blank(grid.width(), grid.height(), k)
    }

    /// A table for `k` landmarks of a `width x height` map, every distance infinite, no
    /// points yet, its rows aligned to 64-byte lines.
    fn blank(width: u32, height: u32, k: usize) -> Landmarks {
        let stride = stride(k);
        let cells = (width as usize + 2) * (height as usize + 2);
        // 15 spare floats, so that a 64-byte boundary lies within the first 16.
        let dist = vec![f32::INFINITY; cells * stride + 15];
        let offset = dist.as_ptr().align_offset(64).min(15);
        Landmarks {
            width,
            height,
            k,
            stride,
            offset,
            dist,
            points: Vec::with_capacity(k),
        }
    }

    /// Stores `d` (by padded cell) as landmark `i`'s distances.
    fn store(&mut self, i: usize, d: &[f32]) {
        for (n, &v) in d.iter().enumerate() {
            self.dist[self.offset + n * self.stride + i] = v;
        }
    }

    /// A copy whose rows are aligned in its own allocation (a plain clone keeps the old
    /// offset, which only lines up by chance).
    fn realigned(&self) -> Landmarks {
        let mut copy = Landmarks::blank(self.width, self.height, self.k);
        copy.points.clone_from(&self.points);
        let n = self.dist.len() - 15;
        copy.dist[copy.offset..copy.offset + n]
            .copy_from_slice(&self.dist[self.offset..self.offset + n]);
        copy
    }

    /// The landmark cells, in the order they were picked.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Heap bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.dist.len() * size_of::<f32>() + self.points.len() * size_of::<Point>()
    }

    /// The distances of padded cell `n`, by landmark.
    #[inline(always)]
    fn row(&self, n: usize) -> &[f32] {
        let at = self.offset + n * self.stride;
        &self.dist[at..at + self.k]
    }

    /// The heuristic towards padded `goal`, on top of the octile `base`.
    pub(crate) fn towards(&self, base: Heuristic, goal: usize) -> LandmarkHeuristic<'_> {
        let mut at_goal = [f32::INFINITY; MAX_LANDMARKS];
        at_goal[..self.k].copy_from_slice(self.row(goal));
        LandmarkHeuristic {
            base,
            landmarks: self,
            at_goal,
        }
    }
}

/// Floats per cell for `k` landmarks: 4, 8 or 16 (dividing a 64-byte line).
fn stride(k: usize) -> usize {
    k.next_power_of_two().max(4)
}

/// The first cell (row-major) of the component with the most cells.
fn largest_component(grid: &Grid) -> Option<Point> {
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

/// The reachable cell (finite `d`) with the largest `key`, the first of equals.
fn farthest(d: &[f32], key: impl Fn(usize) -> f32) -> usize {
    let mut best = (f32::NEG_INFINITY, 0);
    for (n, &v) in d.iter().enumerate() {
        if v.is_finite() && key(n) > best.0 {
            best = (key(n), n);
        }
    }
    best.1
}

/// Distances from padded `from` to every padded cell (infinity where unreachable): one
/// Dijkstra on the shared core, run until the open list is empty.
fn distances(grid: &Grid, scratch: &mut Scratch, from: usize) -> Vec<f32> {
    let len = grid.padded_len();
    scratch.begin(len);
    let limits = Limits::default();
    let run = Run {
        start: from as u32,
        goal: u32::MAX,
        weight: 0.0,
        heuristic: Zero,
        limits: &limits,
        track_closest: false,
        debug_cap: 0,
    };
    best_first(grid, scratch, &mut GridExpander::new(grid), &run);
    let nodes = scratch.nodes();
    (0..len).map(|n| nodes.g(n as u32) as f32).collect()
}

/// `max(octile, max_i |d_i(n) - d_i(goal)| - slack)` (see the module docs).
pub(crate) struct LandmarkHeuristic<'a> {
    base: Heuristic,
    landmarks: &'a Landmarks,
    at_goal: [f32; MAX_LANDMARKS],
}

impl Estimate for LandmarkHeuristic<'_> {
    #[inline]
    fn h(&self, node: u32) -> f64 {
        let row = self.landmarks.row(node as usize);
        let (mut best, mut scale) = (0.0f32, 0.0f32);
        for (&a, &b) in row.iter().zip(&self.at_goal) {
            // Infinite (a landmark that cannot reach one of them) or NaN: no bound.
            let diff = (a - b).abs();
            if diff.is_finite() && diff > best {
                best = diff;
                scale = a + b;
            }
        }
        // Each stored distance is within 2^-24 of its own size, and so is the difference of
        // two: 2^-22 of their sum is more than both roundings together.
        let landmark = best as f64 - scale as f64 * (1.0 / (1u64 << 22) as f64);
        self.base.h(node).max(landmark)
    }
}
