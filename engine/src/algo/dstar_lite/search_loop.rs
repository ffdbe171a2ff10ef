//! D* Lite's policy over the LPA* core: its keys, its stop condition, and path extraction
//! and classification after each run. The reasoning behind each step is in the parent
//! module's docs and the core's ([`crate::algo::lpa`]).

use crate::clock::Instant;

use super::{DStarLite, RepairOutcome};
use crate::algo::lpa::outcome::{Baseline, classify, same_cost};
use crate::algo::lpa::{Key, Keys, Node, Run, above};
use crate::grid::{Grid, Movement, Point, distance};
use crate::query::{Stats, Status};

/// D* Lite's keys: `[min(g, rhs) + h(start, s) + km, min(g, rhs)]`, with the octile (or
/// Manhattan) distance from the start scaled by the smallest cell cost as `h`.
#[derive(Clone, Copy)]
pub(super) struct StartKeys {
    /// The start's padded coordinates.
    sx: usize,
    sy: usize,
    pw: usize,
    movement: Movement,
    scale: f64,
    km: f64,
}

impl StartKeys {
    /// The keys for a search from `start` on `grid`'s map.
    pub(super) fn new(grid: &Grid, start: Point, scale: f64, km: f64) -> Self {
        StartKeys {
            sx: start.x as usize + 1,
            sy: start.y as usize + 1,
            pw: grid.padded_width(),
            movement: grid.movement(),
            scale,
            km,
        }
    }

    /// `h(start, n)` for a padded id.
    #[inline]
    fn h(&self, n: u32) -> f64 {
        let n = n as usize;
        let dx = (n % self.pw).abs_diff(self.sx) as f64;
        let dy = (n / self.pw).abs_diff(self.sy) as f64;
        distance(self.movement, dx, dy) * self.scale
    }
}

impl Keys for StartKeys {
    #[inline]
    fn key(&self, n: u32, node: Node) -> Key {
        let m = node.min();
        Key {
            k1: m + self.h(n) + self.km,
            k2: m,
        }
    }
}

impl DStarLite {
    /// Heuristic between two points at the current scale.
    pub(super) fn h_between(&self, a: Point, b: Point) -> f64 {
        let dx = a.x.abs_diff(b.x) as f64;
        let dy = a.y.abs_diff(b.y) as f64;
        distance(self.movement, dx, dy) * self.scale
    }

    /// The keys as of the current start, scale and `km`.
    pub(super) fn keys(&self) -> StartKeys {
        StartKeys {
            sx: self.start.x as usize + 1,
            sy: self.start.y as usize + 1,
            pw: self.pw,
            movement: self.movement,
            scale: self.scale,
            km: self.km,
        }
    }

    /// ComputeShortestPath, then path extraction and classification against `before`.
    pub(super) fn run_and_finish(
        &mut self,
        grid: &Grid,
        before: Baseline,
        started: Instant,
    ) -> RepairOutcome {
        let mut stats = Stats::default();
        let status = self.compute(grid, &mut stats);
        self.pending = status != Status::Found;
        let mut old_cost_now = None;
        if let Some(old) = &before.path {
            old_cost_now = self.path_cost(grid, old);
        }
        match status {
            Status::Found => {
                let best = self.core.g(self.s_start);
                match (&before.path, old_cost_now) {
                    // Keep the old path while it is still optimal: no flip between ties.
                    (Some(old), Some(c)) if c <= best || same_cost(c, best) => {
                        self.path.clone_from(old);
                        self.cost = c;
                    }
                    _ => {
                        self.path = self.core.descend(grid, self.s_start, "D* Lite");
                        self.cost = self
                            .path_cost(grid, &self.path)
                            .expect("the greedy descent only takes legal steps");
                    }
                }
            }
            _ => {
                self.path.clear();
                self.cost = 0.0;
            }
        }
        self.status = status;
        self.core.compact(&self.keys());
        self.core.trim_repaired();
        let (change, path_changed, cost_changed) =
            classify(&before, old_cost_now, status, &self.path, self.cost);
        stats.elapsed = started.elapsed();
        RepairOutcome {
            status,
            change,
            path_changed,
            cost_changed,
            stats,
        }
    }

    /// The core's loop with D* Lite's stop condition: the start is consistent and every
    /// queued key is above its key `g(start) + km` (`h(start, start) = 0`), with slack.
    pub(super) fn compute(&mut self, grid: &Grid, stats: &mut Stats) -> Status {
        // Disconnected (or a walled start/goal): answer from the components instead of
        // flooding the goal's component; the state stays valid and resumes later.
        if !grid.same_component(self.start, self.goal) {
            return Status::NoPath;
        }
        // Likewise when a patch left a sized agent's footprint no room at either end.
        if self.size > 1 {
            let clr = grid.clearance();
            if !clr.fits(self.start, self.size) || !clr.fits(self.goal, self.size) {
                return Status::NoPath;
            }
        }
        let (s_start, km) = (self.s_start, self.km);
        let stop = |core: &crate::algo::lpa::Lpa, top: Key| {
            let st = core.node(s_start);
            st.consistent() && above(top.k1, st.g + km)
        };
        let keys = self.keys();
        match self.core.compute(grid, &keys, &self.limits, stop, stats) {
            Run::Limit => Status::LimitReached,
            Run::Done if self.core.g(self.s_start).is_finite() => Status::Found,
            Run::Done => Status::NoPath,
        }
    }
}
