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
//! The goal is a jump point wherever a scan passes it. Straight scans test 64 cells at a time
//! on bit planes of the map ([`Planes`]: one bit per cell, by rows and by columns), in the
//! manner of Harabor & Grastien's block-based JPS (2014): the blocked cells, and the forced
//! cells found from the two lines beside, are a few shifts and masks per word.
//!
//! Diagonal jump points are never put on the open list (the intermediate-node pruning of
//! Harabor & Grastien's JPS2, 2014): a diagonal move scans its whole ray at once (see
//! [`JpsExpander::diagonal_ray`]), and the jump points the arms of every diagonal jump point on
//! it find hang off the ray's origin by diagonal-then-straight edges. Only straight jump points
//! (and the start) are expanded: about half as many nodes as classic JPS on rooms and city
//! maps. The answer's waypoints get the corners back, so they are the classic jump points,
//! joined by straight or diagonal runs.
//!
//! Why it is optimal: every jump edge is a straight or diagonal run, or a diagonal run then a
//! straight one, whose cost is its octile distance, the heuristic is consistent on those edges, and the canonical paths through jump
//! points include an optimal path to every cell (the forced rules above are exactly where an
//! obstacle breaks a canonical path). The tests check it against A* on every Moving AI map and
//! against a reference Dijkstra on random maps.
//!
//! Counters and limits are in jump points: `expanded`, `max_expansions` and the debug list
//! of expanded cells count the jump points taken off the open list, not the cells scanned.
//!
//! JPS needs no precomputation beyond the bit planes (a quarter byte a cell, built from a
//! grid in one pass); [`super::jps_plus`] trades 16 bytes a cell of jump table for lookups
//! instead of scans, and keeps that table current under patches. Each grid
//! keeps its planes; a patched grid derives its own from its predecessor's by rewriting the
//! changed cells' bits ([`Planes::derive`]). JPS reads only the planes (never the cost
//! array), so its first query after a patch costs only that derivation.

use crate::grid::planes::{MARGIN, Plane, Planes};
use crate::grid::{Grid, Movement, Point, SQRT2};
use crate::query::{Algorithm, Query, SearchResult};
use crate::search::{Expander, Heuristic, Run, Scratch, Succ, best_first};

/// Runs JPS over `planes` (built from this grid). The grid must be uniform (the planner
/// checks).
pub(crate) fn search(
    grid: &Grid,
    planes: &Planes,
    scratch: &mut Scratch,
    query: &Query,
) -> SearchResult {
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
    let mut expander = JpsExpander::new(grid, planes, goal);
    let outcome = best_first(grid, scratch, &mut expander, &run);
    crate::search::finish_shaped(
        grid,
        scratch,
        outcome,
        query,
        Algorithm::Jps,
        |g, chain, _| {
            let jumps = with_corners(chain.iter().map(|&n| g.ppoint(n as usize)));
            let (path, cost) = fill(planes, &jumps);
            crate::search::Shaped {
                path,
                cost,
                waypoints: Some(jumps),
                smoothed_length: None,
            }
        },
    )
}

/// The jump points of a chain of search nodes: each diagonal-then-straight edge (see
/// [`JpsExpander`]) gets back the diagonal jump point at its corner, so consecutive points are
/// joined by straight or diagonal runs, as in classic JPS.
pub(crate) fn with_corners(nodes: impl Iterator<Item = Point>) -> Vec<Point> {
    // At most one corner between two nodes.
    let mut out: Vec<Point> = Vec::with_capacity((2 * nodes.size_hint().0).saturating_sub(1));
    for b in nodes {
        if let Some(&a) = out.last() {
            let (ax, ay) = (a.x.abs_diff(b.x), a.y.abs_diff(b.y));
            if ax != 0 && ay != 0 && ax != ay {
                let k = ax.min(ay);
                let step = |from: u32, to: u32| if to > from { from + k } else { from - k };
                out.push(Point::new(step(a.x, b.x), step(a.y, b.y)));
            }
        }
        out.push(b);
    }
    out
}

