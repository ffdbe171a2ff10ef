//! Line of sight and segment cost between cell centres, exactly consistent with the grid rule.
//!
//! A segment runs from the centre of one cell to the centre of another. Under
//! [`Movement::Octile`] it is *visible* when
//!
//! - every cell whose interior it crosses is passable, and
//! - wherever it passes exactly through a grid corner (a point shared by four cells), all four
//!   cells are passable: going through a corner is a diagonal step, and a diagonal step needs
//!   both side cells (no corner cutting, no squeezing between two diagonal walls).
//!
//! A segment between centres never runs along a grid line, so these two rules cover every way
//! it can touch a cell. A single grid step passes them exactly when [`Grid::step_cost`] allows
//! it.
//!
//! Under [`Movement::Cardinal`] a unit can only move along the axes, so only axis-parallel
//! segments over passable cells are visible (Theta* is not offered on cardinal maps; smoothing
//! there merges straight runs).
//!
//! **Segment cost**: the integral of the cell cost along the segment, i.e. each crossed cell's
//! cost times the length of the segment inside it. A straight step spends half its length in
//! each cell and a diagonal step half in each end cell and none in the side cells, so a unit
//! step costs exactly what [`Grid::step_cost`] says, and on a map where every cell costs 1 the
//! cost is the Euclidean length. The traversal is exact integer arithmetic: the crossing
//! parameters of the segment with grid lines are rationals over `2 * |dx| * |dy|`.

use crate::grid::{Grid, Movement, Point};
use crate::query::{QueryError, check_in_bounds};

/// Walks the cells crossed by the segment from the centre of `a` to the centre of `b`, in
/// order, calling `visit(padded_index, weight)` for each one (`a` first, `b` last), where
/// `weight / denominator` is the fraction of the segment inside that cell. Returns the
/// denominator, or `None` as soon as the segment is not visible (cells already visited stay
/// visited). `a` and `b` must be on the map.
#[inline]
pub(crate) fn walk(
    grid: &Grid,
    cells: &[u8],
    a: Point,
    b: Point,
    visit: impl FnMut(usize, u64),
) -> Option<u64> {
    trace(grid, cells, a, b, visit).ok()
}

/// Why a segment is not visible ([`trace`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// The first blocked cell it touches, as a padded index.
    Cell(usize),
    /// Not axis-parallel on a cardinal map: refused as a whole, no cell blocks it.
    Axis,
}

/// [`walk`], saying where the segment is blocked: the first blocked cell along it from `a`
/// (`a` itself when it is blocked). Through a grid corner the two side cells are touched at
/// the same point of the segment; the one beside it along x (the horizontal neighbour of
/// the cell it leaves) counts as first.
#[inline]
pub(crate) fn trace(
    grid: &Grid,
    cells: &[u8],
    a: Point,
    b: Point,
    mut visit: impl FnMut(usize, u64),
) -> Result<u64, Blocked> {
    let pw = grid.padded_width() as isize;
    let (dx, dy) = (b.x as i64 - a.x as i64, b.y as i64 - a.y as i64);
    let (adx, ady) = (dx.unsigned_abs(), dy.unsigned_abs());
    if grid.movement() == Movement::Cardinal && adx != 0 && ady != 0 {
        return Err(Blocked::Axis);
    }
    let sx = dx.signum() as isize;
    let sy = dy.signum() as isize * pw;
    let mut cur = grid.pidx(a);
    if cells[cur] == 0 {
        return Err(Blocked::Cell(cur));
    }
    if adx == 0 && ady == 0 {
        visit(cur, 1);
        return Ok(1);
    }
    // Crossing i of a vertical grid line happens at t = (1 + 2i) * kx / den, crossing j of a
    // horizontal one at t = (1 + 2j) * ky / den; equal parameters are a corner.
    let kx = ady.max(1);
    let ky = adx.max(1);
    let den = if adx > 0 { 2 * adx * kx } else { 2 * ady * ky };
    let (mut i, mut j) = (0u64, 0u64);
    let mut t_prev = 0u64;
    while i < adx || j < ady {
        let tx = if i < adx { (1 + 2 * i) * kx } else { u64::MAX };
        let ty = if j < ady { (1 + 2 * j) * ky } else { u64::MAX };
        let t;
        if tx < ty {
            t = tx;
            visit(cur, t - t_prev);
            cur = cur.wrapping_add_signed(sx);
            i += 1;
        } else if ty < tx {
            t = ty;
            visit(cur, t - t_prev);
            cur = cur.wrapping_add_signed(sy);
            j += 1;
        } else {
            // Through a corner: both side cells must be open, as for a diagonal step.
            t = tx;
            for side in [cur.wrapping_add_signed(sx), cur.wrapping_add_signed(sy)] {
                if cells[side] == 0 {
                    return Err(Blocked::Cell(side));
                }
            }
            visit(cur, t - t_prev);
            cur = cur.wrapping_add_signed(sx + sy);
            i += 1;
            j += 1;
        }
        if cells[cur] == 0 {
            return Err(Blocked::Cell(cur));
        }
        t_prev = t;
    }
    visit(cur, den - t_prev);
    Ok(den)
}

