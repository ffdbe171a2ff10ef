//! Anytime refinement by large neighbourhood search (MAPF-LNS: Li, Chen, Harabor, Stuckey,
//! Koenig, IJCAI 2021; "Engineering LaCAM*" refines LaCAM*'s plans the same way).
//!
//! Repeatedly: pick a small group of agents (the *neighbourhood*: a delayed agent and the
//! agents in its way, or agents at random), take their paths out, and re-plan them one at a
//! time, in random order, by space-time A* against every other path (prioritised
//! planning). Keep the new paths when their sum of costs is lower, else put the old ones
//! back. Every accepted step keeps the plan valid (the A* honours the same rules as PIBT:
//! no shared cell, no swap, no crossing diagonals, and nobody may pass through a cell an
//! agent already rests on for good), so stopping at any time leaves a valid, never worse
//! plan. Only the sum of costs is refined; a makespan plan is left to LaCAM*.

use super::dist::DistTables;
use super::instance::{MapfOptions, Objective};
use super::lacam::Problem;
use super::rng::Rng;
use super::spacetime::{SpaceTime, Table, pos};

/// Agents re-planned together.
const GROUP: usize = 8;
/// Expansions one space-time search may make before giving up on its group.
const MAX_EXPANSIONS: usize = 20_000;

/// Refines `configs` (a solved plan, start to goal configuration) until the deadline;
/// returns the plan and how many improvements were kept.
pub(crate) fn refine(
    p: &Problem<'_>,
    dist: &mut DistTables,
    opts: &MapfOptions,
    configs: Vec<Vec<u32>>,
) -> (Vec<Vec<u32>>, u64) {
    let n = p.starts.len();
    if opts.objective != Objective::SumOfCosts || n < 2 || opts.deadline.is_none() {
        return (configs, 0);
    }
    // Per-agent paths up to arrival (cost + 1 cells).
    let mut paths: Vec<Vec<u32>> = (0..n)
        .map(|i| {
            let g = p.goals[i];
            let cost = configs.iter().rposition(|c| c[i] != g).map_or(0, |t| t + 1);
            configs[..=cost].iter().map(|c| c[i]).collect()
        })
        .collect();
    let mut table = Table::new(p.graph);
    for (a, path) in paths.iter().enumerate() {
        table.add(a as u32, path);
    }
    let mut rng = Rng::new(opts.seed ^ 0x5EED);
    let mut astar = SpaceTime::default();
    let mut kept = 0;
    // Stop early at the lower bound: every agent on a shortest path, nothing to gain.
    let lb: u64 = (0..n)
        .map(|i| dist.get(p.graph, i, p.starts[i]) as u64)
        .sum();
    let soc = |paths: &[Vec<u32>]| paths.iter().map(|q| q.len() as u64 - 1).sum::<u64>();
    while !opts.stopped() && soc(&paths) > lb {
        let group = neighbourhood(p, dist, &paths, &table, &mut rng);
        let old: u64 = group
            .iter()
            .map(|&a| paths[a as usize].len() as u64 - 1)
            .sum();
        for &a in &group {
            table.remove(a, &paths[a as usize]);
        }
        let saved: Vec<Vec<u32>> = group.iter().map(|&a| paths[a as usize].clone()).collect();
        // The group's first agent (the delayed one, for blockers) plans first, so the
        // others make way for it; the rest in random order.
        let mut order = group.clone();
        rng.shuffle(&mut order[1..]);
        // Budget: the new group must cost less than the old one.
        let mut left = old.saturating_sub(1);
        let lb = |dist: &mut DistTables, a: u32| {
            dist.get(p.graph, a as usize, p.starts[a as usize]) as u64
        };
        let mut rest_lb: u64 = order.iter().map(|&a| lb(dist, a)).sum();
        let mut done = 0;
        for &a in &order {
            rest_lb -= lb(dist, a);
            let budget = left.saturating_sub(rest_lb);
            let Some(path) = astar.plan(p, dist, &table, &paths, a, budget, MAX_EXPANSIONS, opts)
            else {
                break;
            };
            left -= path.len() as u64 - 1;
            table.add(a, &path);
            paths[a as usize] = path;
            done += 1;
        }
        if done == order.len() {
            kept += u64::from(old > 0);
        } else {
            for &a in &order[..done] {
                table.remove(a, &paths[a as usize]);
            }
            for (&a, path) in group.iter().zip(saved) {
                paths[a as usize] = path;
                table.add(a, &paths[a as usize]);
            }
        }
    }
    let makespan = paths.iter().map(|q| q.len() - 1).max().unwrap_or(0);
    let configs = (0..=makespan as u32)
        .map(|t| paths.iter().map(|q| pos(q, t)).collect())
        .collect();
    (configs, kept)
}

/// A group to re-plan. Most often (*blockers*): the most delayed of a few sampled agents
/// and the agents in its way: those passing its goal after it could first be there (they
/// keep it from resting early), those on the cells of one of its shortest paths at the
/// times it would be there, then those visiting its current path's cells. Else agents at
/// random, which keeps the search from circling one crowded spot.
fn neighbourhood(
    p: &Problem<'_>,
    dist: &mut DistTables,
    paths: &[Vec<u32>],
    table: &Table,
    rng: &mut Rng,
) -> Vec<u32> {
    let n = paths.len();
    let k = GROUP.min(n);
    let mut group: Vec<u32> = Vec::with_capacity(k);
    if rng.unit() < 0.8 {
        let mut worst = (0, rng.below(n) as u32);
        for _ in 0..8 {
            let a = rng.below(n);
            let delay = paths[a].len() as u64 - 1 - dist.get(p.graph, a, p.starts[a]) as u64;
            if delay > worst.0 {
                worst = (delay, a as u32);
            }
        }
        let a = worst.1;
        group.push(a);
        let ai = a as usize;
        let earliest = dist.get(p.graph, ai, p.starts[ai]);
        let mut blockers: Vec<u32> = table.visits[p.goals[ai] as usize]
            .iter()
            .filter(|&&(t, b)| b != a && t >= earliest)
            .map(|&(_, b)| b)
            .collect();
        // Along one shortest path (random among the equally short next steps).
        let mut v = p.starts[ai];
        for t in 0..=earliest {
            for when in [t, t + 1] {
                if let Some(b) = table.at(v, when)
                    && b != a
                {
                    blockers.push(b);
                }
            }
            let d = dist.get(p.graph, ai, v);
            if d == 0 {
                break;
            }
            let next: Vec<u32> = p
                .graph
                .neighbours(v)
                .iter()
                .copied()
                .filter(|&w| dist.get(p.graph, ai, w) < d)
                .collect();
            v = next[rng.below(next.len())];
        }
        rng.shuffle(&mut blockers);
        for b in blockers {
            if group.len() >= k {
                break;
            }
            if !group.contains(&b) {
                group.push(b);
            }
        }
        let path = &paths[ai];
        for _ in 0..4 * k {
            if group.len() >= k {
                break;
            }
            let v = path[rng.below(path.len())];
            let visits = &table.visits[v as usize];
            if visits.is_empty() {
                continue;
            }
            let b = visits[rng.below(visits.len())].1;
            if !group.contains(&b) {
                group.push(b);
            }
        }
    }
    while group.len() < k {
        let b = rng.below(n) as u32;
        if !group.contains(&b) {
            group.push(b);
        }
    }
    group
}
