//! What a caller asks for and what every algorithm answers.
//!
//! "No path" and "limit reached" are [`Status`]es, not errors: [`QueryError`] is only for
//! misuse (a start off the map, a weight below 1, an algorithm that does not apply).

use crate::clock::Instant;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::grid::{Movement, Point};

mod answer;

pub use answer::{LimitKind, QueryError, SearchResult, Stats, Status};

/// Largest accepted [`Query::weight`]. Beyond it weighted A* degenerates into greedy
/// best-first search (and very large weights overflow `f`), so it is refused.
pub const MAX_WEIGHT: f64 = 100.0;

/// Checks a query weight: a finite number in `1..=`[`MAX_WEIGHT`], whatever the algorithm.
///
/// ```
/// use pathd_engine::query::{check_weight, MAX_WEIGHT};
/// assert!(check_weight(1.0).is_ok() && check_weight(MAX_WEIGHT).is_ok());
/// assert!(check_weight(0.0).is_err() && check_weight(1e307).is_err());
/// assert!(check_weight(f64::NAN).is_err());
/// ```
pub fn check_weight(weight: f64) -> Result<(), QueryError> {
    if weight.is_finite() && (1.0..=MAX_WEIGHT).contains(&weight) {
        Ok(())
    } else {
        Err(QueryError::InvalidWeight(weight))
    }
}

/// Checks an agent size: `1..=`[`crate::MAX_AGENT_SIZE`].
pub fn check_size(size: u32) -> Result<(), QueryError> {
    if (1..=crate::MAX_AGENT_SIZE).contains(&size) {
        Ok(())
    } else {
        Err(QueryError::InvalidSize(size))
    }
}

/// The one validation of a search's ends, for every entry point (the planner, HPA*, D*
/// Lite): `size` in range, both points on the map (start first), then a `size x size` agent
/// fits at each.
pub(crate) fn check_ends(
    grid: &crate::Grid,
    start: Point,
    goal: Point,
    size: u32,
) -> Result<(), QueryError> {
    check_size(size)?;
    for (which, p) in [("start", start), ("goal", goal)] {
        check_in_bounds(grid, which, p)?;
    }
    check_fits(grid, "start", start, size)?;
    check_fits(grid, "goal", goal, size)
}

/// Checks that `p` is on the map; `which` names it in the error.
pub(crate) fn check_in_bounds(
    grid: &crate::Grid,
    which: &'static str,
    p: Point,
) -> Result<(), QueryError> {
    if grid.in_bounds(p) {
        Ok(())
    } else {
        Err(QueryError::OutOfBounds { which, point: p })
    }
}

/// Checks that a `size x size` agent anchored at `p` (on the map) stands on passable cells
/// only; `which` (`"start"` or `"goal"`) picks the error.
pub fn check_fits(
    grid: &crate::Grid,
    which: &'static str,
    p: Point,
    size: u32,
) -> Result<(), QueryError> {
    let fits = if size <= 1 {
        grid.is_passable(p)
    } else {
        grid.clearance().fits(p, size)
    };
    match (fits, which, size) {
        (true, _, _) => Ok(()),
        (false, "start", 1) => Err(QueryError::StartBlocked(p)),
        (false, _, 1) => Err(QueryError::GoalBlocked(p)),
        (false, which, size) => Err(QueryError::DoesNotFit {
            which,
            point: p,
            size,
        }),
    }
}

/// The search algorithms the engine offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// A* with the map's admissible heuristic: optimal.
    #[default]
    AStar,
    /// Uniform-cost search (h = 0): optimal, expands more.
    Dijkstra,
    /// `f = g + w * h`: the cost is at most `w` times the optimum.
    WeightedAStar,
    /// Jump Point Search: optimal, uniform-cost maps only.
    Jps,
    /// JPS+ over the map's precomputed [`crate::JumpTable`]: optimal, uniform octile maps
    /// with a table only.
    JpsPlus,
    /// Theta*: any-angle paths over line of sight.
    Theta,
    /// Subgoal graph with a contraction hierarchy over the map's precomputed
    /// [`crate::SubgoalGraph`]: optimal, uniform octile maps with a graph only.
    Subgoal,
    /// Hierarchical A* over cluster abstractions (needs a built abstraction).
    Hpa,
    /// Let the engine choose (see [`crate::resolve_auto`]).
    Auto,
}

