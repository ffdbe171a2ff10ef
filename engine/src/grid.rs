//! The grid model: cell costs, movement rules, step costs, heuristics and components.
//!
//! A [`Grid`] is immutable once built; a patch ([`crate::patch`]) builds the next one. That is
//! what lets a server hand the same `Arc<Grid>` to many readers while a writer prepares the
//! next version.
//!
//! The costs are stored in copy-on-write tiles shared between versions, so a patch costs what
//! it writes (see [`Grid`]). The searches read a *padded* flat copy: one ring of blocked cells
//! around the map, so the neighbour loop of every search needs no bounds checks. Node ids
//! used by the search core are padded indices; the public API speaks in [`Point`]s and
//! row-major indices `y * width + x`.

use std::fmt;
use std::sync::{Arc, OnceLock};

mod flat;
mod moves;
pub(crate) mod planes;
mod read;

pub(crate) use flat::{Cells, ChangeList, FlatSlot};
use flat::{FlatState, build_flat, derive_cap, histogram};
pub(crate) use moves::{DIAG_SIDES, DIRS, UNIFORM_STEPS, moves, moves_by, step_of};

use crate::clearance::Clearance;
use crate::components::Components;
use crate::tiles::Tiles;

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

/// Inclusive bounding box of `cells` (lowest corner, highest corner); `None` when empty.
pub fn bounding_box(cells: &[Point]) -> Option<(Point, Point)> {
    let first = *cells.first()?;
    Some(cells.iter().fold((first, first), |(lo, hi), p| {
        (
            Point::new(lo.x.min(p.x), lo.y.min(p.y)),
            Point::new(hi.x.max(p.x), hi.y.max(p.y)),
        )
    }))
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

/// An immutable grid map with its derived data (cost statistics, connected components).
///
/// # Storage, and why patches are cheap
///
/// The costs live in copy-on-write 64x64 tiles ([`crate::tiles`]): a patched grid shares
/// every tile it does not write with its predecessor. Statistics are a histogram of passable
/// costs, so `min_cost`, `max_cost`, `passable_cells` and `is_uniform` are `O(1)` after a
/// patch; components are repaired from the changed cells ([`crate::components`]).
///
/// The searches read costs in tight loops by padded index, so they get a flat padded copy of
/// the costs ([`Grid::cells`]), materialised on first use. A patched grid does not copy its
/// predecessor's array: on its first search it *takes* it (when nothing else holds it, the
/// usual case once the server has moved on to the new version) and rewrites only the
/// changed cells; if the predecessor's array is in use it is copied, and if it is gone it is
/// rebuilt from the tiles. So the tiles are the truth, the flat array a cache that moves
/// from version to version. JPS's bit planes are derived the same way, from the
/// predecessor's planes and the changed cells.
pub struct Grid {
    width: u32,
    height: u32,
    movement: Movement,
    /// Costs, row-major in shared tiles; the truth.
    costs: Tiles<u8>,
    /// The padded flat copy the searches read (see above).
    flat: Arc<FlatSlot>,
    /// Passable cells per cost (index 0 unused).
    hist: [u32; 256],
    /// Smallest passable cost (1 if none), the heuristic's scale.
    min_cost: u8,
    /// Largest passable cost (0 if none).
    max_cost: u8,
    /// True when every passable cell costs 1 (JPS applies).
    uniform: bool,
    passable: usize,
    components: Components,
    /// JPS's bit planes of passability, built on the first JPS query. They belong to this
    /// immutable snapshot, so a patched grid (a new `Grid`) can never see stale ones.
    jps_planes: OnceLock<Arc<planes::Planes>>,
    /// Where this version's planes come from when they are first needed: an earlier
    /// version's planes and every cell changed since.
    planes_from: Option<(Arc<planes::Planes>, Arc<ChangeList>)>,
    /// True clearance for sized agents, made on the first sized query (see
    /// [`crate::clearance`]); like the planes, it belongs to this snapshot.
    clearance: OnceLock<Arc<Clearance>>,
    /// An earlier version's clearance and every cell changed since, to derive this one's.
    clearance_from: Option<(Arc<Clearance>, Arc<ChangeList>)>,
    /// Unit-type profiles: when set, the costs are *terrain classes* and each profile says
    /// what a class costs its units (see [`crate::profiles`]). Patches carry it over.
    pub(crate) profiles: Option<Arc<crate::profiles::Profiles>>,
    /// A terrain raster ([`Grid::raster`]): its cells are classes that nobody searches, so
    /// it keeps no flat copy and no components (patches neither derive nor repair them).
    raster: bool,
}

impl Clone for Grid {
    fn clone(&self) -> Self {
        Grid {
            width: self.width,
            height: self.height,
            movement: self.movement,
            costs: self.costs.clone(),
            flat: Arc::new(FlatSlot::new(self.flat.lock().clone())),
            hist: self.hist,
            min_cost: self.min_cost,
            max_cost: self.max_cost,
            uniform: self.uniform,
            passable: self.passable,
            components: self.components.clone(),
            jps_planes: self.jps_planes.clone(),
            planes_from: self.planes_from.clone(),
            clearance: self.clearance.clone(),
            clearance_from: self.clearance_from.clone(),
            profiles: self.profiles.clone(),
            raster: self.raster,
        }
    }
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
        check_cells(width, height, costs.len())?;
        let tiles = Tiles::from_rows(width, height, &costs, 0);
        drop(costs);
        let cells = build_flat(&tiles);
        let components = Components::label_all(width, height, &cells);
        let mut g = Grid {
            width,
            height,
            movement,
            costs: tiles,
            flat: Arc::new(FlatSlot::new(FlatState::Empty)),
            hist: histogram(&cells),
            min_cost: 1,
            max_cost: 0,
            uniform: true,
            passable: 0,
            components,
            jps_planes: OnceLock::new(),
            planes_from: None,
            clearance: OnceLock::new(),
            clearance_from: None,
            profiles: None,
            raster: false,
        };
        g.flat = Arc::new(FlatSlot::new(FlatState::Ready(Arc::new(cells))));
        g.update_stats();
        Ok(g)
    }

    /// A terrain raster: `classes` (row-major) held like a grid's costs, for the profiles
    /// to read ([`Grid::under_profile`]), stored, patched and replicated like any map, but
    /// never searched: it keeps no padded copy and no component labels (one byte a cell,
    /// not six), and its component queries answer as if every cell were blocked.
    ///
    /// ```
    /// use pathd_engine::{Grid, Movement};
    /// let r = Grid::raster(3, 1, vec![7, 0, 9], Movement::Octile).unwrap();
    /// assert_eq!((r.costs(), r.passable_cells()), (vec![7, 0, 9], 2));
    /// ```
    pub fn raster(
        width: u32,
        height: u32,
        classes: Vec<u8>,
        movement: Movement,
    ) -> Result<Self, GridError> {
        check_cells(width, height, classes.len())?;
        let hist = histogram(&classes);
        let costs = Tiles::from_rows(width, height, &classes, 0);
        drop(classes);
        let mut g = Grid {
            width,
            height,
            movement,
            costs,
            flat: Arc::new(FlatSlot::new(FlatState::Empty)),
            hist,
            min_cost: 1,
            max_cost: 0,
            uniform: true,
            passable: 0,
            components: Components::none(width, height),
            jps_planes: OnceLock::new(),
            planes_from: None,
            clearance: OnceLock::new(),
            clearance_from: None,
            profiles: None,
            raster: true,
        };
        g.update_stats();
        Ok(g)
    }

    /// True for a terrain raster ([`Grid::raster`]).
    pub fn is_raster(&self) -> bool {
        self.raster
    }

    /// Recomputes the `O(1)` statistics from the histogram (256 buckets).
    fn update_stats(&mut self) {
        let passable: usize = self.hist.iter().map(|&n| n as usize).sum();
        let min = (1..256).find(|&c| self.hist[c] > 0).unwrap_or(1) as u8;
        let max = (1..256).rev().find(|&c| self.hist[c] > 0).unwrap_or(0) as u8;
        self.passable = passable;
        self.min_cost = min;
        self.max_cost = max;
        self.uniform = passable == 0 || (min == 1 && max == 1);
    }

    /// The next version after writing `rects`, then `cells` (already validated; later writes
    /// win), and the changed cells, sorted row-major. `None` when nothing changes.
    ///
    /// Only the written cells are compared with this version, so the cost is
    /// `O(writes log writes)` plus the touched tiles and the component repair, whatever the
    /// map's size.
    pub(crate) fn with_writes(
        &self,
        rects: &[crate::patch::Rect],
        cells: &[(Point, u8)],
    ) -> Option<(Grid, Vec<Point>)> {
        let w = self.width;
        let mut costs = self.costs.clone();
        let mut touched: Vec<u32> = Vec::new();
        for r in rects {
            for y in r.y..r.y + r.height {
                costs.fill_span(y, r.x, r.x + r.width, r.cost);
                touched.extend(y * w + r.x..y * w + r.x + r.width);
            }
        }
        for &(p, c) in cells {
            costs.set(p.x, p.y, c);
            touched.push(p.y * w + p.x);
        }
        touched.sort_unstable();
        touched.dedup();
        let mut changes: Vec<(Point, u8, u8)> = Vec::new();
        for i in touched {
            let p = Point::new(i % w, i / w);
            let (old, new) = (self.costs.get(p.x, p.y), costs.get(p.x, p.y));
            if old != new {
                changes.push((p, old, new));
            }
        }
        if changes.is_empty() {
            return None;
        }
        let changed: Vec<Point> = changes.iter().map(|c| c.0).collect();
        let mut hist = self.hist;
        for &(_, old, new) in &changes {
            hist[old as usize] -= u32::from(old != 0);
            hist[new as usize] += u32::from(new != 0);
        }
        let n = w as usize * self.height as usize;
        let cap = derive_cap(n);
        let mut flat = match &*self.flat.lock() {
            FlatState::Ready(_) => FlatState::Derive {
                base: Arc::clone(&self.flat),
                changes: ChangeList::extend(None, &changed),
            },
            FlatState::Derive { base, changes } if changes.total() + changed.len() <= cap => {
                FlatState::Derive {
                    base: Arc::clone(base),
                    changes: ChangeList::extend(Some(changes), &changed),
                }
            }
            _ => FlatState::Empty,
        };
        if self.raster {
            // Nobody searches a raster: no flat copy, no components to keep current.
            let mut g = Grid {
                width: w,
                height: self.height,
                movement: self.movement,
                costs,
                flat: Arc::new(FlatSlot::new(FlatState::Empty)),
                hist,
                min_cost: 1,
                max_cost: 0,
                uniform: true,
                passable: 0,
                components: self.components.clone(),
                jps_planes: OnceLock::new(),
                planes_from: None,
                clearance: OnceLock::new(),
                clearance_from: None,
                profiles: self.profiles.clone(),
                raster: true,
            };
            g.update_stats();
            return Some((g, changed));
        }
        let repaired = if changes.len() > cap {
            None
        } else {
            self.components.repair(&changes)
        };
        let components = match repaired {
            Some(c) => c,
            None => {
                // A fresh labelling needs the flat array anyway: keep it.
                let cells = build_flat(&costs);
                let c = Components::label_all(w, self.height, &cells);
                flat = FlatState::Ready(Arc::new(cells));
                c
            }
        };
        let planes_from = match (self.jps_planes.get(), &self.planes_from) {
            (Some(p), _) => Some((Arc::clone(p), ChangeList::extend(None, &changed))),
            (None, Some((p, list))) if list.total() + changed.len() <= cap => {
                Some((Arc::clone(p), ChangeList::extend(Some(list), &changed)))
            }
            _ => None,
        };
        let clearance_from = match (self.clearance.get(), &self.clearance_from) {
            (Some(c), _) => Some((Arc::clone(c), ChangeList::extend(None, &changed))),
            (None, Some((c, list))) if list.total() + changed.len() <= cap => {
                Some((Arc::clone(c), ChangeList::extend(Some(list), &changed)))
            }
            _ => None,
        };
        let mut g = Grid {
            width: w,
            height: self.height,
            movement: self.movement,
            costs,
            flat: Arc::new(FlatSlot::new(flat)),
            hist,
            min_cost: 1,
            max_cost: 0,
            uniform: true,
            passable: 0,
            components,
            jps_planes: OnceLock::new(),
            planes_from,
            clearance: OnceLock::new(),
            clearance_from,
            profiles: self.profiles.clone(),
            raster: false,
        };
        g.update_stats();
        Some((g, changed))
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

/// [`check_dims`], and that `cells` values fill `width x height`.
fn check_cells(width: u32, height: u32, cells: usize) -> Result<(), GridError> {
    check_dims(width as u64, height as u64)?;
    let expected = width as u64 * height as u64;
    if cells as u64 != expected {
        return Err(GridError::WrongCellCount {
            expected,
            got: cells as u64,
        });
    }
    Ok(())
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
