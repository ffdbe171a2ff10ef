//! The forward repair: A* from an agent to the goal on a stale tree, which returns exactly the
//! path D* Lite's descent would take on the new map.
//!
//! # Which values are still exact
//!
//! After raise-only patches (the tree is stale), a vertex's old value `g` is a lower bound of
//! its new cost. It is *exact* exactly when a path of *tight* steps leads from it to the
//! goal on the new map, every step `v -> w` with `c_new(v, w) + g(w) = g(v)`: such a path
//! costs `g(v)`, and nothing costs less than the lower bound; conversely the first step of
//! an optimal path from an exact vertex is tight and ends at an exact vertex (its new cost
//! is at least its old one, and the old values were consistent). A step is tight unless the
//! patch raised it, so a vertex with another equal-cost way round the wall stays exact.
//! [`GoalTree::terminal`] decides it depth first over tight steps, memoised for every vertex
//! it decides (and shared by the agents of one patch). Such a vertex is a *terminal*: the
//! search does not expand it, it knows the rest of the way. Every vertex gets
//! `h = min(g, bound)`, the consistent heuristic of the module docs (a learnt vertex its new
//! cost), and A* pops vertices by `f = g_from_agent + h`, deciding whether one is a terminal
//! as it leaves the queue; for a terminal `f` is the exact cost of the best path through
//! it, and the first terminal popped gives the new optimum `C` (any optimal path leaves the
//! non-terminal vertices at some terminal, the goal at the latest, and up to it it runs
//! through expanded vertices).
//!
//! # One look per vertex
//!
//! Deciding that a vertex `u` just out of the queue is not a terminal walks the tight steps
//! below it, and every vertex `w` that walk looks at lies on the same `f` level: a tight
//! step adds `c` to the cost from the agent and takes `c` off the old value, so along the
//! walk `d + g = f(u)`. Such a `w` (not yet out of the queue, and not a learnt vertex, whose
//! estimate is not its old value) has its exact cost from the agent in hand: `d*(w) <= d`
//! along the walk, and `d*(w) + g(w) >= f(u)` since with a consistent heuristic every vertex
//! of a smaller `f` is already out. So the search expands `w` with the walk's own look at
//! its neighbours, as it would have when `w` came out of the queue at `f(u)` (which it
//! does whenever `f(u) < C`; at `f(u) = C` the search ends with this walk or the next
//! ones at that level), and `u` itself likewise. Each vertex's neighbours are read once, and counted once: in a wall at a door
//! near the goal the band of old equal-cost paths is both walked and expanded, and the
//! two looks used to be counted apart (den520d, wall at 7/8: 13.8x fewer than a fresh A*,
//! 8.9x before).
//!
//! Near the agent a wall only invalidates the agent's own corner of the tree: a few cells
//! from the agent the descents go round the wall, so the search stops after about the detour.
//! Near the goal the wall invalidates most of the tree, and the search expands the cells whose
//! old estimate is below the new cost (the band of old equal-cost paths).
//!
//! # The same path as D* Lite
//!
//! D* Lite descends from the agent along the first neighbour (direction order) whose
//! `c + g_new` is smallest: the first neighbour that lies on an optimal path. So its path is
//! the optimal path whose sequence of directions comes first in direction order. From a
//! terminal on, its step is to the first neighbour reached tightly whose old value is exact
//! (by the characterisation above, those are the neighbours with `c + g_new = g_new(v)`),
//! which [`GoalTree::exact_descent`] takes.
//!
//! The search stops at the first terminal out of the queue, so it knows `C` and the exact
//! cost from the agent `d(v)` of every vertex of `f < C`, but not every vertex on an optimal
//! path (ties at `f = C` are left in the queue: on an open map they are a whole
//! parallelogram of equal-cost paths). A depth-first walk then finds the path: from the
//! agent, it tries the neighbours in direction order and steps to the first `w` that may lie
//! on an optimal path, `d(v) + c + h(w) <= C` with the step *tight* when `d(w)` is known;
//! it ends at a terminal with `d + g = C`, and a vertex left without such a step is dead
//! (never tried again). A vertex the search did not take out of the queue can lie on an
//! optimal path only at `d(w) = d(v) + c` (were it cheaper, `f(w) < C` and it would have
//! been taken out), so every step the walk takes is tight and every vertex has one cost from
//! the agent, the one `dead` refers to. The first path it completes takes, at each vertex,
//! the first neighbour from which an optimal path goes on: D* Lite's step. It visits the
//! optimal paths it needs and the dead ends before them, where completing the ties would
//! visit every optimal path (Berlin_1_1024, wall at 7/8 of the path: 1,186 expansions, the
//! exactness walks included, where completing the ties took 23,868 without them;
//! `benches/repair.rs`).

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

