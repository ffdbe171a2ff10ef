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
//! - HPA*: every search of the query, one after another ([`Trace::runs`] of them), each
//!   event tagged with its [`Phase`]: the window A* tried first for nearby ends, the two
//!   in-cluster Dijkstras that insert start and goal, the abstract A* over entrances (its
//!   nodes are transition cells, its parents the previous abstract node), the in-cluster
//!   A* runs that refine uncached abstract edges, and the corridor A* on weighted maps.
//!   Together they account for the answer's `expanded`. [`Trace::hpa`] adds what is not
//!   an event: the entrances, the abstract path and the refinement steps that turn it into
//!   the answer's cells ([`HpaTrace`]).
//!
//! Untraced searches pay nothing: the core is instantiated with a no-op tracer whose hooks
//! compile away, and checks once per search whether a trace is wanted.

use crate::grid::{Grid, Point};
use crate::query::{Query, QueryError, SearchResult};
use crate::search::trace::{RawKind, Recorder};

/// Which search of a query an event belongs to. Only HPA* runs more than one kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// The algorithm's one best-first search (every algorithm but HPA*).
    #[default]
    Search,
    /// HPA*: the A* inside the window around nearby start and goal.
    Window,
    /// HPA*: the Dijkstras that connect start and goal to their clusters' entrances.
    Insert,
    /// HPA*: the A* over the abstract graph; nodes are entrance (transition) cells.
    Abstract,
    /// HPA*: an A* inside one cluster that turns an uncached abstract edge into cells.
    Refine,
    /// HPA*: the A* inside the corridor of clusters around the refined path.
    Corridor,
}

impl Phase {
    /// The wire name: `search`, `window`, `insert`, `abstract`, `refine` or `corridor`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Search => "search",
            Phase::Window => "window",
            Phase::Insert => "insert",
            Phase::Abstract => "abstract",
            Phase::Refine => "refine",
            Phase::Corridor => "corridor",
        }
    }
}

/// One step of HPA*'s refinement ([`RefineStep::kind`]). The first five each append one
/// abstract edge's cells to the path; the last three replace the whole path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefineKind {
    /// From the start, along the start's in-cluster Dijkstra tree.
    Start,
    /// To the goal, along the goal's in-cluster Dijkstra tree.
    Goal,
    /// One step across a cluster border (an inter-cluster edge).
    Cross,
    /// A cached intra-cluster path.
    Cached,
    /// An intra-cluster path found by an A* inside the cluster (its events are the
    /// [`Phase::Refine`] events just before the step).
    Search,
    /// The corridor A*'s path (weighted maps), replacing the edge-by-edge one.
    Corridor,
    /// The straightened path.
    Straighten,
    /// The window A*'s path, when it is the answer (provably optimal, or cheaper).
    Window,
}

impl RefineKind {
    /// The wire name (`start`, `goal`, `cross`, `cached`, `search`, `corridor`,
    /// `straighten`, `window`).
    pub fn as_str(self) -> &'static str {
        match self {
            RefineKind::Start => "start",
            RefineKind::Goal => "goal",
            RefineKind::Cross => "cross",
            RefineKind::Cached => "cached",
            RefineKind::Search => "search",
            RefineKind::Corridor => "corridor",
            RefineKind::Straighten => "straighten",
            RefineKind::Window => "window",
        }
    }

    /// True when the step replaces the path rather than appending to it.
    pub fn replaces(self) -> bool {
        matches!(
            self,
            RefineKind::Corridor | RefineKind::Straighten | RefineKind::Window
        )
    }
}

/// One refinement step of an HPA* trace.
#[derive(Clone, Debug, PartialEq)]
pub struct RefineStep {
    /// What the step did.
    pub kind: RefineKind,
    /// Its cells: an appending step's start with the path's last cell so far; a replacing
    /// step's are the whole new path.
    pub cells: Vec<Point>,
    /// How many of [`Trace::events`] happened before it (where it sits in search order).
    pub after_events: usize,
}

/// What an HPA* trace shows besides events.
///
/// Replaying [`HpaTrace::refinement`] from an empty path (append each appending step's
/// cells after its first, replace the path with a replacing step's) gives the answer's path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HpaTrace {
    /// Cluster side in cells.
    pub cluster_size: u32,
    /// The abstract nodes (entrance cells) of every cluster the abstract search reached, at
    /// most the trace's cap of them.
    pub entrances: Vec<Point>,
    /// True when the cap cut `entrances` short.
    pub entrances_truncated: bool,
    /// The abstract path: the start, the entrance cells it passes and the goal (or the
    /// partial answer's endpoint), each with its cost from the start. Empty when the window
    /// answered, or when no path was found.
    pub abstract_path: Vec<(Point, f64)>,
    /// The refinement, in order.
    pub refinement: Vec<RefineStep>,
}

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
    /// Which search of the query recorded it.
    pub phase: Phase,
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
    /// HPA*'s abstract path and refinement (HPA* queries only).
    pub hpa: Option<HpaTrace>,
}

/// [`crate::Searcher::find_path_traced`] with a fresh searcher (see [`crate::find_path`]).
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
    crate::Searcher::new().find_path_traced(grid, derived, query, cap)
}

impl crate::Searcher {
    /// [`crate::Searcher::find_path_derived`] recording a [`Trace`] of at most `cap`
    /// expansions (and the generations in between). The recorder lives in this searcher for
    /// the query.
    pub fn find_path_traced(
        &mut self,
        grid: &Grid,
        derived: crate::Derived<'_>,
        query: &Query,
        cap: usize,
    ) -> Result<(SearchResult, Trace), QueryError> {
        self.scratch.trace = Some(Recorder::new(cap));
        let result = self.answer(grid, derived, query);
        let rec = self.scratch.trace.take().unwrap_or_default();
        Ok((result?, to_trace(grid, rec)))
    }
}

/// Turns what a recorder holds (padded cells) into a [`Trace`] (map points).
fn to_trace(grid: &Grid, rec: Recorder) -> Trace {
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
            phase: e.phase,
        })
        .collect();
    let cells = |v: &[u32]| v.iter().map(|&c| point(c)).collect::<Vec<_>>();
    let hpa = rec.hpa.as_ref().map(|h| HpaTrace {
        cluster_size: h.cluster_size,
        entrances: cells(&h.entrances),
        entrances_truncated: h.entrances_truncated,
        abstract_path: h
            .abstract_path
            .iter()
            .map(|&(c, g)| (point(c), g))
            .collect(),
        refinement: h
            .steps
            .iter()
            .map(|s| RefineStep {
                kind: s.kind,
                cells: cells(&s.cells),
                after_events: s.events,
            })
            .collect(),
    });
    Trace {
        events,
        truncated: rec.truncated,
        expansions: rec.expansions,
        weight: if rec.runs == 0 { 1.0 } else { rec.weight },
        runs: rec.runs,
        hpa,
    }
}
