//! One agent of a shared [`GoalTree`]: its position and last path, and how a patch or a
//! move changes them (the same answers and change classes as a D* Lite search of its own).

use crate::clock::Instant;

use super::GoalTree;
use crate::algo::lpa::graph::agent_path_cost;
use crate::algo::lpa::outcome::{Baseline, Change, RepairOutcome, classify, same_cost};
use crate::grid::{Grid, Point, bounding_box};
use crate::query::{Limits, QueryError, Stats, Status};

/// What one subscription keeps besides its share of a [`GoalTree`]: where the agent is and
/// its current best path. Every call takes the agent's tree, which must have seen the same
/// patches, and the newest grid.
#[derive(Clone, Debug)]
pub struct Agent {
    start: Point,
    size: u32,
    status: Status,
    path: Vec<Point>,
    cost: f64,
    /// Inclusive box of `path` (to skip patches far from it without walking it).
    bbox: Option<(Point, Point)>,
    /// The [`TILE`]-cell tiles the path visits ([`tile_key`], sorted): a patch whose cells
    /// lie in none of them (or their neighbours) is decided without walking the path. A
    /// superset after the agent moved along its path.
    tiles: Vec<u32>,
    /// The first [`REPAIRED_KEEP`] cells (row-major) the last patch or move made the tree or
    /// the forward repair touch for this agent, and how many there were.
    repaired: (Vec<Point>, usize),
    /// What bounds this agent's later repairs: the first search's `max_expansions` (they run
    /// unattended, so no deadline or cancellation flag), as a D* Lite subscription's.
    repair_limits: Limits,
}

/// Side of the tiles of [`Agent::tiles`], in cells.
const TILE: u32 = 64;

/// Most tiles [`Agent::touched_by`] looks up before it walks the path instead.
const MAX_TILE_PROBES: u32 = 16;

/// The key of tile `(tx, ty)`, the [`TILE`]s counted from the top left (map coordinates
/// stay below 2^16).
fn tile_key(tx: u32, ty: u32) -> u32 {
    ty << 16 | tx
}

/// Up to this many changed cells, [`Agent::touched_by`] checks each against a step.
const TOUCH_EXACT: usize = 64;

/// Most repaired cells an agent keeps for [`Agent::repaired_cells`].
pub const REPAIRED_KEEP: usize = 4096;

impl Agent {
    /// An agent at `start` following `tree`, with its first path. `limits` bound the tree's
    /// extension to `start` (on a limit the status is [`Status::LimitReached`] and a later
    /// patch or move completes it); their `max_expansions` also bounds each later repair. Errors: `start` off the map or the agent does not fit.
    pub fn new(
        tree: &mut GoalTree,
        grid: &Grid,
        start: Point,
        limits: Limits,
    ) -> Result<(Self, Stats), QueryError> {
        if !grid.in_bounds(start) {
            return Err(QueryError::OutOfBounds {
                which: "start",
                point: start,
            });
        }
        crate::query::check_fits(grid, "start", start, tree.size())?;
        let mut a = Agent {
            start,
            size: tree.size(),
            status: Status::NoPath,
            path: Vec::new(),
            cost: 0.0,
            bbox: None,
            tiles: Vec::new(),
            repaired: (Vec::new(), 0),
            repair_limits: Limits {
                max_expansions: limits.max_expansions,
                deadline: None,
                cancel: None,
            },
        };
        let stats = a.answer_from_tree(tree, grid, &limits);
        Ok((a, stats))
    }

    /// Status of the last answer.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The current best path (start first) and its cost, when one exists.
    pub fn path(&self) -> Option<(&[Point], f64)> {
        (self.status == Status::Found).then_some((self.path.as_slice(), self.cost))
    }

    /// The path's cost (0 without one).
    pub fn cost(&self) -> f64 {
        self.cost
    }

    /// The agent's position.
    pub fn start(&self) -> Point {
        self.start
    }

