//! Searches whose goal is a set of cells (see [`crate::targets`]): the nearest of many goals,
//! the first cell within range (and sight) of a goal, the first cell far enough from a
//! threat. Each is the shared core ([`crate::search::best_first`]) with the plain or sized
//! grid expander wrapped in [`Targeted`], whose [`Expander::settle`] is the goal test, and an
//! estimate that is 0 on every qualifying cell.
//!
//! # Why the first qualifying cell expanded is the cheapest
//!
//! Every estimate here is consistent (`|h(a) - h(b)| <= c(a, b)`) and 0 on every qualifying
//! cell. With weight 1 the core then expands cells in order of `f = g* + h`, and a
//! qualifying cell `u` is expanded with `f(u) = g*(u)`. A cheaper qualifying cell `v`
//! (`g*(v) < g*(u)`) would have had a cell of its optimal path open with
//! `f <= g*(v) + h(v) = g*(v) < f(u)` all along, so `v` (or a cell before it on that path)
//! would have come off the open list first, and `v` before `u`. With weight `w > 1`
//! `algo::astar`'s argument carries over with the best qualifying cell `v` in place of the
//! goal: when `u` is expanded, `g(u) = f(u) <= f(s_i) <= w (g*(v) + h(v)) = w g*(v)`.
//!
//! The estimates:
//!
//! - *Many goals*: the minimum of the map's heuristic over the goals (a minimum of
//!   consistent estimates is consistent), while there are at most [`MIN_OVER_GOALS`] goals;
//!   above that one evaluation would cost too much, so the estimate is the map's heuristic to
//!   the goals' bounding box (the octile or Manhattan distance to the nearest point of a
//!   convex set is 1-Lipschitz for that metric, hence consistent, and 0 at every goal).
//! - *Within range*: `max(0, h(goal) - K r)` with `h` the map's heuristic to the goal and
//!   `K` the largest ratio of the map's distance to the Euclidean one (`sqrt(4 - 2 sqrt 2)`
//!   for octile, `sqrt 2` for Manhattan): a cell within Euclidean `r` of the goal is within
//!   `K r` of it in the map's metric, so its estimate is 0, and subtracting a constant and
//!   clamping keeps a consistent estimate consistent.
//! - *Flee*: 0 (Dijkstra): the qualifying cells are whatever the threat's bounded Dijkstra
//!   left out, which has no useful geometric bound.

use std::collections::{HashMap, HashSet};

use crate::algo::sized::SizedExpander;
use crate::grid::{Cells, Grid, Movement, Point, SQRT2, distance};
use crate::query::{Algorithm, Query, SearchResult, Stats};
use crate::search::{
    CoreEnd, CoreOutcome, Estimate, Expander, GridExpander, Heuristic, Run, Scratch, Succ, Zero,
    best_first,
};

/// Up to this many goals the estimate is the minimum over them; above, the bounding box.
/// A rule of thumb, not tuned: one octile evaluation costs a few ns, an expansion about a
/// hundred, so beyond a dozen or so goals the exact minimum costs about an expansion per
/// estimate. With goals spread over the map either estimate is near 0 where it matters and
/// Dijkstra is as fast (`examples/goals.rs`: 40 random goals on maze512-1-0, A* 0.28 ms,
/// Dijkstra 0.18 ms a query); the estimates can only pay when the goals lie together, away
/// from the start (not measured).
pub(crate) const MIN_OVER_GOALS: usize = 16;

/// Never a node id: the core's own goal test never fires, [`Targeted::settle`] decides.
const NO_NODE: u32 = u32::MAX;

/// Which padded cells end the search.
pub(crate) trait GoalTest {
    /// True when the cell `node` (a padded index) qualifies.
    fn is_goal(&self, node: u32) -> bool;
}

/// An expander whose `settle` is a [`GoalTest`]: the search ends at the first qualifying
/// cell it expands.
struct Targeted<'t, E, T> {
    inner: E,
    test: &'t T,
    hit: Option<u32>,
}

