//! A contraction hierarchy (Geisberger, Sanders, Schultes and Delling 2008) over the subgoal
//! graph: nodes are removed ("contracted") one at a time, least important first, and
//! wherever removing `v` would lengthen a shortest path `u - v - w` between two remaining
//! neighbours, a *shortcut* `u - w` of the same cost (remembering `v`) is added. Every node
//! then keeps the edges to the neighbours contracted after it (its *upward* edges).
//!
//! # Why an upward search from both ends is exact
//!
//! Contracting `v` keeps every distance between the remaining nodes: a shortest path through
//! `v` enters and leaves it by two neighbours `u`, `w`, and either a path avoiding `v` is as
//! short (the *witness*) or the shortcut replaces the detour. So between any two nodes there
//! is a shortest path in the final graph (original edges and shortcuts) whose nodes first
//! rise and then fall in contraction order: take any shortest path and, while some interior
//! node is lower than both its neighbours on it, replace that node by the edge or shortcut
//! its contraction left between them (or by a witness, which by induction on the
//! contraction order has such a path too). The forward search walks only upward edges from
//! the start's nodes, the backward search only upward edges from the goal's, so both meet at
//! that path's highest node with its exact cost; once neither queue holds anything below
//! the best meeting cost, no cheaper meeting can follow.
//!
//! A witness search that gives up early (settle limit below) only adds a shortcut that was
//! not needed: more edges, never a wrong cost.
//!
//! # The core
//!
//! The witness searches have a work budget ([`work_budget`]), which bounds the build
//! time. When it runs out, the nodes left are the *core*: they share the top rank and each lists all its remaining neighbours, so inside
//! the core both searches are plain Dijkstras. The argument above still holds: a shortest
//! path first rises, then runs through the core, then falls, and every node of its core part
//! is reached by both searches at its exact distance before either queue's minimum passes
//! the path's cost.
//!
//! # Stalling
//!
//! The query stalls a node whose distance some higher neighbour beats through their edge
//! (Geisberger et al.'s stall-on-demand): the node is not on a shortest up-down path with
//! that distance, so its edges need not be relaxed. In the core it never fires (a settled
//! node's distance is exact there).
//!
//! Order: a lazily updated priority, `2 (shortcuts - degree) + contracted neighbours +
//! level` (edge difference, spread and depth: Geisberger et al.'s terms), recomputed when a
//! node comes up and for the neighbours of every contracted node.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// No node (an original edge's middle; a seed's parent).
pub(crate) const NONE: u32 = u32::MAX;

/// The middle of a *direct* shortcut: one whose ends are joined by a legal diagonal-first or
/// cardinal-first path of the shortcut's cost, so the query refines it into cells at once
/// instead of unpacking it (see [`super::SubgoalGraph`]'s assembly).
pub(crate) const DIRECT: u32 = u32::MAX - 1;

/// Nodes a witness search settles before giving up, when contracting a node.
const SETTLE_LIMIT: usize = 150;

/// The same when only estimating a node's priority (cheaper, so a little less exact).
const SIMULATE_LIMIT: usize = 50;

/// The same for the first estimate of every node.
const INIT_LIMIT: usize = 8;

/// Edge relaxations the witness searches may spend on a graph of `n` nodes before the
/// contraction stops and leaves the rest as the core: a deterministic bound on the build
/// time. 12,000 a node, at least 200 M and at most 1.5 G (about 1 to 8 s): random512-20-0
/// (85,721 subgoals) needs 0.78 G and contracts fully, its queries then 15x faster than
/// with the core 0.2 G leaves; the dense graph of Berlin_1_1024 (5,604 subgoals) would
/// need 2.3 G (16 s) and its queries stay slower than JPS+'s either way, so it keeps a core.
pub(crate) fn work_budget(n: usize) -> u64 {
    (n as u64 * 12_000).clamp(200_000_000, 1_500_000_000)
}

