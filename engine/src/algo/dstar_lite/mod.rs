//! D* Lite (Koenig & Likhachev 2002, the optimised version with the key modifier `km`): a
//! shortest path kept up to date while the map changes and the agent moves, repaired from
//! what changed instead of replanned from scratch.
//!
//! # The idea
//!
//! The search runs *from the goal*: `g(s)` estimates the cost from `s` to the goal, and
//! `rhs(s) = min over neighbours s' of c(s, s') + g(s')` (0 at the goal) is its one-step
//! lookahead. A vertex is consistent when `g == rhs`; the queue holds exactly the
//! inconsistent ones, ordered by `[min(g, rhs) + h(start, s) + km, min(g, rhs)]`. When
//! edge costs change, only the rhs of the vertices at the changed edges are recomputed and
//! the queue is worked off until the start is consistent and no queued key is below the
//! start's: the inconsistency ripples exactly as far as the costs-to-goal really changed.
//! When the agent moves, no `g` changes at all (they are costs *to the goal*); only the
//! heuristic part of the keys shifts, and `km += h(old start, new start)` keeps every queued
//! key a lower bound of its true key (triangle inequality), so the queue need not be
//! re-sorted: an entry found too low when it surfaces is re-pushed at its true key.
//!
//! # The core
//!
//! The vertex store, the queue, `UpdateVertex`, the edge-change step after a patch and the
//! loop are the shared LPA* core ([`crate::algo::lpa`], also the goal trees'); this module is
//! D* Lite's policy over it: the keys (heuristic from the start plus `km`), the stop
//! condition (the start consistent and no queued key below the start's, with the core's
//! relative slack: see "Exactness" there), moving the start, and the path and its change
//! class.
//!
//! # The path
//!
//! When the loop stops, every vertex on any optimal path from the start has been settled
//! (its `k1` is at most the start's), and any vertex left in the queue has
//! `min(g, rhs) + h > g(start)`, so following the cheapest `c + g` neighbour from the start
//! never steps onto a stale value. The path is that greedy descent from the start
//! (directions in the documented order N, E, S, W, NE, SE, SW, NW, first minimum wins),
//! except that the previous path is kept when it is still legal and still optimal, so an
//! unrelated patch never flips a path between equal-cost alternatives. The reported cost is
//! the path's step costs summed from the start, as A* sums them.
//!
//! Unreachable goals are answered from the grid's connected components without searching
//! (which would flood the goal's whole component): the search simply pauses with its state
//! intact and resumes when a patch connects them again. The start or goal cell walled is
//! the same case.
//!
//! # Memory
//!
//! Vertex state lives in segments of 16 consecutive cells (256 bytes) allocated only where
//! the search has been, found through a small hash map; the queue holds about 24 bytes per
//! entry; nothing is sized by the
//! map. [`DStarLite::memory_bytes`] reports it.
//!
//! # Using it from a server
//!
//! Keep one [`DStarLite`] per subscription (it is `Send + Sync`, and `Clone`). For each
//! patch, call [`DStarLite::update`] with the new grid and the changed cells
//! ([`Grid::apply_patch`] returns both) on a blocking thread; it returns at once, with no
//! work and [`Change::Unchanged`], when the patch cannot matter. To avoid even scheduling
//! those calls, filter with [`DStarLite::interest`] (a box, or "everything") or
//! [`DStarLite::affected_by`]; see [`Interest`] for the exact rule. Calls on one state must
//! see the patches in order, and every call takes the grid of the newest patch it has seen
//! (`update` with several patches' changed cells at once is fine: pass their union).

mod search_loop;

use crate::clock::Instant;

use crate::grid::{Grid, Movement, Point};
use crate::query::{Limits, QueryError, Stats, Status};

use super::lpa::Lpa;
use super::lpa::graph::{agent_path_cost, changed_anchors, check_same_map};
use super::lpa::outcome::Baseline;
pub use super::lpa::outcome::{Change, Interest, RepairOutcome};

