//! Heuristics: the [`Estimate`] a search is guided by, and the grid's [`Heuristic`] to a
//! fixed goal.

use crate::grid::{Grid, Movement, Point, distance};

/// A heuristic: an estimate of the cost from a node to the goal (admissible and consistent
/// for the optimal searches).
pub(crate) trait Estimate {
    fn h(&self, node: u32) -> f64;

    /// The open list's tie-break value of `node` reached with cost `g`: among equal `f`,
    /// larger first. `g` (the documented order) but for a lesson's [`lesson::Lesson`]
    /// ([`crate::query::TieBreak`]). Non-negative.
    #[inline]
    fn tie(&self, _node: u32, g: f64) -> f64 {
        g
    }
}

/// `h = 0`, for a Dijkstra that has no single goal.
pub(crate) struct Zero;

impl Estimate for Zero {
    #[inline]
    fn h(&self, _node: u32) -> f64 {
        0.0
    }
}

impl Estimate for Heuristic {
    #[inline]
    fn h(&self, node: u32) -> f64 {
        Heuristic::h(self, node)
    }
}

/// Heuristic to a fixed goal, in padded-index space.
///
/// Node ids are padded indices, so the heuristic needs `(id % pw, id / pw)`. A hardware
/// division costs tens of cycles per call; Lemire's multiply-shift division by a constant
/// (`m = u64::MAX / pw + 1`, exact for every 32-bit dividend) costs one wide multiplication.
#[derive(Clone, Copy)]
pub(crate) struct Heuristic {
    pub(super) gx: f64,
    pub(super) gy: f64,
    pw: u32,
    magic: u64,
    pub(super) scale: f64,
    kind: HKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum HKind {
    Octile,
    Manhattan,
    Euclidean,
}

impl Heuristic {
    /// The map's admissible heuristic towards `goal`.
    pub(crate) fn new(grid: &Grid, goal: Point) -> Self {
        let pw = grid.padded_width();
        Self::padded(pw, grid.pidx(goal) as u32, grid.movement(), grid.min_cost())
    }

    /// The admissible heuristic towards node `goal` of a padded array `pw` cells wide
    /// (the map's, or one cluster's), for cells costing at least `min_cost`.
    pub(crate) fn padded(pw: usize, goal: u32, movement: Movement, min_cost: u8) -> Self {
        let pw = pw as u32;
        Heuristic {
            gx: (goal % pw) as f64,
            gy: (goal / pw) as f64,
            pw,
            magic: u64::MAX / pw as u64 + 1,
            scale: min_cost as f64,
            kind: match movement {
                Movement::Octile => HKind::Octile,
                Movement::Cardinal => HKind::Manhattan,
            },
        }
    }

    /// Euclidean-distance variant (for any-angle searches, whose steps are straight lines).
    pub(crate) fn euclidean(grid: &Grid, goal: Point) -> Self {
        Heuristic {
            kind: HKind::Euclidean,
            ..Self::new(grid, goal)
        }
    }

    /// Padded `(x, y)` of a node id.
    #[inline]
    pub(crate) fn coords(&self, node: u32) -> (u32, u32) {
        let y = ((self.magic as u128 * node as u128) >> 64) as u32;
        (node - y * self.pw, y)
    }

    #[inline]
    pub(crate) fn h(&self, node: u32) -> f64 {
        let (x, y) = self.coords(node);
        let dx = (x as f64 - self.gx).abs();
        let dy = (y as f64 - self.gy).abs();
        let d = match self.kind {
            HKind::Octile => distance(Movement::Octile, dx, dy),
            HKind::Manhattan => dx + dy,
            HKind::Euclidean => (dx * dx + dy * dy).sqrt(),
        };
        d * self.scale
    }
}
