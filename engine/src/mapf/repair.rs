//! Live plans: re-planning some agents of a plan already under way while everybody else
//! keeps the rest of their paths.
//!
//! A live plan (the server's `"subscribe": true`) is repaired, not restarted, where that
//! suffices: when a patch walls cells on some agents' remaining paths, or some agents fell
//! behind the plan, only those agents are re-planned, one after another by space-time A*
//! (`spacetime.rs`) against the reserved paths of all the others, whose paths do not change
//! at all. That is prioritised planning with most of the order fixed, so it can fail where
//! a plan exists; the caller then re-plans everybody ([`super::solve_live`]).

use super::dist::DistTables;
use super::graph::Graph;
use super::instance::{MapfError, MapfOptions, MapfPlan, MapfStats, MapfStatus};
use super::lacam::Problem;
use super::spacetime::{SpaceTime, Table, pos};
use super::vertices;
use crate::grid::{Grid, Movement, Point};

/// Expansions one agent's space-time search may make.
const MAX_EXPANSIONS: usize = 200_000;

/// Re-plans agents `replan` of a plan under way on `grid` (the map as it is now).
///
/// `paths[i]` is agent `i`'s remaining path, `paths[i][0]` its cell now (one per agent,
/// of any lengths; an agent whose path ends rests there). Every other agent keeps its
/// path as it is: each must stay on passable cells and end at its goal, and the kept paths
/// must be free of conflicts among themselves (the remainder of a valid plan is). The
/// agents of `replan` (their `paths[i][0]` is all that is read) get new paths that collide
/// with nothing. An agent standing on a walled cell may leave it (see
/// [`Graph::with_exits`]); it must be in `replan`.
///
/// `Ok(None)` when this repair cannot do it (a kept path crosses a wall or does not end at
/// its goal, or some agent of `replan` finds no path around the others): re-plan everybody.
pub fn repair(
    grid: &Grid,
    movement: Movement,
    paths: &[Vec<Point>],
    goals: &[Point],
    replan: &[usize],
    opts: &MapfOptions,
) -> Result<Option<MapfPlan>, MapfError> {
    let started = std::time::Instant::now();
    let n = paths.len();
    if paths.iter().any(Vec::is_empty) {
        return Err(MapfError::Lengths {
            starts: n,
            goals: goals.len(),
        });
    }
    let starts: Vec<Point> = paths.iter().map(|p| p[0]).collect();
    let graph = Graph::with_exits(grid, movement, &starts);
    let (s, g) = vertices(&graph, &starts, goals)?;
    let mut again = vec![false; n];
    for &a in replan {
        if a < n {
            again[a] = true;
        }
    }
    let mut vp: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut table = Table::new(&graph);
    for i in (0..n).filter(|&i| !again[i]) {
        let p = &paths[i];
        if *p.last().expect("not empty") != goals[i]
            || p.iter().any(|&c| !grid.is_passable(c))
            || p.windows(2).any(|w| !legal(&graph, w[0], w[1]))
        {
            return Ok(None);
        }
        // Up to arrival: the table has it rest at its last cell from then on.
        let arrive = p.len() - p.iter().rev().take_while(|&&c| c == goals[i]).count();
        vp[i] = p[..=arrive]
            .iter()
            .map(|&c| graph.vertex(c).expect("passable"))
            .collect();
        table.add(i as u32, &vp[i]);
    }
    let problem = Problem {
        graph: &graph,
        starts: &s,
        goals: &g,
    };
    let mut dist = DistTables::new(&graph, &g);
    let mut order: Vec<usize> = (0..n).filter(|&i| again[i]).collect();
    // The farthest first: they have the fewest ways round the others.
    order.sort_by_key(|&a| std::cmp::Reverse(dist.get(&graph, a, s[a])));
    let mut astar = SpaceTime::default();
    for &a in &order {
        if opts.stopped() {
            return Ok(None);
        }
        let Some(path) = astar.plan(
            &problem,
            &mut dist,
            &table,
            &vp,
            a as u32,
            u64::MAX / 2,
            MAX_EXPANSIONS,
            opts,
        ) else {
            return Ok(None);
        };
        table.add(a as u32, &path);
        vp[a] = path;
    }
    // The kept agents were checked against each other only by the plan they come from,
    // and the new ones against everybody: the whole is one valid plan.
    let makespan = vp.iter().map(|q| q.len() - 1).max().unwrap_or(0);
    let out: Vec<Vec<Point>> = vp
        .iter()
        .map(|q| {
            (0..=makespan as u32)
                .map(|t| graph.cell(pos(q, t)))
                .collect()
        })
        .collect();
    let sum_of_costs = out
        .iter()
        .map(|p| {
            let last = p[p.len() - 1];
            p.iter()
                .rposition(|&c| c != last)
                .map_or(0, |t| t as u64 + 1)
        })
        .sum();
    let lower_bound = (0..n).map(|i| dist.get(&graph, i, s[i]) as u64).sum();
    Ok(Some(MapfPlan {
        status: MapfStatus::Solved,
        paths: out,
        sum_of_costs,
        makespan: makespan as u64,
        lower_bound,
        optimal: sum_of_costs == lower_bound,
        stats: MapfStats {
            elapsed: started.elapsed(),
            first_solution: Some(started.elapsed()),
            ..MapfStats::default()
        },
    }))
}

/// A wait or one move of `graph` between two cells (both vertices).
fn legal(graph: &Graph, a: Point, b: Point) -> bool {
    match (graph.vertex(a), graph.vertex(b)) {
        (Some(u), Some(v)) => graph.is_move(u, v),
        _ => false,
    }
}