/// An incremental shortest-path search (D* Lite) from a moving start to a fixed goal.
///
/// ```
/// use pathd_engine::{Change, DStarLite, Grid, Limits, Movement, Point, Status};
/// // . . .
/// // . . .
/// // . . .
/// let grid = Grid::from_costs(3, 3, vec![1; 9], Movement::Cardinal).unwrap();
/// let mut d = DStarLite::new(&grid, Point::new(0, 1), Point::new(2, 1), Limits::default()).unwrap();
/// assert_eq!(d.path().unwrap().1, 2.0);
///
/// // A wall in the middle: the path goes round it.
/// let patch = pathd_engine::Patch { cells: vec![(Point::new(1, 1), 0)], rects: vec![] };
/// let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
/// let out = d.update(&next, &changed);
/// assert_eq!(out.change, Change::Blocked);
/// assert_eq!(d.path().unwrap().1, 4.0);
///
/// // The agent takes one step; the rest of the path stays.
/// let out = d.move_start(&next, Point::new(0, 0)).unwrap();
/// assert_eq!(out.change, Change::Unchanged);
/// assert_eq!(d.status(), Status::Found);
/// assert_eq!(d.path().unwrap().1, 3.0);
/// ```
#[derive(Clone)]
pub struct DStarLite {
    width: u32,
    height: u32,
    movement: Movement,
    /// Padded width of the grids this search runs on.
    pw: usize,
    start: Point,
    goal: Point,
    /// Padded id of the start.
    s_start: u32,
    /// The key modifier: sum of `h(old start, new start)` over the moves since the last
    /// queue rebuild.
    km: f64,
    /// Heuristic scale (smallest cell cost the keys were computed with); must never exceed
    /// the grid's smallest cost, or `h` would overestimate.
    scale: f64,
    /// The LPA* state rooted at the goal (vertex store, queue, written vertices).
    core: Lpa,
    limits: Limits,
    status: Status,
    path: Vec<Point>,
    cost: f64,
    /// The last search stopped before settling the start (start and goal disconnected, or a
    /// limit): any patch may matter, and the next call resumes the search.
    pending: bool,
    /// Counters of the constructor's initial search.
    initial: Stats,
    /// Agent side in cells: anchors whose clearance is below it count as walls (see
    /// [`crate::clearance`]).
    size: u32,
}

impl std::fmt::Debug for DStarLite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DStarLite")
            .field("start", &self.start)
            .field("goal", &self.goal)
            .field("status", &self.status)
            .field("cost", &self.cost)
            .field("records", &self.core.touched())
            .field("queued", &self.core.queued())
            .finish_non_exhaustive()
    }
}

impl DStarLite {
    /// Starts a search from `start` to `goal` on `grid` and runs it to the first path.
    ///
    /// `limits` bound every call (`max_expansions` per call; the cancellation flag and the
    /// deadline as given). Errors, as for [`crate::find_path`]: a point off the map, a blocked
    /// start or goal. Later patches may block them; that is [`Status::NoPath`], not an error.
    pub fn new(grid: &Grid, start: Point, goal: Point, limits: Limits) -> Result<Self, QueryError> {
        Self::new_sized(grid, start, goal, 1, limits)
    }

    /// [`DStarLite::new`] for a `size x size` agent anchored at its top-left cell: the
    /// search runs on the map eroded for that footprint (an anchor is usable when its
    /// clearance is at least `size`), with the anchors' step costs. Errors also when `size`
    /// is outside `1..=`[`crate::MAX_AGENT_SIZE`] or the agent does not fit at the start or
    /// goal.
    pub fn new_sized(
        grid: &Grid,
        start: Point,
        goal: Point,
        size: u32,
        limits: Limits,
    ) -> Result<Self, QueryError> {
        crate::query::check_ends(grid, start, goal, size)?;
        let keys = search_loop::StartKeys::new(grid, start, grid.min_cost() as f64, 0.0);
        let mut d = DStarLite {
            width: grid.width(),
            height: grid.height(),
            movement: grid.movement(),
            pw: grid.padded_width(),
            start,
            goal,
            s_start: grid.pidx(start) as u32,
            km: 0.0,
            scale: grid.min_cost() as f64,
            core: Lpa::new(grid, goal, size, &keys),
            limits,
            status: Status::NoPath,
            path: Vec::new(),
            cost: 0.0,
            pending: true,
            initial: Stats::default(),
            size,
        };
        let started = Instant::now();
        let before = d.baseline();
        let out = d.run_and_finish(grid, before, started);
        d.initial = out.stats;
        // The first search wrote everything it reached: not a repair.
        d.core.forget_repaired();
        Ok(d)
    }

