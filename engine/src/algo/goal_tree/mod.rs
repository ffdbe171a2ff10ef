//! One goal-rooted incremental search shared by every agent heading for the same goal, and
//! cheap repairs from the agent when a patch only raises costs.
//!
//! # The tree
//!
//! [`GoalTree`] is Lifelong Planning A* (Koenig, Likhachev & Furcy 2004) run *from the goal
//! without a heuristic*: the keys are `[min(g, rhs), min(g, rhs)]`, so the tree grows in
//! Dijkstra order from the goal and its values serve every start at once, where D* Lite's
//! heuristic and key modifier tie a search to one start. It is bounded and lazy: it only
//! settles vertices up to what its agents need ([`GoalTree::reach`] continues the loop until
//! a new start is settled). The vertex store, queue, patch rule and loop are the LPA* core
//! shared with D* Lite ([`crate::algo::lpa`]); the tree brings its keys (no heuristic), its
//! stop condition (a cost floor and optionally one start settled), the bound and staleness,
//! and the agents.
//!
//! The *bound* `B` is the smallest key left in the queue after the last run of the loop.
//! The LPA* invariant gives: every vertex whose true cost to the goal is below `B` holds it
//! exactly in `g` (a consistent vertex with a key below the queue's top is exact, and an
//! optimal path from a vertex of cost `< B` runs through such vertices only). So the tree
//! answers "cost to goal" for every cell whose `g < B`, and [`GoalTree::descend`] follows
//! the cheapest `c + g` neighbour from there, in the documented direction order (N, E, S, W,
//! NE, SE, SW, NW; first minimum wins), exactly as D* Lite extracts its path.
//!
//! # Cheap repairs when costs only rise
//!
//! A goal-rooted search pays for a wall with everything routed through it: a wall near the
//! goal invalidates most of the tree. But when a patch only raises costs (walls, dearer
//! terrain), the old values are still a lower bound of the new costs, and
//! `h(v) = min(g(v), B)` is a consistent heuristic on the new map (shown below). So
//! [`GoalTree::apply`] with `lowered == false` only queues the changed vertices (the tree
//! becomes *stale*, its `g` values the old ones), and an agent whose path the patch touched
//! runs an A* from itself to the goal with that heuristic (module `route`), which stops at
//! the cells whose old value is still exact (a tight path avoids the patch): near the agent
//! it expands about the detour; mid-way or near the goal, the old equal-cost paths between
//! the agent and the wall.
//! Agents whose path the patch did not touch keep it: their path costs the same and every
//! other path costs at least as much as before. The agents of one patch share their work:
//! which vertices hold exact old values, and the new paths found so far with their exact
//! costs ([`GoalTree::learn`]), where a later agent's repair stops as at any exact vertex. The tree itself is repaired later
//! ([`GoalTree::settle`], which a server runs after publishing the agents' answers), or
//! first thing when a patch lowers a cost or a new start must be reached.
//!
//! Why `h` is consistent, `h(u) <= c(u, v) + h(v)` for every edge: if `h(v) = B` it holds
//! as `h(u) <= B`. Otherwise `g(v) < B` is exact for the map the tree last settled on; if
//! `u`'s true cost then was below `B`, `h(u) = g(u) <= c_then(u, v) + g(v)`; else `h(u) = B
//! <= g*(u) <= c_then(u, v) + g(v)`. Raised costs only make `c(u, v) >= c_then(u, v)`, and
//! `h(goal) = 0`. Consistency and `h(goal) = 0` make `h` admissible, and A* optimal.
//!
//! # Agents
//!
//! An [`Agent`] is what one subscription keeps: its position, its last path and status.
//! Its answers are exactly those of a D* Lite search of its own (same status, same path,
//! same change class; a test compares them on seeded random maps and patch sequences): the
//! first path and paths after lowering patches and moves off the path come from
//! [`GoalTree::descend`] on exact values, which takes D* Lite's steps (both break ties by
//! true cost, not by rounding: `descent_step`); the old path is kept while it stays
//! optimal, and the change is classified with the same rules ([`Change`](crate::Change)).
//! After a raise-only patch, the forward repair (module `route`) returns the path D* Lite's
//! descent would take on the new map without settling the tree first.
//!
//! # Memory
//!
//! A tree costs what it touched (16 bytes per cell in segments, plus its queue); an agent
//! costs its path. [`GoalTree::memory_bytes`], [`Agent::memory_bytes`].

