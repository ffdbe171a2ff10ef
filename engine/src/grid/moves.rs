//! Movement on the grid: the eight directions in their fixed order, step costs, and the
//! moves a search may take from a cell.

use super::SQRT2;

/// Direction offsets in the padded array, in the fixed order the searches expand them:
/// the four cardinals (N, E, S, W) first, then the diagonals (NE, SE, SW, NW). The order is
/// part of the documented tie-breaking.
pub(crate) const DIRS: [(i32, i32); 8] = [
    (0, -1),
    (1, 0),
    (0, 1),
    (-1, 0),
    (1, -1),
    (1, 1),
    (-1, 1),
    (-1, -1),
];

/// The corner rule: diagonal `k` (4..8) of [`DIRS`] passes between the cardinals
/// `DIAG_SIDES[k - 4]`, and is legal only when both are passable (no corner cutting, the
/// Moving AI rule).
pub(crate) const DIAG_SIDES: [(usize, usize); 4] = [(0, 1), (1, 2), (2, 3), (3, 0)];

/// The cost of a step in direction `k` of [`DIRS`] between cells costing `a` and `b`
/// (both passable): `step * (a + b) / 2`, `step` 1 or sqrt 2.
#[inline(always)]
pub(crate) fn step_of(k: usize, a: u8, b: u8) -> f64 {
    let half = (a as f64 + b as f64) * 0.5;
    if k < 4 { half } else { SQRT2 * half }
}

/// The one move rule of every search over a padded cost array (the map's, or one cluster's):
/// the legal moves from padded cell `n` (cost `c`, passable), reached at cost `g`, given each
/// neighbour's cost `cost(m)` (0 = blocked; the array's ring of zeros keeps every move
/// inside), and the offsets of [`DIRS`] for the array's width. Writes `(neighbour, g + step
/// cost)` into `out` in direction order (N, E, S, W, then NE, SE, SW, NW under `octile`,
/// each diagonal only between two passable cardinals, [`DIAG_SIDES`]) and returns how many.
///
/// Branch-free: every direction is written and the count advances only for legal ones. A*,
/// Dijkstra, weighted A*, HPA*'s in-cluster and corridor searches, sized agents and D* Lite
/// all expand through it; JPS and Theta* build on it through the grid expander.
#[inline(always)]
pub(crate) fn moves(
    offsets: &[isize; 8],
    octile: bool,
    n: usize,
    c: u8,
    g: f64,
    cost: impl Fn(usize) -> u8,
    out: &mut [(u32, f64); 8],
) -> usize {
    moves_by(offsets, octile, n, g, cost, |d, cm| step_of(d, c, cm), out)
}

/// The step costs of a uniform map (every passable cell costs 1), by direction of [`DIRS`]:
/// exactly what [`step_of`] computes there.
pub(crate) const UNIFORM_STEPS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, SQRT2, SQRT2, SQRT2, SQRT2];

/// [`moves`] with the step cost of direction `d` into a neighbour costing `cm` given by
/// `step(d, cm)`: [`step_of`] from the cell's own cost, or on a uniform map a constant
/// ([`UNIFORM_STEPS`]), which spares A* two conversions and a multiplication per move.
#[inline(always)]
pub(crate) fn moves_by(
    offsets: &[isize; 8],
    octile: bool,
    n: usize,
    g: f64,
    cost: impl Fn(usize) -> u8,
    step: impl Fn(usize, u8) -> f64,
    out: &mut [(u32, f64); 8],
) -> usize {
    let mut k = 0;
    let mut open = [false; 4];
    for (d, is_open) in open.iter_mut().enumerate() {
        let m = n.wrapping_add_signed(offsets[d]);
        let cm = cost(m);
        *is_open = cm != 0;
        out[k] = (m as u32, g + step(d, cm));
        k += usize::from(cm != 0);
    }
    if octile {
        for (d, &(a, b)) in DIAG_SIDES.iter().enumerate() {
            let m = n.wrapping_add_signed(offsets[4 + d]);
            let cm = cost(m);
            out[k] = (m as u32, g + step(4 + d, cm));
            k += usize::from(open[a] && open[b] && cm != 0);
        }
    }
    k
}
