//! Multi-agent plans on the wire: the request of `POST /v1/maps/{name}/plans`, its answer
//! (`PlanResult` in `openapi.yaml`, also what `pathd mapf` prints), the limits, and the one
//! function both run a solve through.
//!
//! Limits (documented in `openapi.yaml` and the README): at most [`MAX_AGENTS`] agents; at
//! most [`MAX_AGENT_CELLS`] agents times passable cells (each agent gets a distance table
//! over the map's cells: 2 bytes a cell); `time_limit_ms` at most [`MAX_TIME_LIMIT_MS`]
//! (default [`DEFAULT_TIME_LIMIT_MS`]), counted from when the solve starts on a search
//! worker; the search keeps at most [`NODE_MEMORY`] bytes of configurations.
//!
//! Live plans (`"subscribe": true`) are in [`live`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use pathd_engine::mapf::{self, MapfError, MapfOptions, MapfPlan, Objective};
use pathd_engine::{Grid, Movement, Point};
use serde::{Deserialize, Serialize};

use crate::compute::Cancel;

/// Most agents in one request.
pub const MAX_AGENTS: usize = 2000;
/// Most agents times passable cells in one request (distance tables of 2 bytes a cell:
/// 256 MiB at most).
pub const MAX_AGENT_CELLS: u64 = 1 << 27;
/// Largest `time_limit_ms`.
pub const MAX_TIME_LIMIT_MS: u64 = 30_000;
/// `time_limit_ms` when none is given.
pub const DEFAULT_TIME_LIMIT_MS: u64 = 1_000;
/// Bytes of search configurations one solve keeps.
pub const NODE_MEMORY: usize = 256 << 20;

/// One agent of a request.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// `[x, y]`.
    pub start: [u32; 2],
    /// `[x, y]`.
    pub goal: [u32; 2],
}

/// `POST /v1/maps/{name}/plans`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanRequest {
    /// Wait (bounded by `--max-wait-ms`) until this replica has applied this map version.
    #[serde(default, deserialize_with = "crate::saturating::saturating")]
    pub min_version: Option<u64>,
    /// The agents, each with its start and goal (distinct starts, distinct goals).
    pub agents: Vec<AgentSpec>,
    /// Time budget in ms (default [`DEFAULT_TIME_LIMIT_MS`], at most [`MAX_TIME_LIMIT_MS`]):
    /// the anytime search improves its plan until then.
    pub time_limit_ms: Option<u64>,
    /// `sum_of_costs` (default) or `makespan`.
    pub objective: Option<String>,
    /// Answer with the first plan found.
    pub first_solution: Option<bool>,
    /// Seed of the solver's tie-breaking (default 0).
    pub seed: Option<u64>,
    /// Agent side in cells: only 1 (MAPF agents are one cell); others are `not_applicable`.
    pub size: Option<u32>,
    /// Movement profiles are not applied to multi-agent plans: `not_applicable`.
    pub profile: Option<serde_json::Value>,
    /// Keep the plan live ([`live`]): re-planned after patches and delays, followed by
    /// its event stream.
    pub subscribe: Option<bool>,
}

/// A checked request, ready to run on a worker.
#[derive(Clone, Debug)]
pub struct PlanJob {
    /// Starts.
    pub starts: Vec<Point>,
    /// Goals.
    pub goals: Vec<Point>,
    /// The objective.
    pub objective: Objective,
    /// The time budget.
    pub time_limit: Duration,
    /// Stop at the first plan.
    pub first_solution: bool,
    /// Tie-breaking seed.
    pub seed: u64,
    /// The move rule (the map's own for HTTP; `pathd mapf` defaults to `cardinal`).
    pub movement: Movement,
}

fn not_applicable(message: &str) -> PlanError {
    PlanError::NotApplicable(message.to_owned())
}

impl PlanRequest {
    /// The job for this request on `grid`: checks the options and the limits (the
    /// instance itself is checked by the engine, [`error`]).
    pub fn to_job(&self, grid: &Grid) -> Result<PlanJob, PlanError> {
        if self.profile.is_some() {
            return Err(not_applicable(
                "movement profiles do not apply to multi-agent plans",
            ));
        }
        if self.size.is_some_and(|s| s != 1) {
            return Err(not_applicable(
                "multi-agent plans are for one-cell agents (size 1)",
            ));
        }
        let objective = match self.objective.as_deref() {
            None => Objective::SumOfCosts,
            Some(o) => Objective::parse(o).ok_or_else(|| {
                PlanError::Invalid(format!(
                    "unknown objective {o:?}; expected sum_of_costs or makespan"
                ))
            })?,
        };
        let n = self.agents.len();
        if n > MAX_AGENTS || n as u64 * grid.passable_cells() as u64 > MAX_AGENT_CELLS {
            return Err(PlanError::TooManyAgents(format!(
                "{n} agents on {} passable cells: at most {MAX_AGENTS} agents and \
                     {MAX_AGENT_CELLS} agents times passable cells",
                grid.passable_cells()
            )));
        }
        let point = |p: [u32; 2]| Point::new(p[0], p[1]);
        let ms = self.time_limit_ms.unwrap_or(DEFAULT_TIME_LIMIT_MS);
        if ms == 0 || ms > MAX_TIME_LIMIT_MS {
            return Err(PlanError::Invalid(format!(
                "time_limit_ms must be 1..={MAX_TIME_LIMIT_MS}"
            )));
        }
        Ok(PlanJob {
            starts: self.agents.iter().map(|a| point(a.start)).collect(),
            goals: self.agents.iter().map(|a| point(a.goal)).collect(),
            objective,
            time_limit: Duration::from_millis(ms),
            first_solution: self.first_solution.unwrap_or(false),
            seed: self.seed.unwrap_or(0),
            movement: grid.movement(),
        })
    }
}