/// Expands the straight and diagonal runs between consecutive jump points into the full cell
/// path, and sums its step costs in order. The map is uniform, so a legal step costs exactly
/// 1 or sqrt 2, which is what [`Grid::path_cost`] computes for it; legality is read from the
/// planes (an illegal step, which JPS never produces, makes the cost NaN).
///
/// The path is allocated once at its exact length, and each run's legality is read a line
/// at a time from the planes ([`Planes::run_open`]) instead of four cell lookups a step:
/// path building had cost more than the search on long paths. The cost is still the sum of
/// every step's cost in path order (the same bits as adding them one by one).
pub(crate) fn fill(planes: &Planes, jumps: &[Point]) -> (Vec<Point>, f64) {
    let steps: usize = jumps
        .windows(2)
        .map(|w| w[0].x.abs_diff(w[1].x).max(w[0].y.abs_diff(w[1].y)) as usize)
        .sum();
    let mut path = Vec::with_capacity(jumps.len().min(1) + steps);
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
        if steps == 0 {
            continue;
        }
        let straight = sx == 0 || sy == 0;
        if !planes.run_open(a, b) {
            cost = fill_steps(planes, &mut path, cost, a, (sx, sy), steps);
            continue;
        }
        let step_cost = if straight { 1.0 } else { SQRT2 };
        // Every step legal: the cells of the run, and its steps' costs added one by one.
        let (dx, dy) = (sx as i32, sy as i32);
        let mut cur = a;
        path.extend((0..steps).map(|_| {
            cur = Point::new(cur.x.wrapping_add_signed(dx), cur.y.wrapping_add_signed(dy));
            cur
        }));
        for _ in 0..steps {
            cost += step_cost;
        }
    }
    (path, cost)
}

/// [`fill`] for a run with an illegal step: step by step from `a` (`steps` steps in
/// direction `(sx, sy)`), each step's legality read cell by cell, the first illegal one
/// making the cost NaN. Returns the cost so far.
fn fill_steps(
    planes: &Planes,
    path: &mut Vec<Point>,
    mut cost: f64,
    a: Point,
    (sx, sy): (i64, i64),
    steps: u32,
) -> f64 {
    let mut cur = a;
    for _ in 0..steps {
        let next = Point::new((cur.x as i64 + sx) as u32, (cur.y as i64 + sy) as u32);
        // Padded coordinates of `cur` and `next`.
        let (cx, cy) = (cur.x as usize + 1, cur.y as usize + 1);
        let (nx, ny) = (next.x as usize + 1, next.y as usize + 1);
        let legal = planes.open(cx, cy)
            && planes.open(nx, ny)
            && (sx == 0 || sy == 0 || (planes.open(nx, cy) && planes.open(cx, ny)));
        cost += match (legal, sx != 0 && sy != 0) {
            (false, _) => f64::NAN,
            (true, true) => SQRT2,
            (true, false) => 1.0,
        };
        path.push(next);
        cur = next;
    }
    cost
}

/// "The goal is not on this line".
const NO_GOAL: usize = usize::MAX / 2;

/// The jump-point scans over the grid's planes.
impl Planes {
    /// First jump point east (`dx` 1) or west (-1) of padded `(x, y)`, as its x.
    #[inline]
    fn scan_row(&self, x: usize, y: usize, dx: isize, goal: (usize, usize)) -> Option<usize> {
        let g = if goal.1 == y {
            goal.0 + MARGIN
        } else {
            NO_GOAL
        };
        scan(&self.rows, y, x + MARGIN, dx, g).map(|p| p - MARGIN)
    }

    /// First jump point south (`dy` 1) or north (-1) of padded `(x, y)`, as its y.
    #[inline]
    fn scan_col(&self, x: usize, y: usize, dy: isize, goal: (usize, usize)) -> Option<usize> {
        let g = if goal.0 == x {
            goal.1 + MARGIN
        } else {
            NO_GOAL
        };
        scan(&self.cols, x, y + MARGIN, dy, g).map(|p| p - MARGIN)
    }
}

/// 64 bits of `line` starting at bit `64 * w + o`, and the bit just below them.
#[inline(always)]
fn window(line: &[u64], w: usize, o: usize) -> (u64, u64) {
    let [lo, hi]: [u64; 2] = line[w..w + 2].try_into().unwrap();
    // `(hi << 1) << (63 - o)` is `hi << (64 - o)`, and 0 when `o` is 0.
    let bits = (lo >> o) | (hi << 1) << (63 - o);
    let below = if o > 0 {
        lo >> (o - 1) & 1
    } else {
        line[w - 1] >> 63
    };
    (bits, below)
}

