//! The move graph of a MAPF instance: one vertex per passable cell, the moves of one time
//! step as edges.
//!
//! Time steps are unit whatever a cell costs: a MAPF plan counts steps, so a weighted cell is
//! simply passable (cost `0` stays a wall). Neighbours are listed in the order of the
//! engine's other searches (N, E, S, W, then NE, SE, SW, NW), diagonals only on `octile`
//! maps and only between two passable cardinals (no corner cutting, the rule of
//! [`crate::Grid::step_cost`]).

use crate::grid::{Grid, Movement, Point};

/// No vertex (a wall, or "not yet assigned" in the solver's tables).
pub(crate) const NONE: u32 = u32::MAX;

/// The cardinal and diagonal offsets, in the engine's direction order.
const DIRS: [(i32, i32); 8] = [
    (0, -1),
    (1, 0),
    (0, 1),
    (-1, 0),
    (1, -1),
    (1, 1),
    (-1, 1),
    (-1, -1),
];

/// Passable cells as dense vertex ids with their neighbour lists (compressed rows).
#[derive(Clone, Debug)]
pub struct Graph {
    width: u32,
    height: u32,
    octile: bool,
    /// Row-major cell index to vertex id ([`NONE`] for walls).
    id: Vec<u32>,
    /// Vertex id to cell.
    cells: Vec<Point>,
    /// Neighbours of vertex `v` are `adj[start[v]..start[v + 1]]`.
    start: Vec<u32>,
    adj: Vec<u32>,
    /// Vertices from this id on are *exits*: walled cells an agent stands on (a live plan
    /// after a patch walled it), with moves out and none in.
    first_exit: u32,
}

impl Graph {
    /// The move graph of `grid` under its own movement rule.
    pub fn new(grid: &Grid) -> Self {
        Self::with_movement(grid, grid.movement())
    }

    /// The move graph of `grid`'s cells under `movement` (MAPF benchmarks are 4-connected
    /// although their files say `type octile`).
    pub fn with_movement(grid: &Grid, movement: Movement) -> Self {
        Self::with_exits(grid, movement, &[])
    }

    /// [`Graph::with_movement`] plus an *exit* vertex for each cell of `exits` that is a
    /// wall on `grid` (inside it): an agent standing there may leave it (or wait), nobody
    /// may enter it. Live plans use it when a patch walls the cell an agent stands on.
    pub fn with_exits(grid: &Grid, movement: Movement, exits: &[Point]) -> Self {
        let (w, h) = (grid.width(), grid.height());
        let costs = grid.costs();
        let open = |x: i64, y: i64| {
            x >= 0
                && y >= 0
                && x < w as i64
                && y < h as i64
                && costs[(y * w as i64 + x) as usize] != 0
        };
        let mut id = vec![NONE; costs.len()];
        let mut cells = Vec::new();
        for (i, &c) in costs.iter().enumerate() {
            if c != 0 {
                id[i] = cells.len() as u32;
                cells.push(Point::new(i as u32 % w, i as u32 / w));
            }
        }
        let first_exit = cells.len() as u32;
        for &p in exits {
            if grid.in_bounds(p) && !grid.is_passable(p) {
                let i = (p.y * w + p.x) as usize;
                if id[i] == NONE {
                    id[i] = cells.len() as u32;
                    cells.push(p);
                }
            }
        }
        let octile = movement == Movement::Octile;
        let mut start = Vec::with_capacity(cells.len() + 1);
        let mut adj = Vec::new();
        for p in &cells {
            start.push(adj.len() as u32);
            let (x, y) = (p.x as i64, p.y as i64);
            for (k, &(dx, dy)) in DIRS.iter().enumerate() {
                let (nx, ny) = (x + dx as i64, y + dy as i64);
                if k >= 4 && !(octile && open(nx, y) && open(x, ny)) {
                    continue;
                }
                if open(nx, ny) {
                    adj.push(id[(ny * w as i64 + nx) as usize]);
                }
            }
        }
        start.push(adj.len() as u32);
        Self {
            width: w,
            height: h,
            octile,
            id,
            cells,
            start,
            adj,
            first_exit,
        }
    }

    /// True when `v` is an exit (see [`Graph::with_exits`]).
    #[inline]
    pub fn is_exit(&self, v: u32) -> bool {
        v >= self.first_exit
    }

    /// Number of vertices (passable cells).
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// True when no cell is passable.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// True when diagonal moves are allowed.
    pub fn octile(&self) -> bool {
        self.octile
    }

    /// The vertex of cell `p`, `None` for walls and points off the map.
    pub fn vertex(&self, p: Point) -> Option<u32> {
        if p.x >= self.width || p.y >= self.height {
            return None;
        }
        let v = self.id[(p.y * self.width + p.x) as usize];
        (v != NONE).then_some(v)
    }

    /// The cell of vertex `v`.
    pub fn cell(&self, v: u32) -> Point {
        self.cells[v as usize]
    }

    /// The neighbours of `v` (not `v` itself), in direction order.
    #[inline]
    pub fn neighbours(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.adj[self.start[v] as usize..self.start[v + 1] as usize]
    }

    /// True when `a -> b` is a single move (or a wait, `a == b`).
    pub fn is_move(&self, a: u32, b: u32) -> bool {
        a == b || self.neighbours(a).contains(&b)
    }

    /// For a diagonal move `from -> to`, the move that would cross it: `(c, d)` such that an
    /// agent moving `c -> d` in the same step crosses the diagonal. `None` for waits and
    /// cardinal moves. Both cells exist: a diagonal is only legal when both sides are open.
    #[inline]
    pub fn crossing(&self, from: u32, to: u32) -> Option<(u32, u32)> {
        let (a, b) = (self.cell(from), self.cell(to));
        if a.x == b.x || a.y == b.y {
            return None;
        }
        let c = self.vertex(Point::new(b.x, a.y))?;
        let d = self.vertex(Point::new(a.x, b.y))?;
        Some((c, d))
    }
}
