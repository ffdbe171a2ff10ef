//! A*, Dijkstra and weighted A*: the plain grid expander with heuristic weight 1, 0 or `w`.
//!
//! Why the weighted variant stays within `w` of optimal: with a consistent `h`, every node
//! popped satisfies `g <= w * g*` (Pohl's bound); re-pushing improved nodes (reopening) only
//! lowers costs further, so the returned cost is at most `w` times the optimum.

use crate::grid::Grid;
use crate::query::{Algorithm, Query, SearchResult};
use crate::search::{GridExpander, Heuristic, Run, Scratch, best_first};

/// Runs A* (`weight` 1), Dijkstra (`weight` 0) or weighted A* (`weight` w >= 1).
pub(crate) fn search(
    grid: &Grid,
    scratch: &mut Scratch,
    query: &Query,
    algorithm: Algorithm,
    weight: f64,
) -> SearchResult {
    scratch.begin(grid.padded_len());
    let run = Run {
        start: grid.pidx(query.start) as u32,
        goal: grid.pidx(query.goal) as u32,
        weight,
        heuristic: Heuristic::new(grid, query.goal),
        limits: &query.limits,
        track_closest: query.partial,
        debug_cap: query.debug_cap,
    };
    let mut expander = GridExpander::new(grid);
    let outcome = best_first(grid, scratch, &mut expander, &run);
    crate::planner::finish(grid, scratch, outcome, query, algorithm, |g, chain| {
        chain.iter().map(|&n| g.ppoint(n as usize)).collect()
    })
}
