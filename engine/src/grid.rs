//! The grid model: cell costs, movement rules, step costs, heuristics and components.
//!
//! A [`Grid`] is immutable once built; a patch ([`crate::patch`]) builds the next one. That is
//! what lets a server hand the same `Arc<Grid>` to many readers while a writer prepares the
//! next version.
//!
//! Internally the cells live in a *padded* array: one ring of blocked cells around the map, so
//! the neighbour loop of every search needs no bounds checks. Node ids used by the search
//! core are padded indices; the public API speaks in [`Point`]s and row-major indices
//! `y * width + x`.

use std::fmt;
use std::sync::{Arc, OnceLock};

/// Largest accepted width and height.
pub const MAX_DIM: u32 = 8192;

/// sqrt(2), the length of a diagonal step.
pub const SQRT2: f64 = std::f64::consts::SQRT_2;

/// A cell coordinate: `x` is the column, `y` the row, `(0, 0)` the top-left corner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
}

impl Point {
    /// A point at column `x`, row `y`.
    pub const fn new(x: u32, y: u32) -> Self {
        Self { x, y }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

/// Which moves a map allows. Every algorithm and every post-processing step honours the same
/// rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Movement {
    /// 8 neighbours; a diagonal step needs both orthogonal cells it passes between to be
    /// passable (no corner cutting, the Moving AI rule).
    #[default]
    Octile,
    /// 4 neighbours.
    Cardinal,
}

impl Movement {
    /// The name used in files and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Movement::Octile => "octile",
            Movement::Cardinal => "cardinal",
        }
    }

    /// Parses `"octile"` or `"cardinal"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "octile" => Some(Movement::Octile),
            "cardinal" => Some(Movement::Cardinal),
            _ => None,
        }
    }
}

/// Why a grid could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GridError {
    /// Width or height is zero or above [`MAX_DIM`].
    BadDimensions {
        /// Requested width.
        width: u64,
        /// Requested height.
        height: u64,
    },
    /// The cost array does not hold `width * height` cells.
    WrongCellCount {
        /// `width * height`.
        expected: u64,
        /// Cells given.
        got: u64,
    },
}

impl fmt::Display for GridError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GridError::BadDimensions { width, height } => write!(
                f,
                "map dimensions {width}x{height} are invalid: width and height must be 1..={MAX_DIM}"
            ),
            GridError::WrongCellCount { expected, got } => {
                write!(f, "expected {expected} cells (width x height), got {got}")
            }
        }
    }
}

impl std::error::Error for GridError {}

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

/// An immutable grid map with its derived data (smallest cost, connected components).
#[derive(Clone)]
pub struct Grid {
    width: u32,
    height: u32,
    movement: Movement,
    /// Padded costs: `(height + 2) * (width + 2)`, border cells 0.
    cells: Vec<u8>,
    /// Smallest passable cost (1 if none), the heuristic's scale.
    min_cost: u8,
    /// True when every passable cell costs 1 (JPS applies).
    uniform: bool,
    passable: usize,
    /// Component label per padded cell; `u32::MAX` for blocked cells.
    components: Vec<u32>,
    component_count: u32,
    /// JPS's bit planes of passability, built on the first JPS query. They belong to this
    /// immutable snapshot, so a patched grid (a new `Grid`) can never see stale ones.
    jps_planes: OnceLock<Arc<crate::algo::jps::Planes>>,
}

impl fmt::Debug for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grid")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("movement", &self.movement)
            .field("passable", &self.passable)
            .finish_non_exhaustive()
    }
}

/// Label for blocked cells in the component array.
pub(crate) const NO_COMPONENT: u32 = u32::MAX;

