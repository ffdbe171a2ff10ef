//! Searches confined to one cluster rectangle.
//!
//! The build runs one Dijkstra per transition and every query runs two more (from the start
//! and from the goal), each over a few hundred cells. They get their own small search rather
//! than the shared core because the core's scratch is sized to the whole map (24 bytes a
//! cell) and stops at one goal: here the arrays are sized to one cluster (they stay in L1)
//! and a Dijkstra stops as soon as every *marked target* is settled, which gives all the
//! distances from one transition to the others in one run.
//!
//! Step costs and legality are the map's (`Grid::step_cost`), restricted to cells inside the
//! rectangle. A diagonal whose two end cells lie in the rectangle has both of its corner
//! cells in the rectangle too, so the no-corner-cutting test never needs an outside cell.

use super::heap::MinHeap;
use crate::grid::{DIRS, Grid, Movement, SQRT2, distance};
use crate::search::DIAG_SIDES;
use crate::search::trace::{self, Off, RawEvent, RawKind, Tracer};
use crate::trace::Phase;

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

/// One local cell's search state.
#[derive(Clone, Copy, Default)]
struct LRec {
    g: f64,
    parent: u32,
    /// `gen` = reached, `gen + 1` = settled, anything else = untouched.
    stamp: u32,
}

/// Reusable memory for rectangle-bounded Dijkstra / A*.
#[derive(Default)]
pub(super) struct Local {
    rect: Rect,
    pw: usize,
    /// The rectangle's costs with a ring of blocked cells.
    costs: Vec<u8>,
    /// Per local cell: distance, parent and stamp, together for locality.
    recs: Vec<LRec>,
    /// `gen` = a target of the current search.
    mark: Vec<u32>,
    generation: u32,
    open: MinHeap,
    /// Cells settled by the last search.
    pub expanded: u64,
    /// Successors pushed by the last search.
    pub generated: u64,
}

impl Local {
    fn begin(&mut self, grid: &Grid, rect: Rect) {
        let n = rect.padded_area();
        if self.recs.len() < n {
            self.recs.resize(n, LRec::default());
            self.mark.resize(n, 0);
        }
        if self.generation >= u32::MAX - 4 {
            self.recs.iter_mut().for_each(|r| r.stamp = 0);
            self.mark.iter_mut().for_each(|s| *s = 0);
            self.generation = 0;
        }
        self.generation += 2;
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
        self.open.clear();
        self.expanded = 0;
        self.generated = 0;
    }

    /// Dijkstra from local cell `source` until every cell of `targets` is settled (or the
    /// reachable part of the rectangle is exhausted). With no targets nothing runs.
    pub(super) fn dijkstra(&mut self, grid: &Grid, rect: Rect, source: u32, targets: &[u32]) {
        self.begin(grid, rect);
        let mut remaining = 0;
        for &t in targets {
            if self.mark[t as usize] != self.generation {
                self.mark[t as usize] = self.generation;
                remaining += 1;
            }
        }
        if remaining > 0 {
            self.run_maybe_traced(grid, source, None, remaining, u64::MAX);
        }
    }

    /// A* from `source` to `goal` (local cells), settling at most `cap` cells; true when
    /// the goal was settled.
    pub(super) fn astar(
        &mut self,
        grid: &Grid,
        rect: Rect,
        source: u32,
        goal: u32,
        cap: u64,
    ) -> bool {
        self.begin(grid, rect);
        self.mark[goal as usize] = self.generation;
        self.run_maybe_traced(grid, source, Some(goal), 1, cap);
        self.recs[goal as usize].stamp == self.generation + 1
    }

    /// The rectangle of the last search.
    pub(super) fn rect(&self) -> Rect {
        self.rect
    }

    /// True when the last search reached local cell `l`.
    #[inline]
    pub(super) fn reached(&self, l: u32) -> bool {
        self.recs[l as usize].stamp >= self.generation
    }

    /// Distance of local cell `l` from the source (infinity if not reached). Exact for
    /// settled cells; for cells reached but not settled it is an upper bound (the cost of a
    /// real path).
    #[inline]
    pub(super) fn dist(&self, l: u32) -> f64 {
        if self.reached(l) {
            self.recs[l as usize].g
        } else {
            f64::INFINITY
        }
    }

    /// Local cells touched by the last search, with their distances.
    pub(super) fn touched(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        (0..self.rect.padded_area() as u32)
            .filter(|&l| self.reached(l))
            .map(|l| (l, self.recs[l as usize].g))
    }