impl Algorithm {
    /// Every algorithm name accepted on the wire.
    pub const ALL: [Algorithm; 9] = [
        Algorithm::AStar,
        Algorithm::Dijkstra,
        Algorithm::WeightedAStar,
        Algorithm::Jps,
        Algorithm::JpsPlus,
        Algorithm::Theta,
        Algorithm::Hpa,
        Algorithm::Auto,
        Algorithm::Subgoal,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::AStar => "astar",
            Algorithm::Dijkstra => "dijkstra",
            Algorithm::WeightedAStar => "weighted_astar",
            Algorithm::Jps => "jps",
            Algorithm::JpsPlus => "jps_plus",
            Algorithm::Theta => "theta",
            Algorithm::Hpa => "hpa",
            Algorithm::Auto => "auto",
            Algorithm::Subgoal => "subgoal",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bounds checked inside the search loop (a blocking search cannot be stopped from outside).
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Stop after this many expansions.
    pub max_expansions: Option<u64>,
    /// Stop at this instant.
    pub deadline: Option<Instant>,
    /// Stop when this flag becomes true (e.g. the client went away).
    pub cancel: Option<Arc<AtomicBool>>,
}

/// One path query.
#[derive(Clone, Debug)]
pub struct Query {
    /// Where the path starts.
    pub start: Point,
    /// Where it should end.
    pub goal: Point,
    /// Which algorithm runs it.
    pub algorithm: Algorithm,
    /// Weight for [`Algorithm::WeightedAStar`] (`1..=`[`MAX_WEIGHT`]); ignored by the others,
    /// but checked for every algorithm (see [`check_weight`]).
    pub weight: f64,
    /// Search limits.
    pub limits: Limits,
    /// On a limit or an unreachable goal, return the path to the expanded cell closest to
    /// the goal (by heuristic) with [`Status::Partial`].
    pub partial: bool,
    /// Record up to this many expanded cells in [`SearchResult::expanded_cells`].
    pub debug_cap: usize,
    /// Post-process the path by string pulling (see [`SearchResult::waypoints`]): works with
    /// every algorithm; the cell path and its cost are reported unchanged next to the
    /// smoothed corners and their length.
    pub smooth: bool,
    /// Agent side in cells (`1..=`[`crate::MAX_AGENT_SIZE`]): a `size x size` agent
    /// anchored at its top-left cell. The path is the anchor's; it moves like a one-cell
    /// agent on the map eroded for its footprint, and pays the anchor cells' step costs.
    pub size: u32,
    /// A heuristic other than the map's own (a lesson: see [`HeuristicKind`]); `None` is the
    /// map's matched, admissible one. A*, Dijkstra and weighted A* only.
    pub heuristic: Option<HeuristicKind>,
    /// How ties between equal `f` are broken (a lesson: see [`TieBreak`]); the default,
    /// [`TieBreak::HighG`], is what every search does. A*, Dijkstra and weighted A* only.
    pub tie_break: TieBreak,
}

impl Query {
    /// A plain A* query from `start` to `goal`.
    pub fn new(start: Point, goal: Point) -> Self {
        Query {
            start,
            goal,
            algorithm: Algorithm::AStar,
            weight: 1.0,
            limits: Limits::default(),
            partial: false,
            debug_cap: 0,
            smooth: false,
            size: 1,
            heuristic: None,
            tie_break: TieBreak::HighG,
        }
    }

    /// True when the query asks for a lesson option ([`Query::heuristic`] or a
    /// [`Query::tie_break`] other than the default).
    pub fn has_lesson(&self) -> bool {
        self.heuristic.is_some() || self.tie_break != TieBreak::HighG
    }

    /// False when a lesson option gives up the algorithm's guarantee under `movement`: a
    /// heuristic that overestimates there ([`HeuristicKind::admissible`]) or the
    /// [`TieBreak::Epsilon`] nudge (which inflates `h` by [`EPSILON`]). A weighted A* query
    /// keeps its bound of `w` otherwise, the others their optimality.
    ///
    /// ```
    /// use pathd_engine::{Movement, Point, Query};
    /// use pathd_engine::query::{HeuristicKind, TieBreak};
    /// let mut q = Query::new(Point::new(0, 0), Point::new(2, 2));
    /// assert!(q.keeps_guarantee(Movement::Octile));
    /// q.heuristic = Some(HeuristicKind::Manhattan);
    /// assert!(!q.keeps_guarantee(Movement::Octile) && q.keeps_guarantee(Movement::Cardinal));
    /// q.heuristic = None;
    /// q.tie_break = TieBreak::Epsilon;
    /// assert!(!q.keeps_guarantee(Movement::Cardinal));
    /// ```
    pub fn keeps_guarantee(&self, movement: Movement) -> bool {
        self.heuristic.is_none_or(|h| h.admissible(movement)) && self.tie_break != TieBreak::Epsilon
    }

