//! The questions games ask: a path to the nearest of many goals, into range (and sight) of a
//! goal, away from a threat; and where the nearest usable cell is (snapping).
//!
//! A [`Target`] replaces a query's single goal ([`Searcher::find_target`]); one search
//! answers it, ending at the first qualifying cell it expands, which is the cheapest one
//! (see `algo::targets` for why). A*, Dijkstra and weighted A* (within its bound) answer
//! targets, for one-cell and sized agents; `auto` runs A* (Dijkstra for a flight). JPS,
//! JPS+, Theta*, HPA* and subgoal graphs are built around one goal point (pruning rules,
//! abstract entry points, any-angle parents), so they are `NotApplicable`, as are the
//! lessons' options.
//!
//! [`snap_ends`] and [`nearest_usable`] move a blocked or unreachable end to the nearest
//! cell where the agent fits.

use std::collections::HashMap;

use crate::algo::targets::{self as search, AnyOf, Beyond, Toward, Within};
use crate::grid::{Grid, Point};
use crate::planner::Searcher;
use crate::query::{
    Algorithm, Query, QueryError, SearchResult, Stats, Status, check_fits, check_in_bounds,
    check_size, check_weight,
};

/// Most goals one query may name ([`Target::Any`]).
pub const MAX_GOALS: usize = 1024;

/// Largest snapping radius ([`snap_ends`], [`nearest_usable`]): the scan looks at up to
/// `(2 r + 1)^2` cells.
pub const MAX_SNAP: u32 = 64;

/// What a query's path should reach instead of its single goal.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// The cheapest reachable of these goals (1 to [`MAX_GOALS`]; each in bounds, where the
    /// agent fits). A goal named twice counts with its first index.
    Any(Vec<Point>),
    /// The cheapest cell within Euclidean distance `radius` (cell centres) of `goal`, and in
    /// line of sight of it when `visible` (the Theta* rule, which also needs `goal` open).
    /// `goal` must be on the map; it may be blocked unless `visible`. For a sized agent the
    /// anchor cell is measured.
    Near {
        /// The point to get close to.
        goal: Point,
        /// The range, finite and at least 0.
        radius: f64,
        /// Also require line of sight from the cell to `goal`.
        visible: bool,
    },
    /// The cheapest cell whose path cost from `from` (for a one-cell unit there) is at least
    /// `distance`; cells that unit cannot reach at all count as infinitely far, so they
    /// qualify (all of them when `from` is blocked). Two searches: a Dijkstra from `from`
    /// bounded to `distance`, then one from the start (with `h = 0`, whatever the
    /// algorithm) to the first cell the first did not settle; the result's counters and
    /// the expansion budget cover both.
    Flee {
        /// The threat.
        from: Point,
        /// How far to get, finite and at least 0.
        distance: f64,
    },
}

/// The answer to a [`Target`] query.
#[derive(Clone, Debug)]
pub struct TargetResult {
    /// The search's result; a found path ends at the qualifying cell.
    pub result: SearchResult,
    /// The cell reached (the path's end) when found.
    pub reached: Option<Point>,
    /// For [`Target::Any`], the index of the goal reached.
    pub goal_index: Option<usize>,
}

impl Target {
    /// Checks the target against the map for a `size x size` agent.
    fn validate(&self, grid: &Grid, size: u32) -> Result<(), QueryError> {
        let bad = |what: String| Err(QueryError::InvalidTarget(what));
        match self {
            Target::Any(goals) if goals.is_empty() || goals.len() > MAX_GOALS => bad(format!(
                "goals holds {} points; it must hold 1 to {MAX_GOALS}",
                goals.len()
            )),
            Target::Any(goals) => goals.iter().try_for_each(|&g| {
                check_in_bounds(grid, "goal", g)?;
                check_fits(grid, "goal", g, size)
            }),
            Target::Near { radius, .. } if !(radius.is_finite() && *radius >= 0.0) => {
                bad(format!("goal_radius {radius} must be a finite number >= 0"))
            }
            Target::Near { goal, visible, .. } => {
                check_in_bounds(grid, "goal", *goal)?;
                if *visible && !grid.is_passable(*goal) {
                    // No cell can see the centre of a blocked cell under the Theta* rule.
                    return Err(QueryError::GoalBlocked(*goal));
                }
                Ok(())
            }
            Target::Flee { distance, .. } if !(distance.is_finite() && *distance >= 0.0) => bad(
                format!("flee distance {distance} must be a finite number >= 0"),
            ),
            Target::Flee { from, .. } => check_in_bounds(grid, "from", *from),
        }
    }

