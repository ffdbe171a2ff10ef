//! Prioritised planning, the second way to a first plan: agents one after another, each by
//! space-time A* around the paths of those before it (Silver, "Cooperative Pathfinding",
//! AIIDE 2005; the repair of MAPF-LNS).
//!
//! Why beside LaCAM: PIBT can livelock where two agents must exchange places in a corridor
//! one cell wide (warehouse aisles: an agent resting at its goal inside the aisle is pushed
//! out the far end by the agent that must pass it, and the two repeat it the other way), and
//! LaCAM then leaves the loop only by enumerating constraints, which takes long with
//! hundreds of agents. Planning agents in sequence has no such loop: the later agent simply
//! waits outside the aisle. It is not complete (an order can fail), so it runs only when
//! LaCAM has stopped coming nearer the goals, for three quarters of the time left (without
//! a deadline: up to [`MAX_ATTEMPTS`] orders, so that no outcome depends on the clock); when
//! an agent finds no path it moves to the front of the order and planning starts again.
//! LaCAM goes on (and stays complete) when it fails.

use std::time::Instant;

use super::dist::DistTables;
use super::instance::MapfOptions;
use super::lacam::Problem;
use super::spacetime::{SpaceTime, Table, pos};

/// Expansions one agent's search may make: this many per vertex of the graph, at least
/// [`MIN_EXPANSIONS`]. The greedy search (see [`SpaceTime::plan`]) finds its paths within a
/// few vertices' worth (warehouse-10-20-10-2-1, 500 agents: at most about 4 |V|); an agent
/// it cannot plan (its goal walled in by those before it) costs the whole budget, and then
/// a new order.
const EXPANSIONS_PER_VERTEX: usize = 10;
/// See [`EXPANSIONS_PER_VERTEX`].
const MIN_EXPANSIONS: usize = 20_000;
/// Orders tried at most (a tiny unsolvable instance fails every order quickly).
const MAX_ATTEMPTS: usize = 64;

/// A plan (configurations from the starts to the goals) by prioritised planning, trying
/// orders until `until` (`None`: [`MAX_ATTEMPTS`] orders). The first order puts last the
/// agents whose goals lie on many other agents' shortest paths (planned early, they would
/// rest in everybody's way), and among the others the farthest from their goals first.
pub(crate) fn prioritized(
    p: &Problem<'_>,
    dist: &mut DistTables,
    opts: &MapfOptions,
    until: Option<Instant>,
) -> Option<Vec<Vec<u32>>> {
    let n = p.starts.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    let d: Vec<u32> = (0..n).map(|i| dist.get(p.graph, i, p.starts[i])).collect();
    // How many agents' shortest paths (one each, following decreasing distances) pass each
    // goal.
    let mut goal_of = std::collections::HashMap::new();
    for (i, &g) in p.goals.iter().enumerate() {
        goal_of.insert(g, i);
    }
    let mut passed = vec![0u32; n];
    for i in 0..n {
        let mut v = p.starts[i];
        while v != p.goals[i] {
            if let Some(&j) = goal_of.get(&v) {
                passed[j] += 1;
            }
            let dv = dist.get(p.graph, i, v);
            v = *p
                .graph
                .neighbours(v)
                .iter()
                .find(|&&w| dist.get(p.graph, i, w) < dv)
                .expect("a step closer");
        }
    }
    order.sort_by_key(|&a| (passed[a as usize], std::cmp::Reverse(d[a as usize])));
    let cap = (EXPANSIONS_PER_VERTEX * p.graph.len()).max(MIN_EXPANSIONS);
    let mut astar = SpaceTime::default();
    astar.greedy = true;
    'attempt: for _ in 0..MAX_ATTEMPTS {
        let mut table = Table::new(p.graph);
        let mut paths: Vec<Vec<u32>> = vec![Vec::new(); n];
        for k in 0..n {
            if opts.stopped() || until.is_some_and(|u| Instant::now() >= u) {
                return None;
            }
            let a = order[k];
            match astar.plan(p, dist, &table, &paths, a, u64::MAX / 2, cap, opts) {
                Some(path) => {
                    table.add(a, &path);
                    paths[a as usize] = path;
                }
                None => {
                    order.remove(k);
                    order.insert(0, a);
                    continue 'attempt;
                }
            }
        }
        let makespan = paths.iter().map(|q| q.len() - 1).max().unwrap_or(0);
        return Some(
            (0..=makespan as u32)
                .map(|t| paths.iter().map(|q| pos(q, t)).collect())
                .collect(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapf::check::check_plan;
    use crate::mapf::dist::DistTables;
    use crate::mapf::graph::Graph;
    use crate::{Movement, Point, movingai};

    /// Shelves with one-cell aisles (the warehouse shape PIBT can livelock in): the agents
    /// planned one after another get a valid plan.
    #[test]
    fn plans_a_warehouse_in_sequence() {
        let rows = [
            "...........",
            ".@@@@.@@@@.",
            "...........",
            ".@@@@.@@@@.",
            "...........",
        ];
        let text = format!(
            "type octile\nheight 5\nwidth 11\nmap\n{}\n",
            rows.join("\n")
        );
        let grid = movingai::parse_map(&text).unwrap();
        let graph = Graph::with_movement(&grid, Movement::Cardinal);
        let starts: Vec<Point> = (0..6).map(|x| Point::new(x * 2, 0)).collect();
        let goals: Vec<Point> = (0..6).map(|x| Point::new(10 - x * 2, 4)).collect();
        let s: Vec<u32> = starts.iter().map(|&p| graph.vertex(p).unwrap()).collect();
        let g: Vec<u32> = goals.iter().map(|&p| graph.vertex(p).unwrap()).collect();
        let mut dist = DistTables::new(&graph, &g);
        let p = Problem {
            graph: &graph,
            starts: &s,
            goals: &g,
        };
        let opts = MapfOptions::new();
        let plan = prioritized(&p, &mut dist, &opts, None).expect("a plan");
        let paths: Vec<Vec<Point>> = (0..6)
            .map(|i| plan.iter().map(|c| graph.cell(c[i])).collect())
            .collect();
        check_plan(&grid, Movement::Cardinal, &starts, Some(&goals), &paths).unwrap();
    }
}
