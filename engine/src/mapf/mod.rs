//! Multi-agent path finding (MAPF): collision-free plans for many agents at once.
//!
//! [`solve`] plans every agent from its start to its goal so that no two agents ever share a
//! cell or swap cells (the MAPF benchmark's rules; on octile maps also no crossing
//! diagonals, see [`check`]). It is LaCAM* (Okumura, IJCAI 2023), written here from the
//! papers:
//!
//! | part | file |
//! |---|---|
//! | instance, options, plan types | [`instance`] |
//! | move graph (passable cells, one-step moves) | [`graph`] |
//! | per-goal distance tables (lazy BFS) | [`dist`] |
//! | PIBT successor generator | `pibt.rs` |
//! | LaCAM* configuration search, low-level constraints, rewiring | `lacam.rs` |
//! | anytime refinement (large neighbourhood search) | `refine.rs` |
//! | prioritised planning, a second way to a first plan | `prioritized.rs` |
//! | space-time A* against other paths (for both) | `spacetime.rs` |
//! | live plans: re-planning some agents against the others' kept paths | [`repair`] |
//! | plan checker | [`check`] |
//!
//! **Complete**: an unsolvable instance is answered [`MapfStatus::Failed`] once the search has
//! seen every reachable configuration (at once when some goal is unreachable); a solvable
//! one is solved given time and memory. **Anytime**: the first plan comes from a
//! depth-first search that PIBT steers towards the goals; the search then goes on
//! improving it (LaCAM*) until the deadline, and the plan is refined by re-planning groups
//! of agents against the others' paths.
//!
//! Time steps are unit whatever a cell costs (a weighted cell is passable).
//!
//! ```
//! use pathd_engine::mapf::{self, MapfOptions, MapfStatus};
//! use pathd_engine::{movingai, Movement, Point};
//! // A corridor with a side pocket off its second cell: the agents pass each other there.
//! let grid = movingai::parse_map("type octile\nheight 2\nwidth 4\nmap\n....\n@.@@\n").unwrap();
//! let starts = [Point::new(0, 0), Point::new(3, 0)];
//! let goals = [Point::new(3, 0), Point::new(0, 0)];
//! let plan = mapf::solve(&grid, Movement::Cardinal, &starts, &goals, &MapfOptions::new()).unwrap();
//! assert_eq!(plan.status, MapfStatus::Solved);
//! let costs = mapf::check::check_plan(&grid, Movement::Cardinal, &starts, Some(&goals), &plan.paths).unwrap();
//! assert_eq!(costs.sum_of_costs, plan.sum_of_costs);
//! ```

pub mod check;
pub mod dist;
pub mod graph;
pub mod instance;
mod lacam;
mod pibt;
mod prioritized;
mod refine;
pub mod repair;
mod rng;
mod spacetime;

use std::time::Instant;

pub use graph::Graph;
pub use instance::{MapfError, MapfOptions, MapfPlan, MapfStats, MapfStatus, Objective};
pub use repair::repair;

use crate::grid::{Grid, Movement, Point};
use dist::{DistTables, UNREACHABLE};
use lacam::{Problem, lacam};

/// Agent-configurations (agents times configurations) LaCAM* may generate after its last
/// better plan before the time left goes to refinement instead: on small instances the
/// search proves optimality well within it; on large ones its improvements dry up and
/// re-planning groups of agents pays more.
const STALL: u64 = 1_000_000;

/// Plans agents `starts[i] -> goals[i]` on `grid` under `movement` (a map's own movement, or
/// `Cardinal` for the MAPF benchmarks' 4-connected rule).
///
/// Runs until `opts.deadline`, `opts.cancel`, the first plan (`opts.first_solution`), or a
/// proof of optimality; without a deadline a large instance runs until its node memory
/// (`opts.max_nodes`) is spent, so a server always sets one. The errors are malformed
/// instances (a start or goal on a wall, two agents sharing one); an unsolvable instance is
/// the outcome [`MapfStatus::Failed`].
pub fn solve(
    grid: &Grid,
    movement: Movement,
    starts: &[Point],
    goals: &[Point],
    opts: &MapfOptions,
) -> Result<MapfPlan, MapfError> {
    let started = Instant::now();
    solve_on(
        &Graph::with_movement(grid, movement),
        starts,
        goals,
        opts,
        started,
    )
}

/// [`solve`] for a live plan re-planned after a patch: an agent whose start a patch walled
/// may leave it (or wait there), and nobody may enter it (see [`Graph::with_exits`]); every
/// other rule is [`solve`]'s. [`check::check_live_plan`] checks such plans.
pub fn solve_live(
    grid: &Grid,
    movement: Movement,
    starts: &[Point],
    goals: &[Point],
    opts: &MapfOptions,
) -> Result<MapfPlan, MapfError> {
    let started = Instant::now();
    let graph = Graph::with_exits(grid, movement, starts);
    solve_on(&graph, starts, goals, opts, started)
}

