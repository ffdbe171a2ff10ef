//! The query as the service takes it (the edge turns its wire request into one), and what
//! it answers beside the search's result.

use std::time::Duration;

use pathd_engine::Point;
use pathd_engine::targets::Target;

use super::QueryError;

/// A path query as the service takes it. Its map-independent mistakes (an unknown
/// algorithm, two goals...) are kept in `spec` and reported after the map and profile are
/// found, so a query on a missing map is `map_not_found` whatever else is wrong with it.
#[derive(Debug)]
pub struct PathQuery {
    /// Wait (bounded by `--max-wait-ms`) until this replica has applied this map version.
    pub min_version: Option<u64>,
    /// The unit-type profile to search for (`None`: the map's default).
    pub profile: Option<String>,
    /// The query itself, or why the request is not one.
    pub spec: Result<QuerySpec, QueryError>,
}

/// What a path query asks, checked against the server's limits.
#[derive(Debug)]
pub struct QuerySpec {
    /// The engine query (its deadline and cancellation are set when it starts).
    pub query: pathd_engine::Query,
    /// Its time budget, started when a worker picks it up.
    pub timeout: Duration,
    /// The games' options (targets, snapping); plain for most queries.
    pub games: Games,
    /// Whether the query asks for its search's trace.
    pub trace: bool,
}

/// What a path query asks beyond a plain start-goal search (`goals`, `goal_radius`,
/// `flee`, `snap`).
#[derive(Clone, Debug, Default)]
pub struct Games {
    /// What the path should reach instead of the goal.
    pub target: Option<Target>,
    /// The snapping radius.
    pub snap: Option<u32>,
}

impl Games {
    /// True when the query asks for none of them.
    pub fn is_plain(&self) -> bool {
        self.target.is_none() && self.snap.is_none()
    }
}

/// What a query with the games' options answers beside its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ends {
    /// The start searched from (after snapping).
    pub start: Point,
    /// The goal as used (snapped) or reached (a target); `None` when none was reached.
    pub goal: Option<Point>,
    /// With several goals: the index of the goal reached.
    pub goal_index: Option<usize>,
    /// With snapping: whether an end moved.
    pub snapped: Option<bool>,
}