/// 64 bits of `line` starting at bit `64 * w + o`, and the bit just above them.
#[inline(always)]
fn window_up(line: &[u64], w: usize, o: usize) -> (u64, u64) {
    let [lo, hi]: [u64; 2] = line[w..w + 2].try_into().unwrap();
    let bits = (lo >> o) | (hi << 1) << (63 - o);
    (bits, hi >> o & 1)
}

/// Scans line `l` of a plane from position `pos` (exclusive) in direction `dir`: the first
/// position that is the goal or has a forced neighbour (a side open where it was blocked beside
/// the previous position), or `None` when a blocked position comes first. `l` must have lines
/// on both sides (true for every interior cell).
#[inline]
fn scan(plane: &Plane, l: usize, pos: usize, dir: isize, goal: usize) -> Option<usize> {
    let (a, cur, b) = plane.lines3(l);
    if dir > 0 {
        let mut s = pos + 1;
        loop {
            let (w, o) = (s / 64, s % 64);
            let (open, _) = window(cur, w, o);
            // Bit k of `prev` is the side cell beside position s + k - 1.
            let (wa, ba) = window(a, w, o);
            let (wb, bb) = window(b, w, o);
            let forced = (wa & !(wa << 1 | ba)) | (wb & !(wb << 1 | bb));
            let mut stop = !open | forced;
            if goal.wrapping_sub(s) < 64 {
                stop |= 1 << (goal - s);
            }
            if stop != 0 {
                let k = stop.trailing_zeros() as usize;
                return (open >> k & 1 == 1).then_some(s + k);
            }
            s += 64;
        }
    } else {
        // Window [s, s + 63] ends at the cell before `pos`; the previous cell is one higher.
        let mut s = pos - 64;
        loop {
            let (w, o) = (s / 64, s % 64);
            let (open, _) = window_up(cur, w, o);
            let (wa, ta) = window_up(a, w, o);
            let (wb, tb) = window_up(b, w, o);
            let forced = (wa & !(wa >> 1 | ta << 63)) | (wb & !(wb >> 1 | tb << 63));
            let mut stop = !open | forced;
            if (s + 63).wrapping_sub(goal) < 64 {
                stop |= 1 << (goal - s);
            }
            if stop != 0 {
                let k = 63 - stop.leading_zeros() as usize;
                return (open >> k & 1 == 1).then_some(s + k);
            }
            s -= 64;
        }
    }
}

/// The JPS expansion policy.
pub(crate) struct JpsExpander<'p> {
    planes: &'p Planes,
    pw: usize,
    /// Padded goal coordinates.
    goal: (usize, usize),
    octile: bool,
}

impl<'p> JpsExpander<'p> {
    pub(crate) fn new(grid: &Grid, planes: &'p Planes, goal: usize) -> Self {
        let pw = grid.padded_width();
        debug_assert_eq!(planes.pw, pw);
        JpsExpander {
            planes,
            pw,
            goal: (goal % pw, goal / pw),
            octile: grid.movement() == Movement::Octile,
        }
    }

    /// Jumps from padded `(x, y)` in straight direction `(dx, dy)`; returns the jump point and
    /// the number of steps to it.
    #[inline]
    fn jump(&self, x: usize, y: usize, dx: isize, dy: isize) -> Option<(usize, usize, u32)> {
        let p = self.planes;
        match (dx, dy, self.octile) {
            (_, 0, _) => p
                .scan_row(x, y, dx, self.goal)
                .map(|jx| (jx, y, jx.abs_diff(x) as u32)),
            (0, _, true) => p
                .scan_col(x, y, dy, self.goal)
                .map(|jy| (x, jy, jy.abs_diff(y) as u32)),
            (0, _, false) => self
                .jump_col_cardinal(x, y, dy)
                .map(|jy| (x, jy, jy.abs_diff(y) as u32)),
            _ => unreachable!("diagonal moves go through diagonal_ray"),
        }
    }

