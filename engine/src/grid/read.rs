//! Reading a grid: its size and statistics, cells and costs, steps, heuristics and
//! components, and the padded layout the searches use.

use std::sync::Arc;

use super::moves::{DIRS, step_of};
use super::{Grid, Movement, NO_COMPONENT, Point, distance, planes};
use crate::clearance::Clearance;

impl Grid {
    /// Width in cells.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in cells.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The map's movement rule.
    pub fn movement(&self) -> Movement {
        self.movement
    }

    /// The same cells under another movement rule (components are unchanged: see
    /// [`Grid::same_component`]).
    pub fn with_movement(&self, movement: Movement) -> Grid {
        let mut g = self.clone();
        g.movement = movement;
        g
    }

    /// Number of passable cells.
    pub fn passable_cells(&self) -> usize {
        self.passable
    }

    /// Smallest passable cost; the factor that keeps the heuristics admissible.
    pub fn min_cost(&self) -> u8 {
        self.min_cost
    }

    /// Largest passable cost (0 when no cell is passable). `O(1)`: kept in a histogram of
    /// costs that patches update.
    pub fn max_cost(&self) -> u8 {
        self.max_cost
    }

    /// True when every passable cell costs exactly 1 (the Moving AI setting; JPS applies).
    pub fn is_uniform(&self) -> bool {
        self.uniform
    }

    /// Number of connected components of passable cells.
    pub fn component_count(&self) -> u32 {
        self.components.count()
    }

    /// True when `p` lies on the map.
    pub fn in_bounds(&self, p: Point) -> bool {
        p.x < self.width && p.y < self.height
    }

    /// Cost of the cell at `p` (0 = blocked). Out-of-bounds points read as blocked.
    pub fn cost(&self, p: Point) -> u8 {
        if self.in_bounds(p) {
            self.costs.get(p.x, p.y)
        } else {
            0
        }
    }

    /// True when `p` is on the map and passable.
    pub fn is_passable(&self, p: Point) -> bool {
        self.cost(p) != 0
    }

    /// True when both points are passable and connected (a path exists between them).
    ///
    /// Components are 4-connected regions. Under the octile no-corner-cutting rule a diagonal
    /// step is only legal when both orthogonal cells are passable, so its two ends are
    /// 4-connected too: 4-connectivity is exact for both movement rules.
    pub fn same_component(&self, a: Point, b: Point) -> bool {
        match (self.component(a), self.component(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }

    /// Component label of a passable point. Labels identify components within one grid
    /// version; they are not dense (a patched grid may use labels above
    /// [`Grid::component_count`]) and not comparable across versions.
    pub fn component(&self, p: Point) -> Option<u32> {
        if !self.in_bounds(p) {
            return None;
        }
        let l = self.components.label(p.x, p.y);
        (l != NO_COMPONENT).then_some(l)
    }

    /// Row-major costs, `width * height` entries.
    pub fn costs(&self) -> Vec<u8> {
        let w = self.width as usize;
        let mut out = vec![0; w * self.height as usize];
        for (y, row) in out.chunks_exact_mut(w).enumerate() {
            self.costs.read_row(y as u32, row);
        }
        out
    }

    /// Cost of one legal step between adjacent cells: `step * (cost(a) + cost(b)) / 2`.
    /// Returns `None` when the step is not a legal move under the map's rule.
    pub fn step_cost(&self, a: Point, b: Point) -> Option<f64> {
        let dx = b.x as i64 - a.x as i64;
        let dy = b.y as i64 - a.y as i64;
        if !self.is_passable(a) || !self.is_passable(b) || dx.abs() > 1 || dy.abs() > 1 {
            return None;
        }
        let (ca, cb) = (self.cost(a), self.cost(b));
        match (dx.abs(), dy.abs()) {
            (0, 0) => None,
            (1, 1) => {
                if self.movement == Movement::Cardinal {
                    return None;
                }
                // The corner rule (`DIAG_SIDES`): both cells beside the diagonal passable.
                let side1 = Point::new(b.x, a.y);
                let side2 = Point::new(a.x, b.y);
                (self.is_passable(side1) && self.is_passable(side2)).then(|| step_of(4, ca, cb))
            }
            _ => Some(step_of(0, ca, cb)),
        }
    }

    /// Cost of a cell path, checking every step. `None` when a step is illegal.
    pub fn path_cost(&self, path: &[Point]) -> Option<f64> {
        let mut total = 0.0;
        for w in path.windows(2) {
            total += self.step_cost(w[0], w[1])?;
        }
        if path.len() == 1 && !self.is_passable(path[0]) {
            return None;
        }
        Some(total)
    }

    /// The admissible, consistent heuristic for this map: octile or Manhattan distance times
    /// the smallest passable cost (every step costs at least its length times that).
    pub fn heuristic(&self, a: Point, b: Point) -> f64 {
        let dx = a.x.abs_diff(b.x) as f64;
        let dy = a.y.abs_diff(b.y) as f64;
        distance(self.movement, dx, dy) * self.min_cost as f64
    }

    /// True clearance of every cell (for agents wider than one cell), made once on first
    /// use: derived from an earlier version's for the cells changed since when there is one,
    /// else built (see [`crate::clearance`]).
    pub fn clearance(&self) -> &Clearance {
        self.clearance.get_or_init(|| {
            Arc::new(match &self.clearance_from {
                Some((base, changes)) => base.derive(self, changes),
                None => Clearance::build(self),
            })
        })
    }

    // ---- padded-index helpers used by the algorithms ----

    /// JPS's bit planes for this grid, made once on first use: derived from an earlier
    /// version's planes for the cells changed since when there is one, else built.
    pub(crate) fn jps_planes(&self) -> &planes::Planes {
        self.jps_planes.get_or_init(|| {
            Arc::new(match &self.planes_from {
                Some((base, changes)) => base.derive(self, changes),
                None => planes::Planes::new(self),
            })
        })
    }

    /// Width of the padded array.
    #[inline]
    pub(crate) fn padded_width(&self) -> usize {
        self.width as usize + 2
    }

    /// Length of the padded array (size of per-node scratch arrays).
    #[inline]
    pub(crate) fn padded_len(&self) -> usize {
        self.padded_width() * (self.height as usize + 2)
    }

    /// Padded index of an in-bounds point.
    #[inline]
    pub(crate) fn pidx(&self, p: Point) -> usize {
        (p.y as usize + 1) * self.padded_width() + p.x as usize + 1
    }

    /// Point of a padded index (must be an interior cell).
    #[inline]
    pub(crate) fn ppoint(&self, i: usize) -> Point {
        let pw = self.padded_width();
        Point::new((i % pw) as u32 - 1, (i / pw) as u32 - 1)
    }

    /// Padded-index offsets of [`DIRS`].
    #[inline]
    pub(crate) fn offsets(&self) -> [isize; 8] {
        let pw = self.padded_width() as isize;
        let mut o = [0isize; 8];
        for (k, (dx, dy)) in DIRS.iter().enumerate() {
            o[k] = *dy as isize * pw + *dx as isize;
        }
        o
    }
}
