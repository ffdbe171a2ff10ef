//! Theta* (Nash, Daniel, Koenig & Felner 2007): any-angle paths over the shared core.
//!
//! Expansion is A*'s (the eight grid neighbours, "path 1"), but a neighbour `m` of `s` may
//! instead take `s`'s parent `p` as its own parent when `p` sees `m` ("path 2"), at the cost of
//! the straight segment `p -> m`. Line of sight and segment cost are those of [`super::los`]:
//! a segment never touches a blocked cell's interior nor passes a corner the octile rule
//! forbids, and costs each crossed cell's cost times the length inside it (the Euclidean length
//! when every cell costs 1).
//!
//! - Uniform maps: path 2 is taken whenever `p` sees `m` (it is never longer, by the triangle
//!   inequality), as in the original algorithm.
//! - Weighted maps: path 2 is taken only when it is no dearer than path 1 (a straight segment
//!   through expensive terrain can cost more than a detour), so `g` never exceeds A*'s.
//! - Cardinal maps: not offered (a unit that can only move along the axes cannot follow an
//!   any-angle segment); the planner answers `NotApplicable`.
//!
//! Closed nodes stay closed (no reopening), so every node's `g` is exactly the cost of its
//! parent chain. With the Euclidean heuristic (scaled by the smallest cell cost, so admissible
//! and consistent for every segment) the returned length is never above the octile optimum:
//! any optimal grid path is available to the search step by step, and path 2 only ever
//! replaces a proposal with a cheaper one.
//!
//! The line-of-sight check, the expensive part, runs only for proposals that can still improve
//! their node: its lower bound `g(p) + min_cost * |p m|` must beat the node's current cost.

use crate::grid::{Grid, Point};
use crate::query::{Algorithm, Query, SearchResult};
use crate::search::{Expander, GridExpander, Heuristic, Run, Scratch, Succ, best_first};

use super::los;

/// Runs Theta*. The grid must be octile (the planner checks).
pub(crate) fn search(grid: &Grid, scratch: &mut Scratch, query: &Query) -> SearchResult {
    scratch.begin(grid.padded_len());
    let run = Run {
        start: grid.pidx(query.start) as u32,
        goal: grid.pidx(query.goal) as u32,
        weight: 1.0,
        heuristic: Heuristic::euclidean(grid, query.goal),
        limits: &query.limits,
        track_closest: query.partial,
        debug_cap: query.debug_cap,
    };
    let mut expander = ThetaExpander {
        grid_steps: GridExpander::new(grid),
        parent: None,
        min_cost: grid.min_cost() as f64,
        uniform: grid.is_uniform(),
    };
    let outcome = best_first(grid, scratch, &mut expander, &run);
    crate::search::finish_shaped(
        grid,
        scratch,
        outcome,
        query,
        Algorithm::Theta,
        |g, chain, _| {
            let vertices: Vec<Point> = chain.iter().map(|&n| g.ppoint(n as usize)).collect();
            let (path, cost, length) = trace(g, &vertices);
            crate::search::Shaped {
                path,
                cost,
                waypoints: Some(vertices),
                smoothed_length: Some(length),
            }
        },
    )
}

/// The cells an any-angle polyline crosses (a legal step path), its step cost, and the
/// polyline's segment cost. Every segment must be visible.
pub(crate) fn trace(grid: &Grid, vertices: &[Point]) -> (Vec<Point>, f64, f64) {
    let cells = grid.cells();
    let mut path = Vec::with_capacity(vertices.len() * 8);
    path.extend(vertices.first().copied());
    let mut length = 0.0;
    for w in vertices.windows(2) {
        let visible = los::append_cells(grid, &cells, w[0], w[1], &mut path);
        debug_assert!(visible, "{} -> {}", w[0], w[1]);
        length += los::segment_cost(grid, &cells, w[0], w[1]).unwrap_or(f64::NAN);
    }
    let cost = grid.path_cost(&path).unwrap_or(f64::NAN);
    (path, cost, length)
}

/// Grid expansion plus the shortcut through the expanded node's parent.
struct ThetaExpander {
    grid_steps: GridExpander,
    /// Parent of the node being expanded, and its cost.
    parent: Option<(u32, f64)>,
    min_cost: f64,
    uniform: bool,
}

impl Expander for ThetaExpander {
    const REOPEN: bool = false;
    const REFINES: bool = true;

    #[inline]
    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        self.parent = parent;
        self.grid_steps.successors(grid, node, g, parent, out);
    }

    #[inline]
    fn refine(&mut self, grid: &Grid, succ: &mut Succ, current_g: f64) {
        let Some((p, gp)) = self.parent else {
            return;
        };
        let (pp, m) = (grid.ppoint(p as usize), grid.ppoint(succ.node as usize));
        let straight = los::euclid(pp, m);
        // Even the cheapest segment p -> m could not improve the node: skip the check.
        if gp + straight * self.min_cost >= current_g {
            return;
        }
        let shortcut = if self.uniform {
            los::visible(grid, self.grid_steps.cells(), pp, m).then_some(gp + straight)
        } else {
            los::segment_cost(grid, self.grid_steps.cells(), pp, m)
                .map(|c| gp + c)
                .filter(|&g2| g2 <= succ.g)
        };
        if let Some(g2) = shortcut {
            *succ = Succ {
                node: succ.node,
                g: g2,
                parent: p,
            };
        }
    }
}