use super::GoalTree;
use super::exact::tight;
use crate::algo::lpa::graph::View;
use crate::algo::lpa::nodes::CellHasher;
use crate::algo::lpa::queue::{Key, Queue};
use crate::algo::lpa::{CHECK_EVERY, STOP_SLACK};
use crate::grid::{Grid, Point};
use crate::query::{Limits, Stats, Status};
use crate::search::{IMPROVES_BY, limit_hit};

pub(super) type CellMap<V> = HashMap<u32, V, BuildHasherDefault<CellHasher>>;
type CellSet = HashSet<u32, BuildHasherDefault<CellHasher>>;

/// What one forward repair found.
#[derive(Debug)]
pub(crate) struct Route {
    pub status: Status,
    /// The new path, start first (with [`Status::Found`]).
    pub path: Option<Vec<Point>>,
    /// `expanded`: the vertices the A* expanded (some with an exactness walk's look, module
    /// docs), those the depth-first walk stepped to, and those whose exactness this call
    /// decided otherwise (walks of `terminal`).
    pub stats: Stats,
    /// The vertices it took out of the queue (padded ids, in order): the expanded ones and
    /// the terminals it reached.
    pub popped: Vec<u32>,
    /// The new path's vertices before its first terminal, with their exact cost on the new
    /// map and their next step: what [`GoalTree::learn`] keeps for the next agents.
    pub learnt: Vec<(u32, f64, u32)>,
    /// How many of the expansions in `stats` an exactness walk made with its own look at
    /// the vertex's neighbours (counted once, not again as a decision).
    pub walk_expanded: u64,
}

/// The forward A*'s state: best cost from the agent per reached vertex (final once popped),
/// the popped (expanded or terminal) vertices, and the open list: keys `[f, g]`, smaller `f`
/// first, then larger `g` (deeper first: with near-exact estimates every cell of an optimal
/// path ties on `f`), then smaller cell id.
#[derive(Default)]
struct Forward {
    from_start: CellMap<f64>,
    popped: CellSet,
    open: Queue<true>,
}

impl Forward {
    /// Expands a vertex at cost `d` from the agent whose neighbours are `nb`: queues every
    /// neighbour this reaches more cheaply, by `f = d + c + estimate`.
    fn relax(&mut self, tree: &GoalTree, d: f64, nb: &[(u32, f64)], stats: &mut Stats) {
        for &(s, c) in nb {
            let gs = d + c;
            if self.popped.contains(&s)
                || self
                    .from_start
                    .get(&s)
                    .is_some_and(|&b| gs >= b * (1.0 - IMPROVES_BY))
            {
                continue;
            }
            let h = tree.estimate(s);
            if !h.is_finite() {
                continue;
            }
            self.from_start.insert(s, gs);
            self.open.push(Key { k1: gs + h, k2: gs }, s);
            stats.generated += 1;
        }
    }
}

/// `len` plus `left`, saturating.
fn memo_room(len: usize, left: u64) -> usize {
    len.saturating_add(usize::try_from(left).unwrap_or(usize::MAX))
}

