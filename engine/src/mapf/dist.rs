//! Distance tables: for every agent, the number of moves from each vertex to its goal.
//!
//! One breadth-first search rooted at each goal over the move graph ([`Graph`]): MAPF steps
//! are unit, so BFS is exact and Dijkstra would buy nothing. The searches are *lazy* (as in
//! LaCAM's implementation notes): a table is grown only until the vertex asked about is
//! reached, so a first solution on a large map does not wait for a thousand full searches,
//! and most tables never cover the far side of the map. Entries are `u16` when every
//! distance fits (fewer than 65,535 vertices), halving the memory of the usual benchmark
//! instances (a thousand agents on a 256x256 map: 128 MiB instead of 256).

use std::collections::VecDeque;

use super::graph::Graph;

/// "Unreachable" as returned by [`DistTables::get`].
pub const UNREACHABLE: u32 = u32::MAX;

/// One goal's table.
#[derive(Clone, Debug)]
enum Store {
    Small(Vec<u16>),
    Large(Vec<u32>),
}

impl Store {
    #[inline]
    fn get(&self, v: usize) -> u32 {
        match self {
            Store::Small(d) => match d[v] {
                u16::MAX => UNREACHABLE,
                x => x as u32,
            },
            Store::Large(d) => d[v],
        }
    }

    #[inline]
    fn set(&mut self, v: usize, x: u32) {
        match self {
            Store::Small(d) => d[v] = x as u16,
            Store::Large(d) => d[v] = x,
        }
    }
}

/// One lazily grown BFS.
#[derive(Clone, Debug)]
struct Table {
    dist: Store,
    /// The BFS frontier; entries before `head` are expanded.
    queue: VecDeque<u32>,
}

/// Lazy BFS distance tables, one per agent's goal.
#[derive(Clone, Debug)]
pub struct DistTables {
    goals: Vec<u32>,
    tables: Vec<Option<Table>>,
    small: bool,
    n: usize,
}

impl DistTables {
    /// Tables for the goals `goals` (vertex ids of `graph`); nothing is searched yet.
    pub fn new(graph: &Graph, goals: &[u32]) -> Self {
        Self {
            goals: goals.to_vec(),
            tables: vec![None; goals.len()],
            small: graph.len() < u16::MAX as usize,
            n: graph.len(),
        }
    }

    /// Agent `i`'s goal vertex.
    #[inline]
    pub fn goal(&self, i: usize) -> u32 {
        self.goals[i]
    }

    /// Moves from `v` to agent `i`'s goal ([`UNREACHABLE`] if none), growing the agent's
    /// search as far as needed.
    #[inline]
    pub fn get(&mut self, graph: &Graph, i: usize, v: u32) -> u32 {
        if graph.is_exit(v) && v != self.goals[i] {
            // Nobody enters an exit, so the searches from the goals never label it: one
            // move out, then the nearest way on.
            let mut best = UNREACHABLE;
            for k in 0..graph.neighbours(v).len() {
                let w = graph.neighbours(v)[k];
                best = best.min(self.get(graph, i, w).saturating_add(1));
            }
            return best;
        }
        if let Some(t) = &self.tables[i] {
            let d = t.dist.get(v as usize);
            if d != UNREACHABLE || t.queue.is_empty() {
                return d;
            }
        }
        self.grow(graph, i, v)
    }

    /// Expands agent `i`'s BFS until `v` is labelled or the search is exhausted.
    #[cold]
    fn grow(&mut self, graph: &Graph, i: usize, v: u32) -> u32 {
        let (n, small, goal) = (self.n, self.small, self.goals[i]);
        let t = self.tables[i].get_or_insert_with(|| {
            let mut dist = if small {
                Store::Small(vec![u16::MAX; n])
            } else {
                Store::Large(vec![UNREACHABLE; n])
            };
            dist.set(goal as usize, 0);
            Table {
                dist,
                queue: VecDeque::from([goal]),
            }
        });
        while t.dist.get(v as usize) == UNREACHABLE {
            let Some(u) = t.queue.pop_front() else { break };
            let du = t.dist.get(u as usize);
            for &w in graph.neighbours(u) {
                if t.dist.get(w as usize) == UNREACHABLE {
                    t.dist.set(w as usize, du + 1);
                    t.queue.push_back(w);
                }
            }
        }
        t.dist.get(v as usize)
    }
}
