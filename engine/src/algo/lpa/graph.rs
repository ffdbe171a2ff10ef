//! The graph the incremental searches run on: a grid version seen by a `size x size` agent,
//! its legal moves, the patch rule (which vertices a changed cell touches) and the greedy
//! descent step shared by every user of the core.

use crate::grid::{Grid, Movement, Point, moves};

/// What the search reads of a grid version: its padded costs, and for an agent wider than
/// one cell its clearance (an anchor the footprint does not fit reads as a wall).
pub(crate) struct View<'a> {
    cells: &'a [u8],
    clearance: Option<&'a crate::Clearance>,
    size: u32,
    pw: usize,
}

impl<'a> View<'a> {
    /// The view of `grid` (whose padded cost array is `cells`) for a `size x size` agent.
    pub(crate) fn new(grid: &'a Grid, cells: &'a [u8], size: u32) -> Self {
        View {
            cells,
            clearance: (size > 1).then(|| grid.clearance()),
            size,
            pw: grid.padded_width(),
        }
    }

    /// The cost of padded cell `m` for the agent (0 where it cannot stand).
    #[inline]
    pub(crate) fn cost(&self, m: usize) -> u8 {
        let c = self.cells[m];
        match self.clearance {
            Some(clr) if c != 0 => {
                // Passable cells are interior, so their padded coordinates are >= 1.
                let p = Point::new((m % self.pw) as u32 - 1, (m / self.pw) as u32 - 1);
                if clr.at(p) >= self.size { c } else { 0 }
            }
            _ => c,
        }
    }
}

/// Legal moves from `n` with their costs, in direction order; none from a wall.
#[inline]
pub(crate) fn neighbours(
    cells: &View<'_>,
    offsets: &[isize; 8],
    movement: Movement,
    n: u32,
    out: &mut [(u32, f64); 8],
) -> usize {
    let u = n as usize;
    let cu = cells.cost(u);
    if cu == 0 {
        return 0;
    }
    let octile = movement == Movement::Octile;
    moves(offsets, octile, u, cu, 0.0, |m| cells.cost(m), out)
}

/// The step a greedy descent takes from a vertex whose neighbours and step costs are `nb`
/// (direction order), given every neighbour's cost to the goal `g`: the first neighbour whose
/// `c + g` is the smallest up to a relative 2^-36 ([`crate::search::IMPROVES_BY`]), with
/// that sum; `None` when no neighbour reaches the goal.
///
/// Why a margin: two sums of equal true cost can round one ulp apart, depending on the order
/// a search happened to add their steps in, and a strict `<` would then follow the rounding.
/// With the margin the choice depends on the true costs only (the argument of
/// `IMPROVES_BY`'s docs: rounding stays far below it, true differences far above it), so any
/// two searches that hold the same exact costs descend along the same path: D* Lite, and
/// the goal trees shared by several agents, which grow in another order.
pub(crate) fn descent_step(nb: &[(u32, f64)], g: impl Fn(u32) -> f64) -> Option<(u32, f64)> {
    let min = nb
        .iter()
        .map(|&(s, c)| c + g(s))
        .fold(f64::INFINITY, f64::min);
    if !min.is_finite() {
        return None;
    }
    let tie = min + min * crate::search::IMPROVES_BY;
    nb.iter()
        .map(|&(s, c)| (s, c + g(s)))
        .find(|&(_, v)| v <= tie)
}

/// [`Grid::path_cost`] for a `size x size` agent: `None` when a step is illegal for its
/// footprint too (an anchor it does not fit at, or a diagonal past one).
pub(crate) fn agent_path_cost(grid: &Grid, path: &[Point], size: u32) -> Option<f64> {
    let cost = grid.path_cost(path)?;
    if size > 1 {
        let clr = grid.clearance();
        let fits = |p: Point| clr.fits(p, size);
        let legal = path.iter().all(|&p| fits(p))
            && path.windows(2).all(|s| {
                let (a, b) = (s[0], s[1]);
                a.x == b.x || a.y == b.y || fits(Point::new(b.x, a.y)) && fits(Point::new(a.x, b.y))
            });
        if !legal {
            return None;
        }
    }
    Some(cost)
}

/// Panics unless `grid` has the dimensions and movement rule `map` of the map a search
/// (`who`) was made for: its vertex ids and edges mean nothing on another.
pub(crate) fn check_same_map(who: &str, grid: &Grid, map: (u32, u32, Movement)) {
    let (w, h, movement) = map;
    assert!(
        grid.width() == w && grid.height() == h && grid.movement() == movement,
        "{who}: grid {}x{} {:?} is not the search's {w}x{h} {movement:?} map",
        grid.width(),
        grid.height(),
        grid.movement(),
    );
}

/// Every vertex a changed edge can end at when the anchors `changed` get new costs: each
/// of them and its 8 neighbours (the patch rule of the module docs of [`super`]), as sorted,
/// distinct padded ids.
pub(crate) fn edge_ends(grid: &Grid, offsets: &[isize; 8], changed: &[Point]) -> Vec<u32> {
    let mut ends: Vec<u32> = Vec::with_capacity(changed.len() * 9);
    for &c in changed.iter().filter(|c| grid.in_bounds(**c)) {
        let i = grid.pidx(c);
        ends.push(i as u32);
        ends.extend(offsets.iter().map(|&o| i.wrapping_add_signed(o) as u32));
    }
    ends.sort_unstable();
    ends.dedup();
    ends
}

/// The cells whose cost changes for a `size x size` agent when `changed` are written: the
/// anchors whose footprint holds a written cell (`changed` itself for size 1).
pub(crate) fn changed_anchors(changed: &[Point], size: u32) -> std::borrow::Cow<'_, [Point]> {
    if size <= 1 {
        return std::borrow::Cow::Borrowed(changed);
    }
    let k = size - 1;
    std::borrow::Cow::Owned(
        changed
            .iter()
            .flat_map(|c| {
                (c.y.saturating_sub(k)..=c.y)
                    .flat_map(move |y| (c.x.saturating_sub(k)..=c.x).map(move |x| Point::new(x, y)))
            })
            .collect(),
    )
}
