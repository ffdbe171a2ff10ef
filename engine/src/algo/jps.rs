//! Jump Point Search (Harabor & Grastien 2011) for uniform-cost maps, as an [`Expander`] over
//! the shared best-first core: the successors of a jump point are the next jump points along
//! its pruned directions, each at its exact octile (or Manhattan) distance.
//!
//! # Pruning rules
//!
//! JPS keeps one canonical optimal path per cell and only stops where that canonical order has
//! to be restarted. With the Moving AI rule (a diagonal step needs both side cells open) the
//! rules are not those of the classic corner-cutting JPS:
//!
//! - **Octile.** Canonical paths go diagonally first, then straight. A diagonal move `(dx, dy)`
//!   continues diagonally and spawns its two straight components `(dx, 0)` and `(0, dy)`; it has
//!   no forced neighbours (both side cells of the step are open, so every other neighbour is
//!   reached at least as cheaply without passing through it). A straight move, say east from
//!   `p` to `x`, continues east, and `x` is a jump point when a side cell of `p` is blocked while
//!   the same side cell of `x` is open (e.g. `(x-1, y-1)` blocked and `(x, y-1)` open): that
//!   open cell is then reachable canonically only through `x`, so `x` also goes north and
//!   north-east. A diagonal cell is a jump point when one of its straight arms finds one.
//! - **Cardinal.** Canonical paths go vertically first, then horizontally. A vertical move
//!   continues and spawns both horizontal arms (and is a jump point when an arm finds one); a
//!   horizontal move has exactly the forced rule of the octile straight move, and a forced cell
//!   turns vertical.
//!
//! The goal is a jump point wherever a scan passes it. Straight scans along a row read eight
//! cells at a time (a SWAR test on the row and the two rows beside it); vertical scans walk the
//! column.
//!
//! Why it is optimal: every jump edge is a straight or diagonal run whose cost is its octile
//! distance, the heuristic is consistent on those edges, and the canonical paths through jump
//! points include an optimal path to every cell (the forced rules above are exactly where an
//! obstacle breaks a canonical path). The tests check it against A* on every Moving AI map and
//! against a reference Dijkstra on random maps.
//!
//! No JPS+ style precomputation: a `Grid` is immutable and carries none, and the per-query scan
//! is already a small fraction of A*'s work (see the benches).

use crate::grid::{Grid, Movement, Point, SQRT2};
use crate::query::{Algorithm, Query, SearchResult};
use crate::search::{Expander, Heuristic, Run, Scratch, Succ, best_first};

/// Runs JPS. The grid must be uniform (the planner checks).
pub(crate) fn search(grid: &Grid, scratch: &mut Scratch, query: &Query) -> SearchResult {
    debug_assert!(grid.is_uniform());
    scratch.begin(grid.padded_len());
    let goal = grid.pidx(query.goal);
    let run = Run {
        start: grid.pidx(query.start) as u32,
        goal: goal as u32,
        weight: 1.0,
        heuristic: Heuristic::new(grid, query.goal),
        limits: &query.limits,
        track_closest: query.partial,
        debug_cap: query.debug_cap,
    };
    let mut expander = JpsExpander::new(grid, goal);
    let outcome = best_first(grid, scratch, &mut expander, &run);
    crate::planner::finish_shaped(
        grid,
        scratch,
        outcome,
        query,
        Algorithm::Jps,
        |g, chain, _| {
            let jumps: Vec<Point> = chain.iter().map(|&n| g.ppoint(n as usize)).collect();
            let (path, cost) = fill(g, &jumps);
            crate::planner::Shaped {
                path,
                cost,
                waypoints: Some(jumps),
                smoothed_length: None,
            }
        },
    )
}

