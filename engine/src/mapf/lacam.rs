//! LaCAM*, the high-level search: a depth-first search over configurations (one vertex per
//! agent) whose successors PIBT generates lazily, made complete by a low-level search over
//! constraints and eventually optimal by rewiring (Okumura: "LaCAM: Search-Based Algorithm
//! for Quick Multi-Agent Pathfinding", AAAI 2023; "Improving LaCAM for Scalable Eventually
//! Optimal Multi-Agent Pathfinding", IJCAI 2023).
//!
//! # Why it is complete
//!
//! A high-level node keeps a queue of *constraint sets*: "agent `order[0]` goes to `v0`,
//! agent `order[1]` goes to `v1`, ..." of growing depth. Each time the node is expanded one
//! set is taken out, its children (one more agent fixed, to each of its moves or a wait) are
//! queued, and PIBT builds a configuration honouring it. At depth `N` every agent is fixed,
//! so once a node's queue is empty every successor configuration has been generated. A node
//! leaves the open stack only then (or when it cannot beat the best plan, below), so an empty
//! stack with no goal reached means no configuration reachable from the start is the goal
//! one: the instance is unsolvable ([`super::MapfStatus::Failed`]).
//!
//! # Why it gets better, and optimal
//!
//! Every node knows the nodes it generated (its neighbours), with edge costs: for the sum of
//! costs the number of agents not staying at their goals (the *sum of loss*, which the MAPF
//! sum of costs can only exceed by steps an agent rests at its goal before leaving it again),
//! for the makespan 1. When a generated configuration is already known, the new edge may
//! give it and its descendants a cheaper `g`: a Dijkstra pass from the expanded node
//! rewires parents. After the first plan the search goes on, dropping nodes whose
//! `g + h` (h: the sum, or the largest, of the agents' distances, admissible) cannot beat the
//! plan; when the stack empties the plan is optimal for that cost. After the first plan a
//! known configuration also sends the search back to the start with a small probability (a
//! restart, as "Engineering LaCAM*", AAMAS 2024, does), which diversifies the anytime phase.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::dist::DistTables;
use super::graph::{Graph, NONE};
use super::instance::{MapfOptions, Objective};
use super::pibt::{Ctx, Pibt};
use super::rng::Rng;

/// Configurations generated without coming nearer the goals (a smaller `h` than any node
/// before) after which prioritised planning gets a try (see `prioritized.rs`).
const PATIENCE: u64 = 100;

/// Probability of a restart from the start configuration when a known configuration is
/// generated after the first plan.
const RESTART: f64 = 0.001;

/// One high-level node: a configuration and what the search knows about it.
struct Node {
    config: Box<[u32]>,
    /// PIBT priorities: time since the agent was last at its goal, plus a fraction.
    prio: Box<[f32]>,
    parent: u32,
    /// Cost of the cheapest known way from the start.
    g: u64,
    /// Admissible estimate of the cost to the goal configuration.
    h: u64,
    /// Nodes generated from this one (edges of the configuration graph).
    nbrs: Vec<u32>,
    /// Constraint sets still to try (the low-level search).
    low: VecDeque<Vec<(u32, u32)>>,
    /// Next node with the same configuration hash.
    chain: u32,
}

/// How the high-level search ended.
pub(crate) struct SearchEnd {
    /// The best plan found, as configurations from the start to the goal configuration.
    pub solution: Option<Vec<Vec<u32>>>,
    /// The first plan found (the search's later plans have a lower sum of loss, which does
    /// not always mean a lower sum of costs).
    pub first: Option<Vec<Vec<u32>>>,
    /// Without a solution: configurations from the start to the explored one nearest the
    /// goals.
    pub nearest: Vec<Vec<u32>>,
    /// The open stack ran empty: with a solution it is optimal, without one there is none.
    pub exhausted: bool,
    /// When the first plan was found.
    pub first_solution: Option<Duration>,
    /// Cost of the first plan.
    pub first_cost: Option<u64>,
    /// Better plans found after the first.
    pub improvements: u64,
    /// Nodes created.
    pub nodes: u64,
    /// Configurations generated.
    pub generated: u64,
}

/// The instance as vertex ids.
pub(crate) struct Problem<'a> {
    pub graph: &'a Graph,
    pub starts: &'a [u32],
    pub goals: &'a [u32],
}

fn hash(c: &[u32]) -> u64 {
    let mut h = 0x243F_6A88_85A3_08D3u64;
    for &v in c {
        h = (h.rotate_left(5) ^ v as u64).wrapping_mul(0x517C_C1B7_2722_0A95);
    }
    h
}

/// The cost of the step between two configurations under `objective`.
pub(crate) fn edge_cost(objective: Objective, goals: &[u32], a: &[u32], b: &[u32]) -> u64 {
    match objective {
        Objective::SumOfCosts => a
            .iter()
            .zip(b)
            .zip(goals)
            .filter(|((x, y), g)| !(*x == *g && *y == *g))
            .count() as u64,
        Objective::Makespan => 1,
    }
}

