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

mod expand;
pub(crate) mod finish;
mod heap;
mod heuristic;
pub(crate) mod lesson;
pub(crate) mod scratch;
pub(crate) mod trace;

use crate::clock::Instant;
use std::sync::atomic::Ordering as AtomicOrdering;

pub(crate) use expand::{Expander, GridExpander, Succ};
pub(crate) use finish::{Shaped, finish, finish_shaped, smooth_result};
pub(crate) use heap::OpenList;
pub(crate) use heuristic::{Estimate, Heuristic, Zero};
pub(crate) use scratch::Scratch;

use crate::grid::Grid;
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

/// Reads the parent chain from `end` back to the start, returned start first: counted
/// first, then written from its end into a vector of that exact length (no growth, no
/// reversal).
pub(crate) fn chain(scratch: &Scratch, end: u32) -> Vec<u32> {
    let nodes = scratch.nodes();
    let parents = |from: u32| {
        std::iter::successors(Some(from), |&n| Some(nodes.parent(n)).filter(|&p| p != n))
    };
    let len = parents(end).count();
    let mut out = vec![0; len];
    for (slot, n) in out.iter_mut().rev().zip(parents(end)) {
        *slot = n;
    }
    out
}
