//! Wire form of search traces (`"trace": true` on a path query; `SearchTrace` in
//! `openapi.yaml`). The engine side is [`pathd_engine::trace`].

use pathd_engine::trace::{Trace, TraceEvent};
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
    /// Searches of the core recorded: 1, or several for HPA* (its refinement searches), 0
    /// when no search ran (start = goal, or a goal known unreachable).
    pub runs: u32,
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
        };
        SearchTrace {
            events: t.events.iter().map(event).collect(),
            expansions: t.expansions,
            truncated: t.truncated,
            cap,
            weight: t.weight,
            runs: t.runs,
        }
    }
}