impl<E: Expander, T: GoalTest> Expander for Targeted<'_, E, T> {
    const CHECK_EVERY: u64 = E::CHECK_EVERY;
    const TARGETS: bool = true;
    const REOPEN: bool = E::REOPEN;
    const PARENT_G: bool = E::PARENT_G;

    #[inline]
    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        self.inner.successors(grid, node, g, parent, out);
    }

    #[inline]
    fn settle(&mut self, node: u32) -> bool {
        let hit = self.test.is_goal(node);
        if hit {
            self.hit = Some(node);
        }
        hit
    }

    #[inline]
    fn cell(&self, node: u32) -> u32 {
        self.inner.cell(node)
    }
}

/// The estimates of the module docs.
pub(crate) enum Toward {
    /// `h = 0`.
    Zero,
    /// The minimum of the map's heuristic over a few goals.
    Goals(Vec<Heuristic>),
    /// The map's distance to a box of padded coordinates, times the smallest cost.
    Box {
        /// Only for its coordinate decoding.
        coords: Heuristic,
        lo: (f64, f64),
        hi: (f64, f64),
        movement: Movement,
        scale: f64,
    },
    /// The map's heuristic to one goal, less a slack, clamped at 0.
    Near { to: Heuristic, slack: f64 },
}

impl Toward {
    /// The estimate towards a set of goals (non-empty).
    pub(crate) fn goals(grid: &Grid, goals: &[Point]) -> Self {
        if goals.len() <= MIN_OVER_GOALS {
            return Toward::Goals(goals.iter().map(|&g| Heuristic::new(grid, g)).collect());
        }
        let (mut lo, mut hi) = ((f64::MAX, f64::MAX), (f64::MIN, f64::MIN));
        for g in goals {
            // Padded coordinates, as the node ids decode to.
            let (x, y) = (g.x as f64 + 1.0, g.y as f64 + 1.0);
            lo = (lo.0.min(x), lo.1.min(y));
            hi = (hi.0.max(x), hi.1.max(y));
        }
        Toward::Box {
            coords: Heuristic::new(grid, goals[0]),
            lo,
            hi,
            movement: grid.movement(),
            scale: grid.min_cost() as f64,
        }
    }

    /// The estimate towards the cells within Euclidean `radius` of `goal`.
    pub(crate) fn near(grid: &Grid, goal: Point, radius: f64) -> Self {
        let k = match grid.movement() {
            // max over the unit circle of max(|x|, |y|) + (sqrt 2 - 1) min(|x|, |y|).
            Movement::Octile => (4.0 - 2.0 * SQRT2).sqrt(),
            Movement::Cardinal => SQRT2,
        };
        // A hair more slack than the exact bound, so rounding never makes it overestimate.
        let slack = k * radius * (1.0 + 1e-9) * grid.min_cost() as f64;
        Toward::Near {
            to: Heuristic::new(grid, goal),
            slack,
        }
    }
}

impl Estimate for Toward {
    #[inline]
    fn h(&self, node: u32) -> f64 {
        match self {
            Toward::Zero => 0.0,
            Toward::Goals(hs) => hs.iter().map(|h| h.h(node)).fold(f64::INFINITY, f64::min),
            Toward::Box {
                coords,
                lo,
                hi,
                movement,
                scale,
            } => {
                let (x, y) = coords.coords(node);
                let (x, y) = (x as f64, y as f64);
                let dx = (lo.0 - x).max(x - hi.0).max(0.0);
                let dy = (lo.1 - y).max(y - hi.1).max(0.0);
                distance(*movement, dx, dy) * scale
            }
            Toward::Near { to, slack } => (to.h(node) - slack).max(0.0),
        }
    }
}

/// The goal test of many goals: padded cell to the smallest index of a goal there.
pub(crate) struct AnyOf(pub(crate) HashMap<u32, usize>);

impl GoalTest for AnyOf {
    #[inline]
    fn is_goal(&self, node: u32) -> bool {
        self.0.contains_key(&node)
    }
}

/// The goal test of a range: within Euclidean `radius` of `goal`, and in sight of it when
/// `visible` (the Theta* rule, `algo::los`).
pub(crate) struct Within<'g> {
    pub(crate) grid: &'g Grid,
    pub(crate) cells: Cells,
    pub(crate) goal: Point,
    pub(crate) radius: f64,
    pub(crate) visible: bool,
}

