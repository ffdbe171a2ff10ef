//! The shared best-first core.
//!
//! Every best-first search of the engine is this loop plus an [`Expander`] (the successor
//! policy: which successors a node has, what reaching them costs, and which map cell a node
//! id names), an [`Estimate`] (the heuristic) and a weight. A* is the plain grid expander with
//! weight 1, Dijkstra weight 0, weighted A* weight `w`; JPS, JPS+ and Theta* plug in their own
//! expanders (warthog's "expansion policy"); HPA* runs its abstract search (node ids are
//! abstract nodes, successors the abstract edges), its corridor refinement (the grid expander
//! restricted to a set of clusters) and its in-cluster searches (the grid expander over one
//! cluster's costs; a Dijkstra there stops once its marked targets are settled,
//! [`Expander::settle`]) on it too. The per-node records ([`Scratch`]) are indexed by node
//! id, whatever the ids mean, and sized per search. D* Lite keeps its own LPA*-style loop
//! (its keys are pairs, and a node's value can go up as well as down) but enumerates moves
//! with the same rule: every search over a padded cost array expands through
//! [`crate::grid::moves`], the one move and corner rule (flow fields, on unpadded region
//! arrays, apply the same corner rule, [`crate::grid::DIAG_SIDES`]), and every entry point
//! validates its ends with `query::check_ends`.
//!
//! Open list: a 4-ary heap keyed by `f` with decrease-key ([`heap`]): each open node is in it
//! once, an improvement moves its entry; the smallest entry is held apart from the heap when
//! it arrives smaller than everything queued (the usual case for an expansion's continuing
//! successor), so taking it next costs no sifting. An improvement must beat the recorded cost by a tiny
//! relative margin ([`IMPROVES_BY`]), so rounding noise never counts as one. Closed nodes are
//! never reopened under an inflated heuristic (weighted A*).
//!
//! Tie-breaking (documented, deterministic): smaller `f = g + w h` first (the weighted `f`
//! for weighted A*, so its ties too follow the order it expands in; compared at the relative
//! precision 2^-36 of [`IMPROVES_BY`], so that equal true `f`s tie whatever the rounding of
//! their sums, see [`heap`]); among equal `f`, larger `g`
//! (the node deeper along its path, which finishes straight runs first; compared at `f32`
//! precision); then the smaller node index (row-major order). Successors are generated in the order
//! N, E, S, W, NE, SE, SW, NW. The heap order is total, so the same query on the same map
//! always returns the same path.
//!
//! Scratch memory ([`Scratch`]) is sized to the largest map seen and reused; starting a new
//! search bumps a generation stamp instead of clearing, so a reset costs nothing and a
//! search touches only the nodes it reaches.

pub(crate) mod finish;
mod heap;
pub(crate) mod lesson;
pub(crate) mod scratch;
pub(crate) mod trace;

use crate::clock::Instant;
use std::sync::atomic::Ordering as AtomicOrdering;

pub(crate) use finish::{Shaped, finish, finish_shaped, smooth_result};
pub(crate) use heap::OpenList;
pub(crate) use scratch::Scratch;

use crate::grid::{Cells, Grid, Movement, Point, UNIFORM_STEPS, distance, moves, moves_by};
use crate::query::{LimitKind, Limits, Stats};
use crate::trace::Phase;
use trace::{RawEvent, RawKind, Tracer};

/// Check the clock and the cancellation flag every this many expansions.
const CHECK_EVERY: u64 = 256;

