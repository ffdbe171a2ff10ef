//! A*, Dijkstra and weighted A*: the plain grid expander with heuristic weight 1, 0 or `w`.
//!
//! # Weighted A*: within `w`, each node expanded once
//!
//! Weighted A* orders the open list by `f = g + w h` (`w >= 1`, `h` consistent and admissible;
//! ties: larger `g` first, as for every search of the core). It never reopens a closed node:
//! reopening is what made it expand *more* cells than A* (a cheaper way to a closed node turns
//! up often under an inflated heuristic, and each one re-expanded a whole region: 4.3 times
//! A*'s expansions on `Berlin_0_1024`), and the bound does not need it (Likhachev, Gordon
//! and Thrun's ARA* argument):
//!
//! **Claim.** When a node `u` is expanded, `g(u) <= w g*(u)`.
//!
//! *Proof*, by induction over the order of expansions. Take an optimal path
//! `s_0 = start, ..., s_k = u` and the first node `s_i` on it that is not yet closed (there is
//! one: `u` itself is not). If `i = 0`, `g(s_0) = 0`. Otherwise `s_{i-1}` is closed, so by
//! induction `g(s_{i-1}) <= w g*(s_{i-1})` when it was expanded, and relaxing the edge to `s_i`
//! gave `g(s_i) <= g(s_{i-1}) + c(s_{i-1}, s_i) <= w (g*(s_{i-1}) + c) = w g*(s_i)` (`w >= 1`;
//! `g` only decreases afterwards, and `s_i` is open, not closed). Consistency gives
//! `h(s_i) <= g*(u) - g*(s_i) + h(u)`, so
//! `f(s_i) <= w g*(s_i) + w (g*(u) - g*(s_i) + h(u)) = w (g*(u) + h(u))`. The open list pops
//! the smallest `f`, so `f(u) = g(u) + w h(u) <= f(s_i)` (equality when `u = s_i`), and
//! `g(u) <= w g*(u)`. At the goal (`h = 0`) the answer costs at most `w` times the optimum.
//!
//! With `w = 1` the same argument gives `g(u) = g*(u)` at expansion: A* never needs to reopen
//! either (the core still may for `w <= 1`, a safety net the Moving AI tests check stays
//! unused). Dijkstra is `w = 0`, `h` ignored.

use crate::grid::Grid;
use crate::query::{Algorithm, EPSILON, Query, SearchResult, TieBreak};
use crate::search::lesson::Lesson;
use crate::search::{Estimate, GridExpander, Heuristic, Run, Scratch, best_first};

/// Runs A* (`weight` 1), Dijkstra (`weight` 0) or weighted A* (`weight` w >= 1), with the
/// query's lesson heuristic and tie-break when it asks for one ([`Query::has_lesson`]): the
/// default search never goes through [`Lesson`].
pub(crate) fn search(
    grid: &Grid,
    scratch: &mut Scratch,
    query: &Query,
    algorithm: Algorithm,
    weight: f64,
) -> SearchResult {
    if !query.has_lesson() {
        return run(
            grid,
            scratch,
            query,
            algorithm,
            weight,
            Heuristic::new(grid, query.goal),
        );
    }
    let weight = match query.tie_break {
        TieBreak::Epsilon => weight * (1.0 + EPSILON),
        _ => weight,
    };
    let lesson = Lesson::new(
        grid,
        query.start,
        query.goal,
        query.heuristic,
        query.tie_break,
    );
    run(grid, scratch, query, algorithm, weight, lesson)
}

fn run<H: Estimate>(
    grid: &Grid,
    scratch: &mut Scratch,
    query: &Query,
    algorithm: Algorithm,
    weight: f64,
    heuristic: H,
) -> SearchResult {
    scratch.begin(grid.padded_len());
    let run = Run {
        start: grid.pidx(query.start) as u32,
        goal: grid.pidx(query.goal) as u32,
        weight,
        heuristic,
        limits: &query.limits,
        track_closest: query.partial,
        debug_cap: query.debug_cap,
    };
    let mut expander = GridExpander::new(grid);
    let outcome = best_first(grid, scratch, &mut expander, &run);
    crate::search::finish(grid, scratch, outcome, query, algorithm, |g, chain| {
        chain.iter().map(|&n| g.ppoint(n as usize)).collect()
    })
}
