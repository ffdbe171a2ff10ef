//! Finishing a search: the core's outcome (how it ended, the end node's parent chain, the
//! counters) turned into the [`SearchResult`] every algorithm answers, and the optional
//! string-pulling of its path. Algorithms call this; the planner (which validates a query and
//! dispatches it) is never called back.

use crate::algo;
use crate::grid::{Grid, Point};
use crate::query::{Algorithm, Query, SearchResult, Status};
use crate::search::{CoreEnd, CoreOutcome, Scratch, chain};

/// String-pulls a result's path in place: Theta*'s vertices (already any-angle, so pulling
/// the crossed cells could only lengthen it on weighted maps), every other algorithm's cell
/// path. The cell path and its cost are left as they are.
pub(crate) fn smooth_result(grid: &Grid, r: &mut SearchResult) {
    if r.path.is_empty() {
        return;
    }
    let cells = grid.cells();
    let (points, costs) = match (&r.waypoints, r.algorithm) {
        (Some(w), Algorithm::Theta) => {
            let costs = w
                .windows(2)
                .map(|s| algo::los::segment_cost(grid, &cells, s[0], s[1]).unwrap_or(f64::INFINITY))
                .collect();
            (w.clone(), costs)
        }
        _ => (r.path.clone(), algo::smooth::step_costs(grid, &r.path)),
    };
    let (corners, length) = algo::smooth::pull(grid, &points, &costs);
    r.waypoints = Some(corners);
    r.smoothed_length = Some(length);
}

/// A finished path as an algorithm reports it (see [`finish_shaped`]).
pub(crate) struct Shaped {
    /// The legal cell path.
    pub path: Vec<Point>,
    /// Its step cost.
    pub cost: f64,
    /// Corner points, if the algorithm has them.
    pub waypoints: Option<Vec<Point>>,
    /// Segment cost through `waypoints`, if it differs from `cost`.
    pub smoothed_length: Option<f64>,
}

/// Turns the core's outcome into a result. `to_cells` maps the parent chain (padded node ids,
/// start first) to the reported path; the cost is the end node's `g`.
pub(crate) fn finish(
    grid: &Grid,
    scratch: &Scratch,
    outcome: CoreOutcome,
    query: &Query,
    algorithm: Algorithm,
    to_cells: impl Fn(&Grid, &[u32]) -> Vec<Point>,
) -> SearchResult {
    finish_shaped(
        grid,
        scratch,
        outcome,
        query,
        algorithm,
        |g, chain, cost| Shaped {
            path: to_cells(g, chain),
            cost,
            waypoints: None,
            smoothed_length: None,
        },
    )
}

/// [`finish`] for algorithms whose chain is not the cell path: `shape(grid, chain, g_end)`
/// builds the path, its cost and any waypoints (JPS fills runs between jump points, Theta*
/// traces segments).
pub(crate) fn finish_shaped(
    grid: &Grid,
    scratch: &Scratch,
    outcome: CoreOutcome,
    query: &Query,
    algorithm: Algorithm,
    shape: impl Fn(&Grid, &[u32], f64) -> Shaped,
) -> SearchResult {
    let (status, end, limit) = match outcome.end {
        CoreEnd::Goal => (Status::Found, Some(grid.pidx(query.goal) as u32), None),
        CoreEnd::Exhausted => match outcome.closest {
            Some(c) if query.partial => (Status::Partial, Some(c), None),
            _ => (Status::NoPath, None, None),
        },
        CoreEnd::Limit(kind) => match outcome.closest {
            Some(c) if query.partial => (Status::Partial, Some(c), Some(kind)),
            _ => (Status::LimitReached, None, Some(kind)),
        },
    };
    let shaped = match end {
        Some(e) => shape(grid, &chain(scratch, e), scratch.nodes().g(e)),
        None => Shaped {
            path: Vec::new(),
            cost: 0.0,
            waypoints: None,
            smoothed_length: None,
        },
    };
    SearchResult {
        status,
        path: shaped.path,
        cost: shaped.cost,
        algorithm,
        stats: outcome.stats,
        limit,
        waypoints: shaped.waypoints,
        smoothed_length: shaped.smoothed_length,
        keeps_guarantee: query.keeps_guarantee(grid.movement()),
        expanded_cells: outcome
            .debug
            .iter()
            .map(|&n| grid.ppoint(n as usize))
            .collect(),
    }
}