impl GoalTree {
    /// The forward repair of the module docs, from `from` on `grid`. Valid while no patch
    /// since the tree's last run lowered a cost (the server's order: a lowering patch settles
    /// the tree first).
    pub(crate) fn route(&mut self, grid: &Grid, from: Point, limits: &Limits) -> Route {
        // Which vertices hold exact old values depends on the tree and the patches only, so
        // the agents of one patch share what their walks found.
        let mut memo = std::mem::take(&mut self.exact_memo);
        let decided = memo.len();
        let mut route = self.route_with(grid, from, limits, &mut memo, decided);
        // Deciding a vertex's exactness looks at its neighbours as an expansion does: count
        // those of this call with its expansions, once for a vertex expanded with that look.
        route.stats.expanded = (route.stats.expanded + (memo.len() - decided) as u64)
            .saturating_sub(route.walk_expanded);
        self.exact_memo = memo;
        route
    }

    fn route_with(
        &self,
        grid: &Grid,
        from: Point,
        limits: &Limits,
        memo: &mut CellMap<bool>,
        decided: usize,
    ) -> Route {
        self.check_grid(grid);
        let flat = grid.cells();
        let cells = &View::new(grid, &flat, self.size);
        let start = grid.pidx(from) as u32;
        let mut out = Route {
            status: Status::NoPath,
            path: None,
            stats: Stats::default(),
            popped: Vec::new(),
            learnt: Vec::new(),
            walk_expanded: 0,
        };
        let mut fw = Forward::default();
        let mut best = f64::INFINITY;
        // The first terminal out of the queue.
        let mut first_terminal = None;
        let h0 = self.estimate(start);
        if !h0.is_finite() {
            return out;
        }
        fw.from_start.insert(start, 0.0);
        fw.open.push(Key { k1: h0, k2: 0.0 }, start);
        // The limit counts the vertices the exactness walks decide too.
        let max_expansions = limits.max_expansions.unwrap_or(u64::MAX);
        // The work so far: expansions, and the decisions not made by an expansion's look.
        let work = |out: &Route, memo: &CellMap<bool>| {
            (out.stats.expanded + (memo.len() - decided) as u64).saturating_sub(out.walk_expanded)
        };
        // How large `memo` may grow (from `len` entries) before the walks have spent what is
        // left of the limit.
        let room = |work: u64, len: usize| memo_room(len, max_expansions.saturating_sub(work));
        let mut pops = 0u64;
        let mut nb = [(0u32, 0.0f64); 8];
        while let Some((Key { k1: f, k2: g }, node)) = fw.open.pop() {
            if fw.popped.contains(&node) || fw.from_start.get(&node).is_some_and(|&b| b < g) {
                continue; // superseded entry
            }
            fw.popped.insert(node);
            out.popped.push(node);
            pops += 1;
            let before = work(&out, memo);
            let limit = room(before, memo.len());
            // Neighbour looks of this walk (a walk cut at the limit leaves its path out of
            // `memo`, so they are counted from here then).
            let mut looks = 0u64;
            // Deciding whether `node` is a terminal walks tight steps from it. Every vertex
            // that walk looks at is expanded with that same look (module docs: its cost from
            // the agent is exact), `node` first, unless it is a learnt vertex (whose
            // estimate is not its old value) or already expanded.
            let mut node_expanded = false;
            let exact = {
                let mut scanned = |v: u32, d: f64, nb: &[(u32, f64)]| {
                    looks += 1;
                    if self.learnt.contains_key(&v) || v != node && fw.popped.contains(&v) {
                        return;
                    }
                    if v == node {
                        node_expanded = true;
                    } else {
                        fw.popped.insert(v);
                        fw.from_start.insert(v, d);
                        out.popped.push(v);
                    }
                    out.stats.expanded += 1;
                    out.walk_expanded += 1;
                    fw.relax(self, d, nb, &mut out.stats);
                };
                self.exact_with(cells, node, memo, limit, g, &mut scanned)
            };
            let Some(exact) = exact else {
                // The walk spent the rest of the limit: the search ends, its looks counted.
                let missing = (before + looks).saturating_sub(work(&out, memo));
                out.walk_expanded = out.walk_expanded.saturating_sub(missing);
                out.status = Status::LimitReached;
                return out;
            };
            if exact.is_some() {
                // The first terminal out of the queue: `f` is the new optimum `C`, and
                // every vertex of `f < C` is out.
                best = f;
                first_terminal = Some(node);
                break;
            }
            if work(&out, memo) >= max_expansions
                || pops % CHECK_EVERY == 0 && limit_hit(limits).is_some()
            {
                out.status = Status::LimitReached;
                return out;
            }
            if !node_expanded {
                out.stats.expanded += 1;
                let k = self.core.neighbours(cells, node, &mut nb);
                fw.relax(self, g, &nb[..k], &mut out.stats);
            }
        }
        let (from_start, popped) = (fw.from_start, fw.popped);
        if !best.is_finite() {
            return out;
        }
        // D* Lite's descent up to the first terminal: depth first over tight steps, trying
        // the directions in order (module docs). `dist` is a vertex's cost from the agent.
        let slack = STOP_SLACK * (1.0 + best);
        let mut dead = CellSet::default();
        // The path so far: (vertex, its cost from the agent, next direction to try).
        let mut stack: Vec<(u32, f64, usize)> = vec![(start, 0.0, 0)];
        let end = if first_terminal == Some(start) {
            stack.clear();
            start
        } else {
            loop {
                let Some(&mut (v, dist, ref mut next)) = stack.last_mut() else {
                    unreachable!("forward repair: no optimal path from {from} at cost {best}");
                };
                let k = self.core.neighbours(cells, v, &mut nb);
                let mut step = None;
                while *next < k {
                    let (w, c) = nb[*next];
                    *next += 1;
                    let dw = dist + c;
                    // Out of the queue: its cost from the agent is known; else it can only lie
                    // on an optimal path at `dw` (anything cheaper would have had `f < C`).
                    if dead.contains(&w) || popped.contains(&w) && !tight(dist, c, from_start[&w]) {
                        continue;
                    }
                    if dw + self.estimate(w) > best + slack {
                        continue;
                    }
                    let exact = self.exact(cells, w, memo, room(work(&out, memo), memo.len()));
                    step = Some((w, dw, exact.is_some()));
                    break;
                }
                match step {
                    Some((w, _, true)) => {
                        out.popped.push(w);
                        break w;
                    }
                    Some((w, dw, false)) => {
                        if work(&out, memo) >= max_expansions {
                            out.status = Status::LimitReached;
                            return out;
                        }
                        out.stats.expanded += 1;
                        out.popped.push(w);
                        stack.push((w, dw, 0));
                    }
                    None => {
                        // No optimal way on from `v` (at this cost from the agent).
                        dead.insert(v);
                        stack.pop();
                    }
                }
            }
        };
        let mut path: Vec<Point> = stack
            .iter()
            .map(|&(v, _, _)| grid.ppoint(v as usize))
            .collect();
        for pair in stack.windows(2) {
            out.learnt.push((pair[0].0, best - pair[0].1, pair[1].0));
        }
        if let Some(&(last, last_dist, _)) = stack.last() {
            out.learnt.push((last, best - last_dist, end));
        }
        let mut cur = end;
        path.push(grid.ppoint(cur as usize));
        // From the first terminal: the paths learnt earlier, then the old descent.
        while let Some(&(_, next)) = self.learnt.get(&cur) {
            cur = next;
            path.push(grid.ppoint(cur as usize));
        }
        let rest = self.exact_descent(grid, cells, cur, memo);
        path.extend_from_slice(&rest[1..]);
        out.status = Status::Found;
        out.path = Some(path);
        out
    }
}