    /// The algorithm that answers this target for a query asking for `asked`.
    fn algorithm(&self, asked: Algorithm) -> Result<Algorithm, QueryError> {
        match asked {
            Algorithm::Auto if matches!(self, Target::Flee { .. }) => Ok(Algorithm::Dijkstra),
            Algorithm::Auto => Ok(Algorithm::AStar),
            a @ (Algorithm::AStar | Algorithm::Dijkstra | Algorithm::WeightedAStar) => Ok(a),
            a => Err(QueryError::NotApplicable {
                algorithm: a,
                reason: "goals, goal_radius and flee are answered by astar, dijkstra and \
                         weighted_astar (auto picks astar, dijkstra for flee)"
                    .into(),
            }),
        }
    }
}

impl Searcher {
    /// Answers `query` with `target` instead of `query.goal` (which is ignored): one search
    /// from `query.start` to the cheapest qualifying cell (within `w` of it for weighted
    /// A*). Every option of the query applies but the lessons' ([`Query::has_lesson`]),
    /// and `partial` for a flight (it has no "closest" cell); see the module docs for the
    /// algorithms.
    ///
    /// ```
    /// use pathd_engine::{Grid, Movement, Point, Query, Searcher, Status};
    /// use pathd_engine::targets::Target;
    /// let grid = Grid::from_costs(5, 1, vec![1; 5], Movement::Octile).unwrap();
    /// let q = Query::new(Point::new(2, 0), Point::new(0, 0));
    /// let goals = Target::Any(vec![Point::new(0, 0), Point::new(4, 0), Point::new(3, 0)]);
    /// let r = Searcher::new().find_target(&grid, &q, &goals).unwrap();
    /// assert_eq!((r.result.status, r.goal_index, r.result.cost), (Status::Found, Some(2), 1.0));
    /// ```
    pub fn find_target(
        &mut self,
        grid: &Grid,
        query: &Query,
        target: &Target,
    ) -> Result<TargetResult, QueryError> {
        self.scratch.trace = None;
        check_size(query.size)?;
        check_in_bounds(grid, "start", query.start)?;
        target.validate(grid, query.size)?;
        check_fits(grid, "start", query.start, query.size)?;
        check_weight(query.weight)?;
        let algorithm = target.algorithm(query.algorithm)?;
        let not_applicable = |reason: &str| QueryError::NotApplicable {
            algorithm,
            reason: reason.into(),
        };
        if query.has_lesson() {
            return Err(not_applicable(
                "heuristic and tie_break (the lessons' options) do not apply to goals, \
                 goal_radius or flee",
            ));
        }
        let weight = match algorithm {
            Algorithm::Dijkstra => 0.0,
            Algorithm::WeightedAStar => query.weight,
            _ => 1.0,
        };
        let s = &mut self.scratch;
        let mut out = match target {
            Target::Any(goals) => {
                // Goals outside the start's component can never be reached: left out of the
                // estimate and the test (all of them: no path, without a search).
                let mut index = HashMap::new();
                let mut kept = Vec::new();
                for (i, &g) in goals.iter().enumerate() {
                    if query.partial || grid.same_component(query.start, g) {
                        index.entry(grid.pidx(g) as u32).or_insert_with(|| {
                            kept.push(g);
                            i
                        });
                    }
                }
                if kept.is_empty() {
                    return Ok(no_path(algorithm));
                }
                let test = AnyOf(index);
                let (result, reached) = search::search(
                    grid,
                    s,
                    query,
                    algorithm,
                    weight,
                    Toward::goals(grid, &kept),
                    &test,
                );
                let goal_index = reached.map(|p| test.0[&(grid.pidx(p) as u32)]);
                TargetResult {
                    result,
                    reached,
                    goal_index,
                }
            }
            Target::Near {
                goal,
                radius,
                visible,
            } => {
                let test = Within {
                    grid,
                    cells: grid.cells(),
                    goal: *goal,
                    radius: *radius,
                    visible: *visible,
                };
                let toward = Toward::near(grid, *goal, *radius);
                let (result, reached) =
                    search::search(grid, s, query, algorithm, weight, toward, &test);
                TargetResult {
                    result,
                    reached,
                    goal_index: None,
                }
            }
            Target::Flee { from, distance } => {
                if query.partial {
                    return Err(not_applicable(
                        "partial answers need a closest cell, which a flight has not",
                    ));
                }
                let (area, threat) = match search::threat_area(grid, s, *from, *distance, query) {
                    Ok(found) => found,
                    Err(outcome) => {
                        let mut r = no_path(algorithm);
                        r.result.status = Status::LimitReached;
                        r.result.stats = outcome.stats;
                        if let crate::search::CoreEnd::Limit(kind) = outcome.end {
                            r.result.limit = Some(kind);
                        }
                        return Ok(r);
                    }
                };
                // One budget for both searches: the flight gets what the threat left.
                let mut q = query.clone();
                q.limits.max_expansions = q
                    .limits
                    .max_expansions
                    .map(|m| m.saturating_sub(threat.expanded));
                let (mut result, reached) =
                    search::search(grid, s, &q, algorithm, weight, Toward::Zero, &Beyond(area));
                result.stats.expanded += threat.expanded;
                result.stats.generated += threat.generated;
                result.stats.elapsed += threat.elapsed;
                TargetResult {
                    result,
                    reached,
                    goal_index: None,
                }
            }
        };
        if query.smooth {
            crate::search::smooth_result(grid, &mut out.result);
        }
        Ok(out)
    }
}