    /// The same query with another algorithm.
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }

    /// The same query with string-pulling smoothing switched on or off.
    pub fn with_smooth(mut self, smooth: bool) -> Self {
        self.smooth = smooth;
        self
    }
}

/// The heuristics a lesson can pick ([`Query::heuristic`]), each scaled by the map's
/// smallest cell cost like the default one. With `dx`, `dy` the distances to the goal:
///
/// | kind | h | octile map | cardinal map |
/// |---|---|---|---|
/// | `octile` | `max + (sqrt 2 - 1) min` | exact on open ground (the default) | admissible, weaker |
/// | `manhattan` | `dx + dy` | **overestimates** a diagonal step (2 for sqrt 2): not optimal | exact (the default) |
/// | `euclidean` | `sqrt(dx^2 + dy^2)` | admissible, weaker | admissible, much weaker: slow |
/// | `chebyshev` | `max(dx, dy)` | admissible, weaker | admissible, weaker |
/// | `zero` | 0 | Dijkstra | Dijkstra |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeuristicKind {
    /// Octile distance.
    Octile,
    /// Manhattan distance.
    Manhattan,
    /// Straight-line distance.
    Euclidean,
    /// The larger of the two distances.
    Chebyshev,
    /// No estimate at all.
    Zero,
}

impl HeuristicKind {
    /// Every kind, in wire order.
    pub const ALL: [HeuristicKind; 5] = [
        HeuristicKind::Octile,
        HeuristicKind::Manhattan,
        HeuristicKind::Euclidean,
        HeuristicKind::Chebyshev,
        HeuristicKind::Zero,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            HeuristicKind::Octile => "octile",
            HeuristicKind::Manhattan => "manhattan",
            HeuristicKind::Euclidean => "euclidean",
            HeuristicKind::Chebyshev => "chebyshev",
            HeuristicKind::Zero => "zero",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.as_str() == s)
    }

    /// Whether it never overestimates the cost to the goal under `movement` (only
    /// Manhattan on an octile map does: a diagonal step costs sqrt 2, Manhattan counts 2).
    pub fn admissible(self, movement: Movement) -> bool {
        !(self == HeuristicKind::Manhattan && movement == Movement::Octile)
    }
}

/// How the open list orders nodes of equal `f` ([`Query::tie_break`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TieBreak {
    /// None: equal `f` in node order (row-major), whatever their depth. On open ground A*
    /// then expands the whole "fat diamond" of equal-`f` cells.
    None,
    /// Larger `g` first (the node deeper along its path: finishes straight runs first).
    /// What every search does.
    #[default]
    HighG,
    /// Among equal `f`, the node closest to the straight start-goal line first (smallest
    /// `|cross product|` of node-goal and start-goal), then node order: paths hug the line.
    /// A pure tie-break: optimality is kept.
    CrossProduct,
    /// Inflate `h` by `1 +` [`EPSILON`] (weight `w (1 + EPSILON)`): ties tip towards the
    /// goal, at the price of a cost up to that factor above the optimum (`optimal: false`).
    Epsilon,
}

/// The nudge of [`TieBreak::Epsilon`]: `h` weighs `1 + EPSILON` (1/1000, below one step in
/// a thousand, so on paths under a thousand steps of cost one it breaks ties only).
pub const EPSILON: f64 = 1e-3;

impl TieBreak {
    /// Every rule, in wire order.
    pub const ALL: [TieBreak; 4] = [
        TieBreak::None,
        TieBreak::HighG,
        TieBreak::CrossProduct,
        TieBreak::Epsilon,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TieBreak::None => "none",
            TieBreak::HighG => "high_g",
            TieBreak::CrossProduct => "cross_product",
            TieBreak::Epsilon => "epsilon",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}
