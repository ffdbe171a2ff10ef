//! The lessons' heuristics and tie-breaks ([`crate::query::HeuristicKind`],
//! [`crate::query::TieBreak`]): an [`Estimate`] for A*, Dijkstra and weighted A* that the
//! default searches never instantiate (they keep [`Heuristic`], the map's matched one).

use super::{Estimate, Heuristic};
use crate::grid::{Grid, Movement, Point, distance};
use crate::query::{HeuristicKind, TieBreak};

/// A lesson's heuristic towards a goal, and its tie-break.
pub(crate) struct Lesson {
    /// For node coordinates, the goal and the cost scale (and the default kind).
    base: Heuristic,
    kind: HeuristicKind,
    tie: TieBreak,
    /// Start minus goal, padded coordinates (for the cross product).
    sdx: f64,
    sdy: f64,
}

impl Lesson {
    /// `kind` (the map's own when `None`) towards `goal`, ties broken by `tie`, for a
    /// search from `start`.
    pub(crate) fn new(
        grid: &Grid,
        start: Point,
        goal: Point,
        kind: Option<HeuristicKind>,
        tie: TieBreak,
    ) -> Self {
        let base = Heuristic::new(grid, goal);
        let kind = kind.unwrap_or(match grid.movement() {
            Movement::Octile => HeuristicKind::Octile,
            Movement::Cardinal => HeuristicKind::Manhattan,
        });
        Lesson {
            base,
            kind,
            tie,
            sdx: (start.x + 1) as f64 - base.gx,
            sdy: (start.y + 1) as f64 - base.gy,
        }
    }

    /// `|cross product|` of (node - goal) and (start - goal): how far the node lies off the
    /// start-goal line (times that line's length).
    #[inline]
    fn cross(&self, node: u32) -> f64 {
        let (x, y) = self.base.coords(node);
        let dx = x as f64 - self.base.gx;
        let dy = y as f64 - self.base.gy;
        (dx * self.sdy - self.sdx * dy).abs()
    }
}

impl Estimate for Lesson {
    #[inline]
    fn h(&self, node: u32) -> f64 {
        let (x, y) = self.base.coords(node);
        let dx = (x as f64 - self.base.gx).abs();
        let dy = (y as f64 - self.base.gy).abs();
        let d = match self.kind {
            HeuristicKind::Octile => distance(Movement::Octile, dx, dy),
            HeuristicKind::Manhattan => dx + dy,
            HeuristicKind::Euclidean => (dx * dx + dy * dy).sqrt(),
            HeuristicKind::Chebyshev => dx.max(dy),
            HeuristicKind::Zero => 0.0,
        };
        d * self.base.scale
    }

    #[inline]
    fn tie(&self, node: u32, g: f64) -> f64 {
        match self.tie {
            TieBreak::HighG | TieBreak::Epsilon => g,
            // Every equal-f node ties: the heap's last key, the node index, decides.
            TieBreak::None => 0.0,
            // Larger first: the nearer the line, the larger. (The heap keeps the value at
            // f32 precision; equal crosses then fall to the node index.)
            TieBreak::CrossProduct => 1.0 / (1.0 + self.cross(node)),
        }
    }
}