/// One upward edge: its upper end, its cost and, for a shortcut, the node it bypasses
/// ([`NONE`] for an edge of the subgoal graph, [`DIRECT`] for a direct shortcut). 16 bytes, read together by the query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Arc {
    pub cost: f64,
    pub head: u32,
    pub mid: u32,
}

/// The hierarchy: every node's upward edges in one array (CSR), each node's sorted by head. Node ids are in
/// descending contraction order (the core first, then the last contracted node, ...), so
/// the upper levels every query climbs into sit together in memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Hierarchy {
    /// Edges of node `v` are `first[v]..first[v + 1]`.
    pub first: Vec<u32>,
    pub arcs: Vec<Arc>,
    /// Nodes left uncontracted when the work budget ran out (the core): they share the top
    /// rank, and each lists all its core neighbours.
    pub core: usize,
}

impl Hierarchy {
    /// The upward edges of `v`.
    #[inline(always)]
    pub(crate) fn up(&self, v: u32) -> &[Arc] {
        &self.arcs[self.first[v as usize] as usize..self.first[v as usize + 1] as usize]
    }

    /// The edge between `lower` and `upper` in `lower`'s list (it must be there; each list
    /// is sorted by head).
    #[inline]
    pub(crate) fn arc(&self, lower: u32, upper: u32) -> &Arc {
        let up = self.up(lower);
        let i = up.partition_point(|a| a.head < upper);
        debug_assert!(
            up[i].head == upper,
            "a shortcut's halves are edges of its middle"
        );
        &up[i]
    }

    /// Appends the nodes of the edge `arc` between `from` and `to` (either way round) after
    /// `from`, `to` included, down to edges of the subgoal graph and direct shortcuts (each
    /// consecutive pair then joined by a diagonal-first or cardinal-first path of its
    /// octile cost): `O(nodes appended)`.
    pub(crate) fn unpack(&self, arc: &Arc, from: u32, to: u32, out: &mut Vec<u32>) {
        let m = arc.mid;
        if m == NONE || m == DIRECT {
            out.push(to);
            return;
        }
        // The middle was contracted first: both halves are in its list.
        self.unpack(self.arc(m, from), from, m, out);
        self.unpack(self.arc(m, to), m, to, out);
    }

    /// Heap bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.first.len() * 4 + self.arcs.len() * size_of::<Arc>()
    }
}

/// One adjacency entry during contraction: `(neighbour, cost, middle)`.
type Adj = (u32, f64, u32);

/// Witness-search memory, stamped so a search touches only what it reaches.
struct Witness {
    dist: Vec<f64>,
    stamp: Vec<u32>,
    /// `now` marks the current search's targets not yet settled.
    target: Vec<u32>,
    now: u32,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// Edges relaxed so far, by every search: the contraction's work.
    work: u64,
}

impl Witness {
    fn new(n: usize) -> Self {
        Witness {
            dist: vec![0.0; n],
            stamp: vec![0; n],
            target: vec![0; n],
            now: 0,
            heap: BinaryHeap::new(),
            work: 0,
        }
    }

    /// Shortest distances from `from` in the remaining graph without `skip`, up to `bound`,
    /// until every node of `targets` is settled or `limit` nodes are; read them with
    /// [`Witness::get`].
    fn run(
        &mut self,
        adj: &[Vec<Adj>],
        from: u32,
        skip: u32,
        targets: &[Adj],
        bound: f64,
        limit: usize,
    ) {
        self.now += 1;
        self.heap.clear();
        let mut left = 0;
        for &(t, _, _) in targets {
            self.target[t as usize] = self.now;
            left += 1;
        }
        self.set(from, 0.0);
        self.heap.push(Reverse((0f64.to_bits(), from)));
        let mut settled = 0;
        while let Some(Reverse((d, u))) = self.heap.pop() {
            let d = f64::from_bits(d);
            if d > bound {
                break;
            }
            if d > self.get(u) {
                continue;
            }
            if self.target[u as usize] == self.now {
                self.target[u as usize] = 0;
                left -= 1;
                if left == 0 {
                    break;
                }
            }
            settled += 1;
            if settled > limit {
                break;
            }
            self.work += adj[u as usize].len() as u64;
            for &(w, c, _) in &adj[u as usize] {
                let nd = d + c;
                // Beyond the bound a node could not witness anything: not queued.
                if w != skip && nd <= bound && nd < self.get(w) {
                    self.set(w, nd);
                    self.heap.push(Reverse((nd.to_bits(), w)));
                }
            }
        }
    }

