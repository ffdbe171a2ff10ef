//! The incremental core shared by D* Lite ([`crate::DStarLite`]) and the goal trees
//! ([`crate::GoalTree`]): Lifelong Planning A* (Koenig, Likhachev & Furcy 2004) run *from a
//! root* (the goal), owned once.
//!
//! # What the core owns
//!
//! [`Lpa`] holds the per-vertex `g` (cost-to-root estimate) and `rhs` (its one-step
//! lookahead, `min over neighbours s' of c(s, s') + g(s')`, 0 at the root) in a sparse
//! store, the queue `U` of the inconsistent vertices (`g != rhs`), and the record of which
//! vertices a call wrote. Its operations are the paper's: `UpdateVertex` (a write that keeps
//! the queue invariant), the edge-change step after a patch ([`Lpa::patch`]) and
//! `ComputeShortestPath` ([`Lpa::compute`]). Nothing else reads or writes that state; the
//! users read `g` and the queue's smallest key through methods.
//!
//! # What a user brings
//!
//! - Its keys ([`Keys`]): D* Lite's `[min(g, rhs) + h(start, s) + km, min(g, rhs)]`, the
//!   goal tree's `[min(g, rhs), min(g, rhs)]` (no heuristic: the tree grows in Dijkstra
//!   order and serves every start). Both are lexicographic with `k2 = min(g, rhs)`, so one
//!   queue and one loop serve both; keys computed before a D* Lite start moved are lower
//!   bounds, which the loop handles by re-pushing an entry found below its true key.
//! - Its stop condition, a parameter of [`Lpa::compute`]: D* Lite stops when the start is
//!   consistent and no queued key is below the start's (`g(start) + km`); a goal tree when
//!   every vertex up to a cost floor, and optionally one needed start, is settled.
//! - Its policy around the loop: connectivity checks, the start and `km` (D* Lite), the
//!   bound, staleness and agents (goal trees), path keeping and change classification.
//!
//! # Which vertices a changed cell touches
//!
//! A step costs `step * (c(a) + c(b)) / 2`, so a new cost at cell `c` changes every edge
//! incident to `c`; under the octile rule it also changes the *diagonals between two
//! cardinal neighbours of `c`* that pass `c`'s corner (a wall at `c` forbids them, opening
//! `c` allows them). Both kinds of edge have both ends in `c` plus its 8 neighbours, so
//! recomputing rhs on that set, with the new grid, is exact, for walls, openings and cost
//! changes in either direction alike.
//!
//! # Exactness with floating-point costs
//!
//! Costs are sums of `f64` steps, so mathematically tied keys can differ in the last bits.
//! The stop conditions therefore compare with a relative slack of [`STOP_SLACK`]: every
//! vertex on an optimal path from the vertices of interest has then been settled, and
//! following the cheapest `c + g` neighbour ([`graph::descent_step`]) never steps onto a
//! stale value.

pub(crate) mod graph;
pub(crate) mod nodes;
pub(crate) mod outcome;
pub(crate) mod queue;

use crate::grid::{Grid, Movement, Point};
use crate::query::{Limits, Stats};
use crate::search::limit_hit;

use graph::{View, descent_step, edge_ends, neighbours};
pub(crate) use nodes::Node;
use nodes::Nodes;
pub(crate) use queue::Key;
use queue::Queue;

pub(crate) const INF: f64 = f64::INFINITY;

/// Check the clock and the cancellation flag every this many loop iterations.
pub(crate) const CHECK_EVERY: u64 = 256;

/// Relative slack of the stopping tests (see "Exactness" above). Rounding in a sum of `n`
/// steps is about `n * 1e-16` relative; real cost differences are far above `1e-10`.
pub(crate) const STOP_SLACK: f64 = 1e-10;

/// `a > b` by more than the relative [`STOP_SLACK`] of `b`.
#[inline]
pub(crate) fn above(a: f64, b: f64) -> bool {
    a > b + STOP_SLACK * (1.0 + b)
}

