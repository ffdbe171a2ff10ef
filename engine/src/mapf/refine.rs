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

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::dist::DistTables;
use super::graph::{Graph, NONE};
use super::instance::{MapfOptions, Objective};
use super::lacam::Problem;
use super::rng::Rng;

/// Agents re-planned together.
const GROUP: usize = 8;
/// Expansions one space-time search may make before giving up on its group.
const MAX_EXPANSIONS: usize = 20_000;

/// Every path's cells over time, for the collision checks of the re-planning search.
struct Table {
    /// `(time, agent)` of every visit of each vertex (paths up to their arrival).
    visits: Vec<Vec<(u32, u32)>>,
    /// The agent on each `(vertex, time)` of `visits`, for O(1) collision checks.
    on: HashMap<(u32, u32), u32, BuildHasherDefault<Mix>>,
    /// `(from time, agent)` of the agent resting on each goal vertex for good.
    rest: Vec<(u32, u32)>,
}

impl Table {
    fn add(&mut self, a: u32, path: &[u32]) {
        for (t, &v) in path.iter().enumerate() {
            self.visits[v as usize].push((t as u32, a));
            self.on.insert((v, t as u32), a);
        }
        let last = path.len() - 1;
        self.rest[path[last] as usize] = (last as u32, a);
    }

    fn remove(&mut self, a: u32, path: &[u32]) {
        for (t, &v) in path.iter().enumerate() {
            self.visits[v as usize].retain(|&(_, b)| b != a);
            self.on.remove(&(v, t as u32));
        }
        self.rest[path[path.len() - 1] as usize] = (0, NONE);
    }

    /// The agent on `v` at time `t`, if any.
    fn at(&self, v: u32, t: u32) -> Option<u32> {
        if let Some(&a) = self.on.get(&(v, t)) {
            return Some(a);
        }
        let (s, a) = self.rest[v as usize];
        (a != NONE && t >= s).then_some(a)
    }

    /// The last time anybody is on `v` (`None`: nobody ever; `u32::MAX`: somebody rests).
    fn last_use(&self, v: u32) -> Option<u32> {
        if self.rest[v as usize].1 != NONE {
            return Some(u32::MAX);
        }
        self.visits[v as usize].iter().map(|&(t, _)| t).max()
    }
}

fn pos(path: &[u32], t: u32) -> u32 {
    path[(t as usize).min(path.len() - 1)]
}

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
    let mut table = Table {
        visits: vec![Vec::new(); p.graph.len()],
        on: HashMap::default(),
        rest: vec![(0, NONE); p.graph.len()],
    };
    for (a, path) in paths.iter().enumerate() {
        table.add(a as u32, path);
    }
    let mut rng = Rng::new(opts.seed ^ 0x5EED);
    let mut astar = SpaceTime::default();
    let mut kept = 0;
    let mut rounds = 0u64;
    while !opts.stopped() {
        rounds += 1;
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
            let Some(path) = astar.plan(p, dist, &table, &paths, a, budget, opts) else {
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
    if std::env::var_os("MAPF_DEBUG").is_some() {
        let soc: usize = paths.iter().map(|q| q.len() - 1).sum();
        eprintln!(
            "refine: rounds {rounds} kept {kept} soc {soc} expanded {}",
            astar.expanded
        );
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

/// A multiply-shift hasher for the `(vertex, time)` keys of the space-time search (the
/// default SipHash dominated its time).
#[derive(Default, Clone, Copy)]
struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(26) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Space-time A* scratch.
#[derive(Default)]
struct SpaceTime {
    /// `(vertex, time, parent)` of every generated state.
    states: Vec<(u32, u32, u32)>,
    seen: HashSet<(u32, u32), BuildHasherDefault<Mix>>,
    /// Expansions, for the debug counters.
    expanded: u64,
    open: BinaryHeap<Reverse<(u64, Reverse<u32>, u32)>>,
}

impl SpaceTime {
    /// A path for agent `a` from its start to its goal, arriving by `budget` steps, against
    /// every path in `table`; `None` if there is none within the budget (or the search's
    /// limits).
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &mut self,
        p: &Problem<'_>,
        dist: &mut DistTables,
        table: &Table,
        paths: &[Vec<u32>],
        a: u32,
        budget: u64,
        opts: &MapfOptions,
    ) -> Option<Vec<u32>> {
        let (g, s) = (p.goals[a as usize], p.starts[a as usize]);
        let h0 = dist.get(p.graph, a as usize, s) as u64;
        if h0 > budget {
            return None;
        }
        // Arriving before this leaves the goal in someone's way later.
        let free_after = match table.last_use(g) {
            Some(u32::MAX) => return None,
            Some(t) => t + 1,
            None => 0,
        };
        self.states.clear();
        self.seen.clear();
        self.open.clear();
        self.states.push((s, 0, NONE));
        self.seen.insert((s, 0));
        // Arrival is at `free_after` at the earliest, so `max(t + h, free_after)` is still a
        // lower bound; with ties going to the later state the search dives towards the
        // goal (waiting where it must) instead of widening over every state that ties.
        self.open
            .push(Reverse((h0.max(free_after as u64), Reverse(0), 0)));
        let mut expanded = 0;
        while let Some(Reverse((_, _, id))) = self.open.pop() {
            let (u, t, _) = self.states[id as usize];
            if u == g && t >= free_after {
                let mut out = Vec::with_capacity(t as usize + 1);
                let mut k = id;
                while k != NONE {
                    out.push(self.states[k as usize].0);
                    k = self.states[k as usize].2;
                }
                out.reverse();
                return Some(out);
            }
            expanded += 1;
            self.expanded += 1;
            if expanded > MAX_EXPANSIONS || (expanded % 1024 == 0 && opts.stopped()) {
                return None;
            }
            let t2 = t + 1;
            for &v in p.graph.neighbours(u).iter().chain(std::iter::once(&u)) {
                let f =
                    (t2 as u64 + dist.get(p.graph, a as usize, v) as u64).max(free_after as u64);
                if f > budget
                    || self.seen.contains(&(v, t2))
                    || !free(p.graph, table, paths, u, v, t)
                {
                    continue;
                }
                self.seen.insert((v, t2));
                self.states.push((v, t2, id));
                self.open
                    .push(Reverse((f, Reverse(t2), self.states.len() as u32 - 1)));
            }
        }
        None
    }
}

/// True when a move `u -> v` from time `t` to `t + 1` collides with no path in `table`.
fn free(graph: &Graph, table: &Table, paths: &[Vec<u32>], u: u32, v: u32, t: u32) -> bool {
    if table.at(v, t + 1).is_some() {
        return false;
    }
    if u == v {
        return true;
    }
    // A swap: whoever is on v now goes to u.
    if let Some(b) = table.at(v, t)
        && pos(&paths[b as usize], t + 1) == u
    {
        return false;
    }
    if graph.octile()
        && let Some((c, d)) = graph.crossing(u, v)
    {
        for (x, y) in [(c, d), (d, c)] {
            if let Some(b) = table.at(x, t)
                && pos(&paths[b as usize], t + 1) == y
            {
                return false;
            }
        }
    }
    true
}