/// Relative margin (2^-36, about 1.5e-11) by which a new way to a node must undercut its
/// recorded cost to count as an improvement.
///
/// Why: floating-point sums depend on their order. Two paths of the same true cost, say
/// `1 + sqrt2 + sqrt2 + ...` and `sqrt2 + 1 + sqrt2 + ...`, can come out one ulp apart
/// (`7.65685424949238` and `7.656854249492381` on `arena2`), and a strict `<` then takes the
/// later one as an improvement: a decrease-key for nothing, or worse the reopening and second
/// expansion of a closed node, over a hundred thousand per query on `Berlin_0_1024`. Comparing
/// with a margin makes the search see true costs, not their roundings:
///
/// - *Every rounding difference is below the margin.* A path of `L` steps summed in any order
///   is within `L * 2^-53 * g` of its true cost `g` (each addition rounds by at most half an
///   ulp of a partial sum `<= g`), so two sums of equal true cost differ by at most
///   `2L * 2^-53 * g`, under the margin `2^-36 * g` while `L < 2^16`.
/// - *Every true difference is above it* (uniform maps, where every cost is `a + b sqrt2`
///   with naturals `a + b = L`): two different such costs differ by
///   `|da + db sqrt2| = |da^2 - 2 db^2| / |da - db sqrt2| >= 1 / ((1 + sqrt2) L)`, the numerator
///   being a nonzero integer, while the margin is at most `2^-36 * sqrt2 L`, which is smaller
///   for `L < 1.4e5`.
///
/// So on uniform maps, for paths under 65536 steps (every Moving AI map; their longest optimal
/// paths have a few thousand steps), "cheaper by more than the margin" is exactly "truly
/// cheaper": optimal answers stay exactly optimal, no node is expanded twice, and the search
/// keeps the first of several equally cheap parents whatever their rounding, which is also
/// what makes the tie-breaking below independent of summation order. On weighted maps the
/// first half holds as well; a true improvement smaller than the margin (a relative 1.5e-11,
/// far below any cost a client can tell apart) may be passed over.
pub(crate) const IMPROVES_BY: f64 = 1.0 / (1u64 << 36) as f64;

/// A successor proposal: reach `node` with cost `g` through `parent`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Succ {
    pub node: u32,
    pub g: f64,
    pub parent: u32,
}

/// The successor policy: which successors an expanded node has (grid moves, jumps,
/// line-of-sight parents, abstract edges), and what its node ids mean.
pub(crate) trait Expander {
    /// Check the clock and the cancellation flag every this many expansions.
    const CHECK_EVERY: u64 = CHECK_EVERY;

    /// Whether [`Expander::settle`] does anything (lets the core skip the call).
    const TARGETS: bool = false;

    /// Whether an expanded node may be reopened when a cheaper way to it turns up (only ever
    /// with weight `<= 1`: weighted A* keeps its bound without reopening, see
    /// `algo::astar`). With a consistent heuristic it never happens (up to the margin
    /// [`IMPROVES_BY`], which absorbs rounding), so it is a safety net that the tests check
    /// stays unused. Theta* keeps closed nodes closed (Nash et al.), which is also what keeps
    /// its parent chains' lengths equal to their `g`.
    const REOPEN: bool = true;

    /// Whether [`Expander::refine`] does anything (lets the core skip the call).
    const REFINES: bool = false;

    /// Whether [`Expander::successors`] reads the parent's cost (lets the core skip reading
    /// the parent's record, a cache miss of its own on a large map; it passes NaN instead).
    const PARENT_G: bool = true;

