//! What a caller asks for and what every algorithm answers.
//!
//! "No path" and "limit reached" are [`Status`]es, not errors: [`QueryError`] is only for
//! misuse (a start off the map, a weight below 1, an algorithm that does not apply).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::grid::Point;

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
        }
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

/// How a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// A path to the goal.
    Found,
    /// A path to the cell closest to the goal (only when `partial` was asked for).
    Partial,
    /// The goal cannot be reached.
    NoPath,
    /// A limit stopped the search before it finished.
    LimitReached,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Found => "found",
            Status::Partial => "partial",
            Status::NoPath => "no_path",
            Status::LimitReached => "limit_reached",
        }
    }
}

/// Which limit stopped a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitKind {
    /// `max_expansions`.
    Expansions,
    /// The deadline.
    Deadline,
    /// The cancellation flag.
    Cancelled,
}

/// Counters every search reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// Nodes taken off the open list and expanded.
    pub expanded: u64,
    /// Successors pushed onto the open list.
    pub generated: u64,
    /// Expanded nodes whose cost later improved (weighted A* only).
    pub reopened: u64,
    /// Wall-clock time of the search.
    pub elapsed: Duration,
}

/// The outcome of a query.
#[derive(Clone, Debug)]
pub struct SearchResult {
    /// How it ended.
    pub status: Status,
    /// The cell path, start first (empty for `NoPath` / `LimitReached`).
    pub path: Vec<Point>,
    /// Cost of `path` under the map's step costs.
    pub cost: f64,
    /// The algorithm that actually ran (resolves [`Algorithm::Auto`]).
    pub algorithm: Algorithm,
    /// Search counters.
    pub stats: Stats,
    /// Which limit stopped the search, if any.
    pub limit: Option<LimitKind>,
    /// Expanded cells in expansion order, at most `debug_cap` of them.
    pub expanded_cells: Vec<Point>,
    /// Corner points of the path, start and end included, each seeing the next under the
    /// map's line-of-sight rule: the jump points for [`Algorithm::Jps`], the any-angle
    /// vertices for [`Algorithm::Theta`], the string-pulled corners when [`Query::smooth`]
    /// was asked for (that takes precedence). `None` for the other algorithms unsmoothed
    /// and whenever `path` is empty.
    pub waypoints: Option<Vec<Point>>,
    /// Cost of the polyline through `waypoints` under the segment-cost rule (its Euclidean
    /// length on a map where every cell costs 1; see the crate docs, "Line of sight"). Set
    /// for Theta* and for smoothed results, never below the true cost of those segments and
    /// never above `cost` for a smoothed grid path.
    pub smoothed_length: Option<f64>,
}

/// Misuse of the engine: the query cannot be run as given.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryError {
    /// A point lies outside the map.
    OutOfBounds {
        /// `"start"` or `"goal"`.
        which: &'static str,
        /// The point.
        point: Point,
    },
    /// The start cell is blocked.
    StartBlocked(Point),
    /// The goal cell is blocked.
    GoalBlocked(Point),
    /// The weight is not a finite number in `1..=`[`MAX_WEIGHT`].
    InvalidWeight(f64),
    /// The agent size is outside `1..=`[`crate::MAX_AGENT_SIZE`].
    InvalidSize(u32),
    /// A `size x size` agent anchored at the point does not fit there (a blocked cell
    /// under its footprint, or the map's edge).
    DoesNotFit {
        /// `"start"` or `"goal"`.
        which: &'static str,
        /// The anchor.
        point: Point,
        /// The agent's side.
        size: u32,
    },
    /// The algorithm does not apply to this map (e.g. JPS on a weighted map).
    NotApplicable {
        /// The algorithm asked for.
        algorithm: Algorithm,
        /// Why not.
        reason: String,
    },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::OutOfBounds { which, point } => {
                write!(f, "{which} {point} is outside the map")
            }
            QueryError::StartBlocked(p) => write!(f, "start {p} is a blocked cell"),
            QueryError::GoalBlocked(p) => write!(f, "goal {p} is a blocked cell"),
            QueryError::InvalidWeight(w) => {
                write!(
                    f,
                    "weight {w} is invalid: it must be a number from 1 to {MAX_WEIGHT}"
                )
            }
            QueryError::InvalidSize(k) => write!(
                f,
                "size {k} is invalid: agents are 1 to {} cells wide",
                crate::MAX_AGENT_SIZE
            ),
            QueryError::DoesNotFit { which, point, size } => write!(
                f,
                "a {size}x{size} agent anchored at {which} {point} does not fit: its footprint \
                 holds a blocked cell or leaves the map"
            ),
            QueryError::NotApplicable { algorithm, reason } => {
                write!(f, "algorithm {algorithm} does not apply: {reason}")
            }
        }
    }
}

impl std::error::Error for QueryError {}