mod agent;
mod exact;
mod route;

use crate::clock::Instant;

use super::lpa::graph::{changed_anchors, check_same_map};
use super::lpa::outcome::Interest;
use super::lpa::{INF, Key, Keys, Lpa, Node, Run, above};
use crate::grid::{Grid, Movement, Point};
use crate::query::{Limits, QueryError, Stats, Status};

pub use agent::{Agent, REPAIRED_KEEP};

/// A goal-rooted, lazily extended LPA* search shared by the agents of one goal (see the
/// module docs).
///
/// ```
/// use pathd_engine::{Agent, GoalTree, Grid, Limits, Movement, Patch, Point};
/// let grid = Grid::from_costs(4, 3, vec![1; 12], Movement::Cardinal).unwrap();
/// let mut tree = GoalTree::new(&grid, Point::new(3, 1), 1).unwrap();
/// let (mut a, _) = Agent::new(&mut tree, &grid, Point::new(0, 1), Limits::default()).unwrap();
/// let (mut b, _) = Agent::new(&mut tree, &grid, Point::new(0, 0), Limits::default()).unwrap();
/// assert_eq!((a.cost(), b.cost()), (3.0, 4.0));
///
/// // A wall on a's path: only a is repaired, forward from itself.
/// let patch = Patch { cells: vec![(Point::new(1, 1), 0)], rects: vec![] };
/// let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
/// tree.apply(&next, &changed, false);
/// assert!(a.on_patch(&mut tree, &next, &changed, false).should_notify());
/// assert!(!b.on_patch(&mut tree, &next, &changed, false).should_notify());
/// assert_eq!(a.cost(), 5.0);
/// tree.settle(&next, 0.0);
/// ```
#[derive(Clone)]
pub struct GoalTree {
    width: u32,
    height: u32,
    movement: Movement,
    goal: Point,
    s_goal: u32,
    /// Agent side in cells (anchors whose clearance is below it count as walls).
    size: u32,
    /// The LPA* state rooted at the goal (vertex store, queue, written vertices).
    core: Lpa,
    /// Every vertex whose true cost is below it holds that cost in `g` (see module docs);
    /// as of the last run of the loop when `stale`.
    bound: f64,
    /// Raise-only patches were queued since the last run of the loop: `g` holds the costs
    /// of the map as of that run, lower bounds of today's.
    stale: bool,
    /// How many distinct vertices the last [`Self::apply`], [`Self::settle`] or
    /// [`Self::reach`] that had to search wrote; the core keeps the first [`REPAIRED_KEEP`]
    /// of them, sorted ([`Self::seal_repaired`]; a large extension would otherwise keep a
    /// list longer than the tree's own store).
    repaired_count: usize,
    /// While stale: vertices on the paths forward repairs found since the last patch, with
    /// their exact cost on the new map and their next step (see [`Self::learn`]).
    learnt: route::CellMap<(f64, u32)>,
    /// While stale: which vertices' old values the forward repairs found exact (their
    /// descent on the new map is tight), shared by the agents of one patch.
    exact_memo: route::CellMap<bool>,
}

impl std::fmt::Debug for GoalTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoalTree")
            .field("goal", &self.goal)
            .field("size", &self.size)
            .field("bound", &self.bound)
            .field("stale", &self.stale)
            .field("records", &self.core.touched())
            .finish_non_exhaustive()
    }
}

impl GoalTree {
    /// An empty tree towards `goal` for a `size x size` agent; nothing is searched until an
    /// agent needs it. Errors: `goal` off the map, blocked, or the agent does not fit there;
    /// `size` outside `1..=`[`crate::MAX_AGENT_SIZE`].
    pub fn new(grid: &Grid, goal: Point, size: u32) -> Result<Self, QueryError> {
        crate::query::check_size(size)?;
        if !grid.in_bounds(goal) {
            return Err(QueryError::OutOfBounds {
                which: "goal",
                point: goal,
            });
        }
        crate::query::check_fits(grid, "goal", goal, size)?;
        Ok(GoalTree {
            width: grid.width(),
            height: grid.height(),
            movement: grid.movement(),
            goal,
            s_goal: grid.pidx(goal) as u32,
            size,
            core: Lpa::new(grid, goal, size, &NoHeuristic),
            bound: 0.0,
            stale: false,
            repaired_count: 0,
            learnt: route::CellMap::default(),
            exact_memo: route::CellMap::default(),
        })
    }

