//! Answering a query on the subgoal graph: connect the start and the goal to the subgoals
//! they directly h-reach, search the hierarchy upward from both ends, unpack the shortcuts
//! of the meeting path into subgoals, and refine each leg into grid cells.
//!
//! Before any of that, a goal that the start reaches by a legal diagonal-first or
//! cardinal-first h-path is answered by that path: its cost is the octile distance, a lower
//! bound, so it is optimal. Every other optimal path bends at a subgoal (parent module), and
//! the two searches find the cheapest such bend sequence.

use crate::clock::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::contract::NONE;
use super::reach::{h_path, scan};
use super::{SubgoalGraph, octile};
use crate::grid::{Grid, Point, SQRT2};
use crate::query::{Algorithm, LimitKind, Query, SearchResult, Stats, Status};

/// One direction's search memory: distances (infinite where this search has not been,
/// reset through `touched` after each search, so the reads that dominate a search touch 8
/// bytes a node) and parents (the node each was reached from and the index of the edge
/// taken in [`super::contract::Hierarchy::arcs`], [`NONE`] for a seed).
#[derive(Default)]
struct Side {
    dist: Vec<f64>,
    parent: Vec<(u32, u32)>,
    touched: Vec<u32>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Side {
    fn begin(&mut self, n: usize) {
        for &v in &self.touched {
            self.dist[v as usize] = f64::INFINITY;
        }
        self.touched.clear();
        if self.dist.len() < n {
            self.dist.resize(n, f64::INFINITY);
            self.parent.resize(n, (NONE, NONE));
        }
        self.heap.clear();
    }

    #[inline(always)]
    fn get(&self, v: u32) -> f64 {
        self.dist[v as usize]
    }

    /// Records a cheaper way to `v` (from node `parent` by edge `arc`, both [`NONE`] for a
    /// seed), queued at `key` (its distance plus the bound to the other end); false if it
    /// is not cheaper.
    #[inline(always)]
    fn relax(&mut self, v: u32, d: f64, parent: (u32, u32), key: f64) -> bool {
        let old = self.dist[v as usize];
        if d >= old {
            return false;
        }
        if old == f64::INFINITY {
            self.touched.push(v);
        }
        self.dist[v as usize] = d;
        self.parent[v as usize] = parent;
        self.heap.push(Reverse((key.to_bits(), v)));
        true
    }

    fn parent(&self, v: u32) -> (u32, u32) {
        self.parent[v as usize]
    }

    fn top(&self) -> f64 {
        self.heap
            .peek()
            .map_or(f64::INFINITY, |r| f64::from_bits(r.0.0))
    }
}

/// Reusable query memory for [`SubgoalGraph`] searches (one per [`crate::Searcher`]).
#[derive(Default)]
pub(crate) struct QueryScratch {
    sides: [Side; 2],
    found: Vec<u32>,
    nodes: Vec<u32>,
    cells: Vec<(usize, usize)>,
}

/// Answers `query` (validated, uniform octile map, `graph` built for this version, start
/// and goal distinct and in one component unless `query.partial`).
pub(crate) fn search(
    grid: &Grid,
    graph: &SubgoalGraph,
    scratch: &mut QueryScratch,
    query: &Query,
) -> SearchResult {
    let started = Instant::now();
    let pl = &graph.place;
    let pw = pl.pw;
    let (s, g) = (grid.pidx(query.start), grid.pidx(query.goal));
    let xy = |i: usize| (i % pw, i / pw);
    let mut stats = Stats::default();
    scratch.cells.clear();
    // A legal h-path from start to goal is optimal as it is.
    if h_path(pl, xy(s), xy(g), &mut scratch.cells) {
        stats.generated = 1;
        return finish(scratch, xy(s), Status::Found, None, stats, started);
    }
    let n = graph.cells.len();
    // The octile distance from node `v` to padded `(x, y)`, a hair short: a lower bound on
    // every path between them, as every edge and connection costs its ends' octile
    // distance (shortcuts their halves' sum), shrunk so that rounding in the sums of the
    // path costs cannot push an optimal path's key above the best meeting's.
    let pos = &graph.pos;
    let bound = |v: u32, (x, y): (usize, usize)| {
        let p = pos[v as usize];
        let dx = (p & 0xffff).abs_diff(x as u32);
        let dy = (p >> 16).abs_diff(y as u32);
        let (lo, hi) = (dx.min(dy), dx.max(dy));
        (f64::from(hi - lo) + f64::from(lo) * SQRT2) * (1.0 - 1e-12)
    };
    // Each side's bound is towards the other side's end.
    let to = [xy(g), xy(s)];
    // Seed both searches: each end's directly h-reachable subgoals, and the end itself
    // when it is a subgoal.
    for (side, end) in [(0, s), (1, g)] {
        let sd = &mut scratch.sides[side];
        sd.begin(n);
        scratch.found.clear();
        scan(pl, end % pw, end / pw, &mut scratch.found);
        let own = graph.node_of[end];
        if own != NONE {
            sd.relax(own, 0.0, (NONE, NONE), bound(own, to[side]));
        }
        for &c in &scratch.found {
            let v = graph.node_of[c as usize];
            let d = octile(pw, end as u32, c);
            sd.relax(v, d, (NONE, NONE), d + bound(v, to[side]));
            stats.generated += 1;
        }
    }
    let ch = &graph.ch;
    let max_exp = query.limits.max_expansions.unwrap_or(u64::MAX);
    let (mut best, mut meet) = (f64::INFINITY, NONE);
    let mut limit = None;
    // Two A* searches over the upward graph, keyed by distance plus the octile bound to
    // the other end (consistent: an edge costs at least its ends' octile distance), taking
    // the smaller key first. Every node of the optimal up-down path has a key below a
    // meeting cost that exceeds the optimum, so both sides reach its highest node at its
    // exact distance before either stops; a node whose key reaches the best meeting cost
    // cannot lie on a cheaper path and is not queued.
    loop {
        let (tf, tb) = (scratch.sides[0].top(), scratch.sides[1].top());
        if tf.min(tb) >= best {
            break;
        }
        let side = usize::from(tb < tf);
        let Some(Reverse((key, u))) = scratch.sides[side].heap.pop() else {
            break;
        };
        let d = scratch.sides[side].get(u);
        // A later, cheaper entry for `u` holds a smaller key.
        if f64::from_bits(key) > d + bound(u, to[side]) {
            continue;
        }
        if stats.expanded >= max_exp {
            limit = Some(LimitKind::Expansions);
            break;
        }
        if stats.expanded % 256 == 0 {
            if let Some(kind) = crate::search::limit_hit(&query.limits) {
                limit = Some(kind);
                break;
            }
        }
        stats.expanded += 1;
        let (sd, other) = if side == 0 {
            let [a, b] = &mut scratch.sides;
            (a, &*b)
        } else {
            let [a, b] = &mut scratch.sides;
            (b, &*a)
        };
        // A meeting at `u` (a seed of both sides is met only here).
        if d + other.get(u) < best {
            (best, meet) = (d + other.get(u), u);
        }
        // Stall on demand: a higher neighbour that reaches `u` cheaper than `d` shows that
        // no shortest up-down path climbs through `u` with this cost (the cheaper way comes
        // down to it), so its edges need not be relaxed. Only a truly cheaper way counts:
        // two sums of the same 1s and sqrt 2s in another order may differ in their last
        // bits, and stalling on an equal cost could lose the one up-down path.
        let up = ch.up(u);
        if up
            .iter()
            .any(|a| (sd.get(a.head) + a.cost) * (1.0 + 1e-12) < d)
        {
            continue;
        }
        let first = ch.first[u as usize];
        for (i, a) in (first..).zip(up) {
            let nd = d + a.cost;
            if nd >= sd.get(a.head) {
                continue;
            }
            let key = nd + bound(a.head, to[side]);
            if key >= best {
                continue;
            }
            sd.relax(a.head, nd, (u, i), key);
            stats.generated += 1;
            // A meeting: both sides' ways to `a.head` make a path of that cost.
            let m = nd + other.get(a.head);
            if m < best {
                (best, meet) = (m, a.head);
            }
        }
    }
    // A limit stops the search before the best meeting is known to be the shortest.
    if meet == NONE || limit.is_some() {
        let status = if limit.is_some() {
            Status::LimitReached
        } else {
            Status::NoPath
        };
        return finish(scratch, xy(s), status, limit, stats, started);
    }
    // The meeting path: the forward chain back from the meeting node (then reversed), the
    // backward chain, every edge unpacked into subgoal-graph nodes.
    let QueryScratch {
        sides,
        nodes,
        cells,
        ..
    } = scratch;
    nodes.clear();
    nodes.push(meet);
    // Each chain walks down from the meeting node by the edges its search took.
    for (side, sd) in sides.iter().enumerate() {
        let mut v = meet;
        while sd.parent(v).0 != NONE {
            let (p, arc) = sd.parent(v);
            ch.unpack(&ch.arcs[arc as usize], v, p, nodes);
            v = p;
        }
        if side == 0 {
            nodes.reverse();
        }
    }
    let full = &*nodes;
    // Refine each leg: start, the subgoals, goal.
    let mut cur = xy(s);
    let legs = full.iter().map(|&v| {
        let p = graph.pos[v as usize];
        ((p & 0xffff) as usize, (p >> 16) as usize)
    });
    for next in legs.chain(std::iter::once(xy(g))) {
        if next != cur {
            let ok = h_path(pl, cur, next, cells);
            debug_assert!(ok, "every leg is an h-path");
            cur = next;
        }
    }
    finish(scratch, xy(s), Status::Found, None, stats, started)
}

/// The result: the path from `start` through `scratch.cells` (padded `(x, y)`, empty unless
/// found), its cost summed step by step.
fn finish(
    scratch: &QueryScratch,
    start: (usize, usize),
    status: Status,
    limit: Option<LimitKind>,
    mut stats: Stats,
    started: Instant,
) -> SearchResult {
    let (mut path, mut cost) = (Vec::new(), 0.0);
    if status == Status::Found {
        let point = |(x, y): (usize, usize)| Point::new(x as u32 - 1, y as u32 - 1);
        path.reserve(scratch.cells.len() + 1);
        path.push(point(start));
        let mut prev = start;
        for &c in &scratch.cells {
            cost += if c.0 != prev.0 && c.1 != prev.1 {
                SQRT2
            } else {
                1.0
            };
            path.push(point(c));
            prev = c;
        }
    }
    stats.elapsed = started.elapsed();
    SearchResult {
        status,
        path,
        cost,
        algorithm: Algorithm::Subgoal,
        stats,
        limit,
        expanded_cells: Vec::new(),
        waypoints: None,
        smoothed_length: None,
        keeps_guarantee: true,
    }
}