impl GoalTest for Within<'_> {
    #[inline]
    fn is_goal(&self, node: u32) -> bool {
        let p = self.grid.ppoint(node as usize);
        crate::algo::los::euclid(p, self.goal) <= self.radius
            && (!self.visible || crate::algo::los::visible(self.grid, &self.cells, p, self.goal))
    }
}

/// The goal test of a flight: not among the cells the threat reaches for less than the
/// distance.
pub(crate) struct Beyond(pub(crate) HashSet<u32>);

impl GoalTest for Beyond {
    #[inline]
    fn is_goal(&self, node: u32) -> bool {
        !self.0.contains(&node)
    }
}

/// The threat's bounded Dijkstra: records every cell it settles, and never generates a cell
/// at cost `limit` or more, so that it settles exactly the cells closer than `limit` (every
/// prefix of a path cheaper than `limit` is cheaper than `limit` too).
struct Bounded {
    inner: GridExpander,
    limit: f64,
    settled: Vec<u32>,
}

impl Expander for Bounded {
    const TARGETS: bool = true;
    const PARENT_G: bool = false;

    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        let from = out.len();
        self.inner.successors(grid, node, g, parent, out);
        let limit = self.limit;
        let mut k = from;
        for i in from..out.len() {
            if out[i].g < limit {
                out[k] = out[i];
                k += 1;
            }
        }
        out.truncate(k);
    }

    fn settle(&mut self, node: u32) -> bool {
        self.settled.push(node);
        false
    }
}

/// The padded cells a one-cell unit at `from` reaches for less than `distance` (empty when
/// `from` is blocked) and the Dijkstra's counters, or the limit that stopped it.
pub(crate) fn threat_area(
    grid: &Grid,
    scratch: &mut Scratch,
    from: Point,
    distance: f64,
    query: &Query,
) -> Result<(HashSet<u32>, Stats), CoreOutcome> {
    if !grid.is_passable(from) || distance <= 0.0 {
        return Ok((HashSet::new(), Stats::default()));
    }
    scratch.begin(grid.padded_len());
    let run = Run {
        start: grid.pidx(from) as u32,
        goal: NO_NODE,
        weight: 0.0,
        heuristic: Zero,
        limits: &query.limits,
        track_closest: false,
        debug_cap: 0,
    };
    let mut expander = Bounded {
        inner: GridExpander::new(grid),
        limit: distance,
        settled: Vec::new(),
    };
    let outcome = best_first(grid, scratch, &mut expander, &run);
    match outcome.end {
        CoreEnd::Limit(_) => Err(outcome),
        _ => Ok((expander.settled.into_iter().collect(), outcome.stats)),
    }
}

/// Runs the core from `query.start` until the first cell `test` accepts, under `toward`
/// with `weight` (0 for Dijkstra), for a one-cell or sized agent. Returns the result (its
/// path ends at the cell found) and that cell.
pub(crate) fn search<T: GoalTest>(
    grid: &Grid,
    scratch: &mut Scratch,
    query: &Query,
    algorithm: Algorithm,
    weight: f64,
    toward: Toward,
    test: &T,
) -> (SearchResult, Option<Point>) {
    scratch.begin(grid.padded_len());
    let run = Run {
        start: grid.pidx(query.start) as u32,
        goal: NO_NODE,
        weight,
        heuristic: toward,
        limits: &query.limits,
        track_closest: query.partial,
        debug_cap: query.debug_cap,
    };
    let (outcome, hit) = if query.size > 1 {
        let mut e = Targeted {
            inner: SizedExpander::new(grid, query.size),
            test,
            hit: None,
        };
        (best_first(grid, scratch, &mut e, &run), e.hit)
    } else {
        let mut e = Targeted {
            inner: GridExpander::new(grid),
            test,
            hit: None,
        };
        (best_first(grid, scratch, &mut e, &run), e.hit)
    };
    let reached = hit.map(|n| grid.ppoint(n as usize));
    // `finish` reads a found path back from the query's goal: the cell found.
    let mut q = query.clone();
    if let Some(p) = reached {
        q.goal = p;
    }
    let r = crate::search::finish(grid, scratch, outcome, &q, algorithm, |g, chain| {
        chain.iter().map(|&n| g.ppoint(n as usize)).collect()
    });
    (r, reached)
}