fn solve_on(
    graph: &Graph,
    starts: &[Point],
    goals: &[Point],
    opts: &MapfOptions,
    started: Instant,
) -> Result<MapfPlan, MapfError> {
    let (s, g) = vertices(graph, starts, goals)?;
    let mut dist = DistTables::new(graph, &g);
    let d: Vec<u32> = (0..s.len()).map(|i| dist.get(graph, i, s[i])).collect();
    let lower_bound = match opts.objective {
        Objective::SumOfCosts => d.iter().map(|&x| x as u64).sum(),
        Objective::Makespan => d.iter().copied().max().unwrap_or(0) as u64,
    };
    if d.contains(&UNREACHABLE) {
        let mut plan = MapfPlan {
            status: MapfStatus::Failed,
            paths: starts.iter().map(|&p| vec![p]).collect(),
            sum_of_costs: 0,
            makespan: 0,
            lower_bound: 0,
            optimal: false,
            stats: MapfStats::default(),
        };
        plan.stats.elapsed = started.elapsed();
        return Ok(plan);
    }
    let problem = Problem {
        graph,
        starts: &s,
        goals: &g,
    };
    let stall = (STALL / s.len() as u64).clamp(500, 50_000);
    // The first plan's time counts from here, the move graph and the starts' distances
    // included.
    let before = started.elapsed();
    let end = lacam(&problem, &mut dist, opts, Some(stall));
    let mut stats = MapfStats {
        first_solution: end.first_solution.map(|d| d + before),
        elapsed: std::time::Duration::ZERO,
        nodes: end.nodes,
        generated: end.generated,
        improvements: end.improvements,
        first_cost: end.first_cost,
    };
    let mut end_loss = None;
    let (status, configs, mut optimal) = match end.solution {
        Some(c) => {
            end_loss = Some(
                c.windows(2)
                    .map(|w| lacam::edge_cost(Objective::SumOfCosts, &g, &w[0], &w[1]))
                    .sum(),
            );
            let first = end.first.unwrap_or_default();
            // The search's last plan is its best by its own cost; the first may still have
            // the lower sum of costs (see `lacam::SearchEnd::first`).
            let sum = opts.objective == Objective::SumOfCosts;
            let c = if sum && !first.is_empty() && soc(&first, &g) < soc(&c, &g) {
                first
            } else {
                c
            };
            (MapfStatus::Solved, c, end.exhausted)
        }
        None if end.exhausted => (MapfStatus::Failed, vec![s.clone()], false),
        None => (MapfStatus::Partial, end.nearest, false),
    };
    let configs = if status == MapfStatus::Solved && !optimal && !opts.first_solution {
        let (c, better) = refine::refine(&problem, &mut dist, opts, configs);
        stats.improvements += better;
        c
    } else {
        configs
    };
    let paths: Vec<Vec<Point>> = (0..s.len())
        .map(|i| configs.iter().map(|c| graph.cell(c[i])).collect())
        .collect();
    let sum_of_costs = paths
        .iter()
        .map(|p| {
            let last = p[p.len() - 1];
            p.iter()
                .rposition(|&c| c != last)
                .map_or(0, |t| t as u64 + 1)
        })
        .sum();
    let makespan = configs.len() as u64 - 1;
    // LaCAM* minimises the sum of loss, which can only be below the sum of costs: when
    // the search proved its plan's loss minimal, a plan whose sum of costs equals that loss
    // is optimal.
    if opts.objective == Objective::SumOfCosts {
        let loss: u64 = configs
            .windows(2)
            .map(|w| lacam::edge_cost(Objective::SumOfCosts, &g, &w[0], &w[1]))
            .sum();
        optimal &= loss == sum_of_costs && Some(loss) == end_loss;
    }
    // A plan at the lower bound is optimal whatever the search proved.
    optimal |= status == MapfStatus::Solved
        && lower_bound
            == match opts.objective {
                Objective::SumOfCosts => sum_of_costs,
                Objective::Makespan => makespan,
            };
    stats.elapsed = started.elapsed();
    Ok(MapfPlan {
        status,
        paths,
        sum_of_costs,
        makespan,
        lower_bound,
        optimal,
        stats,
    })
}

/// The sum of costs of a plan given as configurations.
fn soc(configs: &[Vec<u32>], goals: &[u32]) -> u64 {
    (0..goals.len())
        .map(|i| {
            configs
                .iter()
                .rposition(|c| c[i] != goals[i])
                .map_or(0, |t| t as u64 + 1)
        })
        .sum()
}

/// The agents' starts and goals as vertices, checked.
pub(crate) fn vertices(
    graph: &Graph,
    starts: &[Point],
    goals: &[Point],
) -> Result<(Vec<u32>, Vec<u32>), MapfError> {
    if starts.is_empty() {
        return Err(MapfError::NoAgents);
    }
    if starts.len() != goals.len() {
        return Err(MapfError::Lengths {
            starts: starts.len(),
            goals: goals.len(),
        });
    }
    let mut out = (
        Vec::with_capacity(starts.len()),
        Vec::with_capacity(starts.len()),
    );
    for (which, points, ids) in [("start", starts, &mut out.0), ("goal", goals, &mut out.1)] {
        let mut seen = std::collections::HashMap::new();
        for (agent, &at) in points.iter().enumerate() {
            let v = graph
                .vertex(at)
                .ok_or(MapfError::Blocked { agent, which, at })?;
            if let Some(first) = seen.insert(v, agent) {
                return Err(MapfError::Shared {
                    first,
                    second: agent,
                    which,
                    at,
                });
            }
            ids.push(v);
        }
    }
    Ok(out)
}
