//! The shared best-first core.
//!
//! Every optimal-family algorithm is this loop plus an [`Expander`] (which successors a node
//! has and what reaching them costs) and a heuristic weight. A* is the plain grid expander
//! with weight 1, Dijkstra weight 0, weighted A* weight `w`; JPS and Theta* plug in their own
//! expanders (warthog's "expansion policy").
//!
//! Open list: a binary heap keyed by `f`, with re-push instead of decrease-key; a popped entry
//! whose `g` is worse than the node's current `g` is stale and dropped.
//!
//! Tie-breaking (documented, deterministic): smaller `f` first; among equal `f`, larger `g`
//! (the node deeper along its path, which finishes straight runs first); among equal `f` and
//! `g`, the smaller node index (row-major order). Successors are generated in the order
//! N, E, S, W, NE, SE, SW, NW. The heap order is total, so the same query on the same map
//! always returns the same path.
//!
//! Scratch memory ([`Scratch`]) is sized to the largest map seen and reused; starting a new
//! search bumps a generation stamp instead of clearing, so a reset costs nothing and a
//! search touches only the nodes it reaches.

mod heap;
pub(crate) mod scratch;

use std::sync::atomic::Ordering as AtomicOrdering;
use std::time::Instant;

pub(crate) use heap::OpenList;
pub(crate) use scratch::Scratch;

use crate::grid::{Grid, Movement, Point, distance};
use crate::query::{LimitKind, Limits, Stats};

/// Check the clock and the cancellation flag every this many expansions.
const CHECK_EVERY: u64 = 256;

/// A successor proposal: reach `node` with cost `g` through `parent`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Succ {
    pub node: u32,
    pub g: f64,
    pub parent: u32,
}

/// Decides which successors an expanded node has.
pub(crate) trait Expander {
    /// Pushes the successors of `node` (reached with cost `g`, from `parent`, whose own cost
    /// is `parent_g`) into `out`.
    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    );
}

/// Plain 8- or 4-neighbour expansion under the map's movement rule.
pub(crate) struct GridExpander {
    offsets: [isize; 8],
    octile: bool,
}

impl GridExpander {
    pub(crate) fn new(grid: &Grid) -> Self {
        GridExpander {
            offsets: grid.offsets(),
            octile: grid.movement() == Movement::Octile,
        }
    }
}

/// Diagonal k (4..8) needs cardinals `DIAG_SIDES[k - 4]` passable (see `grid::DIRS`).
pub(crate) const DIAG_SIDES: [(usize, usize); 4] = [(0, 1), (1, 2), (2, 3), (3, 0)];

impl Expander for GridExpander {
    #[inline]
    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        _parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        let cells = grid.cells();
        let n = node as usize;
        let c = cells[n] as f64;
        let mut open = [false; 4];
        for k in 0..4 {
            let m = n.wrapping_add_signed(self.offsets[k]);
            let cm = cells[m];
            if cm != 0 {
                open[k] = true;
                out.push(Succ {
                    node: m as u32,
                    g: g + (c + cm as f64) * 0.5,
                    parent: node,
                });
            }
        }
        if !self.octile {
            return;
        }
        for (k, &(a, b)) in DIAG_SIDES.iter().enumerate() {
            if !(open[a] && open[b]) {
                continue;
            }
            let m = n.wrapping_add_signed(self.offsets[4 + k]);
            let cm = cells[m];
            if cm != 0 {
                out.push(Succ {
                    node: m as u32,
                    g: g + crate::grid::SQRT2 * (c + cm as f64) * 0.5,
                    parent: node,
                });
            }
        }
    }
}

/// Heuristic to a fixed goal, in padded-index space.
#[derive(Clone, Copy)]
pub(crate) struct Heuristic {
    gx: f64,
    gy: f64,
    pw: usize,
    scale: f64,
    movement: Movement,
}

impl Heuristic {
    /// The map's admissible heuristic towards `goal`.
    pub(crate) fn new(grid: &Grid, goal: Point) -> Self {
        Heuristic {
            gx: goal.x as f64 + 1.0,
            gy: goal.y as f64 + 1.0,
            pw: grid.padded_width(),
            scale: grid.min_cost() as f64,
            movement: grid.movement(),
        }
    }

    /// Euclidean-distance variant (for any-angle searches, whose steps are straight lines).
    pub(crate) fn euclidean(grid: &Grid, goal: Point) -> Self {
        let mut h = Self::new(grid, goal);
        h.movement = Movement::Octile;
        h.scale = -h.scale; // marker: negative scale means Euclidean
        h
    }

    #[inline]
    pub(crate) fn h(&self, node: u32) -> f64 {
        let n = node as usize;
        let x = (n % self.pw) as f64;
        let y = (n / self.pw) as f64;
        let dx = (x - self.gx).abs();
        let dy = (y - self.gy).abs();
        if self.scale < 0.0 {
            return (dx * dx + dy * dy).sqrt() * -self.scale;
        }
        distance(self.movement, dx, dy) * self.scale
    }
}

