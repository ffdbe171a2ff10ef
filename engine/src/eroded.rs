//! A map as a `k x k` agent sees it: the *eroded* map, on which JPS and HPA* serve sized
//! queries unchanged.
//!
//! An anchor (the agent's top-left cell) is open on the eroded map exactly when the agent
//! fits there (its true clearance is at least `k`: the whole `k x k` square is passable),
//! and keeps the cell's own cost. A one-cell agent's moves on that map are the sized
//! agent's moves on the real one: the same move rule (a diagonal needs both orthogonal
//! anchors open, the Moving AI no-corner-cutting rule applied to the footprint) at the same
//! step costs ([`crate::algo::sized`] searches exactly this graph without building it). So
//! any search for a one-cell agent, run on the eroded map, answers the sized query with the
//! same guarantees: JPS stays optimal, HPA* stays within its bound, and a path's cells are
//! the footprint's anchors.
//!
//! [`Eroded::update`] derives the next version's view from a patch of the real map: a
//! changed cell only changes whether the agent fits at the anchors whose square holds it,
//! those up to `k - 1` cells up and left of it, so the eroded map takes a patch of at most
//! `k^2` cells per changed cell, and its changed anchors are what an HPA* abstraction built
//! on it needs for its own update.

use crate::grid::{Grid, Point};
use crate::patch::Patch;

/// The eroded map of one map version for one agent size (module docs).
#[derive(Clone, Debug)]
pub struct Eroded {
    size: u32,
    grid: Grid,
}

impl Eroded {
    /// The view of `grid` for a `size x size` agent (`size >= 1`). `O(cells)`.
    ///
    /// ```
    /// use pathd_engine::{Eroded, Grid, Movement, Point};
    /// // A one-cell gap in a wall: open for one cell, shut for a 2x2 agent.
    /// let grid = Grid::from_costs(3, 3, vec![1, 1, 1, 0, 1, 0, 1, 1, 1], Movement::Octile).unwrap();
    /// assert!(Eroded::build(&grid, 1).grid().is_passable(Point::new(1, 1)));
    /// let two = Eroded::build(&grid, 2);
    /// assert!(!two.grid().is_passable(Point::new(0, 0)) && !two.grid().is_passable(Point::new(1, 1)));
    /// ```
    pub fn build(grid: &Grid, size: u32) -> Eroded {
        assert!(size >= 1, "an agent is at least one cell wide");
        let (w, h) = (grid.width(), grid.height());
        let clearance = grid.clearance();
        let costs = (0..h)
            .flat_map(|y| (0..w).map(move |x| Point::new(x, y)))
            .map(|p| {
                if clearance.fits(p, size) {
                    grid.cost(p)
                } else {
                    0
                }
            })
            .collect();
        let eroded =
            Grid::from_costs(w, h, costs, grid.movement()).expect("same size as a valid grid");
        Eroded { size, grid: eroded }
    }

    /// The agent side this view is for.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The eroded map.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Whether this view can serve `grid` (same size and movement rule; being derived from
    /// this very version is the caller's business, as for HPA* and JPS+).
    pub fn fits(&self, grid: &Grid) -> bool {
        grid.width() == self.grid.width()
            && grid.height() == self.grid.height()
            && grid.movement() == self.grid.movement()
    }

    /// Heap bytes the view holds, about: its grid's padded cells and component labels
    /// (other derived data is built on first use).
    pub fn memory_bytes(&self) -> usize {
        self.grid.padded_len() * (1 + size_of::<u32>())
    }

    /// The view of `grid`, a later version of the map this view was built for whose cells
    /// differ at most at `changed`, and the anchors whose eroded cost changed. Equal to
    /// [`Eroded::build`]`(grid, size)`.
    ///
    /// ```
    /// use pathd_engine::{Eroded, Grid, Movement, Patch, Point};
    /// let grid = Grid::from_costs(6, 6, vec![1; 36], Movement::Octile).unwrap();
    /// let view = Eroded::build(&grid, 2);
    /// let patch = Patch { cells: vec![(Point::new(3, 3), 0)], rects: vec![] };
    /// let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
    /// let (updated, anchors) = view.update(&next, &changed);
    /// assert_eq!(anchors.len(), 4); // the squares anchored at (2..=3, 2..=3) hold (3, 3)
    /// assert_eq!(updated.grid().costs(), Eroded::build(&next, 2).grid().costs());
    /// ```
    pub fn update(&self, grid: &Grid, changed: &[Point]) -> (Eroded, Vec<Point>) {
        assert!(
            self.fits(grid),
            "an eroded view updates only for its own map"
        );
        let k = self.size;
        let map_cells = grid.width() as usize * grid.height() as usize;
        if changed.len().saturating_mul((k * k) as usize) > map_cells {
            // A patch over much of the map: rebuilding is cheaper than k^2 anchors a cell.
            let fresh = Eroded::build(grid, k);
            let anchors = (0..grid.height())
                .flat_map(|y| (0..grid.width()).map(move |x| Point::new(x, y)))
                .filter(|&p| fresh.grid.cost(p) != self.grid.cost(p))
                .collect();
            return (fresh, anchors);
        }
        let clearance = grid.clearance();
        let mut cells = Vec::new();
        for &c in changed {
            for y in c.y.saturating_sub(k - 1)..=c.y {
                for x in c.x.saturating_sub(k - 1)..=c.x {
                    let p = Point::new(x, y);
                    let cost = if clearance.fits(p, k) {
                        grid.cost(p)
                    } else {
                        0
                    };
                    if cost != self.grid.cost(p) {
                        cells.push((p, cost));
                    }
                }
            }
        }
        let patch = Patch {
            cells,
            rects: vec![],
        };
        match self
            .grid
            .apply_patch(&patch)
            .expect("anchors lie on the map")
        {
            Some((next, anchors)) => (
                Eroded {
                    size: k,
                    grid: next,
                },
                anchors,
            ),
            None => (self.clone(), Vec::new()),
        }
    }
}
