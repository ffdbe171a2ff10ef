//! Flow fields: for every cell of a region, the cost to one goal and the first step towards
//! it, kept current under patches.
//!
//! # What is computed
//!
//! Dijkstra from the goal over the cells of a rectangular region (cells outside it count as
//! walls, so the field never routes through them), under the map's movement rule and step
//! costs. Steps are symmetric (`step * (cost(a) + cost(b)) / 2`, and a diagonal is legal
//! in both directions or neither), so the distance *from* the goal is the cost *to* it.
//! With a `max_cost`, cells whose cost to the goal exceeds it are reported unreachable
//! (the search never relaxes beyond the bound, so a small bound keeps a field on a large
//! map cheap).
//!
//! Each cell holds a direction byte: `0..=7` index the eight neighbours in the order N, E,
//! S, W, NE, SE, SW, NW (`dx, dy`: `(0,-1) (1,0) (0,1) (-1,0) (1,-1) (1,1) (-1,1) (-1,-1)`;
//! `y` grows downwards), [`AT_GOAL`] for the goal, [`UNREACHABLE`] for blocked, outside
//! the bound or cut off. Following directions from any cell reaches the goal, and the step
//! costs along the way add up to the cell's cost.
//!
//! # Agent sizes
//!
//! A field for a `k x k` agent (anchored at its top-left cell) searches the map eroded for
//! that footprint: an anchor is usable when its clearance is at least `k`
//! ([`crate::Clearance`]). Step costs stay those of the anchor cells.
//!
//! # Repair under patches, and why it is exact
//!
//! [`FlowField::update`] does not rerun Dijkstra over the region. It keeps, per cell, the
//! effective cost it last searched with; a patch changes some of them (for a `k x k` agent,
//! cells up to `k - 1` up and left of a written cell). Then:
//!
//! 1. Every cell whose *tree edge* (the step to its parent) changed in cost or legality,
//!    and every cell below it in the shortest-path tree, is invalidated (set unreachable).
//!    Only those cells' costs can have gone up: every other cell's old tree path is still
//!    legal and costs the same, so its old cost is an upper bound of its new one.
//! 2. Each invalidated cell is seeded with its best step onto a valid neighbour; the cells
//!    around each changed cell are pushed too, so cheaper edges propagate.
//! 3. Dijkstra runs from those seeds, accepting strict improvements only.
//!
//! By induction along any new shortest path from the goal, every cell ends at its new
//! distance: a path cell is either untouched with its exact old cost, or was pushed (as a
//! seed or an improvement) and relaxed its neighbours at its final cost. The work is
//! proportional to the invalidated subtree and the cells whose cost improves, not to the
//! region; if the goal itself changes, the field is recomputed.
//!
//! Scratch state (per-cell flags, the heap, the list of touched cells) is reset in time
//! proportional to what the last run touched.

use std::collections::BinaryHeap;
use std::fmt;

mod search;

use crate::grid::{DIRS, Grid, Movement, Point};
use search::Entry;

/// Direction byte of the goal cell.
pub const AT_GOAL: u8 = 8;
/// Direction byte of a cell with no way to the goal (blocked, outside the bound, cut off).
pub const UNREACHABLE: u8 = 255;
/// Largest accepted agent size (side of the square footprint), for fields and queries.
pub const MAX_AGENT_SIZE: u32 = 8;

/// A rectangle of cells: columns `x..x + width`, rows `y..y + height`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width in cells (>= 1).
    pub width: u32,
    /// Height in cells (>= 1).
    pub height: u32,
}

impl Region {
    /// The whole map.
    pub fn whole(grid: &Grid) -> Self {
        Region {
            x: 0,
            y: 0,
            width: grid.width(),
            height: grid.height(),
        }
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// True when `p` lies inside.
    pub fn contains(&self, p: Point) -> bool {
        p.x >= self.x && p.y >= self.y && p.x - self.x < self.width && p.y - self.y < self.height
    }

    /// Region-local index of a point inside (row-major).
    pub fn index(&self, p: Point) -> usize {
        (p.y - self.y) as usize * self.width as usize + (p.x - self.x) as usize
    }

    /// The point of a region-local index.
    pub fn point(&self, i: usize) -> Point {
        let w = self.width as usize;
        Point::new(self.x + (i % w) as u32, self.y + (i / w) as u32)
    }
}

/// What a flow field is asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSpec {
    /// The goal every direction leads to.
    pub goal: Point,
    /// The cells covered (the whole map when `None`); must contain the goal.
    pub region: Option<Region>,
    /// Cells dearer than this to reach are [`UNREACHABLE`] (no bound when `None`).
    pub max_cost: Option<f64>,
    /// Agent side in cells, `1..=`[`MAX_AGENT_SIZE`].
    pub size: u32,
}

