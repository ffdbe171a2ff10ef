//! Wire form of search traces (`"trace": true` on a path query; `SearchTrace` in
//! `openapi.yaml`). The engine side is [`pathd_engine::trace`].

use pathd_engine::trace::{HpaTrace, Phase, Trace, TraceEvent};
use serde::Serialize;

/// A path query's trace, capped by `--max-debug-cells` expansions.
#[derive(Debug, Serialize)]
pub struct SearchTrace {
    /// Events in the order they happened.
    pub events: Vec<SearchTraceEvent>,
    /// Expansion events in `events`; equals the answer's `expanded` unless `truncated`.
    pub expansions: usize,
    /// True when the cap cut the recording short.
    pub truncated: bool,
    /// The cap on recorded expansions (the server's `--max-debug-cells`).
    pub cap: usize,
    /// `f = g + weight * h`: 1 for A*, JPS and Theta*, 0 for Dijkstra, `w` for weighted A*.
    pub weight: f64,
    /// Searches recorded: 1, or several for HPA* (window, insertion, abstract, refinement
    /// and corridor searches), 0 when no search ran (start = goal, or a goal known
    /// unreachable).
    pub runs: u32,
    /// HPA*'s entrances, abstract path and refinement (HPA* answers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpa: Option<HpaTraceWire>,
}

/// The HPA* part of a [`SearchTrace`] (`HpaTrace` in `openapi.yaml`).
#[derive(Debug, Serialize)]
pub struct HpaTraceWire {
    /// Cluster side in cells.
    pub cluster_size: u32,
    /// Entrance (abstract node) cells of every cluster the abstract search reached.
    pub entrances: Vec<[u32; 2]>,
    /// True when the trace cap cut `entrances` short.
    pub entrances_truncated: bool,
    /// Start, entrance cells, goal: the abstract path (empty when the window answered).
    pub abstract_path: Vec<[u32; 2]>,
    /// Cost from the start of each `abstract_path` node.
    pub abstract_costs: Vec<f64>,
    /// The refinement steps, in order; replaying them gives the answer's path.
    pub refinement: Vec<RefineStepWire>,
}

/// One step of [`HpaTraceWire::refinement`].
#[derive(Debug, Serialize)]
pub struct RefineStepWire {
    /// `start`, `goal`, `cross`, `cached`, `search` (append one abstract edge's cells) or
    /// `corridor`, `straighten`, `window` (replace the path).
    pub kind: &'static str,
    /// The step's cells.
    pub cells: Vec<[u32; 2]>,
    /// Events that happened before the step.
    pub after_events: usize,
}

impl HpaTraceWire {
    /// The wire form of an engine HPA* record.
    pub fn new(h: &HpaTrace) -> Self {
        let pts = |v: &[pathd_engine::Point]| v.iter().map(|p| [p.x, p.y]).collect();
        HpaTraceWire {
            cluster_size: h.cluster_size,
            entrances: pts(&h.entrances),
            entrances_truncated: h.entrances_truncated,
            abstract_path: h.abstract_path.iter().map(|(p, _)| [p.x, p.y]).collect(),
            abstract_costs: h.abstract_path.iter().map(|&(_, g)| g).collect(),
            refinement: h
                .refinement
                .iter()
                .map(|s| RefineStepWire {
                    kind: s.kind.as_str(),
                    cells: pts(&s.cells),
                    after_events: s.after_events,
                })
                .collect(),
        }
    }
}

/// One event of a [`SearchTrace`].
#[derive(Debug, Serialize)]
pub struct SearchTraceEvent {
    /// `expand` (taken off the open list and closed), `push` (first reached), `decrease`
    /// (open and reached more cheaply) or `reopen` (closed and reached more cheaply).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The node, `[x, y]`.
    pub node: [u32; 2],
    /// Its parent, `[x, y]` (the start is its own parent; Theta*'s line-of-sight parent;
    /// JPS's previous jump point).
    pub parent: [u32; 2],
    /// Cost from the start.
    pub g: f64,
    /// Heuristic to the goal.
    pub h: f64,
    /// Priority `g + weight * h`.
    pub f: f64,
    /// HPA* only: which of its searches (`window`, `insert`, `abstract`, `refine`,
    /// `corridor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<&'static str>,
}

impl SearchTrace {
    /// The wire form of an engine trace recorded with `cap`.
    pub fn new(t: Trace, cap: usize) -> Self {
        let event = |e: &TraceEvent| SearchTraceEvent {
            kind: e.kind.as_str(),
            node: [e.node.x, e.node.y],
            parent: [e.parent.x, e.parent.y],
            g: e.g,
            h: e.h,
            f: e.f,
            phase: (e.phase != Phase::Search).then(|| e.phase.as_str()),
        };
        SearchTrace {
            events: t.events.iter().map(event).collect(),
            expansions: t.expansions,
            truncated: t.truncated,
            cap,
            weight: t.weight,
            runs: t.runs,
            hpa: t.hpa.as_ref().map(HpaTraceWire::new),
        }
    }
}