    /// Bytes the agent holds (its path and its last repaired cells).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + (self.path.capacity() + self.repaired.0.capacity()) * std::mem::size_of::<Point>()
            + self.tiles.capacity() * std::mem::size_of::<u32>()
    }

    /// The cells the last [`Self::on_patch`] or [`Self::move_to`] touched to answer (the
    /// tree's repaired vertices, and after a raise-only patch the vertices the forward repair
    /// expanded or reached as terminals), in row-major order
    /// and at most `cap` (and [`REPAIRED_KEEP`]) of them, with how many there were in all.
    pub fn repaired_cells(&self, cap: usize) -> (Vec<Point>, usize) {
        let (cells, count) = &self.repaired;
        (cells[..cap.min(cells.len())].to_vec(), *count)
    }

    /// Keeps what the tree's last call wrote ([`GoalTree::repaired_ids`]) and `own` (the
    /// vertices this agent's forward repair took out of its queue), as the first
    /// [`REPAIRED_KEEP`] cells in row-major order and how many there were. When the tree
    /// kept only part of its list, a cell in both may count twice.
    fn note_repaired(&mut self, grid: &Grid, tree: &GoalTree, own: &[u32]) {
        let (kept, tree_count) = tree.repaired_ids();
        let mut ids: Vec<u32> = kept.to_vec();
        ids.extend_from_slice(own);
        ids.sort_unstable();
        ids.dedup();
        let count = tree_count + (ids.len() - kept.len());
        ids.truncate(REPAIRED_KEEP);
        self.repaired = (
            ids.iter().map(|&i| grid.ppoint(i as usize)).collect(),
            count,
        );
    }

    /// Answers a patch the tree has just taken in with [`GoalTree::apply`] (same `grid`,
    /// `changed` and `lowered`).
    pub fn on_patch(
        &mut self,
        tree: &mut GoalTree,
        grid: &Grid,
        changed: &[Point],
        lowered: bool,
    ) -> RepairOutcome {
        let started = Instant::now();
        let limits = self.repair_limits.clone();
        self.repaired = (Vec::new(), 0);
        if self.status == Status::Found && !self.near(changed) {
            // The path costs the same; after a raise-only patch nothing got cheaper, after
            // a lowering one the (exact) tree says whether something did.
            let keep = !lowered
                || tree.connected(grid, self.start)
                    && tree.reach(grid, self.start, &limits).0 == Status::Found
                    && tree
                        .cost_from(grid, self.start)
                        .is_some_and(|best| self.cost <= best || same_cost(self.cost, best));
            if keep {
                return self.unchanged(started);
            }
        }
        // Raise-only and no step of the path touched: it costs the same and nothing got
        // cheaper (the common case of a fan-out, decided without walking the map).
        if self.status == Status::Found && !lowered && !self.touched_by(changed) {
            return self.unchanged(started);
        }
        let before = self.baseline();
        if self.status != Status::Found {
            // No path (or interrupted) before: any patch may connect it.
            let stats = self.answer_from_tree(tree, grid, &limits);
            return self.outcome(&before, None, stats, started);
        }
        let old_now = if self.near(changed) {
            agent_path_cost(grid, &self.path, self.size)
        } else {
            Some(self.cost)
        };
        // Raise-only and the path untouched: it costs the same and nothing got cheaper.
        if !lowered && old_now == Some(self.cost) {
            return self.outcome(&before, old_now, Stats::default(), started);
        }
        if !tree.connected(grid, self.start) {
            self.clear(Status::NoPath);
            return self.outcome(&before, old_now, Stats::default(), started);
        }
        let stats = if lowered {
            // The tree is exact (apply settled it): its value is the new optimum.
            let (status, stats) = tree.reach(grid, self.start, &limits);
            self.note_repaired(grid, tree, &[]);
            match (status, tree.cost_from(grid, self.start), old_now) {
                (Status::Found, Some(best), Some(c)) if c <= best || same_cost(c, best) => {
                    self.cost = c;
                }
                (Status::Found, Some(_), _) => self.take_path(grid, tree.descend(grid, self.start)),
                (status, _, _) => self.clear(status),
            }
            stats
        } else {
            // Forward repair with the tree's (old) values as heuristic.
            let route = tree.route(grid, self.start, &limits);
            tree.learn(&route.learnt);
            // What the patch changed in the tree, and what this agent's repair expanded.
            self.note_repaired(grid, tree, &route.popped);
            let (status, path, stats) = (route.status, route.path, route.stats);
            match (path, old_now) {
                (Some(p), Some(c)) => {
                    let best = agent_path_cost(grid, &p, self.size).expect("A* takes legal steps");
                    if c <= best || same_cost(c, best) {
                        self.cost = c;
                    } else {
                        self.take_path(grid, p);
                    }
                }
                (Some(p), None) => self.take_path(grid, p),
                (None, _) => self.clear(status),
            }
            stats
        };
        self.outcome(&before, old_now, stats, started)
    }

    /// The agent is now at `p` (along its path or off it). `grid` is the newest grid the
    /// tree has seen. Errors: `p` off the map or the agent does not fit there (the agent is
    /// left as it was).
    pub fn move_to(
        &mut self,
        tree: &mut GoalTree,
        grid: &Grid,
        p: Point,
    ) -> Result<RepairOutcome, QueryError> {
        if !grid.in_bounds(p) {
            return Err(QueryError::OutOfBounds {
                which: "start",
                point: p,
            });
        }
        crate::query::check_fits(grid, "start", p, self.size)?;
        let started = Instant::now();
        let mut before = self.baseline();
        self.repaired = (Vec::new(), 0);
        if p == self.start {
            return Ok(self.unchanged(started));
        }
        // Along the path the rest of it is still optimal (a suffix of an optimal path).
        let on_path = (self.status == Status::Found)
            .then(|| self.path.iter().position(|&q| q == p))
            .flatten();
        self.start = p;
        let stats = match on_path {
            Some(i) => {
                self.path.drain(..i);
                self.cost = agent_path_cost(grid, &self.path, self.size).unwrap_or(self.cost);
                before.path = Some(self.path.clone());
                before.cost = self.cost;
                Stats::default()
            }
            None => {
                before.path = None;
                let limits = self.repair_limits.clone();
                self.answer_from_tree(tree, grid, &limits)
            }
        };
        let old_now = before.path.as_ref().map(|_| self.cost);
        Ok(self.outcome(&before, old_now, stats, started))
    }

    // ---- internals ----

    /// Reaches the start in the tree and takes the descent from it.
    fn answer_from_tree(&mut self, tree: &mut GoalTree, grid: &Grid, limits: &Limits) -> Stats {
        let (status, stats) = tree.reach(grid, self.start, limits);
        self.note_repaired(grid, tree, &[]);
        match status {
            Status::Found => self.take_path(grid, tree.descend(grid, self.start)),
            status => self.clear(status),
        }
        stats
    }

    fn take_path(&mut self, grid: &Grid, path: Vec<Point>) {
        self.cost = agent_path_cost(grid, &path, self.size).expect("paths take legal steps");
        self.bbox = bounding_box(&path);
        self.tiles = path
            .iter()
            .map(|&p| tile_key(p.x / TILE, p.y / TILE))
            .collect();
        self.tiles.sort_unstable();
        self.tiles.dedup();
        self.path = path;
        self.status = Status::Found;
    }

    fn clear(&mut self, status: Status) {
        self.status = status;
        self.path.clear();
        self.cost = 0.0;
        self.bbox = None;
        self.tiles.clear();
    }

    /// True when a changed cell may change a step of the path: one within the path's box,
    /// widened by the footprint (a written cell changes anchors up to `size - 1` up and
    /// left of it) and one cell (the corners a diagonal passes).
    fn near(&self, changed: &[Point]) -> bool {
        let Some((lo, hi)) = self.bbox else {
            return true;
        };
        let (x0, y0) = (lo.x.saturating_sub(1), lo.y.saturating_sub(1));
        let (x1, y1) = (hi.x + self.size, hi.y + self.size);
        changed
            .iter()
            .any(|c| (x0..=x1).contains(&c.x) && (y0..=y1).contains(&c.y))
    }

    /// Whether a change at one of `changed` can alter the cost or legality of a step of the
    /// path: a step `a -> b` reads the cells of its box (`a`, `b` and the two corners beside
    /// a diagonal), widened by the footprint for a larger agent. May say yes for an
    /// unaltered step (past [`TOUCH_EXACT`] changed cells it answers from their box alone).
    fn touched_by(&self, changed: &[Point]) -> bool {
        let Some((lo, hi)) = bounding_box(changed) else {
            return false;
        };
        let k = self.size - 1;
        // Every cell of a step's box lies at most `k + 1` right/below and one left/above
        // one of its two points (for a diagonal's corners, of the point beside them): only
        // path points in the changed box widened so (`k + 1` up/left, one down/right) matter.
        let (x0, y0) = (
            lo.x.saturating_sub(k + 1) / TILE,
            lo.y.saturating_sub(k + 1) / TILE,
        );
        let (x1, y1) = ((hi.x + 1) / TILE, (hi.y + 1) / TILE);
        if (x1 - x0 + 1) * (y1 - y0 + 1) <= MAX_TILE_PROBES
            && !(y0..=y1)
                .any(|ty| (x0..=x1).any(|tx| self.tiles.binary_search(&tile_key(tx, ty)).is_ok()))
        {
            return false;
        }
        let step_box = |a: Point, b: Point| {
            (
                Point::new(a.x.min(b.x), a.y.min(b.y)),
                Point::new(a.x.max(b.x) + k, a.y.max(b.y) + k),
            )
        };
        let overlaps = |(p, q): (Point, Point), c: Point| {
            (p.x..=q.x).contains(&c.x) && (p.y..=q.y).contains(&c.y)
        };
        let boxes_meet =
            |(p, q): (Point, Point)| p.x <= hi.x && lo.x <= q.x && p.y <= hi.y && lo.y <= q.y;
        let mut steps = self.path.windows(2).map(|w| step_box(w[0], w[1]));
        let single = (self.path.len() == 1).then(|| step_box(self.path[0], self.path[0]));
        let mut any = |b: (Point, Point)| {
            boxes_meet(b)
                && (changed.len() > TOUCH_EXACT || changed.iter().any(|&c| overlaps(b, c)))
        };
        steps.any(&mut any) || single.is_some_and(any)
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

    fn baseline(&self) -> Baseline {
        Baseline {
            status: self.status,
            path: (self.status == Status::Found).then(|| self.path.clone()),
            cost: self.cost,
        }
    }

    fn outcome(
        &self,
        before: &Baseline,
        old_now: Option<f64>,
        mut stats: Stats,
        started: Instant,
    ) -> RepairOutcome {
        let (change, path_changed, cost_changed) =
            classify(before, old_now, self.status, &self.path, self.cost);
        stats.elapsed = started.elapsed();
        RepairOutcome {
            status: self.status,
            change,
            path_changed,
            cost_changed,
            stats,
        }
    }
}

#[cfg(test)]
#[path = "agent_tests.rs"]
mod tests;