impl PlanJob {
    /// Solves on the calling thread (a search worker): the deadline starts now.
    pub fn run(&self, grid: &Grid, cancel: Option<&Cancel>) -> Result<MapfPlan, MapfError> {
        let opts = MapfOptions {
            objective: self.objective,
            deadline: Instant::now().checked_add(self.time_limit),
            cancel: cancel.map(Arc::clone),
            first_solution: self.first_solution,
            seed: self.seed,
            max_nodes: Some(NODE_MEMORY / (8 * self.starts.len().max(1) + 160)),
        };
        mapf::solve(grid, self.movement, &self.starts, &self.goals, &opts)
    }
}

/// The error of a malformed instance.
pub fn error(e: MapfError, grid: &Grid) -> PlanError {
    let message = e.to_string();
    match &e {
        MapfError::Blocked { at, .. } if !grid.in_bounds(*at) => PlanError::OutOfBounds(message),
        MapfError::Blocked { which: "start", .. } => PlanError::StartBlocked(message),
        MapfError::Blocked { .. } => PlanError::GoalBlocked(message),
        MapfError::NoAgents | MapfError::Lengths { .. } | MapfError::Shared { .. } => {
            PlanError::Invalid(message)
        }
    }
}

/// Why a plan was refused. The edge maps each to HTTP (`http/error.rs`); each carries
/// the message the client reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// `400 invalid_request`.
    Invalid(String),
    /// `400 not_applicable`: an option that multi-agent plans do not take.
    NotApplicable(String),
    /// `413 too_many_agents`.
    TooManyAgents(String),
    /// `400 out_of_bounds`.
    OutOfBounds(String),
    /// `400 start_blocked`.
    StartBlocked(String),
    /// `400 goal_blocked`.
    GoalBlocked(String),
    /// `404 plan_not_found`: the id.
    NotFound(String),
    /// `429 too_many_plans`.
    TooMany(String),
    /// `500 internal` (the detail logged, not sent).
    Internal(&'static str),
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::NotFound(id) => write!(f, "no live plan {id:?}"),
            PlanError::Internal(m) => f.write_str(m),
            PlanError::Invalid(m)
            | PlanError::NotApplicable(m)
            | PlanError::TooManyAgents(m)
            | PlanError::OutOfBounds(m)
            | PlanError::StartBlocked(m)
            | PlanError::GoalBlocked(m)
            | PlanError::TooMany(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PlanError {}

/// The answer (`PlanResult` in `openapi.yaml`; `pathd mapf` prints the same fields).
#[derive(Clone, Debug, Serialize)]
pub struct PlanResponse {
    /// `solved`, `partial` (a limit came first: the paths lead, collision-free, towards
    /// the goals) or `failed` (no plan exists).
    pub status: &'static str,
    /// `[x, y]` per time step for every agent, all `makespan + 1` long; an agent resting at
    /// its goal repeats it.
    pub paths: Vec<Vec<[u32; 2]>>,
    /// Sum over agents of the time step from which each rests at its goal for good.
    pub sum_of_costs: u64,
    /// Time steps of the plan.
    pub makespan: u64,
    /// Lower bound of the objective: the sum (or largest) of the agents' own distances.
    pub lower_bound: u64,
    /// The objective minimised.
    pub objective: &'static str,
    /// True when the plan is proven optimal for the objective.
    pub optimal: bool,
    /// The map version planned on (`0` for `pathd mapf` on a file).
    pub map_version: u64,
    /// Whole solve, ms.
    pub elapsed_ms: f64,
    /// Time to the first full plan, ms (`null` without one).
    pub first_solution_ms: Option<f64>,
    /// Search configurations created.
    pub nodes: u64,
}

impl PlanResponse {
    /// The answer for `plan` on map version `map_version`.
    pub fn new(plan: &MapfPlan, objective: Objective, map_version: u64) -> Self {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        Self {
            status: plan.status.as_str(),
            paths: plan
                .paths
                .iter()
                .map(|p| p.iter().map(|c| [c.x, c.y]).collect())
                .collect(),
            sum_of_costs: plan.sum_of_costs,
            makespan: plan.makespan,
            lower_bound: plan.lower_bound,
            objective: objective.as_str(),
            optimal: plan.optimal,
            map_version,
            elapsed_ms: ms(plan.stats.elapsed),
            first_solution_ms: plan.stats.first_solution.map(ms),
            nodes: plan.stats.nodes,
        }
    }
}