/// A user's keys: the queue order of vertex `n` holding `node`.
pub(crate) trait Keys {
    fn key(&self, n: u32, node: Node) -> Key;
}

/// How [`Lpa::compute`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Run {
    /// The stop condition held, or the queue ran empty.
    Done,
    /// `max_expansions`, the deadline or the cancellation flag stopped it; the state is valid
    /// and a later call continues.
    Limit,
}

/// The incremental search state rooted at one vertex (see the module docs).
#[derive(Clone)]
pub(crate) struct Lpa {
    movement: Movement,
    /// Neighbour offsets (padded ids) of the grids this search runs on.
    offsets: [isize; 8],
    /// Padded id of the root (the goal): `rhs = 0` there, and no edge relaxes into it.
    root: u32,
    /// Agent side in cells: anchors whose clearance is below it count as walls.
    size: u32,
    nodes: Nodes,
    open: Queue,
    /// Padded ids of the vertices whose `g` or `rhs` changed since [`Self::clear_repaired`]:
    /// appended by every write (repeats included).
    repaired: Vec<u32>,
}

impl Lpa {
    /// A search rooted at `root` (already checked) for a `size x size` agent: the root
    /// queued with `rhs = 0`, nothing else touched.
    pub fn new(grid: &Grid, root: Point, size: u32, keys: &impl Keys) -> Self {
        let mut lpa = Lpa {
            movement: grid.movement(),
            offsets: grid.offsets(),
            root: grid.pidx(root) as u32,
            size,
            nodes: Nodes::new(grid.padded_width()),
            open: Queue::default(),
            repaired: Vec::new(),
        };
        let root = lpa.root;
        let node = Node { g: INF, rhs: 0.0 };
        lpa.write(root, Node::UNSEEN, node, keys, &mut Stats::default());
        lpa
    }

    /// `g` of vertex `n` (infinity where untouched).
    #[inline]
    pub fn g(&self, n: u32) -> f64 {
        self.nodes.g(n)
    }

    /// `g` and `rhs` of vertex `n`.
    #[inline]
    pub fn node(&self, n: u32) -> Node {
        self.nodes.get(n)
    }

    /// Neighbour offsets of the map's padded ids.
    pub fn offsets(&self) -> &[isize; 8] {
        &self.offsets
    }

    /// Cells with a finite `g` or `rhs`.
    pub fn touched(&self) -> usize {
        self.nodes.len()
    }

    /// Queue entries, stale ones included.
    pub fn queued(&self) -> usize {
        self.open.len()
    }

    /// Inclusive box, in map coordinates, of every cell that ever had a finite value.
    pub fn bounds(&self) -> Option<(Point, Point)> {
        self.nodes.bounds()
    }

