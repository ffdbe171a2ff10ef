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
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) mod planes;

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

/// The cells changed since some earlier version, as a shared list of lists: extending it
/// for the next version is `O(its own changes)`.
pub(crate) struct ChangeList {
    prev: Option<Arc<ChangeList>>,
    points: Vec<Point>,
    total: usize,
}

impl ChangeList {
    /// `prev` followed by `points`.
    pub(crate) fn extend(prev: Option<&Arc<ChangeList>>, points: &[Point]) -> Arc<ChangeList> {
        Arc::new(ChangeList {
            prev: prev.cloned(),
            points: points.to_vec(),
            total: prev.map_or(0, |p| p.total) + points.len(),
        })
    }

    /// Number of points, duplicates included.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// Calls `f` on every point (in no particular order; duplicates possible).
    pub(crate) fn for_each(&self, mut f: impl FnMut(Point)) {
        let mut cur = Some(self);
        while let Some(l) = cur {
            l.points.iter().copied().for_each(&mut f);
            cur = l.prev.as_deref();
        }
    }
}

/// A flat padded cost array: cheap to clone, derefs to the cells.
#[derive(Clone)]
pub(crate) struct Cells(Arc<Vec<u8>>);

impl std::ops::Deref for Cells {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// State of a version's flat array (see [`Grid`]).
#[derive(Clone)]
enum FlatState {
    /// Materialised.
    Ready(Arc<Vec<u8>>),
    /// To be taken (or copied) from an earlier version's slot, then the listed cells
    /// rewritten.
    Derive {
        base: Arc<FlatSlot>,
        changes: Arc<ChangeList>,
    },
    /// To be built from the tiles.
    Empty,
}

/// One version's flat array, behind a lock so a later version can take it.
pub(crate) struct FlatSlot {
    state: Mutex<FlatState>,
}

impl FlatSlot {
    fn new(state: FlatState) -> Self {
        FlatSlot {
            state: Mutex::new(state),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FlatState> {
        // The state is replaced whole, never left half-written: a poisoned lock is usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This slot's array for a later version: taken when nobody else holds it (the slot is
    /// left empty and rebuilds on its own next use), else copied. `None` if not
    /// materialised.
    fn take_or_copy(&self) -> Option<Vec<u8>> {
        let mut st = self.lock();
        let FlatState::Ready(a) = &*st else {
            return None;
        };
        if Arc::strong_count(a) > 1 {
            return Some(a.to_vec());
        }
        let FlatState::Ready(a) = std::mem::replace(&mut *st, FlatState::Empty) else {
            unreachable!("matched above")
        };
        Some(Arc::try_unwrap(a).unwrap_or_else(|a| a.to_vec()))
    }
}

/// Largest number of pending changed cells a lazily derived structure accumulates before a
/// version gives up on deriving and rebuilds from scratch.
fn derive_cap(cells: usize) -> usize {
    (cells / 16).max(4096)
}

/// The padded flat array of tiled costs.
fn build_flat(costs: &Tiles<u8>) -> Vec<u8> {
    let (w, h) = (costs.width() as usize, costs.height() as usize);
    let pw = w + 2;
    let mut cells = vec![0u8; pw * (h + 2)];
    for y in 0..h {
        let s = (y + 1) * pw + 1;
        costs.read_row(y as u32, &mut cells[s..s + w]);
    }
    cells
}

/// Histogram of passable costs of a padded (or any) cost array.
fn histogram(cells: &[u8]) -> [u32; 256] {
    let mut hist = [0u32; 256];
    for &c in cells {
        hist[c as usize] += 1;
    }
    hist[0] = 0;
    hist
}

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

    /// The padded cost array (`padded_len` cells, border 0), materialised on first use (see
    /// [`Grid`]). Searches take it once and index it in their loops.
    pub(crate) fn cells(&self) -> Cells {
        let mut st = self.flat.lock();
        if let FlatState::Ready(a) = &*st {
            return Cells(Arc::clone(a));
        }
        let cells = match std::mem::replace(&mut *st, FlatState::Empty) {
            FlatState::Derive { base, changes } => match base.take_or_copy() {
                Some(mut cells) => {
                    changes.for_each(|p| cells[self.pidx(p)] = self.costs.get(p.x, p.y));
                    cells
                }
                None => build_flat(&self.costs),
            },
            _ => build_flat(&self.costs),
        };
        let a = Arc::new(cells);
        *st = FlatState::Ready(Arc::clone(&a));
        Cells(a)
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