    /// The goal.
    pub fn goal(&self) -> Point {
        self.goal
    }

    /// The agent side the tree is for.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Every cell whose true cost to the goal is below this has it settled (as of the last
    /// run of the loop while [`Self::is_stale`]).
    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// True when raise-only patches wait for [`Self::settle`].
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// Bytes the tree holds (vertex store and queue).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.core.heap_bytes()
            + self.learnt.capacity() * std::mem::size_of::<(u32, (f64, u32))>()
            + self.exact_memo.capacity() * std::mem::size_of::<(u32, bool)>()
    }

    /// Keeps what a forward repair found (its [`route::Route::learnt`]) for the next agents
    /// until the next patch or run of the loop: those vertices' exact costs and D* Lite's
    /// next steps on the new map. A later forward repair stops at them as at any vertex whose
    /// value is exact, and follows their steps: with many agents behind one wall, each
    /// repair ends where it meets an earlier agent's new path.
    ///
    /// Why the steps are D* Lite's: its descent takes, from a vertex, the first neighbour in
    /// direction order with the least `c + g`, a function of the vertex and the new map's
    /// exact costs only; the repair took that step at every vertex of its path.
    fn learn(&mut self, learnt: &[(u32, f64, u32)]) {
        if self.stale {
            self.learnt
                .extend(learnt.iter().map(|&(v, g, next)| (v, (g, next))));
        }
    }

    /// The vertices whose `g` or `rhs` the last [`Self::apply`], [`Self::reach`] or
    /// [`Self::settle`] changed, as padded cell ids: the first [`REPAIRED_KEEP`] (sorted)
    /// and how many there were.
    pub(crate) fn repaired_ids(&self) -> (&[u32], usize) {
        (self.core.repaired(), self.repaired_count)
    }

    /// Ends a call's record of written vertices (see the field).
    fn seal_repaired(&mut self) {
        self.repaired_count = self.core.seal_repaired(REPAIRED_KEEP);
    }

    /// Cells with a finite `g` or `rhs`.
    pub fn touched_cells(&self) -> usize {
        self.core.touched()
    }

    /// The settled cost from `p` to the goal, when `p` is settled and the tree not stale.
    pub fn cost_from(&self, grid: &Grid, p: Point) -> Option<f64> {
        let g = self.core.g(grid.pidx(p) as u32);
        (!self.stale && g < self.bound).then_some(g)
    }

    /// Which changed cells can matter to the tree: those within one cell (and a footprint)
    /// of a cell it has touched. An agent whose cost is at most [`Self::bound`] has its path
    /// inside, and a changed cell outside can only change costs above the bound.
    pub fn interest(&self) -> Interest {
        match self.core.bounds() {
            Some((lo, hi)) => Interest::Region {
                min: Point::new(lo.x.saturating_sub(1), lo.y.saturating_sub(1)),
                max: Point::new(
                    (hi.x + self.size).min(self.width - 1),
                    (hi.y + self.size).min(self.height - 1),
                ),
            },
            None => Interest::Everything,
        }
    }

    /// Takes in a patch: `grid` is the new map version, `changed` the cells it wrote,
    /// `lowered` whether any of them got cheaper (or opened). Raise-only patches are only
    /// queued (the tree turns stale, see module docs); a lowering patch is worked off at
    /// once, up to the bound. Returns the work done.
    ///
    /// # Panics
    ///
    /// When `grid` has other dimensions or another movement rule than the tree's map.
    pub fn apply(&mut self, grid: &Grid, changed: &[Point], lowered: bool) -> Stats {
        self.check_grid(grid);
        let started = Instant::now();
        self.core.clear_repaired();
        self.learnt = route::CellMap::default();
        self.exact_memo = route::CellMap::default();
        let mut stats = Stats::default();
        let anchors = changed_anchors(changed, self.size);
        let wrote = self.core.patch(grid, &anchors, &NoHeuristic, &mut stats);
        if lowered && (wrote || self.stale) {
            let (_, run) = self.run(grid, None, 0.0, &Limits::default());
            stats.expanded += run.expanded;
            stats.generated += run.generated;
        } else if wrote {
            self.stale = true;
        }
        self.seal_repaired();
        stats.elapsed = started.elapsed();
        stats
    }

    /// Works off queued patches and extends the tree until every cell of cost up to
    /// `target` (and up to the current bound) is settled. A server calls it after the
    /// agents' answers are out, with their largest path cost.
    pub fn settle(&mut self, grid: &Grid, target: f64) -> Stats {
        self.check_grid(grid);
        let started = Instant::now();
        let mut stats = Stats::default();
        self.core.clear_repaired();
        if self.stale || target >= self.bound {
            stats = self.run(grid, None, target, &Limits::default()).1;
        }
        self.seal_repaired();
        stats.elapsed = started.elapsed();
        stats
    }

    /// Extends (and repairs) the tree until `p` is settled: [`Status::Found`] with its cost
    /// to the goal readable by [`Self::cost_from`], [`Status::NoPath`] when `p` cannot reach
    /// the goal (answered from the map's components, without searching), or
    /// [`Status::LimitReached`] (the tree stays valid; a later call continues).
    pub fn reach(&mut self, grid: &Grid, p: Point, limits: &Limits) -> (Status, Stats) {
        self.check_grid(grid);
        let started = Instant::now();
        if !self.connected(grid, p) {
            return (Status::NoPath, Stats::default());
        }
        let (status, mut stats) = if self.cost_from(grid, p).is_some() {
            (Status::Found, Stats::default())
        } else {
            self.core.clear_repaired();
            let run = self.run(grid, Some(grid.pidx(p) as u32), 0.0, limits);
            self.seal_repaired();
            run
        };
        stats.elapsed = started.elapsed();
        (status, stats)
    }

    /// Greedy descent from `from` (settled: [`Self::reach`] said found) to the goal: always
    /// the neighbour with the smallest `c + g`, first in direction order on ties.
    pub fn descend(&self, grid: &Grid, from: Point) -> Vec<Point> {
        self.core.descend(grid, grid.pidx(from) as u32, "goal tree")
    }

    // ---- internals ----

    /// True when a `size x size` agent at `p` can reach the goal on `grid`.
    fn connected(&self, grid: &Grid, p: Point) -> bool {
        if !grid.same_component(p, self.goal) {
            return false;
        }
        self.size <= 1 || {
            let clr = grid.clearance();
            clr.fits(p, self.size) && clr.fits(self.goal, self.size)
        }
    }

    fn check_grid(&self, grid: &Grid) {
        check_same_map("GoalTree", grid, (self.width, self.height, self.movement));
    }

    /// The smallest live key in the queue, or infinity.
    fn top_key(&mut self) -> f64 {
        self.core.top_key().map_or(INF, |k| k.k1)
    }

    /// The core's loop with the tree's stop condition: runs until the smallest queued key
    /// exceeds the old bound, `target` and, when given, the settled cost of vertex `need`.
    /// Afterwards the bound is the smallest queued key and the tree is not stale, also
    /// after a limit.
    fn run(
        &mut self,
        grid: &Grid,
        need: Option<u32>,
        target: f64,
        limits: &Limits,
    ) -> (Status, Stats) {
        // Whatever was settled stays settled: the old bound is part of the floor.
        let floor = self.bound.max(target);
        let mut stats = Stats::default();
        // Stop when everything up to the floor and the needed vertex is settled (with the
        // core's relative slack against rounding).
        let stop = |core: &Lpa, top: Key| {
            let goal_of_run = match need {
                Some(n) => {
                    let node = core.node(n);
                    if node.consistent() {
                        floor.max(node.g)
                    } else {
                        INF
                    }
                }
                None => floor,
            };
            above(top.k1, goal_of_run)
        };
        let mut status = match self
            .core
            .compute(grid, &NoHeuristic, limits, stop, &mut stats)
        {
            Run::Done => Status::Found,
            Run::Limit => Status::LimitReached,
        };
        if status == Status::Found && need.is_some_and(|n| !self.core.g(n).is_finite()) {
            status = Status::NoPath;
        }
        self.bound = self.top_key();
        self.stale = false;
        self.learnt = route::CellMap::default();
        self.exact_memo = route::CellMap::default();
        self.core.compact(&NoHeuristic);
        (status, stats)
    }
}

/// The tree's keys: `[min(g, rhs), min(g, rhs)]`, no heuristic (Dijkstra order from the
/// goal, good for every start).
struct NoHeuristic;

impl Keys for NoHeuristic {
    #[inline]
    fn key(&self, _: u32, node: Node) -> Key {
        let m = node.min();
        Key { k1: m, k2: m }
    }
}
