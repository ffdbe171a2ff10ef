//! The search-trace hook of the best-first core.
//!
//! The core is generic over a [`Tracer`]. Searches run with [`Off`], a zero-sized tracer
//! whose `ON` is `false`: every hook sits behind `if T::ON`, so the untraced loop compiles to
//! exactly the code it had before. A traced query ([`crate::Searcher::find_path_traced`])
//! puts a [`Recorder`] in the searcher's scratch for the duration of one query;
//! [`super::best_first`] takes it once per run (not per node) and runs the [`Recorder`]
//! instantiation instead. Because the recorder rides along in the scratch, every algorithm
//! built on the core (A*, Dijkstra, weighted A*, JPS, JPS+, Theta*) is traced without its own
//! code knowing. No thread-local is involved: the searcher owns its recorder.
//!
//! HPA* lends the recorder to each of its searches in turn ([`super::best_first_with`]: the
//! window, insertion, abstract, refinement and corridor searches, all on the core) and also
//! records the phase each event belongs to ([`Recorder::phase`], set between its searches)
//! and its abstract path and refinement steps ([`Recorder::hpa`]).

use crate::trace::{Phase, RefineKind};

/// What happened to a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RawKind {
    /// Taken off the open list and expanded (closed).
    Expand,
    /// Reached for the first time and pushed onto the open list.
    Push,
    /// Already open, reached more cheaply: its key decreased.
    Decrease,
    /// Already expanded, reached more cheaply, pushed again (weighted A* only).
    Reopen,
}

/// One recorded event, in padded node ids.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawEvent {
    pub kind: RawKind,
    pub node: u32,
    pub parent: u32,
    pub g: f64,
    pub h: f64,
    pub f: f64,
    /// Which search of the query it came from (stamped by the [`Recorder`]).
    pub phase: Phase,
}

/// One refinement step of an HPA* query, in padded cells.
#[derive(Clone, Debug)]
pub(crate) struct RawStep {
    pub kind: RefineKind,
    pub cells: Vec<u32>,
    /// Events recorded before it.
    pub events: usize,
}

/// What an HPA* query records besides events, in padded cells.
#[derive(Clone, Debug, Default)]
pub(crate) struct HpaRecord {
    pub cluster_size: u32,
    /// Abstract nodes of the clusters the abstract search reached, at most the cap.
    pub entrances: Vec<u32>,
    pub entrances_truncated: bool,
    /// Start, transition cells, goal (or the partial endpoint), each with its `g`.
    pub abstract_path: Vec<(u32, f64)>,
    pub steps: Vec<RawStep>,
}

/// Receives the core's events.
pub(crate) trait Tracer {
    /// False for the no-op tracer: the core skips every hook (and the work of computing
    /// their arguments) at compile time.
    const ON: bool;
    /// A run of the core starts, with `f = g + weight * h`.
    fn begin(&mut self, weight: f64);
    /// One event.
    fn event(&mut self, e: RawEvent);
}

/// The no-op tracer of ordinary searches.
pub(crate) struct Off;

impl Tracer for Off {
    const ON: bool = false;
    #[inline(always)]
    fn begin(&mut self, _weight: f64) {}
    #[inline(always)]
    fn event(&mut self, _e: RawEvent) {}
}

/// Records events up to a cap on expansions: once `cap` expansions are recorded, nothing
/// more is, and `truncated` is set if the search went on.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub cap: usize,
    pub events: Vec<RawEvent>,
    pub expansions: usize,
    pub truncated: bool,
    /// Runs of the core seen (HPA* refines in several).
    pub runs: u32,
    /// The weight of the last run.
    pub weight: f64,
    /// The phase stamped on the events that follow (HPA* sets it between its searches).
    pub phase: Phase,
    /// HPA*'s abstract path and refinement, when an HPA* query ran.
    pub hpa: Option<HpaRecord>,
}

impl Recorder {
    pub(crate) fn new(cap: usize) -> Self {
        Recorder {
            cap,
            weight: 1.0,
            ..Recorder::default()
        }
    }
}

impl Tracer for Recorder {
    const ON: bool = true;

    fn begin(&mut self, weight: f64) {
        self.runs += 1;
        self.weight = weight;
    }

    fn event(&mut self, mut e: RawEvent) {
        e.phase = self.phase;
        if self.expansions >= self.cap {
            self.truncated = true;
            return;
        }
        if e.kind == RawKind::Expand {
            self.expansions += 1;
        }
        self.events.push(e);
    }
}