    /// The whole diagonal ray from padded `n` (reached with cost `g`) in direction
    /// `(dx, dy)`, octile maps: at every diagonal jump point `d` on it (a diagonal cell where a
    /// straight arm finds a jump point), the jump points the two arms of `d` find are pushed
    /// as successors of `n` (diagonal-then-straight edges), and the ray goes on. It ends where
    /// the next diagonal step is illegal or at the goal (pushed itself).
    ///
    /// Why: classic JPS pushes `d` and, when `d` is popped, scans the same arms again and
    /// goes on along the ray. `d` has no forced neighbours (module docs), so its successors
    /// are exactly those arm jump points and the rest of the ray: generating them right away,
    /// at their exact costs (`k` diagonal steps then `m` straight ones cost `k sqrt2 + m`,
    /// their octile distance, so the heuristic stays consistent on these edges), saves the
    /// second scan and a heap push and pop per diagonal jump point (JPS2's pruning of
    /// intermediate nodes). Any path through `d` from elsewhere is still found: it is a ray
    /// through `d` in the same direction, from an origin whose own ray covers it (a path
    /// reaching `d` from another direction never went on along this ray). Measured against
    /// pushing `d` and going on when it is popped: expansions 800 -> 363 on `16room_000`,
    /// 97 -> 68 on `arena2`, 496 -> 232 on `Berlin_1_1024` (warthog's jps2: 362, 67, 229),
    /// JPS+ about twice as fast on all three; JPS with scans gains less (a ray's far end is
    /// scanned even when the search never needs it).
    fn diagonal_ray(&self, n: usize, g: f64, (dx, dy): (isize, isize), out: &mut Vec<Succ>) {
        let p = self.planes;
        let (mut x, mut y) = (n % self.pw, n / self.pw);
        let mut k = 0u32;
        loop {
            let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
            if !p.open(nx, y) || !p.open(x, ny) || !p.open(nx, ny) {
                return;
            }
            (x, y) = (nx, ny);
            k += 1;
            let diag = k as f64 * SQRT2;
            if (x, y) == self.goal {
                out.push(Succ {
                    node: (y * self.pw + x) as u32,
                    g: g + diag,
                    parent: n as u32,
                });
                return;
            }
            if let Some(jx) = p.scan_row(x, y, dx, self.goal) {
                out.push(Succ {
                    node: (y * self.pw + jx) as u32,
                    g: g + (diag + jx.abs_diff(x) as f64),
                    parent: n as u32,
                });
            }
            if let Some(jy) = p.scan_col(x, y, dy, self.goal) {
                out.push(Succ {
                    node: (jy * self.pw + x) as u32,
                    g: g + (diag + jy.abs_diff(y) as f64),
                    parent: n as u32,
                });
            }
        }
    }

    /// Cardinal maps: a vertical run spawning both horizontal arms at every cell.
    fn jump_col_cardinal(&self, x: usize, y: usize, dy: isize) -> Option<usize> {
        let mut y = y;
        loop {
            y = y.wrapping_add_signed(dy);
            if !self.planes.open(x, y) {
                return None;
            }
            if (x, y) == self.goal
                || self.planes.scan_row(x, y, 1, self.goal).is_some()
                || self.planes.scan_row(x, y, -1, self.goal).is_some()
            {
                return Some(y);
            }
        }
    }