impl FlowSpec {
    /// A whole-map, unbounded field for a 1x1 agent.
    pub fn new(goal: Point) -> Self {
        FlowSpec {
            goal,
            region: None,
            max_cost: None,
            size: 1,
        }
    }
}

/// Why a flow field cannot be made.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowError {
    /// The region is empty or leaves the map.
    RegionOutOfBounds(Region),
    /// The goal is off the map or outside the region.
    GoalOutside(Point),
    /// The goal cannot hold the agent (blocked, or too narrow for its size).
    GoalBlocked(Point),
    /// `max_cost` is not a positive finite number.
    InvalidMaxCost(f64),
    /// The agent size is outside `1..=`[`MAX_AGENT_SIZE`].
    InvalidSize(u32),
}

impl fmt::Display for FlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowError::RegionOutOfBounds(r) => write!(
                f,
                "region x={} y={} width={} height={} is empty or leaves the map",
                r.x, r.y, r.width, r.height
            ),
            FlowError::GoalOutside(p) => {
                write!(f, "goal {p} is outside the map or the region")
            }
            FlowError::GoalBlocked(p) => {
                write!(f, "goal {p} is blocked (or too narrow for the agent)")
            }
            FlowError::InvalidMaxCost(c) => {
                write!(f, "max_cost {c} is invalid: it must be a positive number")
            }
            FlowError::InvalidSize(k) => write!(
                f,
                "size {k} is invalid: agents are 1 to {MAX_AGENT_SIZE} cells wide"
            ),
        }
    }
}

impl std::error::Error for FlowError {}

/// Work counters of the last computation or repair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// Cells popped from the heap (expanded).
    pub expanded: u64,
    /// Cells invalidated by the repair (0 for a full computation).
    pub invalidated: u64,
    /// True when the last run was a full computation.
    pub full: bool,
}

/// A flow field towards one goal (see the module docs).
#[derive(Clone, Debug)]
pub struct FlowField {
    goal: Point,
    region: Region,
    max_cost: f64,
    size: u32,
    movement: Movement,
    /// Cost to the goal per region cell (`+inf` when unreachable).
    dist: Vec<f64>,
    /// Direction byte per region cell.
    dir: Vec<u8>,
    /// Effective cost per region cell as last searched: the cell's cost when the agent may
    /// stand there, else 0.
    eff: Vec<u8>,
    /// Scratch flags (see the consts), all zero between runs.
    flags: Vec<u8>,
    /// Cells whose flags are set, with their cost and direction before this run.
    touched: Vec<(u32, f64, u8)>,
    heap: BinaryHeap<Entry>,
    stats: FlowStats,
}

/// The cost the agent pays at `p`, or 0 when it cannot stand there.
fn agent_cost(grid: &Grid, p: Point, size: u32) -> u8 {
    let c = grid.cost(p);
    if size <= 1 || c == 0 {
        return c;
    }
    if grid.clearance().at(p) >= size { c } else { 0 }
}

