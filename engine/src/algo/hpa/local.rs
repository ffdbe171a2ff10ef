//! Searches confined to one cluster rectangle.
//!
//! The build runs one Dijkstra per transition and every query runs two more (from the start
//! and from the goal), each over a few hundred cells. They run on the shared core
//! ([`crate::search::best_first`]) with the one grid expander, over a copy of the rectangle's
//! costs inside a ring of blocked cells and with their own [`Scratch`]: node ids are local
//! cells, so the records and the heap are sized to one cluster (they stay in L1, where the
//! map-sized scratch would spread a few hundred records over the whole map), and a Dijkstra
//! stops as soon as every *marked target* is settled ([`Expander::settle`]), which gives all
//! the distances from one transition to the others in one run.
//!
//! Step costs and legality are the map's (`Grid::step_cost`), restricted to cells inside the
//! rectangle. A diagonal whose two end cells lie in the rectangle has both of its corner
//! cells in the rectangle too, so the no-corner-cutting test never needs an outside cell.

use crate::grid::Grid;
use crate::query::Limits;
use crate::search::trace::Recorder;
use crate::search::{
    CoreEnd, Estimate, Expander, GridExpander, Heuristic, Run, Scratch, Succ, Zero, best_first_with,
};

/// A cluster rectangle in map coordinates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Rect {
    pub x0: u32,
    pub y0: u32,
    pub w: u32,
    pub h: u32,
}

impl Rect {
    /// Width of the rectangle with its ring of blocked cells.
    #[inline]
    fn lpw(&self) -> usize {
        self.w as usize + 2
    }

    /// Number of local cells, ring included.
    #[inline]
    pub(super) fn padded_area(&self) -> usize {
        self.lpw() * (self.h as usize + 2)
    }

    /// Local index of a padded map cell in the rectangle: row-major over the rectangle with
    /// a one-cell ring of blocked cells, like the map's own padding, so the search loop
    /// needs no bounds checks.
    #[inline]
    pub(super) fn local(&self, pw: usize, padded: u32) -> u32 {
        let p = padded as usize;
        let x = (p % pw - 1) as u32;
        let y = (p / pw - 1) as u32;
        debug_assert!(x >= self.x0 && x < self.x0 + self.w && y >= self.y0 && y < self.y0 + self.h);
        ((y - self.y0 + 1) as usize * self.lpw() + (x - self.x0 + 1) as usize) as u32
    }

    /// Map coordinates of an interior local index.
    #[inline]
    pub(super) fn xy(&self, local: u32) -> (u32, u32) {
        let l = local as usize;
        (
            self.x0 + (l % self.lpw()) as u32 - 1,
            self.y0 + (l / self.lpw()) as u32 - 1,
        )
    }

    /// Padded map index of an interior local index.
    #[inline]
    pub(super) fn padded(&self, pw: usize, local: u32) -> u32 {
        let (x, y) = self.xy(local);
        ((y + 1) as usize * pw + (x + 1) as usize) as u32
    }
}

/// Reusable memory for rectangle-bounded Dijkstra / A*.
#[derive(Default)]
pub(super) struct Local {
    rect: Rect,
    pw: usize,
    /// The rectangle's costs with a ring of blocked cells.
    costs: Vec<u8>,
    /// `mark` = a target of the current search.
    marks: Vec<u32>,
    mark: u32,
    /// The core's records and open list, over local cells.
    scratch: Scratch,
    /// Cells settled by the last search.
    pub expanded: u64,
    /// Successors pushed by the last search.
    pub generated: u64,
}

/// The grid expander over a rectangle's costs, counting down the marked targets and naming
/// local cells by their map cells.
struct LocalExpander<'a> {
    grid: GridExpander<&'a [u8]>,
    marks: &'a [u32],
    mark: u32,
    remaining: usize,
    rect: Rect,
    pw: usize,
}

impl Expander for LocalExpander<'_> {
    const TARGETS: bool = true;

    #[inline]
    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        self.grid.successors(grid, node, g, parent, out);
    }

    #[inline]
    fn settle(&mut self, node: u32) -> bool {
        if self.marks[node as usize] != self.mark {
            return false;
        }
        self.remaining -= 1;
        self.remaining == 0
    }

    #[inline]
    fn cell(&self, node: u32) -> u32 {
        self.rect.padded(self.pw, node)
    }
}