/// Parameters of one run of the core loop.
pub(crate) struct Run<'a> {
    pub start: u32,
    pub goal: u32,
    /// Multiplier on `h` in `f = g + weight * h` (0 = Dijkstra).
    pub weight: f64,
    pub heuristic: Heuristic,
    pub limits: &'a Limits,
    /// Track the expanded node closest to the goal for partial answers.
    pub track_closest: bool,
    pub debug_cap: usize,
}

/// How the core loop ended.
#[derive(Debug)]
pub(crate) enum CoreEnd {
    /// The goal was expanded.
    Goal,
    /// The open list ran dry.
    Exhausted,
    /// A limit fired.
    Limit(LimitKind),
}

/// What the core loop reports; paths are read back from the scratch parents.
pub(crate) struct CoreOutcome {
    pub end: CoreEnd,
    pub stats: Stats,
    /// Expanded node with the smallest `h` (then smallest `g`), when tracked.
    pub closest: Option<u32>,
    pub debug: Vec<u32>,
}

/// Runs best-first search. Scratch must already be prepared for `grid` (see
/// [`Scratch::begin`]).
pub(crate) fn best_first<E: Expander>(
    grid: &Grid,
    scratch: &mut Scratch,
    expander: &mut E,
    run: &Run<'_>,
) -> CoreOutcome {
    let started = Instant::now();
    let mut stats = Stats::default();
    let mut succs: Vec<Succ> = Vec::with_capacity(16);
    let mut closest: Option<(f64, f64, u32)> = None;
    let mut debug = Vec::new();
    let max_exp = run.limits.max_expansions.unwrap_or(u64::MAX);

    let (nodes, open) = scratch.parts();
    let h0 = run.heuristic.h(run.start);
    nodes.touch(run.start, 0.0, h0, run.start);
    open.push(run.weight * h0, 0.0, run.start);
    stats.generated += 1;

    let end = loop {
        // Step 1: take the best entry, dropping stale ones.
        let Some((_, g, node)) = open.pop() else {
            break CoreEnd::Exhausted;
        };
        if g > nodes.g(node) || nodes.is_expanded(node) && g >= nodes.g(node) {
            continue;
        }
        // Step 2: the goal is done when it is expanded (not when generated): only then is
        // its g final.
        if node == run.goal {
            stats.expanded += 1;
            break CoreEnd::Goal;
        }
        // Step 3: limits, checked before the work they would bound.
        if stats.expanded >= max_exp {
            break CoreEnd::Limit(LimitKind::Expansions);
        }
        if stats.expanded % CHECK_EVERY == 0 {
            if let Some(kind) = limit_hit(run.limits) {
                break CoreEnd::Limit(kind);
            }
        }
        stats.expanded += 1;
        nodes.mark_expanded(node);
        if run.track_closest {
            let h = nodes.h(node);
            if closest.is_none_or(|(bh, bg, _)| h < bh || h == bh && g < bg) {
                closest = Some((h, g, node));
            }
        }
        if debug.len() < run.debug_cap {
            debug.push(node);
        }
        // Step 4: relax successors; push only strict improvements.
        let parent = nodes.parent(node);
        let parent_info = (parent != node).then(|| (parent, nodes.g(parent)));
        succs.clear();
        expander.successors(grid, node, g, parent_info, &mut succs);
        for s in &succs {
            let (known, was_expanded) = nodes.lookup(s.node);
            let h = match known {
                Some((old_g, _)) if s.g >= old_g => continue,
                Some((_, h)) => h,
                None => run.heuristic.h(s.node),
            };
            if was_expanded {
                stats.reopened += 1;
            }
            nodes.touch(s.node, s.g, h, s.parent);
            open.push(s.g + run.weight * h, s.g, s.node);
            stats.generated += 1;
        }
    };
    stats.elapsed = started.elapsed();
    CoreOutcome {
        end,
        stats,
        closest: closest.map(|c| c.2),
        debug,
    }
}

/// Which limit, if any, has fired (deadline and cancellation; expansions are counted inline).
pub(crate) fn limit_hit(limits: &Limits) -> Option<LimitKind> {
    if let Some(c) = &limits.cancel {
        if c.load(AtomicOrdering::Relaxed) {
            return Some(LimitKind::Cancelled);
        }
    }
    if let Some(d) = limits.deadline {
        if Instant::now() >= d {
            return Some(LimitKind::Deadline);
        }
    }
    None
}

/// Reads the parent chain from `end` back to the start, returned start first.
pub(crate) fn chain(scratch: &Scratch, end: u32) -> Vec<u32> {
    let nodes = scratch.nodes();
    let mut out = vec![end];
    let mut cur = end;
    loop {
        let p = nodes.parent(cur);
        if p == cur {
            break;
        }
        out.push(p);
        cur = p;
    }
    out.reverse();
    out
}