fn no_path(algorithm: Algorithm) -> TargetResult {
    TargetResult {
        result: SearchResult {
            status: Status::NoPath,
            path: Vec::new(),
            cost: 0.0,
            algorithm,
            stats: Stats::default(),
            limit: None,
            expanded_cells: Vec::new(),
            waypoints: None,
            smoothed_length: None,
            keeps_guarantee: true,
        },
        reached: None,
        goal_index: None,
    }
}

/// True when a `size x size` agent anchored at `p` fits there (on the map, every cell of
/// its footprint passable).
pub fn usable(grid: &Grid, p: Point, size: u32) -> bool {
    grid.in_bounds(p) && check_fits(grid, "start", p, size.max(1)).is_ok()
}

/// The usable cell ([`usable`]) nearest to `p` among those at most `radius` cells from it
/// in x and in y for which `accept` holds, with its Euclidean distance. Ties: the smaller
/// `y`, then the smaller `x`. `p` itself (distance 0) when it qualifies. `p` may lie off
/// the map; `radius` is capped at [`MAX_SNAP`].
///
/// ```
/// use pathd_engine::{Grid, Movement, Point};
/// use pathd_engine::targets::nearest_usable;
/// let grid = Grid::from_costs(3, 1, vec![0, 0, 1], Movement::Octile).unwrap();
/// assert_eq!(nearest_usable(&grid, Point::new(0, 0), 2, 1, |_| true), Some((Point::new(2, 0), 2.0)));
/// assert_eq!(nearest_usable(&grid, Point::new(0, 0), 1, 1, |_| true), None);
/// ```
pub fn nearest_usable(
    grid: &Grid,
    p: Point,
    radius: u32,
    size: u32,
    accept: impl Fn(Point) -> bool,
) -> Option<(Point, f64)> {
    let r = radius.min(MAX_SNAP);
    if grid.width() == 0 || grid.height() == 0 {
        return None;
    }
    let (w, h) = (grid.width() - 1, grid.height() - 1);
    let (x0, y0) = (p.x.saturating_sub(r), p.y.saturating_sub(r));
    if x0 > w || y0 > h {
        return None; // the whole square lies off the map
    }
    let (x1, y1) = (p.x.saturating_add(r).min(w), p.y.saturating_add(r).min(h));
    let mut best: Option<(u64, Point)> = None;
    for y in y0..=y1 {
        for x in x0..=x1 {
            let q = Point::new(x, y);
            let (dx, dy) = (x.abs_diff(p.x) as u64, y.abs_diff(p.y) as u64);
            let d2 = dx * dx + dy * dy;
            // Row-major scan: a strictly smaller distance wins, so ties keep (y, x) order.
            if best.is_none_or(|(b, _)| d2 < b) && usable(grid, q, size) && accept(q) {
                best = Some((d2, q));
            }
        }
    }
    best.map(|(d2, q)| (q, (d2 as f64).sqrt()))
}

