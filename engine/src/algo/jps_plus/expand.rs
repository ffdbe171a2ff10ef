//! The JPS+ search: the expansion policy that reads the jump table, on the shared core.

use super::{ARMS, DIRS, Entry, JumpTable, SIDES, dir_index};
use crate::grid::{Grid, SQRT2};
use crate::landmarks::Landmarks;
use crate::query::{Algorithm, Query, SearchResult};
use crate::search::{Expander, Heuristic, Run, Scratch, Succ, best_first};

/// Runs JPS+ over `table` (built for this grid version). The grid must be uniform and
/// octile (the planner checks).
pub(crate) fn search(
    grid: &Grid,
    table: &JumpTable,
    landmarks: Option<&Landmarks>,
    scratch: &mut Scratch,
    query: &Query,
) -> SearchResult {
    debug_assert!(grid.is_uniform() && table.fits(grid));
    scratch.begin(grid.padded_len());
    let goal = grid.pidx(query.goal);
    let octile = Heuristic::new(grid, query.goal);
    let pw = grid.padded_width();
    let mut expander = PlusExpander {
        table,
        pw,
        coords: octile,
        goal: (goal % pw, goal / pw),
    };
    fn run<'q, H>(grid: &Grid, query: &'q Query, goal: usize, heuristic: H) -> Run<'q, H> {
        Run {
            start: grid.pidx(query.start) as u32,
            goal: goal as u32,
            weight: 1.0,
            heuristic,
            limits: &query.limits,
            track_closest: query.partial,
            debug_cap: query.debug_cap,
        }
    }
    // The same search either way; the landmarks only sharpen `h` (see `crate::landmarks`).
    let outcome = match landmarks {
        Some(l) => {
            let h = l.towards(octile, goal);
            best_first(grid, scratch, &mut expander, &run(grid, query, goal, h))
        }
        None => best_first(
            grid,
            scratch,
            &mut expander,
            &run(grid, query, goal, octile),
        ),
    };
    crate::search::finish_shaped(
        grid,
        scratch,
        outcome,
        query,
        Algorithm::JpsPlus,
        |g, chain, _| {
            let jumps = crate::algo::jps::with_corners(chain.iter().map(|&n| g.ppoint(n as usize)));
            let (path, cost) = crate::algo::jps::fill(g.jps_planes(), &jumps);
            crate::search::Shaped {
                path,
                cost,
                waypoints: Some(jumps),
                smoothed_length: None,
            }
        },
    )
}

/// The JPS+ expansion policy: [`crate::algo::jps::JpsExpander`]'s successors, found by table
/// lookups instead of scans.
///
/// Successors go straight to the core's relaxation ([`Expander::each_successor`]) rather
/// than through its buffer: the policy is `Copy` (a table reference and a few numbers), so a
/// copy generates them while the core's visitor borrows the original.
#[derive(Clone, Copy)]
struct PlusExpander<'t> {
    table: &'t JumpTable,
    pw: usize,
    /// `(x, y)` of node ids by multiply-shift instead of division (see [`Heuristic`]).
    coords: Heuristic,
    /// Padded goal coordinates.
    goal: (usize, usize),
}