    /// Pushes the successors of `node` (reached with cost `g`, from `parent`, whose own cost
    /// is `parent_g`, NaN unless [`Expander::PARENT_G`]) into `out`.
    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    );

    /// Calls `visit(self, succ)` for each successor of `node` (arguments as for
    /// [`Expander::successors`]), in the order `successors` pushes them. The default goes
    /// through `successors` and the buffer `buf`; the grid expander overrides it to hand its
    /// moves over from a local array, sparing A*'s hottest loop a round trip through memory.
    #[inline]
    fn each_successor(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        buf: &mut Vec<Succ>,
        mut visit: impl FnMut(&mut Self, Succ),
    ) where
        Self: Sized,
    {
        buf.clear();
        self.successors(grid, node, g, parent, buf);
        for &s in buf.iter() {
            visit(self, s);
        }
    }

    /// Called for each proposal of the last [`Expander::successors`] call that the core may
    /// accept (the node is not closed, or may be reopened), with the node's current cost
    /// (infinity if unreached), before the core compares the two. It may rewrite the proposal,
    /// e.g. Theta*'s shortcut through the grandparent, which costs a line-of-sight check and so
    /// is only worth doing for proposals that can still win.
    #[inline]
    fn refine(&mut self, _grid: &Grid, _succ: &mut Succ, _current_g: f64) {}

    /// Called for each expanded node (when [`Expander::TARGETS`]); `true` ends the search as
    /// if the goal had been expanded. A Dijkstra to a set of targets (HPA*'s in-cluster
    /// searches) counts its targets down here.
    #[inline]
    fn settle(&mut self, _node: u32) -> bool {
        false
    }

    /// The padded map cell of a node id, for traces and `debug` cells (node ids are padded
    /// cells except in HPA*'s abstract graph and cluster-local searches).
    #[inline]
    fn cell(&self, node: u32) -> u32 {
        node
    }
}

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

/// Plain 8- or 4-neighbour expansion under the map's movement rule: the one successor
/// generation and corner rule of every grid search. Over the map's padded costs
/// ([`GridExpander::new`]) or any padded cost array with a ring of blocked cells, such as
/// one cluster's ([`GridExpander::over`]).
pub(crate) struct GridExpander<C = Cells> {
    offsets: [isize; 8],
    octile: bool,
    /// Every passable cell costs 1: steps cost [`crate::grid::UNIFORM_STEPS`].
    uniform: bool,
    /// Padded costs (ring of zeros), taken once per search.
    cells: C,
}

impl GridExpander {
    pub(crate) fn new(grid: &Grid) -> Self {
        GridExpander {
            uniform: grid.is_uniform(),
            ..GridExpander::over(grid.cells(), grid.padded_width(), grid.movement())
        }
    }
}

impl<C: std::ops::Deref<Target = [u8]>> GridExpander<C> {
    /// Expansion over `cells`, a padded cost array `pw` cells wide whose outer ring is 0.
    pub(crate) fn over(cells: C, pw: usize, movement: Movement) -> Self {
        let mut offsets = [0isize; 8];
        for (k, (dx, dy)) in crate::grid::DIRS.iter().enumerate() {
            offsets[k] = *dy as isize * pw as isize + *dx as isize;
        }
        GridExpander {
            offsets,
            octile: movement == Movement::Octile,
            uniform: false,
            cells,
        }
    }

    /// The padded costs this expander reads.
    #[inline]
    pub(crate) fn cells(&self) -> &[u8] {
        &self.cells
    }
}

impl<C: std::ops::Deref<Target = [u8]>> GridExpander<C> {
    /// The legal moves from `node` (reached with cost `g`) into `buf`, as
    /// `(neighbour, cost)`; returns how many.
    #[inline(always)]
    fn moves_into(&self, node: u32, g: f64, buf: &mut [(u32, f64); 8]) -> usize {
        let cells: &[u8] = &self.cells;
        let n = node as usize;
        if self.uniform {
            let step = |d: usize, _| UNIFORM_STEPS[d];
            moves_by(&self.offsets, self.octile, n, g, |m| cells[m], step, buf)
        } else {
            moves(
                &self.offsets,
                self.octile,
                n,
                cells[n],
                g,
                |m| cells[m],
                buf,
            )
        }
    }
}

impl<C: std::ops::Deref<Target = [u8]>> Expander for GridExpander<C> {
    const PARENT_G: bool = false;

    #[inline(always)]
    fn successors(
        &mut self,
        _grid: &Grid,
        node: u32,
        g: f64,
        _parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        // Moves go to a local array first and into `out` in one pass: no capacity check per
        // push.
        let mut buf = [(0u32, 0.0f64); 8];
        let k = self.moves_into(node, g, &mut buf);
        out.extend(buf[..k].iter().map(|&(m, g)| Succ {
            node: m,
            g,
            parent: node,
        }));
    }

