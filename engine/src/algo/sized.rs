//! A*, Dijkstra and weighted A* for a `k x k` agent (`k > 1`), anchored at its top-left cell.
//!
//! The agent moves like a one-cell agent on the map *eroded* for its footprint: an anchor is
//! usable when its clearance ([`crate::clearance`]) is at least `k`, i.e. the whole `k x k`
//! square is passable, and a diagonal step also needs both orthogonal anchors usable (the
//! Moving AI no-corner-cutting rule applied to the footprint). Steps cost what they cost a
//! one-cell agent between the two anchor cells, so a size-1 query and this one agree on
//! every path both may take, and the map's heuristic (octile or Manhattan distance times the
//! smallest cost) stays admissible. JPS and HPA* serve sized queries on that eroded map
//! built out ([`crate::Eroded`]); Theta* has no sized variant (`NotApplicable`).

use crate::clearance::Clearance;
use crate::grid::{Cells, Grid, Movement, moves};
use crate::query::{Algorithm, Query, SearchResult};
use crate::search::{Expander, Heuristic, Run, Scratch, Succ, best_first};

/// Eight- or four-neighbour expansion over the anchors a `size x size` agent fits at.
pub(crate) struct SizedExpander<'a> {
    offsets: [isize; 8],
    octile: bool,
    cells: Cells,
    clearance: &'a Clearance,
    size: u32,
    pw: usize,
}

impl<'a> SizedExpander<'a> {
    /// Expansion for a `size x size` agent on `grid`.
    pub(crate) fn new(grid: &'a Grid, size: u32) -> Self {
        SizedExpander {
            offsets: grid.offsets(),
            octile: grid.movement() == Movement::Octile,
            cells: grid.cells(),
            clearance: grid.clearance(),
            size,
            pw: grid.padded_width(),
        }
    }

    /// The anchor's cost for the agent: 0 where its footprint does not fit.
    #[inline]
    fn cost(&self, m: usize) -> u8 {
        let c = self.cells[m];
        if c == 0 {
            return 0;
        }
        // Passable cells are interior: padded coordinates >= 1.
        let p = crate::Point::new((m % self.pw) as u32 - 1, (m / self.pw) as u32 - 1);
        if self.clearance.at(p) >= self.size {
            c
        } else {
            0
        }
    }
}

impl Expander for SizedExpander<'_> {
    fn successors(
        &mut self,
        _grid: &Grid,
        node: u32,
        g: f64,
        _parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        let n = node as usize;
        let mut buf = [(0u32, 0.0f64); 8];
        // The map's move rule over the eroded costs (the anchor `n` itself fits: it was
        // reached).
        let k = moves(
            &self.offsets,
            self.octile,
            n,
            self.cells[n],
            g,
            |m| self.cost(m),
            &mut buf,
        );
        out.extend(buf[..k].iter().map(|&(m, g)| Succ {
            node: m,
            g,
            parent: node,
        }));
    }
}

/// Runs A* (`weight` 1), Dijkstra (`weight` 0) or weighted A* for `query.size > 1`.
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
    let mut expander = SizedExpander::new(grid, query.size);
    let outcome = best_first(grid, scratch, &mut expander, &run);
    crate::search::finish(grid, scratch, outcome, query, algorithm, |g, chain| {
        chain.iter().map(|&n| g.ppoint(n as usize)).collect()
    })
}
