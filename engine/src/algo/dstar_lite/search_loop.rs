//! The search loop of [`DStarLite`]: keys, vertex updates, ComputeShortestPath and path
//! extraction. The reasoning behind each step is in the parent module's docs.

use crate::clock::Instant;

use super::nodes::Node;
use super::outcome::{Baseline, classify, same_cost};
use super::queue::Key;
use super::{CHECK_EVERY, DStarLite, INF, RepairOutcome, STOP_SLACK, View};
use crate::grid::{Grid, Movement, Point, distance, moves};
use crate::query::{LimitKind, Stats, Status};
use crate::search::limit_hit;

impl DStarLite {
    /// Heuristic between two points at the current scale.
    pub(super) fn h_between(&self, a: Point, b: Point) -> f64 {
        let dx = a.x.abs_diff(b.x) as f64;
        let dy = a.y.abs_diff(b.y) as f64;
        distance(self.movement, dx, dy) * self.scale
    }

    /// `h(start, n)` for a padded id.
    #[inline]
    pub(super) fn h(&self, n: u32) -> f64 {
        let n = n as usize;
        let sx = self.start.x as usize + 1;
        let sy = self.start.y as usize + 1;
        let dx = (n % self.pw).abs_diff(sx) as f64;
        let dy = (n / self.pw).abs_diff(sy) as f64;
        distance(self.movement, dx, dy) * self.scale
    }

    #[inline]
    pub(super) fn key(&self, n: u32, node: Node) -> Key {
        let m = node.min();
        Key {
            k1: m + self.h(n) + self.km,
            k2: m,
        }
    }

    /// Stores `new` for `n` (previously `old`) and keeps the queue invariant: an
    /// inconsistent vertex whose `min(g, rhs)` changed (or that just became inconsistent)
    /// gets a fresh entry.
    #[inline]
    pub(super) fn write(&mut self, n: u32, old: Node, new: Node, stats: &mut Stats) {
        self.nodes.put(n, new);
        self.repaired.push(n);
        if !new.consistent() && (old.consistent() || old.min() != new.min()) {
            self.open.push(self.key(n, new), n);
            stats.generated += 1;
        }
    }

    /// `min over neighbours s' of c(n, s') + g(s')` on the current grid.
    #[inline]
    pub(super) fn best_rhs(&self, cells: &View<'_>, n: u32) -> f64 {
        let mut nb = [(0u32, 0.0f64); 8];
        let k = self.neighbours(cells, n, &mut nb);
        nb[..k]
            .iter()
            .map(|&(s, c)| c + self.nodes.g(s))
            .fold(INF, f64::min)
    }

    /// Legal moves from `n` with their costs, in direction order; none from a wall.
    #[inline]
    pub(super) fn neighbours(&self, cells: &View<'_>, n: u32, out: &mut [(u32, f64); 8]) -> usize {
        neighbours(cells, &self.offsets, self.movement, n, out)
    }