/// A query's ends after [`snap_ends`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapped {
    /// The start to search from.
    pub start: Point,
    /// The goal to search to (`None` when none was given).
    pub goal: Option<Point>,
    /// True when either end moved.
    pub moved: bool,
}

/// Moves a blocked or unreachable start or goal to the nearest usable cell within `radius`
/// ([`nearest_usable`]), preferring the other end's component:
///
/// 1. an unusable start moves to the nearest usable cell in the goal's component (when the
///    goal is usable), else to the nearest usable cell;
/// 2. then an unusable goal likewise, preferring the start's component;
/// 3. then, when both are usable but in different components, the goal moves to the nearest
///    usable cell in the start's component, or failing that the start to the nearest in the
///    goal's.
///
/// An end with no candidate stays where it is (the search then reports it as usual).
/// Components are those of the one-cell map (`Grid::component`), so a sized agent may still
/// find no path between two ends in one component.
///
/// ```
/// use pathd_engine::{Grid, Movement, Point};
/// use pathd_engine::targets::snap_ends;
/// // The goal (1,0) is a wall; (0,0) and (2,0) are both one away, and (0,0) would win the
/// // tie, but (2,0) is in the start's component.
/// let grid = Grid::from_costs(4, 1, vec![1, 0, 1, 1], Movement::Octile).unwrap();
/// let s = snap_ends(&grid, Point::new(3, 0), Some(Point::new(1, 0)), 2, 1);
/// assert_eq!((s.start, s.goal, s.moved), (Point::new(3, 0), Some(Point::new(2, 0)), true));
/// ```
pub fn snap_ends(
    grid: &Grid,
    start: Point,
    goal: Option<Point>,
    radius: u32,
    size: u32,
) -> Snapped {
    let near = |p: Point, other: Option<Point>| {
        let comp = other
            .filter(|&o| usable(grid, o, size))
            .and_then(|o| grid.component(o));
        comp.and_then(|c| nearest_usable(grid, p, radius, size, |q| grid.component(q) == Some(c)))
            .or_else(|| nearest_usable(grid, p, radius, size, |_| true))
            .map(|(q, _)| q)
    };
    let (mut s, mut g) = (start, goal);
    if !usable(grid, s, size) {
        s = near(s, g).unwrap_or(s);
    }
    if let Some(gp) = g.filter(|&gp| !usable(grid, gp, size)) {
        g = Some(near(gp, Some(s)).unwrap_or(gp));
    }
    if let Some(gp) = g {
        if usable(grid, s, size) && usable(grid, gp, size) && !grid.same_component(s, gp) {
            let into = |p: Point, of: Point| {
                let c = grid.component(of);
                nearest_usable(grid, p, radius, size, |q| grid.component(q) == c).map(|x| x.0)
            };
            if let Some(q) = into(gp, s) {
                g = Some(q);
            } else if let Some(q) = into(s, gp) {
                s = q;
            }
        }
    }
    Snapped {
        start: s,
        goal: g,
        moved: s != start || g != goal,
    }
}