impl PlusExpander<'_> {
    /// Padded `(x, y)` of padded index `n`.
    #[inline(always)]
    fn xy(&self, n: usize) -> (usize, usize) {
        let (x, y) = self.coords.coords(n as u32);
        (x as usize, y as usize)
    }

    /// The straight move from padded `(x, y)`, whose entry in straight direction `dir` is
    /// `v`: the goal when it lies ahead on this line within reach, else the jump point, as
    /// (node, steps).
    #[inline(always)]
    fn straight(&self, v: i16, x: usize, y: usize, dir: usize) -> Option<(usize, usize)> {
        let (dx, dy) = DIRS[dir];
        let (gx, gy) = self.goal;
        let ahead = if dy == 0 {
            (gy == y).then(|| (gx as isize - x as isize) * dx)
        } else {
            (gx == x).then(|| (gy as isize - y as isize) * dy)
        };
        if let Some(k) = ahead.filter(|&k| k > 0 && k as usize <= v.unsigned_abs() as usize) {
            return Some((gy * self.pw + gx, k as usize));
        }
        (v > 0).then(|| {
            let k = v as isize;
            let node = (y as isize + dy * k) as usize * self.pw + (x as isize + dx * k) as usize;
            (node, k as usize)
        })
    }

    /// The whole diagonal ray from padded `n` (reached with cost `g`) in diagonal direction
    /// `dir`, as [`crate::algo::jps::JpsExpander`]'s `diagonal_ray` does it: at each of the ray's
    /// stops (its jump points, and the goal's row or column, see the module docs) the jump
    /// points of the stop's two arms are pushed as successors of `n` (diagonal-then-straight
    /// edges at their octile cost), and the ray goes on, one table lookup per stop.
    ///
    /// `e` is the entry of `n` (read by the caller, which has it anyway).
    fn ray(&self, n: usize, e: Entry, g: f64, dir: usize, out: &mut impl FnMut(Succ)) {
        let (x, y) = self.xy(n);
        let (arm_x, arm_y) = ARMS[dir - 4];
        let mut stop = self.next_stop(e, dir, x, y, 0);
        // The entry of the stop after the current one, read early (see below).
        let mut early: Option<Entry> = None;
        while let Some((x, y, k)) = stop {
            let diag = k as f64 * SQRT2;
            let here = y * self.pw + x;
            if (x, y) == self.goal {
                out(Succ {
                    node: here as u32,
                    g: g + diag,
                    parent: n as u32,
                });
                return;
            }
            // The entries of the stop, read once for the ray and both arms.
            let e = early.take().unwrap_or_else(|| self.table.get(here));
            stop = self.next_stop(e, dir, x, y, k);
            // The next stop is known before this one's successors are handed on: reading
            // its entry now lets that (in a large table, likely) cache miss overlap them.
            early = stop.map(|(x, y, _)| self.table.get(y * self.pw + x));
            for arm in [arm_x, arm_y] {
                if let Some((node, steps)) = self.straight(e[arm], x, y, arm) {
                    out(Succ {
                        node: node as u32,
                        g: g + (diag + steps as f64),
                        parent: n as u32,
                    });
                }
            }
        }
    }

    /// The ray's stop after padded `(x, y)` (whose entries are `e`, `k` diagonal steps
    /// from the ray's start) in diagonal direction `dir`: the goal's row or column when the
    /// ray reaches it first, else the next jump point, as `(x, y, steps from the start)`;
    /// `None` when the ray ends before either.
    #[inline(always)]
    fn next_stop(
        &self,
        e: Entry,
        dir: usize,
        x: usize,
        y: usize,
        k: usize,
    ) -> Option<(usize, usize, usize)> {
        let (dx, dy) = DIRS[dir];
        let (gx, gy) = self.goal;
        let v = e[dir];
        let reach = v.unsigned_abs() as usize;
        let kx = (gx as isize - x as isize) * dx;
        let ky = (gy as isize - y as isize) * dy;
        let target = if kx > 0 && ky > 0 {
            Some(kx.min(ky) as usize).filter(|&t| t <= reach)
        } else {
            None
        };
        let stop = match (target, v > 0) {
            (Some(t), _) => t,
            (None, true) => reach,
            (None, false) => return None,
        };
        Some((
            x.wrapping_add_signed(dx * stop as isize),
            y.wrapping_add_signed(dy * stop as isize),
            k + stop,
        ))
    }

    /// Pushes the successors of padded `n` (whose entry is `e`) in direction `dir`.
    #[inline]
    fn push(&self, n: usize, e: Entry, g: f64, dir: usize, out: &mut impl FnMut(Succ)) {
        if dir >= 4 {
            self.ray(n, e, g, dir, out);
            return;
        }
        let (x, y) = self.xy(n);
        if let Some((node, steps)) = self.straight(e[dir], x, y, dir) {
            out(Succ {
                node: node as u32,
                g: g + steps as f64,
                parent: n as u32,
            });
        }
    }
}

impl PlusExpander<'_> {
    /// The successors of `node` (reached with cost `g` from `parent`), each handed to `out`.
    fn generate(&self, node: u32, g: f64, parent: Option<(u32, f64)>, out: &mut impl FnMut(Succ)) {
        let n = node as usize;
        // Everything below reads this one entry (and the entries of the cells it jumps to).
        let e = self.table.get(n);
        let Some((p, _)) = parent else {
            for dir in 0..8 {
                self.push(n, e, g, dir, out);
            }
            return;
        };
        let (nx, ny) = self.xy(n);
        let (px, py) = self.xy(p as usize);
        let (ax, ay) = (nx.abs_diff(px), ny.abs_diff(py));
        let mut dx = (nx as isize - px as isize).signum();
        let mut dy = (ny as isize - py as isize).signum();
        if ax == ay {
            // Only the goal ends a pure diagonal edge (see `ray`), and it is never expanded.
            self.ray(n, e, g, dir_index(dx, dy), out);
            return;
        }
        // A diagonal-then-straight edge arrives by its straight part, along the longer axis.
        if ax > ay {
            dy = 0;
        } else {
            dx = 0;
        }
        let dir = dir_index(dx, dy);
        self.push(n, e, g, dir, out);
        // Forced sides (blocked beside the previous cell, open beside this one), read off this
        // cell's own entries instead of the cells: side `s` is open iff `e[s] != 0` (an open
        // cell's entry is 0 exactly when its first step is blocked); then the cell beside the
        // previous one, `n - dir + s`, is blocked iff the diagonal entry towards it (`back`)
        // is 0, since that diagonal step's two side cells, `n + s` and the previous cell
        // `n - dir`, are open (the move came through `n - dir`: every straight edge is at
        // least one step).
        for (side, back, forward) in SIDES[dir] {
            if e[side] != 0 && e[back] == 0 {
                self.push(n, e, g, side, out);
                self.push(n, e, g, forward, out);
            }
        }
    }
}

impl Expander for PlusExpander<'_> {
    const PARENT_G: bool = false;

    fn successors(
        &mut self,
        _grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        self.generate(node, g, parent, &mut |s| out.push(s));
    }

    #[inline]
    fn each_successor(
        &mut self,
        _grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        _buf: &mut Vec<Succ>,
        mut visit: impl FnMut(&mut Self, Succ),
    ) {
        let this = *self;
        this.generate(node, g, parent, &mut |s| visit(self, s));
    }
}