    /// Rebuilds the queue with one fresh key per inconsistent vertex.
    pub(super) fn rebuild_queue(&mut self) {
        for n in self.open.drain_cells() {
            let node = self.nodes.get(n);
            if !node.consistent() {
                self.open.push(self.key(n, node), n);
            }
        }
        self.open.mark_rebuilt();
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
                let best = self.nodes.g(self.s_start);
                match (&before.path, old_cost_now) {
                    // Keep the old path while it is still optimal: no flip between ties.
                    (Some(old), Some(c)) if c <= best || same_cost(c, best) => {
                        self.path.clone_from(old);
                        self.cost = c;
                    }
                    _ => {
                        self.path = self.extract(grid);
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
        if self.open.should_compact() {
            self.rebuild_queue();
        }
        // A big repair must not pin its peak memory for the calls after it.
        if self.repaired.capacity() > 1 << 16 && self.repaired.len() < self.repaired.capacity() / 4
        {
            self.repaired.shrink_to(self.repaired.len());
        }
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

    /// The main loop (the paper's ComputeShortestPath, optimised version, lazy queue).
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
        let flat = grid.cells();
        let cells = &self.view(grid, &flat);
        let max_expansions = self.limits.max_expansions.unwrap_or(u64::MAX);
        let mut nb = [(0u32, 0.0f64); 8];
        let mut iterations = 0u64;
        // Step 1: the best live entry; consistent vertices are not in U (lazy delete).
        while let Some(top) = self.open.peek() {
            let u = top.node;
            let nu = self.nodes.get(u);
            if nu.consistent() {
                self.open.pop();
                continue;
            }
            // Step 2: stop when the start is settled and every queued key is above its key
            // (with slack, see module docs). h(start, start) = 0.
            let st = self.nodes.get(self.s_start);
            if st.consistent() {
                let ks = st.g + self.km;
                if top.key().k1 > ks + STOP_SLACK * (1.0 + ks) {
                    break;
                }
            }
            // Step 3: limits, before the work they bound. The state is valid at any point,
            // so an interrupted search resumes later.
            if stats.expanded >= max_expansions {
                return Status::LimitReached;
            }
            iterations += 1;
            if iterations % CHECK_EVERY == 0 {
                if let Some(kind) = limit_hit(&self.limits) {
                    debug_assert!(matches!(kind, LimitKind::Cancelled | LimitKind::Deadline));
                    return Status::LimitReached;
                }
            }
            self.open.pop();
            // Step 4: a key computed before the start moved is a lower bound: re-queue.
            let k_new = self.key(u, nu);
            if top.key().less(k_new) {
                self.open.push(k_new, u);
                stats.generated += 1;
                continue;
            }
            stats.expanded += 1;
            let k = self.neighbours(cells, u, &mut nb);
            if nu.g > nu.rhs {
                // Step 5a: overconsistent: g drops to rhs (now final), and every neighbour
                // may reach the goal more cheaply through u.
                let gu = nu.rhs;
                self.nodes.put(u, Node { g: gu, rhs: gu });
                self.repaired.push(u);
                for &(s, c) in &nb[..k] {
                    if s == self.s_goal {
                        continue;
                    }
                    let old = self.nodes.get(s);
                    let via = c + gu;
                    if via < old.rhs {
                        self.write(s, old, Node { g: old.g, rhs: via }, stats);
                    }
                }
            } else {
                // Step 5b: underconsistent: g was too low (a cost rose). Raise it to
                // infinity; neighbours whose rhs came through u recompute theirs; u is
                // re-queued at its rhs if that is finite.
                stats.reopened += 1;
                let g_old = nu.g;
                self.write(
                    u,
                    nu,
                    Node {
                        g: INF,
                        rhs: nu.rhs,
                    },
                    stats,
                );
                for &(s, c) in &nb[..k] {
                    if s == self.s_goal {
                        continue;
                    }
                    let old = self.nodes.get(s);
                    if old.rhs == c + g_old {
                        let rhs = self.best_rhs(cells, s);
                        self.write(s, old, Node { g: old.g, rhs }, stats);
                    }
                }
            }
        }
        if self.nodes.g(self.s_start).is_finite() {
            Status::Found
        } else {
            Status::NoPath
        }
    }

    /// Greedy descent from the start: always the neighbour with the smallest `c + g`
    /// (first in direction order on ties, see [`descent_step`]). `g` strictly drops along it (every step costs at
    /// least 1), so it ends at the goal.
    pub(super) fn extract(&self, grid: &Grid) -> Vec<Point> {
        let flat = grid.cells();
        let cells = &self.view(grid, &flat);
        let mut nb = [(0u32, 0.0f64); 8];
        let mut path = vec![self.start];
        let mut cur = self.s_start;
        while cur != self.s_goal {
            let k = self.neighbours(cells, cur, &mut nb);
            let next = descent_step(&nb[..k], |s| self.nodes.g(s));
            assert!(
                next.is_some() && path.len() <= self.nodes.len(),
                "D* Lite invariant broken: no descent from {}",
                grid.ppoint(cur as usize)
            );
            cur = next.expect("checked").0;
            path.push(grid.ppoint(cur as usize));
        }
        path
    }
}

/// Legal moves from `n` with their costs, in direction order; none from a wall.
#[inline]
pub(crate) fn neighbours(
    cells: &View<'_>,
    offsets: &[isize; 8],
    movement: Movement,
    n: u32,
    out: &mut [(u32, f64); 8],
) -> usize {
    let u = n as usize;
    let cu = cells.cost(u);
    if cu == 0 {
        return 0;
    }
    let octile = movement == Movement::Octile;
    moves(offsets, octile, u, cu, 0.0, |m| cells.cost(m), out)
}

/// The step a greedy descent takes from a vertex whose neighbours and step costs are `nb`
/// (direction order), given every neighbour's cost to the goal `g`: the first neighbour whose
/// `c + g` is the smallest up to a relative 2^-36 ([`crate::search::IMPROVES_BY`]), with
/// that sum; `None` when no neighbour reaches the goal.
///
/// Why a margin: two sums of equal true cost can round one ulp apart, depending on the order
/// a search happened to add their steps in, and a strict `<` would then follow the rounding.
/// With the margin the choice depends on the true costs only (the argument of
/// `IMPROVES_BY`'s docs: rounding stays far below it, true differences far above it), so any
/// two searches that hold the same exact costs descend along the same path: D* Lite, and
/// the goal trees shared by several agents, which grow in another order.
pub(crate) fn descent_step(nb: &[(u32, f64)], g: impl Fn(u32) -> f64) -> Option<(u32, f64)> {
    let min = nb.iter().map(|&(s, c)| c + g(s)).fold(INF, f64::min);
    if !min.is_finite() {
        return None;
    }
    let tie = min + min * crate::search::IMPROVES_BY;
    nb.iter()
        .map(|&(s, c)| (s, c + g(s)))
        .find(|&(_, v)| v <= tie)
}
