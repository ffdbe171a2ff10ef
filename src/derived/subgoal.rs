//! Subgoal graphs with a contraction hierarchy ([`SubgoalGraph`]), one per map version:
//! the derived structure `subgoal` queries run on, and `auto` where it pays off (maps
//! dense in obstacle corners, e.g. random obstacles and mazes, where JPS+ drowns in jump
//! points).
//!
//! The same life as every derived structure ([`super`]): built on the pool's `subgoal`
//! lane for a map version that wants one (uniform octile maps of at most
//! `--subgoal-max-cells` cells); `failed` when its build panics; accounted in the
//! derived-memory budget and evicted like the others. Meanwhile `subgoal` answers `503
//! abstraction_building` and `auto` uses JPS(+).
//!
//! Unlike the jump table, a patched version's graph is not derived in the patch's job:
//! [`SubgoalGraph::update`] rescans locally but contracts the hierarchy anew, which costs
//! about a build (0.12 s on random512-40-0, 1 s on Berlin_1_1024), far more than a write
//! may take. So every version's graph is built on the lane, and a version replaced before
//! its turn is skipped. The cell cap keeps that background work bounded: on street maps
//! the graph does not pay off (`auto` keeps JPS+ there), and on 1024x1024 maps a build
//! takes a second.

use std::sync::Arc;
use std::time::Instant;

use pathd_engine::{Grid, Movement, SubgoalGraph};
use serde::Serialize;

use super::budget::Budget;
use super::pool::{Builders, Lane};
use super::slot::Slot;
use crate::derived::MapEntry;

/// The subgoal graph of one map version, once built.
#[derive(Debug, Default)]
pub struct SubgoalSlot {
    slot: Slot<SubgoalGraph>,
}

/// The `subgoal` object of a map summary.
#[derive(Clone, Debug, Serialize)]
pub struct SubgoalInfo {
    /// `building`, `ready`, `failed` or `evicted`.
    pub status: &'static str,
    /// Why the build failed (`failed` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `build` or `update` (derived from the previous version's).
    pub made_by: &'static str,
    /// Subgoals (0 unless ready).
    pub subgoals: usize,
    /// Edges of the hierarchy, shortcuts included (0 unless ready).
    pub edges: usize,
    /// True when `auto` prefers it to JPS+ on this map.
    pub auto: bool,
    /// Heap bytes (0 unless ready).
    pub memory_bytes: usize,
    /// Time of the build or update, in microseconds (0 unless ready).
    pub took_us: u64,
}

impl SubgoalSlot {
    /// The graph, when ready (a use, for eviction).
    pub fn get(&self) -> Option<Arc<SubgoalGraph>> {
        self.slot.get()
    }

    /// The slot itself (readiness checks and the budget go through it).
    pub fn slot(&self) -> &Slot<SubgoalGraph> {
        &self.slot
    }

    /// What the map summary reports (`None` for maps that get none).
    pub fn info(&self) -> Option<SubgoalInfo> {
        let status = self.slot.status().as_str()?;
        let graph = self.slot.peek();
        Some(SubgoalInfo {
            status,
            error: self.slot.error(),
            made_by: self.slot.made_by(),
            subgoals: graph.as_ref().map_or(0, |g| g.subgoals()),
            edges: graph.as_ref().map_or(0, |g| g.edges()),
            auto: graph.as_ref().is_some_and(|g| g.pays_off()),
            memory_bytes: graph.as_ref().map_or(0, |g| g.memory_bytes()),
            took_us: if graph.is_some() {
                self.slot.took_us()
            } else {
                0
            },
        })
    }
}

/// Which maps get a subgoal graph.
#[derive(Clone, Copy, Debug)]
pub struct SubgoalSettings {
    /// Largest map (in cells) that gets one; 0 disables them.
    pub max_cells: u64,
}

impl SubgoalSettings {
    /// Which maps get a subgoal graph, as configured (`--subgoal-max-cells`).
    pub fn from_config(config: &crate::config::Config) -> Self {
        SubgoalSettings {
            max_cells: config.subgoal_max_cells,
        }
    }

    /// True when `grid` should have a graph: uniform, octile, not too big.
    pub fn wants(&self, grid: &Grid) -> bool {
        grid.is_uniform()
            && grid.movement() == Movement::Octile
            && grid.width() as u64 * grid.height() as u64 <= self.max_cells
    }
}

/// The background builder: the pool's `subgoal` lane.
pub struct SubgoalBuilder {
    settings: SubgoalSettings,
    lane: Lane,
    budget: Arc<Budget>,
}

impl SubgoalBuilder {
    /// Takes its lane of `builders`.
    pub fn new(settings: SubgoalSettings, builders: &Builders, budget: Arc<Budget>) -> Self {
        SubgoalBuilder {
            settings,
            lane: builders.lane("subgoal"),
            budget,
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &SubgoalSettings {
        &self.settings
    }

    /// Queues a build for `entry` if its map wants one and none was started (or it was
    /// evicted).
    pub fn ensure(&self, entry: &Arc<MapEntry>) {
        if !self.settings.wants(&entry.grid) || !entry.subgoal.slot.start() {
            return;
        }
        let budget = Arc::clone(&self.budget);
        self.lane.send(
            entry,
            move |e| {
                build(e);
                budget.admit(e);
            },
            |e, why| e.subgoal.slot.fail(why),
        );
    }
}

fn build(entry: &MapEntry) {
    let started = Instant::now();
    let Some(graph) = SubgoalGraph::build(&entry.grid) else {
        entry.subgoal.slot.reset();
        return;
    };
    let took = started.elapsed();
    metrics::histogram!("pathd_subgoal_build_seconds").record(took);
    tracing::debug!(
        map = %entry.name,
        version = entry.version,
        build_us = took.as_micros() as u64,
        subgoals = graph.subgoals(),
        memory_bytes = graph.memory_bytes(),
        "subgoal graph ready"
    );
    entry.subgoal.slot.set(Arc::new(graph), "build", took);
}