/// Expands the straight and diagonal runs between consecutive jump points into the full cell
/// path, and sums its step costs in order (so the cost is exactly what [`Grid::path_cost`]
/// computes for it).
pub(crate) fn fill(grid: &Grid, jumps: &[Point]) -> (Vec<Point>, f64) {
    let mut path = Vec::with_capacity(jumps.len() * 4);
    let mut cost = 0.0;
    let Some(&first) = jumps.first() else {
        return (path, cost);
    };
    path.push(first);
    for w in jumps.windows(2) {
        let (a, b) = (w[0], w[1]);
        let sx = (b.x as i64 - a.x as i64).signum();
        let sy = (b.y as i64 - a.y as i64).signum();
        let steps = a.x.abs_diff(b.x).max(a.y.abs_diff(b.y));
        debug_assert!(
            a.x.abs_diff(b.x) == 0
                || a.y.abs_diff(b.y) == 0
                || a.x.abs_diff(b.x) == a.y.abs_diff(b.y)
        );
        let mut cur = a;
        for _ in 0..steps {
            let next = Point::new((cur.x as i64 + sx) as u32, (cur.y as i64 + sy) as u32);
            cost += grid.step_cost(cur, next).unwrap_or(f64::NAN);
            path.push(next);
            cur = next;
        }
    }
    (path, cost)
}

/// The JPS expansion policy.
pub(crate) struct JpsExpander {
    pw: usize,
    goal: usize,
    octile: bool,
    heuristic: Heuristic,
}

impl JpsExpander {
    pub(crate) fn new(grid: &Grid, goal: usize) -> Self {
        JpsExpander {
            pw: grid.padded_width(),
            goal,
            octile: grid.movement() == Movement::Octile,
            heuristic: Heuristic::new(grid, grid.ppoint(goal)),
        }
    }

    /// Jumps from `n` in direction `(dx, dy)`; returns the jump point and the number of
    /// steps (a straight run or a diagonal run of that many cells).
    #[inline]
    fn jump(&self, cells: &[u8], n: usize, dx: isize, dy: isize) -> Option<(usize, u32)> {
        let pw = self.pw;
        match (dx, dy, self.octile) {
            (_, 0, _) => scan_row(cells, pw, n, dx, self.goal),
            (0, _, true) => scan_col(cells, pw, n, dy, self.goal),
            (0, _, false) => self.jump_col_cardinal(cells, n, dy),
            _ => self.jump_diag(cells, n, dx, dy),
        }
        .map(|j| {
            // Every step of the run moves the index by the same stride.
            let stride = (dx + dy * pw as isize).unsigned_abs();
            (j, (j.abs_diff(n) / stride) as u32)
        })
    }

    /// Diagonal run: stops at the goal or where a straight arm finds a jump point; fails where
    /// the next diagonal step is illegal.
    fn jump_diag(&self, cells: &[u8], n: usize, dx: isize, dy: isize) -> Option<usize> {
        let vy = dy * self.pw as isize;
        let mut c = n;
        loop {
            let side_x = c.wrapping_add_signed(dx);
            let side_y = c.wrapping_add_signed(vy);
            if cells[side_x] == 0 || cells[side_y] == 0 {
                return None;
            }
            c = side_x.wrapping_add_signed(vy);
            if cells[c] == 0 {
                return None;
            }
            if c == self.goal
                || scan_row(cells, self.pw, c, dx, self.goal).is_some()
                || scan_col(cells, self.pw, c, dy, self.goal).is_some()
            {
                return Some(c);
            }
        }
    }

    /// Cardinal maps: a vertical run spawning both horizontal arms at every cell.
    fn jump_col_cardinal(&self, cells: &[u8], n: usize, dy: isize) -> Option<usize> {
        let vy = dy * self.pw as isize;
        let mut c = n;
        loop {
            c = c.wrapping_add_signed(vy);
            if cells[c] == 0 {
                return None;
            }
            if c == self.goal
                || scan_row(cells, self.pw, c, 1, self.goal).is_some()
                || scan_row(cells, self.pw, c, -1, self.goal).is_some()
            {
                return Some(c);
            }
        }
    }

    fn push(&self, cells: &[u8], n: usize, g: f64, dir: (isize, isize), out: &mut Vec<Succ>) {
        if let Some((j, steps)) = self.jump(cells, n, dir.0, dir.1) {
            let len = if dir.0 != 0 && dir.1 != 0 {
                steps as f64 * SQRT2
            } else {
                steps as f64
            };
            out.push(Succ {
                node: j as u32,
                g: g + len,
                parent: n as u32,
            });
        }
    }
}

/// The eight directions in the grid's documented order (N, E, S, W, NE, SE, SW, NW).
const DIRS8: [(isize, isize); 8] = [
    (0, -1),
    (1, 0),
    (0, 1),
    (-1, 0),
    (1, -1),
    (1, 1),
    (-1, 1),
    (-1, -1),
];