    fn set(&mut self, v: u32, d: f64) {
        self.dist[v as usize] = d;
        self.stamp[v as usize] = self.now;
    }

    fn get(&self, v: u32) -> f64 {
        if self.stamp[v as usize] == self.now {
            self.dist[v as usize]
        } else {
            f64::INFINITY
        }
    }
}

/// Whether a witness of cost `w` makes a shortcut of cost `s` unneeded: costs are sums of
/// `1`s and `sqrt 2`s, so equal true costs may differ in their last bits.
fn covers(w: f64, s: f64) -> bool {
    w <= s * (1.0 + 1e-12)
}

/// The shortcuts contracting `v` needs (as neighbour-index pairs into `adj[v]`), or only
/// their number when `out` is `None`; witness searches settle at most `limit` nodes.
fn shortcuts(
    adj: &[Vec<Adj>],
    v: u32,
    wit: &mut Witness,
    limit: usize,
    mut out: Option<&mut Vec<(usize, usize)>>,
) -> usize {
    let n = &adj[v as usize];
    let mut count = 0;
    for i in 0..n.len().saturating_sub(1) {
        let (u, cu, _) = n[i];
        let rest = &n[i + 1..];
        let max = rest.iter().map(|e| e.1).fold(0.0, f64::max);
        wit.run(adj, u, v, rest, cu + max, limit);
        for (j, &(w, cw, _)) in rest.iter().enumerate() {
            if !covers(wit.get(w), cu + cw) {
                count += 1;
                if let Some(o) = out.as_deref_mut() {
                    o.push((i, i + 1 + j));
                }
            }
        }
    }
    count
}