/// What [`line_of_sight`] sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sight {
    /// True when the centre of the far cell is visible from the near one's.
    pub visible: bool,
    /// The first blocked cell along the segment (the near end itself when it is blocked);
    /// `None` when visible, or when the segment is refused as a whole (not axis-parallel on
    /// a cardinal map).
    pub blocked_at: Option<Point>,
}

/// Line of sight from the centre of `from` to the centre of `to` by the rule Theta* and
/// smoothing use (the module docs: no blocked cell's interior, all four cells open at a grid
/// corner it passes through), with the first blocked cell along the way.
///
/// Errors: a point off the map ([`QueryError::OutOfBounds`], `"start"` or `"goal"`).
///
/// ```
/// use pathd_engine::{line_of_sight, movingai, Point};
/// let grid = movingai::parse_map("type octile\nheight 3\nwidth 3\nmap\n...\n.@.\n...\n").unwrap();
/// let s = line_of_sight(&grid, Point::new(0, 0), Point::new(2, 2)).unwrap();
/// assert_eq!((s.visible, s.blocked_at), (false, Some(Point::new(1, 1))));
/// assert!(line_of_sight(&grid, Point::new(0, 0), Point::new(2, 0)).unwrap().visible);
/// ```
pub fn line_of_sight(grid: &Grid, from: Point, to: Point) -> Result<Sight, QueryError> {
    check_in_bounds(grid, "start", from)?;
    check_in_bounds(grid, "goal", to)?;
    Ok(match trace(grid, &grid.cells(), from, to, |_, _| {}) {
        Ok(_) => Sight {
            visible: true,
            blocked_at: None,
        },
        Err(Blocked::Cell(c)) => Sight {
            visible: false,
            blocked_at: Some(grid.ppoint(c)),
        },
        Err(Blocked::Axis) => Sight {
            visible: false,
            blocked_at: None,
        },
    })
}

/// True when `b`'s centre is visible from `a`'s (see the module docs).
#[inline]
pub(crate) fn visible(grid: &Grid, cells: &[u8], a: Point, b: Point) -> bool {
    walk(grid, cells, a, b, |_, _| {}).is_some()
}

/// Euclidean distance between two cell centres.
#[inline]
pub(crate) fn euclid(a: Point, b: Point) -> f64 {
    let dx = a.x.abs_diff(b.x) as f64;
    let dy = a.y.abs_diff(b.y) as f64;
    (dx * dx + dy * dy).sqrt()
}

/// Cost of the segment `a -> b` (see the module docs), or `None` when it is not visible.
#[inline]
pub(crate) fn segment_cost(grid: &Grid, cells: &[u8], a: Point, b: Point) -> Option<f64> {
    if grid.is_uniform() {
        return visible(grid, cells, a, b).then(|| euclid(a, b));
    }
    let mut weighted = 0u64;
    let den = walk(grid, cells, a, b, |c, w| weighted += cells[c] as u64 * w)?;
    // (length * sum) / den: for unit steps this evaluates exactly like `Grid::step_cost`.
    Some(euclid(a, b) * weighted as f64 / den as f64)
}