/// The cost of a plan (configurations) under `objective`.
fn plan_cost(objective: Objective, goals: &[u32], plan: &[Vec<u32>]) -> u64 {
    plan.windows(2)
        .map(|w| edge_cost(objective, goals, &w[0], &w[1]))
        .sum()
}

/// The search state.
struct Search<'a, 'b> {
    p: &'b Problem<'a>,
    opts: &'b MapfOptions,
    dist: &'b mut DistTables,
    rng: Rng,
    nodes: Vec<Node>,
    table: HashMap<u64, u32>,
    open: Vec<u32>,
    goal: u32,
    /// The node the cached `order` belongs to.
    order_of: u32,
    order: Vec<u32>,
}

impl Search<'_, '_> {
    fn h(&mut self, c: &[u32]) -> u64 {
        let (graph, dist) = (self.p.graph, &mut *self.dist);
        let ds = c
            .iter()
            .enumerate()
            .map(|(i, &v)| dist.get(graph, i, v) as u64);
        match self.opts.objective {
            Objective::SumOfCosts => ds.sum(),
            Objective::Makespan => ds.max().unwrap_or(0),
        }
    }

    fn find(&self, h: u64, c: &[u32]) -> Option<u32> {
        let mut k = *self.table.get(&h)?;
        while k != NONE {
            if *self.nodes[k as usize].config == *c {
                return Some(k);
            }
            k = self.nodes[k as usize].chain;
        }
        None
    }

    fn add(&mut self, config: Vec<u32>, prio: Box<[f32]>, parent: u32, g: u64, key: u64) -> u32 {
        let h = self.h(&config);
        let id = self.nodes.len() as u32;
        let chain = self.table.insert(key, id).unwrap_or(NONE);
        self.nodes.push(Node {
            config: config.into_boxed_slice(),
            prio,
            parent,
            g,
            h,
            nbrs: Vec::new(),
            low: VecDeque::from([Vec::new()]),
            chain,
        });
        id
    }

    /// Agents by priority, highest first (ties by index), for node `n`.
    fn order_for(&mut self, n: u32) {
        if self.order_of == n {
            return;
        }
        let prio = &self.nodes[n as usize].prio;
        self.order.clear();
        self.order.extend(0..prio.len() as u32);
        self.order.sort_unstable_by(|&a, &b| {
            prio[b as usize]
                .total_cmp(&prio[a as usize])
                .then(a.cmp(&b))
        });
        self.order_of = n;
    }

    /// Priorities of a successor of `n` with configuration `c`.
    fn child_prio(&self, n: u32, c: &[u32]) -> Box<[f32]> {
        let prio = &self.nodes[n as usize].prio;
        (0..c.len())
            .map(|i| {
                if c[i] == self.p.goals[i] {
                    prio[i].fract()
                } else {
                    prio[i] + 1.0
                }
            })
            .collect()
    }

    /// Dijkstra from `from` over the known edges: cheaper `g`s and their parents.
    fn rewire(&mut self, from: u32) {
        let mut heap = BinaryHeap::from([Reverse((self.nodes[from as usize].g, from))]);
        while let Some(Reverse((g, a))) = heap.pop() {
            if g != self.nodes[a as usize].g {
                continue;
            }
            for j in 0..self.nodes[a as usize].nbrs.len() {
                let b = self.nodes[a as usize].nbrs[j];
                let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
                let g2 = g + edge_cost(self.opts.objective, self.p.goals, &na.config, &nb.config);
                if g2 < nb.g {
                    let nb = &mut self.nodes[b as usize];
                    nb.g = g2;
                    nb.parent = a;
                    let f = g2 + nb.h;
                    heap.push(Reverse((g2, b)));
                    if self.goal != NONE && f < self.nodes[self.goal as usize].g {
                        self.open.push(b);
                    }
                }
            }
        }
    }

    /// Configurations from the start to node `n`.
    fn configs_to(&self, mut n: u32) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        while n != NONE {
            out.push(self.nodes[n as usize].config.to_vec());
            n = self.nodes[n as usize].parent;
        }
        out.reverse();
        out
    }
}

