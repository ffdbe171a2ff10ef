//! What every algorithm answers: a [`SearchResult`] with its [`Status`] and [`Stats`], or a
//! [`QueryError`] for misuse.

use std::fmt;
use std::time::Duration;

use super::{Algorithm, MAX_WEIGHT};
use crate::grid::Point;

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
    /// False when a lesson option of the query gave up the algorithm's guarantee
    /// ([`Query::keeps_guarantee`]): the answer may cost more than the optimum (or than `w`
    /// times it for weighted A*).
    pub keeps_guarantee: bool,
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
    /// A [`crate::targets::Target`] out of its range (too many goals, a negative radius, ...).
    InvalidTarget(String),
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
            QueryError::InvalidTarget(what) => f.write_str(what),
            QueryError::NotApplicable { algorithm, reason } => {
                write!(f, "algorithm {algorithm} does not apply: {reason}")
            }
        }
    }
}

impl std::error::Error for QueryError {}