    /// Pushes the successors of `n` in direction `dir`: the next jump point of a straight
    /// move, or everything a diagonal ray finds ([`JpsExpander::diagonal_ray`]).
    #[inline]
    fn push(&self, n: usize, g: f64, dir: (isize, isize), out: &mut Vec<Succ>) {
        if dir.0 != 0 && dir.1 != 0 {
            self.diagonal_ray(n, g, dir, out);
            return;
        }
        let (x, y) = (n % self.pw, n / self.pw);
        if let Some((jx, jy, steps)) = self.jump(x, y, dir.0, dir.1) {
            out.push(Succ {
                node: (jy * self.pw + jx) as u32,
                g: g + steps as f64,
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

impl Expander for JpsExpander<'_> {
    const PARENT_G: bool = false;

    fn successors(
        &mut self,
        _grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        let n = node as usize;
        let pw = self.pw;
        let Some((p, _)) = parent else {
            // The start: every direction.
            let dirs = if self.octile { &DIRS8[..] } else { &DIRS8[..4] };
            for &d in dirs {
                self.push(n, g, d, out);
            }
            return;
        };
        let (nx, ny) = (n % pw, n / pw);
        let (px, py) = (p as usize % pw, p as usize / pw);
        let (ax, ay) = (nx.abs_diff(px), ny.abs_diff(py));
        let mut dx = (nx as isize - px as isize).signum();
        let mut dy = (ny as isize - py as isize).signum();
        if ax == ay {
            // Only the goal ends a pure diagonal edge (rays push no other diagonal cell), and
            // the goal is never expanded; going on along the ray would be right anyway.
            self.diagonal_ray(n, g, (dx, dy), out);
            return;
        }
        // A diagonal-then-straight edge arrives by its straight part, along the longer axis.
        if ax > ay {
            dy = 0;
        } else if ay > ax {
            dx = 0;
        }
        if !self.octile && dy != 0 {
            // Cardinal vertical: onwards and both horizontal arms.
            self.push(n, g, (0, dy), out);
            self.push(n, g, (1, 0), out);
            self.push(n, g, (-1, 0), out);
            return;
        }
        // Straight move: onwards, plus each side that is forced (blocked beside the previous
        // cell, open beside this one).
        self.push(n, g, (dx, dy), out);
        let sides: [(isize, isize); 2] = if dy == 0 {
            [(0, -1), (0, 1)]
        } else {
            [(-1, 0), (1, 0)]
        };
        let open = |x: usize, y: usize, (ox, oy): (isize, isize)| {
            self.planes
                .open(x.wrapping_add_signed(ox), y.wrapping_add_signed(oy))
        };
        for (sx, sy) in sides {
            // The cell just before `n` along the move (not the parent, which may be far).
            let (bx, by) = (nx.wrapping_add_signed(-dx), ny.wrapping_add_signed(-dy));
            if !open(bx, by, (sx, sy)) && open(nx, ny, (sx, sy)) {
                self.push(n, g, (sx, sy), out);
                if self.octile {
                    self.push(n, g, (dx + sx, dy + sy), out);
                }
            }
        }
    }
}

/// Cell-by-cell reference scan along a row (tests only): the first jump point from `n`
/// (exclusive) in direction `dx`.
#[cfg(test)]
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

/// Cell-by-cell reference scan along a column (tests only).
#[cfg(test)]
fn scan_col_slow(cells: &[u8], pw: usize, n: usize, dy: isize, goal: usize) -> Option<usize> {
    let step = dy * pw as isize;
    let mut prev = n;
    loop {
        let c = prev.wrapping_add_signed(step);
        if cells[c] == 0 {
            return None;
        }
        let forced = (cells[prev - 1] == 0 && cells[c - 1] != 0)
            || (cells[prev + 1] == 0 && cells[c + 1] != 0);
        if c == goal || forced {
            return Some(c);
        }
        prev = c;
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
    fn plane_scans_match_the_slow_scans_everywhere() {
        // 150 wide (lines span several words) with scattered walls; every open cell, all four
        // directions, goals on and off the line.
        let mut x = 99u64;
        let rows: Vec<String> = (0..70)
            .map(|_| {
                (0..150)
                    .map(|_| {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        if (x >> 33) % 9 == 0 { '@' } else { '.' }
                    })
                    .collect()
            })
            .collect();
        let g = grid(&rows.iter().map(String::as_str).collect::<Vec<_>>());
        let planes = Planes::new(&g);
        let cells = &*g.cells();
        let pw = g.padded_width();
        for y in 0..70 {
            for x in 0..150 {
                let n = g.pidx(Point::new(x, y));
                if cells[n] == 0 {
                    continue;
                }
                let (px, py) = (n % pw, n / pw);
                for goal in [
                    Point::new(3, y),
                    Point::new(149, y),
                    Point::new(x, 0),
                    Point::new(x, 69),
                    Point::new(77, 33),
                ] {
                    let gi = g.pidx(goal);
                    let gp = (gi % pw, gi / pw);
                    for d in [1, -1] {
                        let want = scan_row_slow(cells, pw, n, d, gi).map(|j| j % pw);
                        assert_eq!(
                            planes.scan_row(px, py, d, gp),
                            want,
                            "row ({x}, {y}) {d} {goal}"
                        );
                        let want = scan_col_slow(cells, pw, n, d, gi).map(|j| j / pw);
                        assert_eq!(
                            planes.scan_col(px, py, d, gp),
                            want,
                            "col ({x}, {y}) {d} {goal}"
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
        let planes = Planes::new(&g);
        let n = g.pidx(Point::new(0, 1));
        let pw = g.padded_width();
        let far = g.pidx(Point::new(4, 2));
        let j = planes.scan_row(n % pw, n / pw, 1, (far % pw, far / pw));
        assert_eq!(j, Some(3)); // padded x of column 2
    }

    /// [`fill`] as it was written first: step by step, four cell lookups a step.
    fn fill_by_steps(planes: &Planes, jumps: &[Point]) -> (Vec<Point>, f64) {
        let mut path = Vec::new();
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
            cost = fill_steps(planes, &mut path, cost, a, (sx, sy), steps);
        }
        (path, cost)
    }

    #[test]
    fn fill_by_runs_is_fill_by_steps() {
        // 150 x 90 (lines of several words) with scattered walls: chains of random straight
        // and diagonal runs, legal or not, from every kind of start; the same cells and the
        // same cost bits (NaN where a step is illegal) as step by step.
        let mut x = 7u64;
        let mut next = move |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let (w, h) = (150u32, 90u32);
        for density in [0, 30, 9] {
            let rows: Vec<String> = (0..h)
                .map(|_| {
                    (0..w)
                        .map(|_| {
                            if density > 0 && next(density) == 0 {
                                '@'
                            } else {
                                '.'
                            }
                        })
                        .collect()
                })
                .collect();
            let g = grid(&rows.iter().map(String::as_str).collect::<Vec<_>>());
            let planes = Planes::new(&g);
            let (mut legal, mut illegal) = (0, 0);
            for _ in 0..3000 {
                let mut p = Point::new(next(w.into()) as u32, next(h.into()) as u32);
                let mut jumps = vec![p];
                for _ in 0..next(6) {
                    // A direction, then as many steps as stay on the map (0 included).
                    let (dx, dy) = match next(8) {
                        0 => (1, 0),
                        1 => (-1, 0),
                        2 => (0, 1),
                        3 => (0, -1),
                        4 => (1, 1),
                        5 => (1, -1),
                        6 => (-1, 1),
                        _ => (-1, -1),
                    };
                    let room = |v: u32, d: i64, size: u32| match d {
                        1 => size - 1 - v,
                        -1 => v,
                        _ => u32::MAX,
                    };
                    let most = room(p.x, dx, w).min(room(p.y, dy, h));
                    let k = i64::from(next(u64::from(most.min(140)) + 1) as u32);
                    p = Point::new((p.x as i64 + k * dx) as u32, (p.y as i64 + k * dy) as u32);
                    jumps.push(p);
                }
                let (path, cost) = fill(&planes, &jumps);
                let (want, want_cost) = fill_by_steps(&planes, &jumps);
                assert_eq!(path, want, "{jumps:?}");
                assert_eq!(path.capacity(), path.len(), "sized exactly");
                if want_cost.is_nan() {
                    assert!(cost.is_nan(), "{jumps:?}");
                    illegal += 1;
                } else {
                    assert_eq!(cost.to_bits(), want_cost.to_bits(), "{jumps:?}");
                    // (A chain of no steps may start on a wall: no step to make illegal.)
                    if g.is_passable(path[0]) {
                        assert_eq!(g.path_cost(&path), Some(cost), "{jumps:?}");
                    }
                    legal += 1;
                }
            }
            // Both kinds of chain were tried (on the open map every chain is legal).
            assert!(legal > 300, "{density}: {legal} legal");
            assert!(
                density == 0 || illegal > 300,
                "{density}: {illegal} illegal"
            );
        }
    }

    #[test]
    fn fill_walks_runs() {
        let g = grid(&["....", "....", "...."]);
        let planes = Planes::new(&g);
        let (path, cost) = fill(
            &planes,
            &[Point::new(0, 0), Point::new(2, 2), Point::new(3, 2)],
        );
        assert_eq!(path.len(), 4);
        assert_eq!(g.path_cost(&path), Some(cost));
    }
}