impl FlowField {
    /// Computes the field `spec` asks for on `grid`.
    pub fn new(grid: &Grid, spec: &FlowSpec) -> Result<Self, FlowError> {
        if spec.size == 0 || spec.size > MAX_AGENT_SIZE {
            return Err(FlowError::InvalidSize(spec.size));
        }
        let max_cost = match spec.max_cost {
            None => f64::INFINITY,
            Some(c) if c.is_finite() && c > 0.0 => c,
            Some(c) => return Err(FlowError::InvalidMaxCost(c)),
        };
        let region = spec.region.unwrap_or_else(|| Region::whole(grid));
        let fits = region.width > 0
            && region.height > 0
            && region.x as u64 + region.width as u64 <= grid.width() as u64
            && region.y as u64 + region.height as u64 <= grid.height() as u64;
        if !fits {
            return Err(FlowError::RegionOutOfBounds(region));
        }
        if !region.contains(spec.goal) {
            return Err(FlowError::GoalOutside(spec.goal));
        }
        if agent_cost(grid, spec.goal, spec.size) == 0 {
            return Err(FlowError::GoalBlocked(spec.goal));
        }
        let n = region.cells();
        let mut eff = vec![0u8; n];
        for (i, e) in eff.iter_mut().enumerate() {
            *e = agent_cost(grid, region.point(i), spec.size);
        }
        let mut f = FlowField {
            goal: spec.goal,
            region,
            max_cost,
            size: spec.size,
            movement: grid.movement(),
            dist: vec![f64::INFINITY; n],
            dir: vec![UNREACHABLE; n],
            eff,
            flags: vec![0; n],
            touched: Vec::new(),
            heap: BinaryHeap::new(),
            stats: FlowStats::default(),
        };
        f.compute_all();
        Ok(f)
    }

    /// The goal.
    pub fn goal(&self) -> Point {
        self.goal
    }

    /// The region covered.
    pub fn region(&self) -> Region {
        self.region
    }

    /// The agent size the field is for.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The cost bound (`+inf` when none).
    pub fn max_cost(&self) -> f64 {
        self.max_cost
    }

    /// Counters of the last computation or repair.
    pub fn stats(&self) -> FlowStats {
        self.stats
    }

    /// Cost to the goal per region cell, row-major (`+inf` when unreachable).
    pub fn costs(&self) -> &[f64] {
        &self.dist
    }

    /// Direction byte per region cell, row-major (see the module docs).
    pub fn directions(&self) -> &[u8] {
        &self.dir
    }

    /// Cost to the goal from `p` (`None` when unreachable or outside the region).
    pub fn cost_at(&self, p: Point) -> Option<f64> {
        if !self.region.contains(p) {
            return None;
        }
        let d = self.dist[self.region.index(p)];
        d.is_finite().then_some(d)
    }

    /// Direction byte at `p` ([`UNREACHABLE`] outside the region).
    pub fn direction_at(&self, p: Point) -> u8 {
        if !self.region.contains(p) {
            return UNREACHABLE;
        }
        self.dir[self.region.index(p)]
    }

    /// The cell one step from `p` towards the goal (`None` at the goal or when unreachable).
    pub fn next(&self, p: Point) -> Option<Point> {
        let d = self.direction_at(p);
        if d >= AT_GOAL {
            return None;
        }
        let (dx, dy) = DIRS[d as usize];
        Some(Point::new(
            p.x.wrapping_add_signed(dx),
            p.y.wrapping_add_signed(dy),
        ))
    }

    /// Approximate heap memory held, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.dist.capacity() * 8
            + self.dir.capacity()
            + self.eff.capacity()
            + self.flags.capacity()
            + self.touched.capacity() * 16
            + self.heap.capacity() * 16
    }
}

#[cfg(test)]
mod tests {
    use super::search::opposite;
    use super::*;
    use crate::grid::DIAG_SIDES;

    #[test]
    fn opposite_directions() {
        for d in 0..8 {
            let (dx, dy) = DIRS[d];
            let (ox, oy) = DIRS[opposite(d)];
            assert_eq!((dx + ox, dy + oy), (0, 0), "direction {d}");
        }
        for (d, &(a, b)) in DIAG_SIDES.iter().enumerate() {
            let (dx, dy) = DIRS[4 + d];
            assert_eq!(DIRS[a].0 + DIRS[b].0, dx);
            assert_eq!(DIRS[a].1 + DIRS[b].1, dy);
        }
    }

    #[test]
    fn corridor_field() {
        // . . .
        // @ @ .
        // G . .
        let g = Grid::from_costs(3, 3, vec![1, 1, 1, 0, 0, 1, 1, 1, 1], Movement::Octile).unwrap();
        let f = FlowField::new(&g, &FlowSpec::new(Point::new(0, 2))).unwrap();
        assert_eq!(f.direction_at(Point::new(0, 2)), AT_GOAL);
        assert_eq!(f.cost_at(Point::new(0, 0)), Some(6.0));
        assert_eq!(f.direction_at(Point::new(0, 1)), UNREACHABLE);
        assert_eq!(f.next(Point::new(1, 2)), Some(Point::new(0, 2)));
    }
}