    /// Appends the padded cells of the search-tree path source -> `l` to `out`.
    pub(super) fn path_to(&self, l: u32, out: &mut Vec<u32>) {
        let from = out.len();
        let mut cur = l;
        loop {
            out.push(self.rect.padded(self.pw, cur));
            let p = self.recs[cur as usize].parent;
            if p == cur {
                break;
            }
            cur = p;
        }
        out[from..].reverse();
    }

    /// [`Self::run`], recording into this thread's trace recorder when a traced query is
    /// running (one thread-local access per search).
    fn run_maybe_traced(
        &mut self,
        grid: &Grid,
        source: u32,
        goal: Option<u32>,
        remaining: usize,
        cap: u64,
    ) {
        match trace::take() {
            None => self.run(grid, source, goal, remaining, cap, &mut Off),
            Some(mut rec) => {
                self.run(grid, source, goal, remaining, cap, &mut rec);
                trace::put(rec);
            }
        }
    }

    /// Reports an event on local cells `l` (parent `p`) to `tr`.
    #[inline]
    fn emit<T: Tracer>(&self, tr: &mut T, kind: RawKind, l: u32, p: u32, g: f64, h: f64) {
        tr.event(RawEvent {
            kind,
            node: self.rect.padded(self.pw, l),
            parent: self.rect.padded(self.pw, p),
            g,
            h,
            f: g + h,
            phase: Phase::Search,
        });
    }

    /// The core loop: best-first over the rectangle, `h` = 0 (Dijkstra) or the map's
    /// heuristic towards `goal`; stops when `remaining` marked cells are settled or `cap`
    /// cells have been. Reports to `tr` (compiled out for [`Off`]).
    fn run<T: Tracer>(
        &mut self,
        grid: &Grid,
        source: u32,
        goal: Option<u32>,
        mut remaining: usize,
        cap: u64,
        tr: &mut T,
    ) {
        let octile = grid.movement() == Movement::Octile;
        let movement = grid.movement();
        let scale = grid.min_cost() as f64;
        let lpw = self.rect.lpw() as i64;
        let mut off = [0isize; 8];
        for (k, (dx, dy)) in DIRS.iter().enumerate() {
            off[k] = (*dy as i64 * lpw + *dx as i64) as isize;
        }
        let heur = |l: u32| match goal {
            Some(t) => {
                let dx = (l as i64 % lpw - t as i64 % lpw).abs() as f64;
                let dy = (l as i64 / lpw - t as i64 / lpw).abs() as f64;
                distance(movement, dx, dy) * scale
            }
            None => 0.0,
        };
        let gen_ = self.generation;
        self.recs[source as usize] = LRec {
            g: 0.0,
            parent: source,
            stamp: gen_,
        };
        self.open.push(heur(source), source);
        self.generated += 1;
        if T::ON {
            // Dijkstra's h is 0, so f = g + h holds with weight 1 for both kinds of run.
            tr.begin(1.0);
            self.emit(tr, RawKind::Push, source, source, 0.0, heur(source));
        }
        while let Some((_, l)) = self.open.pop() {
            let li = l as usize;
            // Settled already: this entry is an older, worse one (see `heap`).
            if self.recs[li].stamp == gen_ + 1 {
                continue;
            }
            if self.expanded >= cap {
                break;
            }
            let g = self.recs[li].g;
            self.recs[li].stamp = gen_ + 1;
            self.expanded += 1;
            if T::ON {
                let p = self.recs[li].parent;
                self.emit(tr, RawKind::Expand, l, p, g, heur(l));
            }
            if self.mark[li] == gen_ {
                remaining -= 1;
                if remaining == 0 {
                    break;
                }
            }
            let c = self.costs[li] as f64;
            let mut open = [false; 4];
            for k in 0..8 {
                if k >= 4 {
                    let (a, b) = DIAG_SIDES[k - 4];
                    if !(octile && open[a] && open[b]) {
                        continue;
                    }
                }
                let ni = li.wrapping_add_signed(off[k]);
                let cm = self.costs[ni];
                if cm == 0 {
                    continue;
                }
                if k < 4 {
                    open[k] = true;
                }
                let step = if k < 4 { 1.0 } else { SQRT2 };
                let ng = g + step * (c + cm as f64) * 0.5;
                let r = &mut self.recs[ni];
                if r.stamp == gen_ + 1 || (r.stamp == gen_ && ng >= r.g) {
                    continue;
                }
                let kind = if r.stamp == gen_ {
                    RawKind::Decrease
                } else {
                    RawKind::Push
                };
                *r = LRec {
                    g: ng,
                    parent: l,
                    stamp: gen_,
                };
                self.open.push(ng + heur(ni as u32), ni as u32);
                self.generated += 1;
                if T::ON {
                    self.emit(tr, kind, ni as u32, l, ng, heur(ni as u32));
                }
            }
        }
    }
}