impl Expander for JpsExpander {
    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        let cells = grid.cells();
        let n = node as usize;
        let pw = self.pw;
        let Some((p, _)) = parent else {
            // The start: every direction.
            let dirs = if self.octile { &DIRS8[..] } else { &DIRS8[..4] };
            for &d in dirs {
                self.push(cells, n, g, d, out);
            }
            return;
        };
        let (nx, ny) = self.heuristic.coords(node);
        let (px, py) = self.heuristic.coords(p);
        let dx = (nx as isize - px as isize).signum();
        let dy = (ny as isize - py as isize).signum();
        if dx != 0 && dy != 0 {
            // Diagonal (octile only): straight components first, then onwards.
            self.push(cells, n, g, (dx, 0), out);
            self.push(cells, n, g, (0, dy), out);
            self.push(cells, n, g, (dx, dy), out);
            return;
        }
        if !self.octile && dy != 0 {
            // Cardinal vertical: onwards and both horizontal arms.
            self.push(cells, n, g, (0, dy), out);
            self.push(cells, n, g, (1, 0), out);
            self.push(cells, n, g, (-1, 0), out);
            return;
        }
        // Straight move: onwards, plus each side that is forced (blocked beside the previous
        // cell, open beside this one).
        self.push(cells, n, g, (dx, dy), out);
        let back = -(dx + dy * pw as isize);
        let prev = n.wrapping_add_signed(back);
        let sides: [(isize, isize); 2] = if dy == 0 {
            [(0, -1), (0, 1)]
        } else {
            [(-1, 0), (1, 0)]
        };
        for (sx, sy) in sides {
            let off = sx + sy * pw as isize;
            if cells[prev.wrapping_add_signed(off)] == 0 && cells[n.wrapping_add_signed(off)] != 0 {
                self.push(cells, n, g, (sx, sy), out);
                if self.octile {
                    self.push(cells, n, g, (dx + sx, dy + sy), out);
                }
            }
        }
    }
}

/// 0x80 in every byte lane of `x` that is non-zero (exact per lane: no carries between lanes).
#[inline(always)]
fn nonzero_lanes(x: u64) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    (((x & LO7) + LO7) | x) & !LO7
}

#[inline(always)]
fn load8(cells: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(cells[i..i + 8].try_into().unwrap())
}

/// Scans a row from `n` (exclusive) in direction `dx` (+1 east, -1 west) for the first jump
/// point: the goal, or a cell with a forced neighbour (the cell beside the previous one
/// blocked, the same side of this one open). `None` when a wall comes first.
#[inline]
fn scan_row(cells: &[u8], pw: usize, n: usize, dx: isize, goal: usize) -> Option<usize> {
    const HI: u64 = 0x8080_8080_8080_8080;
    if dx > 0 {
        let mut c = n + 1;
        // Eight cells [c, c + 8) per round while all five rows of loads stay in the array.
        while c + pw + 8 <= cells.len() {
            let cur = nonzero_lanes(load8(cells, c));
            let up = nonzero_lanes(load8(cells, c - pw));
            let up_prev = nonzero_lanes(load8(cells, c - pw - 1));
            let dn = nonzero_lanes(load8(cells, c + pw));
            let dn_prev = nonzero_lanes(load8(cells, c + pw - 1));
            let blocked = !cur & HI;
            let forced = (up & !up_prev) | (dn & !dn_prev);
            let mut stop = blocked | forced;
            if goal.wrapping_sub(c) < 8 {
                stop |= 0x80 << (8 * (goal - c));
            }
            if stop != 0 {
                let lane = stop.trailing_zeros() as usize / 8;
                return (blocked >> (8 * lane) & 0x80 == 0).then_some(c + lane);
            }
            c += 8;
        }
        scan_row_slow(cells, pw, c - 1, 1, goal)
    } else {
        let mut c = n - 1;
        // Eight cells [c - 7, c] per round.
        while c >= pw + 8 && c + pw + 2 <= cells.len() {
            let base = c - 7;
            let cur = nonzero_lanes(load8(cells, base));
            let up = nonzero_lanes(load8(cells, base - pw));
            let up_prev = nonzero_lanes(load8(cells, base - pw + 1));
            let dn = nonzero_lanes(load8(cells, base + pw));
            let dn_prev = nonzero_lanes(load8(cells, base + pw + 1));
            let blocked = !cur & HI;
            let forced = (up & !up_prev) | (dn & !dn_prev);
            let mut stop = blocked | forced;
            if c.wrapping_sub(goal) < 8 {
                stop |= 0x80 << (8 * (goal - base));
            }
            if stop != 0 {
                let lane = 7 - stop.leading_zeros() as usize / 8;
                return (blocked >> (8 * lane) & 0x80 == 0).then_some(base + lane);
            }
            c -= 8;
        }
        scan_row_slow(cells, pw, c + 1, -1, goal)
    }
}