/// Appends the cells the visible segment `a -> b` crosses to `out`, without `a` itself. The
/// result continues a legal cell path: consecutive cells share a side, or a corner whose two
/// side cells are open. Returns false (and may have appended a prefix) if not visible.
pub(crate) fn append_cells(
    grid: &Grid,
    cells: &[u8],
    a: Point,
    b: Point,
    out: &mut Vec<Point>,
) -> bool {
    let start = grid.pidx(a);
    walk(grid, cells, a, b, |c, _| {
        if c != start {
            out.push(grid.ppoint(c));
        }
    })
    .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::SQRT2;

    fn grid(rows: &[&str], movement: Movement) -> Grid {
        let w = rows[0].len() as u32;
        let costs = rows
            .iter()
            .flat_map(|r| {
                r.bytes().map(|b| match b {
                    b'@' => 0,
                    b'.' => 1,
                    d => d - b'0',
                })
            })
            .collect();
        Grid::from_costs(w, rows.len() as u32, costs, movement).unwrap()
    }

    #[test]
    fn corners_follow_the_diagonal_rule() {
        let g = grid(&["..@", "...", "..."], Movement::Octile);
        let p = Point::new;
        assert!(visible(&g, &g.cells(), p(0, 0), p(2, 2)));
        // (0,2) -> (2,0): blocked end cell.
        assert!(!visible(&g, &g.cells(), p(0, 2), p(2, 0)));
        // (1,1) -> (2,0) passes the corner of the wall: a forbidden diagonal step.
        assert!(!visible(&g, &g.cells(), p(1, 1), p(2, 0)));
        // Slope 1/3 through the corner (2, 1) between (1,0) and (2,1): needs (2,0) open.
        let g = grid(&["..@.", "....", "...."], Movement::Octile);
        assert!(!visible(&g, &g.cells(), p(0, 0), p(3, 1)));
        let g = grid(&["....", "....", "...."], Movement::Octile);
        assert!(visible(&g, &g.cells(), p(0, 0), p(3, 1)));
    }

    #[test]
    fn unit_steps_cost_like_the_grid() {
        let g = grid(&["1357", "9246", "8@11"], Movement::Octile);
        for y in 0..3 {
            for x in 0..4 {
                for (dx, dy) in [(1i32, 0i32), (0, 1), (1, 1), (-1, 1)] {
                    let (nx, ny) = (x as i32 + dx, y as i32 + dy);
                    if nx < 0 || ny < 0 || nx >= 4 || ny >= 3 {
                        continue;
                    }
                    let (a, b) = (Point::new(x, y), Point::new(nx as u32, ny as u32));
                    let want = g.step_cost(a, b);
                    assert_eq!(segment_cost(&g, &g.cells(), a, b), want, "{a} -> {b}");
                }
            }
        }
    }

    #[test]
    fn weighted_cost_is_length_times_cell_costs() {
        // 1 x 3 row of costs 2, 4, 6: a straight segment spends 0.5, 1, 0.5 in them.
        let g = grid(&["246"], Movement::Octile);
        let c = segment_cost(&g, &g.cells(), Point::new(0, 0), Point::new(2, 0)).unwrap();
        assert_eq!(c, 2.0 * 0.5 + 4.0 + 6.0 * 0.5);
        let u = grid(&["....", "...."], Movement::Octile);
        let c = segment_cost(&u, &u.cells(), Point::new(0, 0), Point::new(3, 1)).unwrap();
        assert!((c - 10f64.sqrt()).abs() < 1e-12);
        // A diagonal over a uniform cost-3 map: 3 * 2 * sqrt 2.
        let g = grid(&["333", "333", "333"], Movement::Octile);
        let c = segment_cost(&g, &g.cells(), Point::new(0, 0), Point::new(2, 2)).unwrap();
        assert!((c - 6.0 * SQRT2).abs() < 1e-12);
    }

    #[test]
    fn cardinal_sight_is_axis_parallel() {
        let g = grid(&["...", "...", "..."], Movement::Cardinal);
        assert!(visible(&g, &g.cells(), Point::new(0, 0), Point::new(2, 0)));
        assert!(!visible(&g, &g.cells(), Point::new(0, 0), Point::new(1, 1)));
    }

    #[test]
    fn crossed_cells_form_a_legal_path() {
        let g = grid(&[".....", ".....", "....."], Movement::Octile);
        let mut out = vec![Point::new(0, 0)];
        assert!(append_cells(
            &g,
            &g.cells(),
            Point::new(0, 0),
            Point::new(4, 2),
            &mut out
        ));
        assert_eq!(out.last(), Some(&Point::new(4, 2)));
        assert!(g.path_cost(&out).is_some(), "{out:?}");
    }
}