    /// Heap bytes held: vertex store, queue and the record of written vertices.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.heap_bytes()
            + self.open.heap_bytes()
            + self.repaired.capacity() * std::mem::size_of::<u32>()
    }

    /// The view of `grid` (whose padded cost array is `cells`) for this search's agent.
    pub fn view<'a>(&self, grid: &'a Grid, cells: &'a [u8]) -> View<'a> {
        View::new(grid, cells, self.size)
    }

    /// Legal moves from `n` with their costs, in direction order; none from a wall.
    #[inline]
    pub fn neighbours(&self, cells: &View<'_>, n: u32, out: &mut [(u32, f64); 8]) -> usize {
        neighbours(cells, &self.offsets, self.movement, n, out)
    }

    // ---- the record of written vertices ----

    /// The vertices written since the last [`Self::clear_repaired`] (repeats included, or
    /// as [`Self::seal_repaired`] left them).
    pub fn repaired(&self) -> &[u32] {
        &self.repaired
    }

    /// Starts a new record (keeps the allocation).
    pub fn clear_repaired(&mut self) {
        self.repaired.clear();
    }

    /// Starts a new record and frees the old one's memory (after a large first search).
    pub fn forget_repaired(&mut self) {
        self.repaired = Vec::new();
    }

    /// Sorts and deduplicates the record, keeps its first `keep` vertices and returns how
    /// many distinct ones there were.
    pub fn seal_repaired(&mut self, keep: usize) -> usize {
        self.repaired.sort_unstable();
        self.repaired.dedup();
        let count = self.repaired.len();
        self.repaired.truncate(keep);
        if self.repaired.capacity() > 2 * keep {
            self.repaired.shrink_to_fit();
        }
        count
    }

    /// Frees most of the record's memory when a big call left it mostly unused: a big
    /// repair must not pin its peak memory for the calls after it.
    pub fn trim_repaired(&mut self) {
        let r = &mut self.repaired;
        if r.capacity() > 1 << 16 && r.len() < r.capacity() / 4 {
            r.shrink_to(r.len());
        }
    }

    // ---- the algorithm ----

    /// `UpdateVertex`: stores `new` for `n` (previously `old`) and keeps the queue
    /// invariant: an inconsistent vertex whose `min(g, rhs)` changed (or that just became
    /// inconsistent) gets a fresh entry (the queue's lazy deletion, see [`queue`]).
    #[inline]
    fn write(&mut self, n: u32, old: Node, new: Node, keys: &impl Keys, stats: &mut Stats) {
        self.nodes.put(n, new);
        self.repaired.push(n);
        if !new.consistent() && (old.consistent() || old.min() != new.min()) {
            self.open.push(keys.key(n, new), n);
            stats.generated += 1;
        }
    }

    /// `min over neighbours s' of c(n, s') + g(s')` on the current grid.
    #[inline]
    fn best_rhs(&self, cells: &View<'_>, n: u32) -> f64 {
        let mut nb = [(0u32, 0.0f64); 8];
        let k = self.neighbours(cells, n, &mut nb);
        nb[..k]
            .iter()
            .map(|&(s, c)| c + self.nodes.g(s))
            .fold(INF, f64::min)
    }

    /// The edge-change step after a patch: `anchors` are the cells whose cost changed for
    /// the agent ([`graph::changed_anchors`]) on the new `grid`. Every changed edge has both
    /// ends in one of them or its 8 neighbours (module docs), so recomputing `rhs` there is
    /// the whole step. Returns whether any `rhs` changed.
    pub fn patch(
        &mut self,
        grid: &Grid,
        anchors: &[Point],
        keys: &impl Keys,
        stats: &mut Stats,
    ) -> bool {
        let touched = edge_ends(grid, &self.offsets, anchors);
        let flat = grid.cells();
        let cells = &self.view(grid, &flat);
        let mut wrote = false;
        for v in touched {
            let old = self.nodes.get(v);
            let rhs = if v == self.root {
                0.0
            } else {
                self.best_rhs(cells, v)
            };
            if rhs != old.rhs {
                self.write(v, old, Node { g: old.g, rhs }, keys, stats);
                wrote = true;
            }
        }
        wrote
    }

    /// The smallest key of a live queue entry (stale entries dropped on the way).
    pub fn top_key(&mut self) -> Option<Key> {
        while let Some((key, node)) = self.open.peek() {
            if self.nodes.get(node).consistent() {
                self.open.pop();
                continue;
            }
            return Some(key);
        }
        None
    }

    /// `ComputeShortestPath` (the optimised version, lazy queue): expands the smallest
    /// queued vertex until `stop(self, smallest live key)` holds or the queue is empty, or a
    /// limit of `limits` stops it (`max_expansions` counts this call's expansions).
    pub fn compute<K: Keys>(
        &mut self,
        grid: &Grid,
        keys: &K,
        limits: &Limits,
        mut stop: impl FnMut(&Self, Key) -> bool,
        stats: &mut Stats,
    ) -> Run {
        let flat = grid.cells();
        let cells = &self.view(grid, &flat);
        let max_expansions = limits.max_expansions.unwrap_or(u64::MAX);
        let mut nb = [(0u32, 0.0f64); 8];
        let mut iterations = 0u64;
        // Step 1: the best live entry; consistent vertices are not in U (lazy delete).
        while let Some(top) = self.top_key() {
            // Step 2: the user's stop condition.
            if stop(self, top) {
                break;
            }
            // Step 3: limits, before the work they bound. The state is valid at any point,
            // so an interrupted search resumes later.
            if stats.expanded >= max_expansions {
                return Run::Limit;
            }
            iterations += 1;
            if iterations % CHECK_EVERY == 0 && limit_hit(limits).is_some() {
                return Run::Limit;
            }
            let (_, u) = self.open.pop().expect("top_key saw an entry");
            let nu = self.nodes.get(u);
            // Step 4: an entry below the vertex's key (pushed before a D* Lite start moved,
            // or before its min rose) is re-queued at its key: expanding out of key order
            // would break the termination guarantee.
            let k_now = keys.key(u, nu);
            if top.less(k_now) {
                self.open.push(k_now, u);
                stats.generated += 1;
                continue;
            }
            stats.expanded += 1;
            let k = self.neighbours(cells, u, &mut nb);
            if nu.g > nu.rhs {
                // Step 5a: overconsistent: g drops to rhs (now final), and every neighbour
                // may reach the root more cheaply through u.
                let gu = nu.rhs;
                self.nodes.put(u, Node { g: gu, rhs: gu });
                self.repaired.push(u);
                for &(s, c) in &nb[..k] {
                    if s == self.root {
                        continue;
                    }
                    let old = self.nodes.get(s);
                    let via = c + gu;
                    if via < old.rhs {
                        self.write(s, old, Node { g: old.g, rhs: via }, keys, stats);
                    }
                }
            } else {
                // Step 5b: underconsistent: g was too low (a cost rose). Raise it to
                // infinity; neighbours whose rhs came through u recompute theirs; u is
                // re-queued at its rhs if that is finite.
                stats.reopened += 1;
                let g_old = nu.g;
                let raised = Node {
                    g: INF,
                    rhs: nu.rhs,
                };
                self.write(u, nu, raised, keys, stats);
                for &(s, c) in &nb[..k] {
                    if s == self.root {
                        continue;
                    }
                    let old = self.nodes.get(s);
                    if old.rhs == c + g_old {
                        let rhs = self.best_rhs(cells, s);
                        self.write(s, old, Node { g: old.g, rhs }, keys, stats);
                    }
                }
            }
        }
        Run::Done
    }

    /// Rebuilds the queue with one fresh key per inconsistent vertex (after the keys
    /// changed, or to drop stale entries).
    pub fn rebuild_queue(&mut self, keys: &impl Keys) {
        for n in self.open.drain_cells() {
            let node = self.nodes.get(n);
            if !node.consistent() {
                self.open.push(keys.key(n, node), n);
            }
        }
        self.open.mark_rebuilt();
    }

    /// [`Self::rebuild_queue`] when stale entries probably outnumber live ones.
    pub fn compact(&mut self, keys: &impl Keys) {
        if self.open.should_compact() {
            self.rebuild_queue(keys);
        }
    }

    /// Greedy descent from `from` (settled) to the root: always the neighbour with the
    /// smallest `c + g`, first in direction order on ties ([`descent_step`]). `g` strictly
    /// drops along it (every step costs at least 1), so it ends at the root. `who` names
    /// the user in the panic on a broken invariant.
    pub fn descend(&self, grid: &Grid, from: u32, who: &str) -> Vec<Point> {
        let flat = grid.cells();
        let cells = &self.view(grid, &flat);
        let mut nb = [(0u32, 0.0f64); 8];
        let mut path = vec![grid.ppoint(from as usize)];
        let mut cur = from;
        while cur != self.root {
            let k = self.neighbours(cells, cur, &mut nb);
            let next = descent_step(&nb[..k], |s| self.nodes.g(s));
            assert!(
                next.is_some() && path.len() <= self.nodes.len(),
                "{who} invariant broken: no descent from {}",
                grid.ppoint(cur as usize)
            );
            cur = next.expect("checked").0;
            path.push(grid.ppoint(cur as usize));
        }
        path
    }
}

#[cfg(test)]
mod tests;
