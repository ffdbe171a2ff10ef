//! Search traces: what the best-first core did, event by event, for visualisers and
//! debugging ("why did my unit go that way?").
//!
//! [`find_path_traced`] answers a query like [`crate::find_path_derived`] and also returns a
//! [`Trace`]: in order, every node the core generated (pushed onto the open list, or whose
//! key decreased, or that was reopened) with its `g`, `h`, `f` and parent, and every node it
//! expanded with the same. `f = g + weight * h`, where `weight` is 1 for A*, 0 for Dijkstra,
//! `w` for weighted A* ([`Trace::weight`]); `h` is the heuristic (octile or Manhattan scaled
//! by the map's smallest cost; Euclidean for Theta*).
//!
//! Per algorithm:
//! - A*, Dijkstra, weighted A*: every expansion, so the expansions number the result's
//!   `expanded` (up to the cap) and each expansion's parent was expanded before it.
//! - JPS: the expanded nodes are jump points; a parent link is the jump that reached it.
//! - Theta*: parents are line-of-sight parents (possibly far away).
//! - HPA*: the events of its grid-level corridor refinement searches, one after another
//!   ([`Trace::runs`] of them); the abstract search is not traced.
//!
//! Untraced searches pay nothing: the core is instantiated with a no-op tracer whose hooks
//! compile away, and checks once per search whether a trace is wanted.

use crate::grid::{Grid, Point};
use crate::query::{Query, QueryError, SearchResult};
use crate::search::trace::{RawKind, Recorder, put, take};

/// What happened to a node in one [`TraceEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// Taken off the open list and expanded (it is closed afterwards).
    Expand,
    /// Reached for the first time and pushed onto the open list (the start included).
    Push,
    /// Already open and reached more cheaply: its `g`, `f` and parent changed.
    Decrease,
    /// Already expanded and reached more cheaply: pushed again (weighted A* only).
    Reopen,
}

impl TraceKind {
    /// The wire name: `expand`, `push`, `decrease` or `reopen`.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceKind::Expand => "expand",
            TraceKind::Push => "push",
            TraceKind::Decrease => "decrease",
            TraceKind::Reopen => "reopen",
        }
    }
}

/// One event of a [`Trace`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceEvent {
    /// What happened.
    pub kind: TraceKind,
    /// The node.
    pub node: Point,
    /// Its parent (the start is its own parent).
    pub parent: Point,
    /// Its cost from the start.
    pub g: f64,
    /// Its heuristic towards the goal.
    pub h: f64,
    /// Its priority, `g + weight * h`.
    pub f: f64,
}

/// The events of one traced query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// Events in the order they happened.
    pub events: Vec<TraceEvent>,
    /// True when the cap stopped the recording before the search ended.
    pub truncated: bool,
    /// Expansion events recorded.
    pub expansions: usize,
    /// Heuristic weight of the (last) run: `f = g + weight * h`.
    pub weight: f64,
    /// Runs of the core (0 when no search ran, e.g. start = goal; several for HPA*).
    pub runs: u32,
}

/// Clears the thread's recorder even if the search panics.
struct Parked;

impl Drop for Parked {
    fn drop(&mut self) {
        let _ = take();
    }
}

/// [`crate::find_path_derived`] (per-thread searcher) recording a [`Trace`] of at most `cap`
/// expansions (and the generations in between).
///
/// ```
/// use pathd_engine::{movingai, Point, Query};
/// use pathd_engine::trace::{find_path_traced, TraceKind};
/// let grid = movingai::parse_map("type octile\nheight 1\nwidth 4\nmap\n....\n").unwrap();
/// let (r, t) = find_path_traced(&grid, Default::default(), &Query::new(Point::new(0, 0), Point::new(3, 0)), 100).unwrap();
/// let expanded = t.events.iter().filter(|e| e.kind == TraceKind::Expand).count();
/// assert_eq!(expanded as u64, r.stats.expanded);
/// assert!(!t.truncated);
/// ```
pub fn find_path_traced(
    grid: &Grid,
    derived: crate::Derived<'_>,
    query: &Query,
    cap: usize,
) -> Result<(SearchResult, Trace), QueryError> {
    let guard = Parked;
    put(Recorder::new(cap));
    let result = crate::find_path_derived(grid, derived, query);
    let rec = take().unwrap_or_default();
    drop(guard);
    let result = result?;
    let pw = grid.padded_width();
    let point = |id: u32| {
        let i = id as usize;
        Point::new((i % pw) as u32 - 1, (i / pw) as u32 - 1)
    };
    let events = rec
        .events
        .iter()
        .map(|e| TraceEvent {
            kind: match e.kind {
                RawKind::Expand => TraceKind::Expand,
                RawKind::Push => TraceKind::Push,
                RawKind::Decrease => TraceKind::Decrease,
                RawKind::Reopen => TraceKind::Reopen,
            },
            node: point(e.node),
            parent: point(e.parent),
            g: e.g,
            h: e.h,
            f: e.f,
        })
        .collect();
    Ok((
        result,
        Trace {
            events,
            truncated: rec.truncated,
            expansions: rec.expansions,
            weight: if rec.runs == 0 { 1.0 } else { rec.weight },
            runs: rec.runs,
        },
    ))
}