impl Local {
    fn begin(&mut self, grid: &Grid, rect: Rect) {
        let n = rect.padded_area();
        if self.marks.len() < n {
            self.marks.resize(n, 0);
        }
        if self.mark == u32::MAX {
            self.marks.iter_mut().for_each(|s| *s = 0);
            self.mark = 0;
        }
        self.mark += 1;
        self.scratch.begin(n);
        // Copy the rectangle's costs inside a blocked ring.
        let (lpw, w) = (rect.lpw(), rect.w as usize);
        self.costs.clear();
        self.costs.resize(n, 0);
        let cells = grid.cells();
        for y in 0..rect.h {
            let from = grid.pidx(crate::grid::Point::new(rect.x0, rect.y0 + y));
            let to = (y as usize + 1) * lpw + 1;
            self.costs[to..to + w].copy_from_slice(&cells[from..from + w]);
        }
        self.rect = rect;
        self.pw = grid.padded_width();
        self.expanded = 0;
        self.generated = 0;
    }

    /// Dijkstra from local cell `source` until every cell of `targets` is settled (or the
    /// reachable part of the rectangle is exhausted). With no targets nothing runs. A
    /// recorder in `tr` records the search.
    pub(super) fn dijkstra(
        &mut self,
        grid: &Grid,
        rect: Rect,
        source: u32,
        targets: &[u32],
        tr: &mut Option<Recorder>,
    ) {
        self.begin(grid, rect);
        let mut remaining = 0;
        for &t in targets {
            if self.marks[t as usize] != self.mark {
                self.marks[t as usize] = self.mark;
                remaining += 1;
            }
        }
        if remaining > 0 {
            // No single goal (no node id is u32::MAX): the targets end the search.
            self.run(grid, source, u32::MAX, Zero, (remaining, None), tr);
        }
    }

    /// A* from `source` to `goal` (local cells), expanding at most `cap` cells; true when
    /// the goal was reached.
    pub(super) fn astar(
        &mut self,
        grid: &Grid,
        rect: Rect,
        source: u32,
        goal: u32,
        cap: u64,
        tr: &mut Option<Recorder>,
    ) -> bool {
        self.begin(grid, rect);
        let h = Heuristic::padded(rect.lpw(), goal, grid.movement(), grid.min_cost());
        let cap = (cap != u64::MAX).then_some(cap);
        matches!(self.run(grid, source, goal, h, (0, cap), tr), CoreEnd::Goal)
    }

    /// One run of the core over the rectangle (weight 1: Dijkstra's `h` is [`Zero`]), until
    /// `goal` is expanded, or `stop.0` marked targets are, or `stop.1` cells are.
    fn run<H: Estimate>(
        &mut self,
        grid: &Grid,
        source: u32,
        goal: u32,
        heuristic: H,
        (remaining, cap): (usize, Option<u64>),
        tr: &mut Option<Recorder>,
    ) -> CoreEnd {
        let limits = Limits {
            max_expansions: cap,
            ..Limits::default()
        };
        let run = Run {
            start: source,
            goal,
            weight: 1.0,
            heuristic,
            limits: &limits,
            track_closest: false,
            debug_cap: 0,
        };
        let mut expander = LocalExpander {
            grid: GridExpander::over(&self.costs[..], self.rect.lpw(), grid.movement()),
            marks: &self.marks,
            mark: self.mark,
            remaining,
            rect: self.rect,
            pw: self.pw,
        };
        let out = best_first_with(grid, &mut self.scratch, &mut expander, &run, tr);
        self.expanded = out.stats.expanded;
        self.generated = out.stats.generated;
        out.end
    }

    /// The rectangle of the last search.
    pub(super) fn rect(&self) -> Rect {
        self.rect
    }

    /// Distance of local cell `l` from the source (infinity if not reached). Exact for
    /// settled cells; for cells reached but not settled it is an upper bound (the cost of a
    /// real path).
    #[inline]
    pub(super) fn dist(&self, l: u32) -> f64 {
        self.scratch.nodes().g(l)
    }

    /// Local cells touched by the last search, with their distances.
    pub(super) fn touched(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        (0..self.rect.padded_area() as u32)
            .map(|l| (l, self.dist(l)))
            .filter(|(_, d)| d.is_finite())
    }

    /// Appends the padded cells of the search-tree path source -> `l` to `out`.
    pub(super) fn path_to(&self, l: u32, out: &mut Vec<u32>) {
        let from = out.len();
        let nodes = self.scratch.nodes();
        let mut cur = l;
        loop {
            out.push(self.rect.padded(self.pw, cur));
            let p = nodes.parent(cur);
            if p == cur {
                break;
            }
            cur = p;
        }
        out[from..].reverse();
    }
}