/// Runs LaCAM* until the goal configuration is reached and, unless
/// `opts.first_solution`, on until the stack empties (optimal), a limit or the deadline.
/// `stall` ends the anytime phase early after that many generated configurations
/// without a better plan (`None`: never).
pub(crate) fn lacam(
    p: &Problem<'_>,
    dist: &mut DistTables,
    opts: &MapfOptions,
    stall: Option<u64>,
) -> SearchEnd {
    let started = Instant::now();
    let n = p.starts.len();
    let max_nodes = opts
        .max_nodes
        .unwrap_or(MapfOptions::DEFAULT_NODE_MEMORY / (8 * n + 160))
        .max(1);
    let mut s = Search {
        p,
        opts,
        dist,
        rng: Rng::new(opts.seed),
        nodes: Vec::new(),
        table: HashMap::new(),
        open: Vec::new(),
        goal: NONE,
        order_of: NONE,
        order: Vec::with_capacity(n),
    };
    // Initial priorities: farther agents first, all below one step's increment.
    let d0: Vec<u64> = (0..n)
        .map(|i| s.dist.get(p.graph, i, p.starts[i]) as u64)
        .collect();
    let top = d0.iter().copied().max().unwrap_or(0) as f32 + 1.0;
    let prio: Box<[f32]> = d0.iter().map(|&d| d as f32 / top).collect();
    let root = s.add(p.starts.to_vec(), prio, NONE, 0, hash(p.starts));
    s.open.push(root);
    let mut end = SearchEnd {
        solution: None,
        first: None,
        nearest: Vec::new(),
        exhausted: false,
        first_solution: None,
        first_cost: None,
        improvements: 0,
        nodes: 0,
        generated: 0,
    };
    let mut nearest = root;
    let mut best_cost = u64::MAX;
    let mut since_better = 0u64;
    // When the search last came nearer the goals, and whether prioritised planning ran.
    let (mut since_nearer, mut tried_pp) = (0u64, false);
    if *p.starts == *p.goals {
        s.goal = root;
    }
    let mut pibt = Pibt::new(p.graph);
    let mut buf = vec![NONE; n];
    let mut cands = Vec::with_capacity(9);
    loop {
        if s.goal != NONE {
            let g = s.nodes[s.goal as usize].g;
            if g < best_cost {
                if best_cost == u64::MAX {
                    end.first_solution = Some(started.elapsed());
                    end.first_cost = Some(g);
                    end.first = Some(s.configs_to(s.goal));
                } else {
                    end.improvements += 1;
                }
                best_cost = g;
                since_better = 0;
                if opts.first_solution {
                    break;
                }
            }
            if stall.is_some_and(|k| since_better >= k) {
                break;
            }
        }
        if s.goal == NONE && !tried_pp && end.generated >= since_nearer + PATIENCE {
            tried_pp = true;
            // Without a deadline prioritised planning is bounded by its work alone (orders
            // tried, expansions per agent), so that the outcome never depends on the clock.
            let now = Instant::now();
            let until = opts
                .deadline
                .map(|d| now + d.saturating_duration_since(now) * 3 / 4);
            if let Some(plan) = super::prioritized::prioritized(p, s.dist, opts, until) {
                end.first_solution = Some(started.elapsed());
                end.first_cost = Some(plan_cost(opts.objective, p.goals, &plan));
                end.first = Some(plan.clone());
                end.solution = Some(plan);
                end.nodes = s.nodes.len() as u64;
                return end;
            }
        }
        let Some(&top) = s.open.last() else {
            end.exhausted = true;
            break;
        };
        if opts.stopped() {
            break;
        }
        let node = &mut s.nodes[top as usize];
        if s.goal != NONE && node.g + node.h >= best_cost {
            s.open.pop();
            continue;
        }
        let Some(cons) = node.low.pop_front() else {
            s.open.pop();
            continue;
        };
        s.order_for(top);
        // The low-level search: queue this constraint set's children (one more agent
        // fixed, to each of its moves and the wait).
        if cons.len() < n {
            let i = s.order[cons.len()];
            let u = s.nodes[top as usize].config[i as usize];
            cands.clear();
            cands.extend_from_slice(p.graph.neighbours(u));
            cands.push(u);
            s.rng.shuffle(&mut cands);
            for &v in &cands {
                let mut c = Vec::with_capacity(cons.len() + 1);
                c.extend_from_slice(&cons);
                c.push((i, v));
                s.nodes[top as usize].low.push_back(c);
            }
        }
        end.generated += 1;
        since_better += 1;
        let ok = {
            let mut cx = Ctx {
                graph: p.graph,
                dist: s.dist,
                rng: &mut s.rng,
            };
            pibt.generate(
                &mut cx,
                &s.nodes[top as usize].config,
                &s.order,
                &cons,
                &mut buf,
            )
        };
        if !ok {
            continue;
        }
        let key = hash(&buf);
        if let Some(known) = s.find(key, &buf) {
            if !s.nodes[top as usize].nbrs.contains(&known) {
                s.nodes[top as usize].nbrs.push(known);
            }
            s.rewire(top);
            s.open.push(known);
            if s.goal != NONE && s.rng.unit() < RESTART {
                s.open.push(root);
            }
            continue;
        }
        if s.nodes.len() >= max_nodes {
            break;
        }
        let g = s.nodes[top as usize].g
            + edge_cost(opts.objective, p.goals, &s.nodes[top as usize].config, &buf);
        let prio = s.child_prio(top, &buf);
        let id = s.add(buf.clone(), prio, top, g, key);
        s.nodes[top as usize].nbrs.push(id);
        s.open.push(id);
        if *buf == *p.goals {
            s.goal = id;
        }
        let (a, b) = (&s.nodes[id as usize], &s.nodes[nearest as usize]);
        if (a.h, a.g) < (b.h, b.g) {
            if a.h < b.h {
                since_nearer = end.generated;
            }
            nearest = id;
        }
    }
    end.nodes = s.nodes.len() as u64;
    if s.goal != NONE {
        end.solution = Some(s.configs_to(s.goal));
    } else {
        end.nearest = s.configs_to(nearest);
    }
    end
}