impl Grid {
    /// Builds a grid from row-major costs (`0` blocked, `1..=255` passable terrain cost).
    ///
    /// ```
    /// use pathd_engine::{Grid, Movement};
    /// let g = Grid::from_costs(3, 2, vec![1, 1, 0, 1, 5, 1], Movement::Octile).unwrap();
    /// assert_eq!(g.passable_cells(), 5);
    /// assert!(Grid::from_costs(0, 2, vec![], Movement::Octile).is_err());
    /// ```
    pub fn from_costs(
        width: u32,
        height: u32,
        costs: Vec<u8>,
        movement: Movement,
    ) -> Result<Self, GridError> {
        check_dims(width as u64, height as u64)?;
        let expected = width as u64 * height as u64;
        if costs.len() as u64 != expected {
            return Err(GridError::WrongCellCount {
                expected,
                got: costs.len() as u64,
            });
        }
        let pw = width as usize + 2;
        let mut cells = vec![0u8; pw * (height as usize + 2)];
        for (y, row) in costs.chunks_exact(width as usize).enumerate() {
            let start = (y + 1) * pw + 1;
            cells[start..start + width as usize].copy_from_slice(row);
        }
        Ok(Self::from_padded(width, height, cells, movement))
    }

    /// Builds from an already padded cell array and computes the derived data.
    pub(crate) fn from_padded(width: u32, height: u32, cells: Vec<u8>, movement: Movement) -> Self {
        let mut g = Grid {
            width,
            height,
            movement,
            cells,
            min_cost: 1,
            uniform: true,
            passable: 0,
            components: Vec::new(),
            component_count: 0,
            jps_planes: OnceLock::new(),
        };
        g.recompute_derived();
        g
    }

    fn recompute_derived(&mut self) {
        let mut min = u8::MAX;
        let mut max = 0u8;
        let mut passable = 0usize;
        for &c in &self.cells {
            if c != 0 {
                passable += 1;
                min = min.min(c);
                max = max.max(c);
            }
        }
        self.passable = passable;
        self.min_cost = if passable == 0 { 1 } else { min };
        self.uniform = passable == 0 || (min == 1 && max == 1);
        self.compute_components();
    }

    /// Labels 4-connected components. Under the octile no-corner-cutting rule a diagonal step
    /// is only legal when both orthogonal cells are passable, so its two ends are 4-connected
    /// too: 4-connectivity is exact for both movement rules.
    fn compute_components(&mut self) {
        let pw = self.padded_width();
        let mut labels = vec![NO_COMPONENT; self.cells.len()];
        let mut stack = Vec::new();
        let mut next = 0u32;
        for i in 0..self.cells.len() {
            if self.cells[i] == 0 || labels[i] != NO_COMPONENT {
                continue;
            }
            labels[i] = next;
            stack.push(i);
            while let Some(c) = stack.pop() {
                for n in [c - pw, c + 1, c + pw, c - 1] {
                    if self.cells[n] != 0 && labels[n] == NO_COMPONENT {
                        labels[n] = next;
                        stack.push(n);
                    }
                }
            }
            next += 1;
        }
        self.components = labels;
        self.component_count = next;
    }

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

    /// True when every passable cell costs exactly 1 (the Moving AI setting; JPS applies).
    pub fn is_uniform(&self) -> bool {
        self.uniform
    }

    /// Number of connected components of passable cells.
    pub fn component_count(&self) -> u32 {
        self.component_count
    }

    /// True when `p` lies on the map.
    pub fn in_bounds(&self, p: Point) -> bool {
        p.x < self.width && p.y < self.height
    }

    /// Cost of the cell at `p` (0 = blocked). Out-of-bounds points read as blocked.
    pub fn cost(&self, p: Point) -> u8 {
        if self.in_bounds(p) {
            self.cells[self.pidx(p)]
        } else {
            0
        }
    }

    /// True when `p` is on the map and passable.
    pub fn is_passable(&self, p: Point) -> bool {
        self.cost(p) != 0
    }

    /// True when both points are passable and connected (a path exists between them).
    pub fn same_component(&self, a: Point, b: Point) -> bool {
        if !self.is_passable(a) || !self.is_passable(b) {
            return false;
        }
        self.components[self.pidx(a)] == self.components[self.pidx(b)]
    }

    /// Component label of a passable point.
    pub fn component(&self, p: Point) -> Option<u32> {
        self.is_passable(p).then(|| self.components[self.pidx(p)])
    }