/// Contracts the undirected graph of `n` nodes and `edges` (`(a, b, cost)`, each pair once,
/// `a != b`) into its [`Hierarchy`].
/// `budget` edge relaxations (normally [`work_budget`]) may be spent on witness searches.
/// Returns the hierarchy in its own node ids and, for each of those, the node's id in
/// `edges`.
pub(crate) fn contract(n: usize, edges: &[(u32, u32, f64)], budget: u64) -> (Hierarchy, Vec<u32>) {
    let mut adj: Vec<Vec<Adj>> = vec![Vec::new(); n];
    for &(a, b, c) in edges {
        adj[a as usize].push((b, c, NONE));
        adj[b as usize].push((a, c, NONE));
    }
    let mut wit = Witness::new(n);
    let mut deleted = vec![0i64; n];
    let mut level = vec![0i64; n];
    let prio_with = |limit: usize,
                     adj: &[Vec<Adj>],
                     v: u32,
                     wit: &mut Witness,
                     deleted: &[i64],
                     level: &[i64]| {
        let added = shortcuts(adj, v, wit, limit, None) as i64;
        2 * (added - adj[v as usize].len() as i64) + deleted[v as usize] + level[v as usize]
    };
    let prio = |adj: &[Vec<Adj>], v: u32, wit: &mut Witness, deleted: &[i64], level: &[i64]| {
        prio_with(SIMULATE_LIMIT, adj, v, wit, deleted, level)
    };
    // First estimates with short witness searches (every node is simulated again, fully,
    // when it comes up).
    let mut current: Vec<i64> = (0..n as u32)
        .map(|v| prio_with(INIT_LIMIT, &adj, v, &mut wit, &deleted, &level))
        .collect();
    let mut queue: BinaryHeap<Reverse<(i64, u32)>> = current
        .iter()
        .enumerate()
        .map(|(v, &p)| Reverse((p, v as u32)))
        .collect();
    let mut rank = vec![NONE; n];
    let mut up: Vec<Vec<Adj>> = vec![Vec::new(); n];
    let mut next_rank = 0u32;
    let mut pairs = Vec::new();
    while let Some(Reverse((p, v))) = queue.pop() {
        if rank[v as usize] != NONE || p != current[v as usize] {
            continue;
        }
        // Out of work: the nodes left form the core (module docs).
        if wit.work > budget {
            break;
        }
        // Lazy update: contract `v` only if its fresh priority still comes first.
        let fresh = prio(&adj, v, &mut wit, &deleted, &level);
        if let Some(&Reverse((top, _))) = queue.peek() {
            if fresh > top {
                current[v as usize] = fresh;
                queue.push(Reverse((fresh, v)));
                continue;
            }
        }
        pairs.clear();
        shortcuts(&adj, v, &mut wit, SETTLE_LIMIT, Some(&mut pairs));
        let nb = std::mem::take(&mut adj[v as usize]);
        for &(i, j) in &pairs {
            let ((a, ca, _), (b, cb, _)) = (nb[i], nb[j]);
            add_edge(&mut adj, a, b, ca + cb, v);
            add_edge(&mut adj, b, a, ca + cb, v);
        }
        rank[v as usize] = next_rank;
        next_rank += 1;
        for &(u, _, _) in &nb {
            let list = &mut adj[u as usize];
            list.retain(|e| e.0 != v);
            deleted[u as usize] += 1;
            level[u as usize] = level[u as usize].max(level[v as usize] + 1);
        }
        // The neighbours' priorities are refreshed lazily, when they come up (above): a
        // fresh simulation for every neighbour of every contracted node cost most of the
        // build on dense graphs (street maps).
        up[v as usize] = nb;
    }
    let core = rank.iter().filter(|&&r| r == NONE).count();
    for v in 0..n {
        if rank[v] == NONE {
            up[v] = std::mem::take(&mut adj[v]);
        }
    }
    // New ids: descending rank, the core (by old id) first.
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by_key(|&v| match rank[v as usize] {
        NONE => (0, v),
        r => (1, NONE - r),
    });
    let mut new_id = vec![0u32; n];
    for (i, &v) in order.iter().enumerate() {
        new_id[v as usize] = i as u32;
    }
    let relabel = |v: u32| if v == NONE { NONE } else { new_id[v as usize] };
    let mut h = Hierarchy {
        first: Vec::with_capacity(n + 1),
        arcs: Vec::with_capacity(up.iter().map(Vec::len).sum()),
        core,
    };
    h.first.push(0);
    for &v in &order {
        for &(w, cost, m) in &up[v as usize] {
            h.arcs.push(Arc {
                cost,
                head: relabel(w),
                mid: relabel(m),
            });
        }
        let from = *h.first.last().expect("pushed above") as usize;
        // By head: the highest nodes (the likeliest to stall this one) first, and a binary
        // search finds an edge when unpacking.
        h.arcs[from..].sort_unstable_by_key(|a| a.head);
        h.first.push(h.arcs.len() as u32);
    }
    (h, order)
}

/// Adds (or shortens) the edge `a -> b` in `a`'s list.
fn add_edge(adj: &mut [Vec<Adj>], a: u32, b: u32, c: f64, mid: u32) {
    let list = &mut adj[a as usize];
    match list.iter_mut().find(|e| e.0 == b) {
        Some(e) if e.1 > c => *e = (b, c, mid),
        Some(_) => {}
        None => list.push((b, c, mid)),
    }
}
