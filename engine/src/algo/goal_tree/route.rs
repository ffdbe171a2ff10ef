//! The forward repair: A* from an agent to the goal with the tree's values as heuristic
//! (`h(v) = min(g(v), bound)`, consistent after raise-only patches; see the module docs).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use super::GoalTree;
use crate::algo::dstar_lite::nodes::CellHasher;
use crate::algo::dstar_lite::search_loop::neighbours;
use crate::algo::dstar_lite::{CHECK_EVERY, View};
use crate::grid::{Grid, Point};
use crate::query::{Limits, Stats, Status};
use crate::search::limit_hit;

/// An open-list entry: `f`, `g` and the padded cell id.
#[derive(Clone, Copy, PartialEq)]
struct Open {
    f: f64,
    g: f64,
    node: u32,
}

impl Eq for Open {}

impl Ord for Open {
    /// "Greater" pops first: smaller `f`, then larger `g` (deeper first: with near-exact
    /// estimates every cell of an optimal path ties on `f`), then smaller cell id.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .f
            .total_cmp(&self.f)
            .then(self.g.total_cmp(&other.g))
            .then(other.node.cmp(&self.node))
    }
}

impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl GoalTree {
    /// Heuristic of padded cell `n` for the forward repair.
    #[inline]
    fn estimate(&self, n: u32) -> f64 {
        if n == self.s_goal {
            0.0
        } else {
            self.nodes.g(n).min(self.bound)
        }
    }

    /// A* from `from` to the goal on `grid` with the tree's values as heuristic. Valid while
    /// no patch since the tree's last run lowered a cost (the server's order: a lowering
    /// patch settles the tree first). Returns the path (start first) when found, and the
    /// work done; `None` when no path exists or a limit stopped it (the status says which).
    pub fn route(
        &self,
        grid: &Grid,
        from: Point,
        limits: &Limits,
    ) -> (Status, Option<Vec<Point>>, Stats) {
        self.check_grid(grid);
        let flat = grid.cells();
        let cells = &View::new(grid, &flat, self.size);
        let start = grid.pidx(from) as u32;
        let mut stats = Stats::default();
        // Best known cost from the start and the parent, per reached cell.
        let mut seen: HashMap<u32, (f64, u32), std::hash::BuildHasherDefault<CellHasher>> =
            HashMap::default();
        let mut open = BinaryHeap::new();
        let h0 = self.estimate(start);
        if !h0.is_finite() {
            return (Status::NoPath, None, stats);
        }
        seen.insert(start, (0.0, u32::MAX));
        open.push(Open {
            f: h0,
            g: 0.0,
            node: start,
        });
        let max_expansions = limits.max_expansions.unwrap_or(u64::MAX);
        let mut nb = [(0u32, 0.0f64); 8];
        while let Some(Open { g, node, .. }) = open.pop() {
            if seen.get(&node).is_some_and(|&(best, _)| best < g) {
                continue; // superseded entry
            }
            if node == self.s_goal {
                let mut path = vec![grid.ppoint(node as usize)];
                let mut cur = node;
                while let Some(&(_, parent)) = seen.get(&cur) {
                    if parent == u32::MAX {
                        break;
                    }
                    cur = parent;
                    path.push(grid.ppoint(cur as usize));
                }
                path.reverse();
                return (Status::Found, Some(path), stats);
            }
            if stats.expanded >= max_expansions
                || (stats.expanded + 1) % CHECK_EVERY == 0 && limit_hit(limits).is_some()
            {
                return (Status::LimitReached, None, stats);
            }
            stats.expanded += 1;
            let k = neighbours(cells, &self.offsets, self.movement, node, &mut nb);
            for &(s, c) in &nb[..k] {
                let gs = g + c;
                if seen.get(&s).is_some_and(|&(best, _)| best <= gs) {
                    continue;
                }
                let h = self.estimate(s);
                if !h.is_finite() {
                    continue;
                }
                seen.insert(s, (gs, node));
                open.push(Open {
                    f: gs + h,
                    g: gs,
                    node: s,
                });
                stats.generated += 1;
            }
        }
        (Status::NoPath, None, stats)
    }
}
