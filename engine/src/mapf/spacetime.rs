//! Space-time A* for one agent against the paths of others, and the table of those paths:
//! the single-agent planner of refinement (`refine.rs`) and of prioritised planning
//! (`prioritized.rs`).
//!
//! The rules are PIBT's (see `pibt.rs`): no shared cell at a time step, no swap, no
//! crossing diagonals; an agent's path ends when it rests at its goal for good, so nobody
//! may use its goal after that, and it may only arrive once nobody uses it later.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::dist::DistTables;
use super::graph::{Graph, NONE};
use super::instance::MapfOptions;
use super::lacam::Problem;

/// Every path's cells over time, for the collision checks of the re-planning search.
pub(crate) struct Table {
    /// `(time, agent)` of every visit of each vertex (paths up to their arrival).
    pub(crate) visits: Vec<Vec<(u32, u32)>>,
    /// The agent on each `(vertex, time)` of `visits`, for O(1) collision checks.
    on: HashMap<(u32, u32), u32, BuildHasherDefault<Mix>>,
    /// `(from time, agent)` of the agent resting on each goal vertex for good.
    rest: Vec<(u32, u32)>,
    /// No path added ever had a step after this time (an upper bound: removals keep it).
    horizon: u32,
}

impl Table {
    /// An empty table for `graph`.
    pub(crate) fn new(graph: &Graph) -> Self {
        Self {
            visits: vec![Vec::new(); graph.len()],
            on: HashMap::default(),
            rest: vec![(0, NONE); graph.len()],
            horizon: 0,
        }
    }

    pub(crate) fn add(&mut self, a: u32, path: &[u32]) {
        for (t, &v) in path.iter().enumerate() {
            self.visits[v as usize].push((t as u32, a));
            self.on.insert((v, t as u32), a);
        }
        let last = path.len() - 1;
        self.rest[path[last] as usize] = (last as u32, a);
        self.horizon = self.horizon.max(last as u32);
    }

    pub(crate) fn remove(&mut self, a: u32, path: &[u32]) {
        for (t, &v) in path.iter().enumerate() {
            self.visits[v as usize].retain(|&(_, b)| b != a);
            self.on.remove(&(v, t as u32));
        }
        self.rest[path[path.len() - 1] as usize] = (0, NONE);
    }

    /// The agent on `v` at time `t`, if any.
    pub(crate) fn at(&self, v: u32, t: u32) -> Option<u32> {
        if let Some(&a) = self.on.get(&(v, t)) {
            return Some(a);
        }
        let (s, a) = self.rest[v as usize];
        (a != NONE && t >= s).then_some(a)
    }

    /// The last time anybody is on `v` (`None`: nobody ever; `u32::MAX`: somebody rests).
    pub(crate) fn last_use(&self, v: u32) -> Option<u32> {
        if self.rest[v as usize].1 != NONE {
            return Some(u32::MAX);
        }
        self.visits[v as usize].iter().map(|&(t, _)| t).max()
    }
}

pub(crate) fn pos(path: &[u32], t: u32) -> u32 {
    path[(t as usize).min(path.len() - 1)]
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
pub(crate) struct SpaceTime {
    /// `(vertex, time, parent)` of every generated state.
    states: Vec<(u32, u32, u32)>,
    seen: HashSet<(u32, u32), BuildHasherDefault<Mix>>,
    open: Buckets,
    /// Greedy order (prioritised planning's first plans): states by `f + h` instead of
    /// `f`, see [`SpaceTime::plan`].
    pub(crate) greedy: bool,
}

/// The open list: one stack of states per `f` (steps are unit and `f` never decreases
/// along a path, so the smallest `f` only grows); last in, first out within an `f`, which
/// breaks ties towards the later (deeper) state as the search wants. A binary heap was
/// the search's largest cost.
#[derive(Default)]
struct Buckets {
    base: u64,
    cur: usize,
    stacks: Vec<Vec<u32>>,
}

impl Buckets {
    fn reset(&mut self, base: u64) {
        for s in &mut self.stacks {
            s.clear();
        }
        self.base = base;
        self.cur = 0;
    }

    fn push(&mut self, f: u64, id: u32) {
        let k = (f - self.base) as usize;
        // The greedy order's keys can fall along a path (never below the base).
        self.cur = self.cur.min(k);
        if k >= self.stacks.len() {
            self.stacks.resize_with(k + 1, Vec::new);
        }
        self.stacks[k].push(id);
    }

    fn pop(&mut self) -> Option<u32> {
        while self.cur < self.stacks.len() {
            if let Some(id) = self.stacks[self.cur].pop() {
                return Some(id);
            }
            self.cur += 1;
        }
        None
    }
}

impl SpaceTime {
    /// A path for agent `a` from its start to its goal, arriving by `budget` steps, against
    /// every path in `table`; `None` if there is none within the budget (or the search's
    /// limits).
    ///
    /// States go by `f = max(t + h, free_after)` (A*: the earliest arrival), or with
    /// [`SpaceTime::greedy`] by `f + h`, which favours states near the goal (weighted A*,
    /// arrival at most `h` of the start later than the earliest). Prioritised planning wants
    /// the greedy order: an agent whose goal others cross late (`free_after` far above its
    /// distance) ties every state that can still arrive by then, and when it cannot arrive
    /// exactly then the exact search runs through that whole cone of states (about 100,000
    /// of them for one agent of warehouse-10-20-10-2-1 with 500 agents, against a few
    /// thousand greedily).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn plan(
        &mut self,
        p: &Problem<'_>,
        dist: &mut DistTables,
        table: &Table,
        paths: &[Vec<u32>],
        a: u32,
        budget: u64,
        cap: usize,
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
        let f0 = h0.max(free_after as u64);
        self.open.reset(f0);
        self.states.push((s, 0, NONE));
        self.seen.insert((s, 0));
        // Arrival is at `free_after` at the earliest, so `max(t + h, free_after)` is still a
        // lower bound; with ties going to the later state the search dives towards the
        // goal (waiting where it must) instead of widening over every state that ties.
        let greedy = self.greedy;
        let key = |f: u64, h: u64| if greedy { f + h } else { f };
        self.open.push(key(f0, h0), 0);
        let mut expanded = 0;
        while let Some(id) = self.open.pop() {
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
            if expanded > cap || (expanded % 1024 == 0 && opts.stopped()) {
                return None;
            }
            let t2 = t + 1;
            // After the horizon nothing moves any more: a goal reachable at all is reached
            // within |V| more steps, so later states only wait in vain.
            if t2 as usize > table.horizon as usize + p.graph.len() {
                continue;
            }
            let mut next = [(0u32, 0u32); 9];
            let mut k = 0;
            for &v in p.graph.neighbours(u).iter().chain(std::iter::once(&u)) {
                next[k] = (dist.get(p.graph, a as usize, v), v);
                k += 1;
            }
            let next = &mut next[..k];
            if greedy {
                // Ties of the greedy key (last in, first out) go to the successor nearest
                // the goal. (The exact search keeps the graph's order: its refinement
                // plans were measurably better that way on room-32-32-4.)
                next.sort_unstable_by_key(|&(h, _)| std::cmp::Reverse(h));
            }
            for &(h, v) in next.iter() {
                let f = (t2 as u64 + h as u64).max(free_after as u64);
                if f > budget || !free(p.graph, table, paths, u, v, t) || !self.seen.insert((v, t2))
                {
                    continue;
                }
                self.states.push((v, t2, id));
                self.open
                    .push(key(f, h as u64), self.states.len() as u32 - 1);
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
