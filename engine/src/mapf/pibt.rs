//! PIBT, the configuration generator: from one configuration, the next, one step for every
//! agent (Okumura et al., "Priority Inheritance with Backtracking", AIJ 2022), under the
//! constraints LaCAM's low-level search imposes (some agents' next vertices fixed).
//!
//! Agents choose in priority order; each takes its most wanted free vertex (nearest its goal,
//! ties: a vertex nobody stands on now, then at random). Taking a vertex another agent
//! stands on makes that agent choose next, with the taker's priority (priority
//! inheritance); if it cannot move anywhere, the taker tries its next vertex
//! (backtracking). An agent that cannot move stays.
//!
//! The rules every generated configuration keeps (and [`super::check`] checks): no two
//! agents on one vertex; no two agents swapping along one edge; on octile maps no two
//! agents crossing diagonals of one 2x2 square in the same step. Following an agent that
//! leaves a vertex in the same step is allowed, and so are rotations.

use super::dist::DistTables;
use super::graph::{Graph, NONE};
use super::rng::Rng;

/// Reusable scratch of the generator: the vertex occupancy now and next, sized to the graph.
#[derive(Clone, Debug)]
pub(crate) struct Pibt {
    /// Agent on each vertex in the configuration we leave ([`NONE`]: free).
    now: Vec<u32>,
    /// Agent that has claimed each vertex in the configuration we build.
    next: Vec<u32>,
    /// Vertices written in `next`, to reset them (work proportional to the agents).
    touched: Vec<u32>,
    /// A constrained agent holds the vertex an unconstrained one could only stay on.
    broken: bool,
}

/// What one generation reads.
pub(crate) struct Ctx<'a> {
    pub graph: &'a Graph,
    pub dist: &'a mut DistTables,
    pub rng: &'a mut Rng,
}

impl Pibt {
    /// Scratch for `graph`.
    pub(crate) fn new(graph: &Graph) -> Self {
        Self {
            now: vec![NONE; graph.len()],
            next: vec![NONE; graph.len()],
            touched: Vec::new(),
            broken: false,
        }
    }

    /// Writes into `to` a configuration following `from`, agents choosing in `order`, the
    /// constrained agents `(agent, vertex)` of `fixed` (each vertex a move or wait of that
    /// agent) placed first. Returns false when no valid configuration satisfies the
    /// constraints this way (two constraints collide, swap or cross, or an agent that cannot
    /// move is left no vertex).
    pub(crate) fn generate(
        &mut self,
        cx: &mut Ctx<'_>,
        from: &[u32],
        order: &[u32],
        fixed: &[(u32, u32)],
        to: &mut [u32],
    ) -> bool {
        to.fill(NONE);
        for (i, &v) in from.iter().enumerate() {
            self.now[v as usize] = i as u32;
        }
        self.broken = false;
        let mut ok = true;
        for &(i, v) in fixed {
            if self.next[v as usize] != NONE {
                ok = false;
                break;
            }
            to[i as usize] = v;
            self.claim(v, i);
        }
        // Constrained moves among themselves: no swaps, no crossing diagonals.
        if ok {
            ok = fixed
                .iter()
                .all(|&(i, v)| self.allowed(cx.graph, to, i, from[i as usize], v));
        }
        if ok {
            for &i in order {
                if to[i as usize] == NONE {
                    self.pibt(cx, from, to, i, NONE);
                    if self.broken {
                        ok = false;
                        break;
                    }
                }
            }
        }
        for &v in from {
            self.now[v as usize] = NONE;
        }
        for v in self.touched.drain(..) {
            self.next[v as usize] = NONE;
        }
        ok
    }

    /// Agent `i` claims vertex `v` for the next configuration.
    #[inline]
    fn claim(&mut self, v: u32, i: u32) {
        self.next[v as usize] = i;
        self.touched.push(v);
    }

    /// True when agent `i` may move `u -> v` given the moves assigned so far: no swap with
    /// the agent on `v`, no diagonal crossing.
    #[inline]
    fn allowed(&self, graph: &Graph, to: &[u32], i: u32, u: u32, v: u32) -> bool {
        let k = self.now[v as usize];
        if k != NONE && k != i && to[k as usize] == u {
            return false;
        }
        if graph.octile()
            && let Some((c, d)) = graph.crossing(u, v)
        {
            for (a, b) in [(c, d), (d, c)] {
                let k = self.now[a as usize];
                if k != NONE && to[k as usize] == b {
                    return false;
                }
            }
        }
        true
    }

    /// Agent `i` chooses its next vertex; `pusher` is the agent whose choice made it move
    /// (its vertex is off limits: that would be a swap). Returns false when `i` stays.
    fn pibt(
        &mut self,
        cx: &mut Ctx<'_>,
        from: &[u32],
        to: &mut [u32],
        i: u32,
        pusher: u32,
    ) -> bool {
        let u = from[i as usize];
        // Candidates with their sort keys: distance to the goal, then "somebody stands
        // there", then a random number (ties broken at random, reproducibly per seed).
        let mut cand = [(0u64, 0u32); 9];
        let mut n = 0;
        for &v in cx.graph.neighbours(u).iter().chain(std::iter::once(&u)) {
            let d = cx.dist.get(cx.graph, i as usize, v) as u64;
            let busy = u64::from(self.now[v as usize] != NONE && v != u);
            let r = cx.rng.next_u64() >> 44;
            cand[n] = ((d << 21) | (busy << 20) | r, v);
            n += 1;
        }
        let cand = &mut cand[..n];
        cand.sort_unstable_by_key(|c| c.0);
        for &(_, v) in cand.iter() {
            if self.next[v as usize] != NONE || !self.allowed(cx.graph, to, i, u, v) {
                continue;
            }
            to[i as usize] = v;
            self.claim(v, i);
            let k = self.now[v as usize];
            if k != NONE && k != i && to[k as usize] == NONE && !self.pibt(cx, from, to, k, i) {
                if self.broken {
                    return false;
                }
                // k stays on v (it now holds it): try the next vertex.
                continue;
            }
            return true;
        }
        // Nowhere to go: stay. Only the pusher can have claimed u (whoever claims an
        // occupied vertex makes its agent choose at once), unless a constraint did.
        let holder = self.next[u as usize];
        if holder != NONE && holder != pusher {
            self.broken = true;
        }
        to[i as usize] = u;
        self.claim(u, i);
        false
    }
}