    #[inline(always)]
    fn each_successor(
        &mut self,
        _grid: &Grid,
        node: u32,
        g: f64,
        _parent: Option<(u32, f64)>,
        _buf: &mut Vec<Succ>,
        mut visit: impl FnMut(&mut Self, Succ),
    ) {
        let mut buf = [(0u32, 0.0f64); 8];
        let k = self.moves_into(node, g, &mut buf);
        for &(m, g) in &buf[..k] {
            visit(
                self,
                Succ {
                    node: m,
                    g,
                    parent: node,
                },
            );
        }
    }
}

/// Heuristic to a fixed goal, in padded-index space.
///
/// Node ids are padded indices, so the heuristic needs `(id % pw, id / pw)`. A hardware
/// division costs tens of cycles per call; Lemire's multiply-shift division by a constant
/// (`m = u64::MAX / pw + 1`, exact for every 32-bit dividend) costs one wide multiplication.
#[derive(Clone, Copy)]
pub(crate) struct Heuristic {
    gx: f64,
    gy: f64,
    pw: u32,
    magic: u64,
    scale: f64,
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

/// Parameters of one run of the core loop.
pub(crate) struct Run<'a, H = Heuristic> {
    pub start: u32,
    pub goal: u32,
    /// Multiplier on `h` in `f = g + weight * h` (0 = Dijkstra).
    pub weight: f64,
    pub heuristic: H,
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
/// [`Scratch::begin`]). When the scratch holds a trace recorder (a traced query, see
/// [`trace`]), the run records its events; otherwise it runs untraced at no cost.
pub(crate) fn best_first<E: Expander, H: Estimate>(
    grid: &Grid,
    scratch: &mut Scratch,
    expander: &mut E,
    run: &Run<'_, H>,
) -> CoreOutcome {
    let mut tr = scratch.trace.take();
    let out = best_first_with(grid, scratch, expander, run, &mut tr);
    scratch.trace = tr;
    out
}

/// [`best_first`] recording into the recorder in `tr`, if any, instead of the scratch's own
/// (for searches on scratch memory other than the searcher's map-sized one, such as HPA*'s).
pub(crate) fn best_first_with<E: Expander, H: Estimate>(
    grid: &Grid,
    scratch: &mut Scratch,
    expander: &mut E,
    run: &Run<'_, H>,
    tr: &mut Option<trace::Recorder>,
) -> CoreOutcome {
    match tr {
        None => best_first_traced(grid, scratch, expander, run, &mut trace::Off),
        Some(rec) => best_first_traced(grid, scratch, expander, run, rec),
    }
}

/// [`best_first`] reporting to `tr` (every hook is compiled out for [`trace::Off`]).
fn best_first_traced<E: Expander, H: Estimate, T: Tracer>(
    grid: &Grid,
    scratch: &mut Scratch,
    expander: &mut E,
    run: &Run<'_, H>,
    tr: &mut T,
) -> CoreOutcome {
    let started = Instant::now();
    let mut stats = Stats::default();
    let mut closest: Option<(f64, f64, u32)> = None;
    let mut debug = Vec::new();
    let max_exp = run.limits.max_expansions.unwrap_or(u64::MAX);
    // Closed nodes stay closed under an inflated heuristic (see `algo::astar` for why the
    // bound holds without reopening); with a consistent one no closed node ever improves.
    let reopen = E::REOPEN && run.weight <= 1.0;

    let (nodes, open, succs) = scratch.parts();
    nodes.touch(run.start, 0.0, run.start);
    open.push(
        run.weight * run.heuristic.h(run.start),
        run.heuristic.tie(run.start, 0.0),
        run.start,
    );
    stats.generated += 1;
    if T::ON {
        tr.begin(run.weight);
        let h = run.heuristic.h(run.start);
        tr.event(RawEvent {
            kind: RawKind::Push,
            node: expander.cell(run.start),
            parent: expander.cell(run.start),
            g: 0.0,
            h,
            f: run.weight * h,
            phase: Phase::Search,
        });
    }

    let end = loop {
        // Step 1: take the best open node (each is in the heap once; its exact g is in its
        // record, the entry's g is only a tie-break, see `heap`).
        let Some((_, node)) = open.pop() else {
            break CoreEnd::Exhausted;
        };
        debug_assert!(!nodes.is_expanded(node));
        let g = nodes.g(node);
        // Step 2: the goal is done when it is expanded (not when generated): only then is
        // its g final.
        if node == run.goal {
            stats.expanded += 1;
            if T::ON {
                trace_expand(tr, run, expander, node, g, nodes.parent(node));
            }
            break CoreEnd::Goal;
        }
        // Step 3: limits, checked before the work they would bound.
        if stats.expanded >= max_exp {
            break CoreEnd::Limit(LimitKind::Expansions);
        }
        if stats.expanded % E::CHECK_EVERY == 0 {
            if let Some(kind) = limit_hit(run.limits) {
                break CoreEnd::Limit(kind);
            }
        }
        stats.expanded += 1;
        nodes.mark_expanded(node);
        if run.track_closest {
            let h = run.heuristic.h(node);
            if closest.is_none_or(|(bh, bg, _)| h < bh || h == bh && g < bg) {
                closest = Some((h, g, node));
            }
        }
        if debug.len() < run.debug_cap {
            debug.push(expander.cell(node));
        }
        let parent = nodes.parent(node);
        if T::ON {
            trace_expand(tr, run, expander, node, g, parent);
        }
        // Step 4: a search for a set of targets ends once the last of them is settled.
        if E::TARGETS && expander.settle(node) {
            break CoreEnd::Goal;
        }
        // Step 5: relax successors; push only strict improvements.
        let parent_info = (parent != node).then(|| {
            let parent_g = if E::PARENT_G {
                nodes.g(parent)
            } else {
                f64::NAN
            };
            (parent, parent_g)
        });
        expander.each_successor(grid, node, g, parent_info, succs, |expander, mut s| {
            let (old, closed) = nodes.cost_and_closed(s.node);
            if !reopen && closed {
                return;
            }
            if E::REFINES {
                expander.refine(grid, &mut s, old);
            }
            // `old * (1 - margin)` is infinity for an unreached node.
            if s.g >= old * (1.0 - IMPROVES_BY) {
                return;
            }
            nodes.touch(s.node, s.g, s.parent);
            let f = s.g + run.weight * run.heuristic.h(s.node);
            let tie = run.heuristic.tie(s.node, s.g);
            if old.is_finite() && !closed {
                open.update(f, tie, s.node);
            } else {
                stats.reopened += u64::from(closed);
                open.push(f, tie, s.node);
            }
            stats.generated += 1;
            if T::ON {
                let kind = match (old.is_finite(), closed) {
                    (false, _) => RawKind::Push,
                    (true, false) => RawKind::Decrease,
                    (true, true) => RawKind::Reopen,
                };
                tr.event(RawEvent {
                    kind,
                    node: expander.cell(s.node),
                    parent: expander.cell(s.parent),
                    g: s.g,
                    h: run.heuristic.h(s.node),
                    f,
                    phase: Phase::Search,
                });
            }
        });
    };
    stats.elapsed = started.elapsed();
    CoreOutcome {
        end,
        stats,
        closest: closest.map(|c| c.2),
        debug,
    }
}

/// Records the expansion of `node` (traced runs only).
fn trace_expand<E: Expander, H: Estimate, T: Tracer>(
    tr: &mut T,
    run: &Run<'_, H>,
    expander: &E,
    node: u32,
    g: f64,
    parent: u32,
) {
    let h = run.heuristic.h(node);
    tr.event(RawEvent {
        kind: RawKind::Expand,
        node: expander.cell(node),
        parent: expander.cell(parent),
        g,
        h,
        f: g + run.weight * h,
        phase: Phase::Search,
    });
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
