//! What a MAPF solve takes and gives: the instance, the options, the plan and its outcome.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::grid::Point;

/// What the solver minimises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Objective {
    /// The sum over agents of the time step from which each rests at its goal for good.
    #[default]
    SumOfCosts,
    /// The time step at which the last agent reaches its goal.
    Makespan,
}

impl Objective {
    /// The wire name: `sum_of_costs` or `makespan`.
    pub fn as_str(self) -> &'static str {
        match self {
            Objective::SumOfCosts => "sum_of_costs",
            Objective::Makespan => "makespan",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "sum_of_costs" => Some(Objective::SumOfCosts),
            "makespan" => Some(Objective::Makespan),
            _ => None,
        }
    }
}

/// How a solve runs.
#[derive(Clone, Debug)]
pub struct MapfOptions {
    /// What to minimise.
    pub objective: Objective,
    /// Stop at this instant (the anytime search returns its best plan by then).
    pub deadline: Option<Instant>,
    /// Stop when this flag becomes true (the client went away, the server shuts down).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Return as soon as a first plan is found (no refinement).
    pub first_solution: bool,
    /// Seed of the solver's random tie-breaking; the same seed, instance and amount of work
    /// give the same plan.
    pub seed: u64,
    /// Most search nodes (configurations) kept; a bound on memory (each node holds one
    /// vertex per agent). `None`: [`MapfOptions::DEFAULT_NODE_MEMORY`] bytes' worth.
    pub max_nodes: Option<usize>,
}

impl MapfOptions {
    /// Bytes of configurations the search keeps by default (512 MiB).
    pub const DEFAULT_NODE_MEMORY: usize = 512 << 20;

    /// Sum of costs, no deadline, seed 0.
    pub fn new() -> Self {
        Self {
            objective: Objective::SumOfCosts,
            deadline: None,
            cancel: None,
            first_solution: false,
            seed: 0,
            max_nodes: None,
        }
    }

    /// These options with a deadline `limit` from now.
    pub fn with_time_limit(mut self, limit: Duration) -> Self {
        self.deadline = Some(Instant::now() + limit);
        self
    }

    /// True when the deadline passed or the cancel flag is set.
    pub(crate) fn stopped(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
            || self
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
    }
}

impl Default for MapfOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// How a solve ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapfStatus {
    /// Every agent reaches its goal; the plan is collision-free.
    Solved,
    /// A limit (time, cancel, node memory) came before any full plan: the paths lead,
    /// collision-free, from the starts to the configuration nearest the goals found so far.
    Partial,
    /// No plan exists (proven: a goal is unreachable, or the search exhausted every
    /// reachable configuration). `paths` holds each agent's start only.
    Failed,
}

impl MapfStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MapfStatus::Solved => "solved",
            MapfStatus::Partial => "partial",
            MapfStatus::Failed => "failed",
        }
    }
}

/// A solve's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct MapfPlan {
    /// How it ended.
    pub status: MapfStatus,
    /// One path per agent, every path `makespan + 1` cells long: `paths[i][t]` is agent
    /// `i`'s cell at time step `t`; an agent resting at its goal repeats it.
    pub paths: Vec<Vec<Point>>,
    /// Sum over agents of the time step from which each rests at its goal for good
    /// (for a partial plan: the time it rests at its last cell).
    pub sum_of_costs: u64,
    /// Time steps of the plan (`paths[i].len() - 1`).
    pub makespan: u64,
    /// A lower bound on the objective: the sum (sum of costs) or the largest (makespan) of
    /// the agents' own shortest distances, ignoring each other.
    pub lower_bound: u64,
    /// True when the plan is proven optimal for the objective (the search ran out of
    /// configurations that could still improve it).
    pub optimal: bool,
    /// Counters.
    pub stats: MapfStats,
}

/// What a solve did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MapfStats {
    /// Time to the first full plan (`None` when there is none).
    pub first_solution: Option<Duration>,
    /// Whole solve.
    pub elapsed: Duration,
    /// Search nodes (distinct configurations) created.
    pub nodes: u64,
    /// Configurations generated (PIBT calls), including known and failed ones.
    pub generated: u64,
    /// Times a better plan was found after the first (by the search or by refinement).
    pub improvements: u64,
    /// Objective of the first plan found.
    pub first_cost: Option<u64>,
}

/// A malformed instance (a misuse, not an outcome: an unsolvable instance is
/// [`MapfStatus::Failed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapfError {
    /// No agents.
    NoAgents,
    /// Not one goal per start.
    Lengths {
        /// Starts given.
        starts: usize,
        /// Goals given.
        goals: usize,
    },
    /// Agent `agent`'s start or goal (`which`) is off the map or a wall.
    Blocked {
        /// Agent index.
        agent: usize,
        /// `"start"` or `"goal"`.
        which: &'static str,
        /// The cell.
        at: Point,
    },
    /// Two agents share a start or a goal.
    Shared {
        /// The first agent.
        first: usize,
        /// The second agent.
        second: usize,
        /// `"start"` or `"goal"`.
        which: &'static str,
        /// The cell.
        at: Point,
    },
}

impl fmt::Display for MapfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapfError::NoAgents => write!(f, "no agents"),
            MapfError::Lengths { starts, goals } => {
                write!(f, "{starts} starts but {goals} goals")
            }
            MapfError::Blocked { agent, which, at } => {
                write!(f, "agent {agent}'s {which} {at} is off the map or blocked")
            }
            MapfError::Shared {
                first,
                second,
                which,
                at,
            } => {
                write!(f, "agents {first} and {second} share the {which} {at}")
            }
        }
    }
}

impl std::error::Error for MapfError {}
