//! Map patches: single cells and rectangles that change cost or become walls.
//!
//! A patch never mutates a grid: [`Grid::apply_patch`] builds the next snapshot and reports
//! exactly which cells changed, which is what derived state (components, HPA*, subscribed
//! searches) needs to repair itself.
//!
//! A patch costs what it changes, not the map: the next snapshot shares every cost tile the
//! patch does not write with this one, only the written cells are diffed, the statistics
//! come from a histogram, components are repaired around the changed cells, and the
//! searches' flat array and JPS's bit planes are derived from this snapshot's on first use
//! (see [`Grid`]). A 1-cell patch on a 4096x4096 map takes microseconds (see the `patch`
//! bench).

use std::fmt;

use crate::grid::{Grid, Point};

/// A rectangle of cells set to one cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width in cells (>= 1).
    pub width: u32,
    /// Height in cells (>= 1).
    pub height: u32,
    /// New cost: 0 = wall, 1..=255 terrain.
    pub cost: u8,
}

/// A set of cell changes, applied atomically: rectangles first, in order, then single cells,
/// in order (so a cell can override part of a rectangle).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Patch {
    /// Single cells and their new costs.
    pub cells: Vec<(Point, u8)>,
    /// Rectangles and their new cost.
    pub rects: Vec<Rect>,
}

impl Patch {
    /// Number of cell writes the patch describes (cells plus rectangle areas), the measure
    /// limits are stated in.
    pub fn area(&self) -> u64 {
        self.cells.len() as u64
            + self
                .rects
                .iter()
                .map(|r| r.width as u64 * r.height as u64)
                .sum::<u64>()
    }
}

/// Why a patch cannot be applied; nothing is changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatchError {
    /// A cell lies outside the map.
    CellOutOfBounds(Point),
    /// A rectangle is empty or reaches outside the map.
    BadRect(Rect),
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchError::CellOutOfBounds(p) => write!(f, "cell {p} is outside the map"),
            PatchError::BadRect(r) => write!(
                f,
                "rectangle at ({}, {}) of {}x{} is empty or reaches outside the map",
                r.x, r.y, r.width, r.height
            ),
        }
    }
}

impl std::error::Error for PatchError {}

impl Grid {
    /// Applies `patch`, returning the next grid and the cells whose cost actually changed
    /// (sorted row-major, no duplicates). `None` when nothing changes.
    ///
    /// ```
    /// use pathd_engine::{Grid, Movement, Patch, Point};
    /// let g = Grid::from_costs(2, 1, vec![1, 1], Movement::Octile).unwrap();
    /// let p = Patch { cells: vec![(Point::new(1, 0), 0)], rects: vec![] };
    /// let (next, changed) = g.apply_patch(&p).unwrap().unwrap();
    /// assert_eq!(changed, vec![Point::new(1, 0)]);
    /// assert!(!next.is_passable(Point::new(1, 0)));
    /// assert!(g.apply_patch(&Patch::default()).unwrap().is_none());
    /// ```
    pub fn apply_patch(&self, patch: &Patch) -> Result<Option<(Grid, Vec<Point>)>, PatchError> {
        for r in &patch.rects {
            let fits = r.width > 0
                && r.height > 0
                && r.x as u64 + r.width as u64 <= self.width() as u64
                && r.y as u64 + r.height as u64 <= self.height() as u64;
            if !fits {
                return Err(PatchError::BadRect(*r));
            }
        }
        if let Some(&(p, _)) = patch.cells.iter().find(|(p, _)| !self.in_bounds(*p)) {
            return Err(PatchError::CellOutOfBounds(p));
        }
        Ok(self.with_writes(&patch.rects, &patch.cells))
    }
}