/// Cell-by-cell version of [`scan_row`] (near the ends of the array).
fn scan_row_slow(cells: &[u8], pw: usize, n: usize, dx: isize, goal: usize) -> Option<usize> {
    let mut prev = n;
    loop {
        let c = prev.wrapping_add_signed(dx);
        if cells[c] == 0 {
            return None;
        }
        let forced = (cells[prev - pw] == 0 && cells[c - pw] != 0)
            || (cells[prev + pw] == 0 && cells[c + pw] != 0);
        if c == goal || forced {
            return Some(c);
        }
        prev = c;
    }
}

/// Scans a column from `n` (exclusive) in direction `dy` (octile straight move): the goal, or
/// a cell whose left or right side opens after being blocked beside the previous cell.
#[inline]
fn scan_col(cells: &[u8], pw: usize, n: usize, dy: isize, goal: usize) -> Option<usize> {
    let step = dy * pw as isize;
    let mut left = cells[n - 1] != 0;
    let mut right = cells[n + 1] != 0;
    let mut c = n;
    loop {
        c = c.wrapping_add_signed(step);
        let row: [u8; 3] = cells[c - 1..c + 2].try_into().unwrap();
        if row[1] == 0 {
            return None;
        }
        let (l, r) = (row[0] != 0, row[2] != 0);
        if c == goal || (l && !left) || (r && !right) {
            return Some(c);
        }
        left = l;
        right = r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(rows: &[&str]) -> Grid {
        let w = rows[0].len() as u32;
        let costs = rows
            .iter()
            .flat_map(|r| r.bytes().map(|b| u8::from(b != b'@')))
            .collect();
        Grid::from_costs(w, rows.len() as u32, costs, Movement::Octile).unwrap()
    }

    #[test]
    fn row_scan_matches_the_slow_scan_everywhere() {
        // A 40-wide map with scattered walls: every cell, both directions, every goal column.
        let rows = [
            "..........@..........@.......@..........",
            "....@..........@...........@.......@....",
            "........................................",
            "..@.........@.....@.............@.......",
            "........@...........@.....@.............",
        ];
        let g = grid(&rows);
        let cells = g.cells();
        let pw = g.padded_width();
        for y in 0..5 {
            for x in 0..40 {
                let n = g.pidx(Point::new(x, y));
                if cells[n] == 0 {
                    continue;
                }
                for goal_x in [0, 7, 20, 39] {
                    let goal = g.pidx(Point::new(goal_x, y));
                    for dx in [1, -1] {
                        assert_eq!(
                            scan_row(cells, pw, n, dx, goal),
                            scan_row_slow(cells, pw, n, dx, goal),
                            "({x}, {y}) dx {dx} goal {goal_x}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn forced_neighbour_without_corner_cutting() {
        // Moving east along row 1 from (0,1): (1,0) is a wall, (2,0) open, so (2,1) is a jump
        // point (the open cell above can only be reached through it).
        let g = grid(&[".@...", ".....", "....."]);
        let cells = g.cells();
        let n = g.pidx(Point::new(0, 1));
        let far = g.pidx(Point::new(4, 2));
        let j = scan_row(cells, g.padded_width(), n, 1, far);
        assert_eq!(j, Some(g.pidx(Point::new(2, 1))));
    }

    #[test]
    fn fill_walks_runs() {
        let g = grid(&["....", "....", "...."]);
        let (path, cost) = fill(&g, &[Point::new(0, 0), Point::new(2, 2), Point::new(3, 2)]);
        assert_eq!(path.len(), 4);
        assert_eq!(g.path_cost(&path), Some(cost));
    }
}
