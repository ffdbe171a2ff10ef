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
//! The swap (Okumura, "Engineering LaCAM*", AAMAS 2024): pushing cannot make two agents
//! pass each other in a one-cell corridor, and an agent whose goal lies ahead of another
//! in a dead-end corridor would be pushed back and forth for ever. Before choosing, an
//! agent checks whether pushing the agent on its most wanted vertex ahead would only drive
//! it into a dead end while it wants to go the other way (or whether a neighbour wanting
//! its own vertex would do that to it), and whether there is a branching vertex behind it.
//! If so it reverses its preferences, steps back, and pulls the other agent into the vertex
//! it leaves; repeated over steps, the pair reaches the branching vertex and exchange
//! order there. The pulled move is checked like any other, so the configurations stay
//! valid successors and LaCAM's search stays complete. Only an agent choosing on its own
//! (not pushed) checks: a pushed agent's vertex is taken by its pusher, so it could pull
//! nobody, and turning it away from its goal only made plans longer (measured).
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

    /// The agent `i` should pull through a swap, or [`NONE`]: the agent on `i`'s most wanted
    /// vertex `best` when pushing it ahead is futile (a corridor ending where it has to
    /// turn back) and `i` has room behind it to make way; or a neighbour that wants `i`'s
    /// vertex and would push `i` into such a corridor (`i` clears the way, pulling it).
    fn swap_partner(
        &mut self,
        cx: &mut Ctx<'_>,
        from: &[u32],
        to: &[u32],
        i: u32,
        best: u32,
    ) -> u32 {
        let u = from[i as usize];
        if best == u {
            return NONE;
        }
        let j = self.now[best as usize];
        if j != NONE
            && to[j as usize] == NONE
            && self.swap_required(cx, i, j, u, best)
            && self.swap_possible(cx, best, u)
        {
            return j;
        }
        for &w in cx.graph.neighbours(u) {
            let k = self.now[w as usize];
            if k == NONE || w == best || to[k as usize] != NONE {
                continue;
            }
            if self.swap_required(cx, k, i, w, u) && self.swap_possible(cx, w, u) {
                return k;
            }
        }
        NONE
    }

    /// Of `v`'s neighbours, those an agent walking into `v` from `back` could go on to
    /// (not `back`, not a dead end where an agent rests at its goal): how many, and one.
    fn onward(&self, cx: &mut Ctx<'_>, back: u32, v: u32) -> (usize, u32) {
        let (mut n, mut one) = (0, NONE);
        for &w in cx.graph.neighbours(v) {
            if w == back {
                continue;
            }
            let a = self.now[w as usize];
            if a != NONE && cx.graph.neighbours(w).len() == 1 && cx.dist.goal(a as usize) == w {
                continue;
            }
            n += 1;
            one = w;
        }
        (n, one)
    }

    /// True when `pusher` (on `pu`) moving towards its goal would push `puller` (on `pl`)
    /// along a corridor into a dead end while `puller` wants to go the other way: they
    /// must pass each other, which pushing cannot do.
    fn swap_required(&self, cx: &mut Ctx<'_>, pusher: u32, puller: u32, pu: u32, pl: u32) -> bool {
        let (g, d) = (cx.graph, pusher as usize);
        let (mut a, mut b) = (pu, pl);
        let mut steps = 0;
        while cx.dist.get(g, d, b) < cx.dist.get(g, d, a) && steps <= g.len() {
            steps += 1;
            let (n, next) = self.onward(cx, a, b);
            if n >= 2 {
                return false;
            }
            if n == 0 {
                break;
            }
            (a, b) = (b, next);
        }
        let p = puller as usize;
        cx.dist.get(g, p, a) < cx.dist.get(g, p, b)
            && (cx.dist.get(g, d, a) == 0 || cx.dist.get(g, d, b) < cx.dist.get(g, d, a))
    }

    /// True when the agent on `pl`, moving away from `pu` along its corridor, reaches a
    /// branching vertex where the one following it can step aside.
    fn swap_possible(&self, cx: &mut Ctx<'_>, pu: u32, pl: u32) -> bool {
        let (mut a, mut b) = (pu, pl);
        let mut steps = 0;
        while b != pu && steps <= cx.graph.len() {
            steps += 1;
            let (n, next) = self.onward(cx, a, b);
            if n >= 2 {
                return true;
            }
            if n == 0 {
                return false;
            }
            (a, b) = (b, next);
        }
        false
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
        // The swap: when pushing along a corridor cannot work, go the other way first and
        // pull the partner into the vertex left behind.
        let partner = if pusher == NONE {
            self.swap_partner(cx, from, to, i, cand[0].1)
        } else {
            NONE
        };
        if partner != NONE {
            cand.reverse();
        }
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
            if partner != NONE
                && v != u
                && to[partner as usize] == NONE
                && self.next[u as usize] == NONE
                && self.allowed(cx.graph, to, partner, from[partner as usize], u)
            {
                to[partner as usize] = u;
                self.claim(u, partner);
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