    /// Status of the last call: [`Status::Found`], [`Status::NoPath`] or
    /// [`Status::LimitReached`].
    pub fn status(&self) -> Status {
        self.status
    }

    /// The current best path (start first, goal last) and its cost, when one exists.
    pub fn path(&self) -> Option<(&[Point], f64)> {
        (self.status == Status::Found).then_some((self.path.as_slice(), self.cost))
    }

    /// The agent's current position.
    pub fn start(&self) -> Point {
        self.start
    }

    /// The goal.
    pub fn goal(&self) -> Point {
        self.goal
    }

    /// Counters of the initial search run by [`DStarLite::new`].
    pub fn initial_stats(&self) -> Stats {
        self.initial
    }

    /// Replaces the limits applied to later calls.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Bytes this search holds (vertex map, queue, path), for per-subscription accounting.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.core.heap_bytes()
            + self.path.capacity() * std::mem::size_of::<Point>()
    }

    /// Number of cells with a finite `g` or `rhs` (what the memory is proportional to).
    pub fn touched_cells(&self) -> usize {
        self.core.touched()
    }

    /// The cells whose search state (`g` or `rhs`) the last [`Self::update`],
    /// [`Self::move_start`] or [`Self::resume`] changed (what the repair touched; empty after
    /// the constructor and after a call that returned at once), in row-major order and at
    /// most `cap` of them, with how many there are in all.
    ///
    /// ```
    /// use pathd_engine::{DStarLite, Grid, Limits, Movement, Patch, Point};
    /// let grid = Grid::from_costs(5, 3, vec![1; 15], Movement::Octile).unwrap();
    /// let mut d = DStarLite::new(&grid, Point::new(0, 1), Point::new(4, 1), Limits::default()).unwrap();
    /// assert_eq!(d.repaired_cells(10).1, 0);
    /// let wall = Point::new(2, 1);
    /// let patch = Patch { cells: vec![(wall, 0)], rects: vec![] };
    /// let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
    /// d.update(&next, &changed);
    /// let (cells, count) = d.repaired_cells(100);
    /// assert!(cells.contains(&wall) && count == cells.len());
    /// assert_eq!(d.repaired_cells(1).0.len(), 1);
    /// ```
    pub fn repaired_cells(&self, cap: usize) -> (Vec<Point>, usize) {
        let point = |i: u32| {
            let i = i as usize;
            Point::new((i % self.pw) as u32 - 1, (i / self.pw) as u32 - 1)
        };
        let mut ids = self.core.repaired().to_vec();
        ids.sort_unstable();
        ids.dedup();
        let cells = ids.iter().take(cap).map(|&i| point(i)).collect();
        (cells, ids.len())
    }

    /// Which patches can affect this search (see [`Interest`] for the exact rule).
    pub fn interest(&self) -> Interest {
        match self.core.bounds() {
            // A written cell changes anchors up to `size - 1` up and left of it.
            Some((lo, hi)) if !self.pending => Interest::Region {
                min: Point::new(lo.x.saturating_sub(1), lo.y.saturating_sub(1)),
                max: Point::new(
                    (hi.x + self.size).min(self.width - 1),
                    (hi.y + self.size).min(self.height - 1),
                ),
            },
            _ => Interest::Everything,
        }
    }

    /// True when a patch that produced `new_grid` and changed `changed` can change this
    /// search. Exact in the "false" direction: when it says no, [`DStarLite::update`] would
    /// change nothing. Costs a few hash look-ups per changed cell inside [`Self::interest`].
    pub fn affected_by(&self, new_grid: &Grid, changed: &[Point]) -> bool {
        if self.pending || (new_grid.min_cost() as f64) < self.scale {
            return true;
        }
        let interest = self.interest();
        changed.iter().any(|&c| {
            if !interest.contains(c) || !new_grid.in_bounds(c) {
                return false;
            }
            let i = new_grid.pidx(c);
            self.core.g(i as u32).is_finite()
                || self
                    .core
                    .offsets()
                    .iter()
                    .any(|&o| self.core.g(i.wrapping_add_signed(o) as u32).is_finite())
        })
    }

    /// Repairs the search after a patch: `grid` is the new map version, `changed` the cells
    /// whose cost changed (any order; duplicates and unchanged cells are harmless).
    ///
    /// Returns at once when [`Self::affected_by`] says the patch cannot matter.
    ///
    /// # Panics
    ///
    /// When `grid` has other dimensions or another movement rule than the search's map.
    pub fn update(&mut self, grid: &Grid, changed: &[Point]) -> RepairOutcome {
        self.check_grid(grid);
        // For a sized agent the cells that change for the search are the anchors whose
        // footprint holds a written cell.
        let anchors = changed_anchors(changed, self.size);
        let changed = &anchors[..];
        let started = Instant::now();
        self.core.clear_repaired();
        let before = self.baseline();
        if !self.affected_by(grid, changed) {
            return self.unchanged(started);
        }
        let mut stats = Stats::default();
        let scale = grid.min_cost() as f64;
        if scale != self.scale {
            // The heuristic changes: g and rhs do not depend on it, only the keys do.
            self.scale = scale;
            self.km = 0.0;
            self.core.rebuild_queue(&self.keys());
        }
        let keys = self.keys();
        self.core.patch(grid, changed, &keys, &mut stats);
        let mut out = self.run_and_finish(grid, before, started);
        out.stats.generated += stats.generated;
        out
    }

    /// The agent is now at `p` (along its path or off it); the search continues from there.
    ///
    /// `grid` must be the grid of the last call. Errors: `p` off the map
    /// ([`QueryError::OutOfBounds`]) or blocked ([`QueryError::StartBlocked`]); the search is
    /// left as it was.
    ///
    /// # Panics
    ///
    /// When `grid` has other dimensions or another movement rule than the search's map.
    pub fn move_start(&mut self, grid: &Grid, p: Point) -> Result<RepairOutcome, QueryError> {
        self.check_grid(grid);
        crate::query::check_in_bounds(grid, "start", p)?;
        crate::query::check_fits(grid, "start", p, self.size)?;
        let started = Instant::now();
        self.core.clear_repaired();
        if p == self.start {
            return Ok(self.unchanged(started));
        }
        let mut before = self.baseline();
        // Compare against the old path's remainder from `p`, if `p` is on it.
        before.path = before.path.and_then(|old| {
            let i = old.iter().position(|&q| q == p)?;
            Some(old[i..].to_vec())
        });
        if let Some(rest) = &before.path {
            before.cost = self.path_cost(grid, rest).unwrap_or(before.cost);
        }
        self.km += self.h_between(self.start, p);
        self.start = p;
        self.s_start = grid.pidx(p) as u32;
        Ok(self.run_and_finish(grid, before, started))
    }

    /// Continues a search that a limit interrupted (a no-op otherwise). `grid` must be the
    /// grid of the last call.
    pub fn resume(&mut self, grid: &Grid) -> RepairOutcome {
        self.check_grid(grid);
        let started = Instant::now();
        self.core.clear_repaired();
        if !self.pending {
            return self.unchanged(started);
        }
        let before = self.baseline();
        self.run_and_finish(grid, before, started)
    }

    /// The agent side the search is for.
    pub fn size(&self) -> u32 {
        self.size
    }

    // ---- internals ----

    /// [`Grid::path_cost`] for this search's agent: `None` when a step is illegal for its
    /// footprint too (an anchor it does not fit at, or a diagonal past one).
    pub(super) fn path_cost(&self, grid: &Grid, path: &[Point]) -> Option<f64> {
        agent_path_cost(grid, path, self.size)
    }

    fn check_grid(&self, grid: &Grid) {
        check_same_map("DStarLite", grid, (self.width, self.height, self.movement));
    }

    fn baseline(&self) -> Baseline {
        Baseline {
            status: self.status,
            path: (self.status == Status::Found).then(|| self.path.clone()),
            cost: self.cost,
        }
    }

    fn unchanged(&self, started: Instant) -> RepairOutcome {
        RepairOutcome {
            status: self.status,
            change: Change::Unchanged,
            path_changed: false,
            cost_changed: false,
            stats: Stats {
                elapsed: started.elapsed(),
                ..Stats::default()
            },
        }
    }
}