    /// Row-major costs, `width * height` entries.
    pub fn costs(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.width as usize * self.height as usize);
        let pw = self.padded_width();
        for y in 0..self.height as usize {
            let s = (y + 1) * pw + 1;
            out.extend_from_slice(&self.cells[s..s + self.width as usize]);
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
        let (ca, cb) = (self.cost(a) as f64, self.cost(b) as f64);
        match (dx.abs(), dy.abs()) {
            (0, 0) => None,
            (1, 1) => {
                if self.movement == Movement::Cardinal {
                    return None;
                }
                let side1 = Point::new(b.x, a.y);
                let side2 = Point::new(a.x, b.y);
                (self.is_passable(side1) && self.is_passable(side2))
                    .then_some(SQRT2 * (ca + cb) * 0.5)
            }
            _ => Some((ca + cb) * 0.5),
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

    // ---- padded-index helpers used by the algorithms ----

    /// JPS's bit planes for this grid, built once on first use.
    pub(crate) fn jps_planes(&self) -> &crate::algo::jps::Planes {
        self.jps_planes
            .get_or_init(|| Arc::new(crate::algo::jps::Planes::new(self)))
    }

    /// Width of the padded array.
    #[inline]
    pub(crate) fn padded_width(&self) -> usize {
        self.width as usize + 2
    }

    /// Length of the padded array (size of per-node scratch arrays).
    #[inline]
    pub(crate) fn padded_len(&self) -> usize {
        self.cells.len()
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

    /// Padded cost array.
    #[inline]
    pub(crate) fn cells(&self) -> &[u8] {
        &self.cells
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

    /// Replaces cells (padded indices) and recomputes derived data; used by patches.
    pub(crate) fn with_cells(&self, cells: Vec<u8>) -> Grid {
        Grid::from_padded(self.width, self.height, cells, self.movement)
    }
}

/// Octile or Manhattan distance for the given axis distances.
#[inline]
pub(crate) fn distance(movement: Movement, dx: f64, dy: f64) -> f64 {
    match movement {
        Movement::Octile => {
            let (lo, hi) = if dx < dy { (dx, dy) } else { (dy, dx) };
            hi + (SQRT2 - 1.0) * lo
        }
        Movement::Cardinal => dx + dy,
    }
}

fn check_dims(width: u64, height: u64) -> Result<(), GridError> {
    if width == 0 || height == 0 || width > MAX_DIM as u64 || height > MAX_DIM as u64 {
        return Err(GridError::BadDimensions { width, height });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corner_cutting_is_forbidden() {
        // . @
        // . .
        let g = Grid::from_costs(2, 2, vec![1, 0, 1, 1], Movement::Octile).unwrap();
        assert_eq!(g.step_cost(Point::new(0, 0), Point::new(1, 1)), None);
        assert_eq!(g.step_cost(Point::new(0, 0), Point::new(0, 1)), Some(1.0));
        let open = Grid::from_costs(2, 2, vec![1, 3, 1, 1], Movement::Octile).unwrap();
        assert_eq!(
            open.step_cost(Point::new(0, 0), Point::new(1, 1)),
            Some(SQRT2)
        );
        assert_eq!(
            open.step_cost(Point::new(0, 0), Point::new(1, 0)),
            Some(2.0)
        );
        let card = open.with_movement(Movement::Cardinal);
        assert_eq!(card.step_cost(Point::new(0, 0), Point::new(1, 1)), None);
    }

    #[test]
    fn components_and_dims() {
        let g = Grid::from_costs(3, 1, vec![1, 0, 1], Movement::Octile).unwrap();
        assert_eq!(g.component_count(), 2);
        assert!(!g.same_component(Point::new(0, 0), Point::new(2, 0)));
        assert!(Grid::from_costs(MAX_DIM + 1, 1, vec![], Movement::Octile).is_err());
        assert!(Grid::from_costs(2, 2, vec![1; 3], Movement::Octile).is_err());
        assert_eq!(g.costs(), vec![1, 0, 1]);
    }
}
