//! One HPA* query: insert start and goal, A* over the abstract graph, refine into cells,
//! straighten.

use std::cell::RefCell;
use std::time::Instant;

use super::build::NO_PATH;
use super::local::Local;
use super::straighten::Straightener;
use super::{Abstraction, Inner};
use crate::grid::{Grid, Point, distance};
use crate::query::{Algorithm, LimitKind, Query, QueryError, SearchResult, Stats, Status};
use crate::search::{OpenList, limit_hit};

/// Check the clock and the cancellation flag every this many abstract expansions (an
/// abstract expansion does about as much work as a dozen grid expansions).
const CHECK_EVERY: u64 = 32;

/// Longest straightening ray, in cluster sides.
const RAY_CLUSTERS: u32 = 2;

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Per-thread query memory: three in-cluster searches (start tree, goal tree, refinement),
/// the abstract search records and the straightener.
#[derive(Default)]
struct Scratch {
    s: Local,
    g: Local,
    work: Local,
    nodes: AbsNodes,
    open: OpenList,
    straight: Straightener,
    targets: Vec<u32>,
    goal_dist: Vec<f64>,
    cells: Vec<u32>,
    seg: Vec<u32>,
}

/// Abstract search records, generation-stamped like the core's.
#[derive(Default)]
struct AbsNodes {
    g: Vec<f64>,
    parent: Vec<u32>,
    /// `generation` = reached, `generation + 1` = expanded.
    stamp: Vec<u32>,
    generation: u32,
}

impl AbsNodes {
    fn begin(&mut self, len: usize) {
        if self.g.len() < len {
            self.g.resize(len, 0.0);
            self.parent.resize(len, 0);
            self.stamp.resize(len, 0);
        }
        if self.generation >= u32::MAX - 4 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.generation = 0;
        }
        self.generation += 2;
    }

    #[inline]
    fn g(&self, n: u32) -> f64 {
        if self.stamp[n as usize] >= self.generation {
            self.g[n as usize]
        } else {
            f64::INFINITY
        }
    }

    #[inline]
    fn expanded(&self, n: u32) -> bool {
        self.stamp[n as usize] == self.generation + 1
    }

    fn chain(&self, end: u32) -> Vec<u32> {
        let mut out = vec![end];
        let mut cur = end;
        while self.parent[cur as usize] != cur {
            cur = self.parent[cur as usize];
            out.push(cur);
        }
        out.reverse();
        out
    }
}

/// Validates, short-circuits the trivial and unreachable cases, then searches.
pub(super) fn find_path(
    abs: &Abstraction,
    grid: &Grid,
    q: &Query,
) -> Result<SearchResult, QueryError> {
    for (which, p) in [("start", q.start), ("goal", q.goal)] {
        if !grid.in_bounds(p) {
            return Err(QueryError::OutOfBounds { which, point: p });
        }
    }
    if !grid.is_passable(q.start) {
        return Err(QueryError::StartBlocked(q.start));
    }
    if !grid.is_passable(q.goal) {
        return Err(QueryError::GoalBlocked(q.goal));
    }
    if !abs.fits(grid) {
        let l = &abs.inner.layout;
        return Err(QueryError::NotApplicable {
            algorithm: Algorithm::Hpa,
            reason: format!(
                "the abstraction was built for a {}x{} {} map",
                l.width,
                l.height,
                abs.inner.movement.as_str()
            ),
        });
    }
    if q.start == q.goal {
        return Ok(result(
            Status::Found,
            vec![q.start],
            0.0,
            Stats::default(),
            None,
        ));
    }
    if !q.partial && !grid.same_component(q.start, q.goal) {
        return Ok(result(
            Status::NoPath,
            Vec::new(),
            0.0,
            Stats::default(),
            None,
        ));
    }
    let r = SCRATCH.with(|s| search(&abs.inner, grid, q, &mut s.borrow_mut()));
    if r.status == Status::NoPath && grid.same_component(q.start, q.goal) {
        // The abstract graph is connected exactly where the map is (see the module docs),
        // so this cannot happen; should it ever, answer correctly rather than wrongly.
        debug_assert!(false, "HPA* missed a path {} -> {}", q.start, q.goal);
        let mut plain = q.clone();
        plain.algorithm = Algorithm::AStar;
        return crate::find_path(grid, &plain);
    }
    Ok(r)
}

fn result(
    status: Status,
    path: Vec<Point>,
    cost: f64,
    stats: Stats,
    limit: Option<LimitKind>,
) -> SearchResult {
    SearchResult {
        status,
        path,
        cost,
        algorithm: Algorithm::Hpa,
        stats,
        limit,
        expanded_cells: Vec::new(),
    }
}

/// How the abstract search ended.
enum End {
    Goal,
    Exhausted,
    Limit(LimitKind),
}

/// The partial-answer endpoint: an expanded abstract node or a cell of the start's cluster.
enum Closest {
    Node(u32),
    Cell(u32),
}

fn search(me: &Inner, grid: &Grid, q: &Query, sc: &mut Scratch) -> SearchResult {
    let started = Instant::now();
    let layout = me.layout;
    let pw = grid.padded_width();
    let (s_cell, g_cell) = (grid.pidx(q.start) as u32, grid.pidx(q.goal) as u32);
    let (cs, cg) = (layout.cluster_of(q.start), layout.cluster_of(q.goal));
    let (rs, rg) = (layout.rect(cs), layout.rect(cg));
    let (cl_s, cl_g) = (&*me.clusters[cs], &*me.clusters[cg]);
    let mut stats = Stats::default();

    // Step 1: insert the start (and the goal, when it shares the cluster) with one Dijkstra
    // inside the start's cluster, and the goal with one inside the goal's cluster.
    sc.targets.clear();
    sc.targets
        .extend(cl_s.nodes.iter().map(|n| rs.local(pw, n.cell)));
    if cs == cg {
        sc.targets.push(rs.local(pw, g_cell));
    }
    sc.s.dijkstra(grid, rs, rs.local(pw, s_cell), &sc.targets);
    sc.targets.clear();
    sc.targets
        .extend(cl_g.nodes.iter().map(|n| rg.local(pw, n.cell)));
    sc.g.dijkstra(grid, rg, rg.local(pw, g_cell), &sc.targets);
    sc.goal_dist.clear();
    sc.goal_dist
        .extend(sc.targets.iter().map(|&l| sc.g.dist(l)));
    let direct = if cs == cg {
        sc.s.dist(rs.local(pw, g_cell))
    } else {
        f64::INFINITY
    };
    stats.expanded += sc.s.expanded + sc.g.expanded;
    stats.generated += sc.s.generated + sc.g.generated;

    // Step 2: A* over the abstract graph plus two temporary nodes, S and G.
    let total = me.owner.len() as u32;
    let (s_id, g_id) = (total, total + 1);
    let cell_of = |id: u32| -> u32 {
        if id == s_id {
            s_cell
        } else if id == g_id {
            g_cell
        } else {
            let c = me.owner[id as usize] as usize;
            me.clusters[c].nodes[(id - me.offsets[c]) as usize].cell
        }
    };
    let (gx, gy) = ((g_cell as usize % pw) as f64, (g_cell as usize / pw) as f64);
    let (movement, scale) = (grid.movement(), grid.min_cost() as f64);
    let h = |cell: u32| {
        let dx = ((cell as usize % pw) as f64 - gx).abs();
        let dy = ((cell as usize / pw) as f64 - gy).abs();
        distance(movement, dx, dy) * scale
    };
    let max_exp = q.limits.max_expansions.unwrap_or(u64::MAX);
    let nodes = &mut sc.nodes;
    let open = &mut sc.open;
    nodes.begin(total as usize + 2);
    open.clear();
    let gen_ = nodes.generation;
    nodes.g[s_id as usize] = 0.0;
    nodes.parent[s_id as usize] = s_id;
    nodes.stamp[s_id as usize] = gen_;
    open.push(h(s_cell), 0.0, s_id);
    stats.generated += 1;
    let mut closest: Option<(f64, f64, u32)> = None;
    let mut debug = Vec::new();
    let mut abstract_expanded = 0u64;
    // Pushes `to` when `g` improves it.
    let relax = |nodes: &mut AbsNodes, open: &mut OpenList, to: u32, g: f64, from: u32| {
        let t = to as usize;
        let st = nodes.stamp[t];
        if st >= nodes.generation && g >= nodes.g[t] {
            return false;
        }
        nodes.g[t] = g;
        nodes.parent[t] = from;
        nodes.stamp[t] = nodes.generation;
        open.push(g + h(cell_of(to)), g, to);
        true
    };
    let end = loop {
        let Some((_, g, id)) = open.pop() else {
            break End::Exhausted;
        };
        if g > nodes.g(id) || nodes.expanded(id) {
            continue;
        }
        if id == g_id {
            break End::Goal;
        }
        if stats.expanded >= max_exp {
            break End::Limit(LimitKind::Expansions);
        }
        if abstract_expanded % CHECK_EVERY == 0 {
            if let Some(kind) = limit_hit(&q.limits) {
                break End::Limit(kind);
            }
        }
        abstract_expanded += 1;
        stats.expanded += 1;
        nodes.stamp[id as usize] = gen_ + 1;
        let here = cell_of(id);
        if q.partial {
            let hh = h(here);
            if closest.is_none_or(|(bh, bg, _)| hh < bh || hh == bh && g < bg) {
                closest = Some((hh, g, id));
            }
        }
        if debug.len() < q.debug_cap {
            debug.push(here);
        }
        let mut pushed = 0;
        if id == s_id {
            for (i, n) in cl_s.nodes.iter().enumerate() {
                let d = sc.s.dist(rs.local(pw, n.cell));
                if d.is_finite() {
                    pushed += relax(nodes, open, me.offsets[cs] + i as u32, g + d, id) as u64;
                }
            }
            if direct.is_finite() {
                pushed += relax(nodes, open, g_id, g + direct, id) as u64;
            }
            stats.generated += pushed;
            continue;
        }
        let c = me.owner[id as usize] as usize;
        let base = me.offsets[c];
        let i = (id - base) as usize;
        let cl = &*me.clusters[c];
        for e in cl.edges(i) {
            pushed += relax(nodes, open, base + e.to as u32, g + e.cost, id) as u64;
        }
        // The step across the border to the transition's other cell.
        let node = cl.nodes[i];
        let side = node.side as usize;
        if let Some(n) = layout.neighbour(c, side) {
            let cross = super::build::side_transitions(&layout, &me.borders, c, side)
                [node.k as usize]
                .cross;
            let j = me.clusters[n].side_start[(side + 2) % 4] as u32 + node.k as u32;
            pushed += relax(nodes, open, me.offsets[n] + j, g + cross, id) as u64;
        }
        if c == cg && sc.goal_dist[i].is_finite() {
            pushed += relax(nodes, open, g_id, g + sc.goal_dist[i], id) as u64;
        }
        stats.generated += pushed;
    };

    // Step 3: pick the endpoint.
    let (status, limit, target) = match end {
        End::Goal => (Status::Found, None, Some(Closest::Node(g_id))),
        End::Exhausted | End::Limit(_) if q.partial => {
            let mut best = closest.map(|(hh, g, id)| (hh, g, Closest::Node(id)));
            // Cells the start's Dijkstra reached count as explored too.
            for (l, d) in sc.s.touched() {
                let hh = h(rs.padded(pw, l));
                if best
                    .as_ref()
                    .is_none_or(|(bh, bg, _)| hh < *bh || hh == *bh && d < *bg)
                {
                    best = Some((hh, d, Closest::Cell(l)));
                }
            }
            let limit = match end {
                End::Limit(k) => Some(k),
                _ => None,
            };
            (Status::Partial, limit, best.map(|b| b.2))
        }
        End::Exhausted => (Status::NoPath, None, None),
        End::Limit(k) => (Status::LimitReached, Some(k), None),
    };

    // Step 4: refine into cells and straighten.
    let mut path = Vec::new();
    let mut cost = 0.0;
    if let Some(t) = target {
        sc.cells.clear();
        match t {
            Closest::Cell(l) => sc.s.path_to(l, &mut sc.cells),
            Closest::Node(end) => {
                let chain = sc.nodes.chain(end);
                refine(me, grid, sc, &chain, s_id, g_id, s_cell, g_cell, &mut stats);
            }
        }
        let max_ray = RAY_CLUSTERS * layout.size;
        sc.straight.straighten(grid, &mut sc.cells, max_ray);
        path = sc.cells.iter().map(|&c| grid.ppoint(c as usize)).collect();
        cost = grid
            .path_cost(&path)
            .expect("refined HPA* paths are legal by construction");
    }
    stats.elapsed = started.elapsed();
    let mut r = result(status, path, cost, stats, limit);
    r.expanded_cells = debug.iter().map(|&c| grid.ppoint(c as usize)).collect();
    r
}

/// Turns an abstract chain (starting at S) into cells in `sc.cells`.
#[allow(clippy::too_many_arguments)]
fn refine(
    me: &Inner,
    grid: &Grid,
    sc: &mut Scratch,
    chain: &[u32],
    s_id: u32,
    g_id: u32,
    s_cell: u32,
    g_cell: u32,
    stats: &mut Stats,
) {
    let pw = grid.padded_width();
    let off = grid.offsets();
    let layout = me.layout;
    let locate = |id: u32| {
        let c = me.owner[id as usize] as usize;
        (c, (id - me.offsets[c]) as usize)
    };
    sc.cells.push(s_cell);
    for w in chain.windows(2) {
        let (a, b) = (w[0], w[1]);
        sc.seg.clear();
        if a == s_id {
            let rs = sc.s.rect();
            let to = if b == g_id {
                g_cell
            } else {
                let (c, i) = locate(b);
                me.clusters[c].nodes[i].cell
            };
            sc.s.path_to(rs.local(pw, to), &mut sc.seg);
        } else if b == g_id {
            let (c, i) = locate(a);
            let rg = sc.g.rect();
            sc.g.path_to(rg.local(pw, me.clusters[c].nodes[i].cell), &mut sc.seg);
            sc.seg.reverse();
        } else {
            let ((ca, ia), (cb, ib)) = (locate(a), locate(b));
            let cl = &*me.clusters[ca];
            if ca != cb {
                sc.seg.push(cl.nodes[ia].cell);
                sc.seg.push(me.clusters[cb].nodes[ib].cell);
            } else {
                let edge = cl
                    .edges(ia)
                    .iter()
                    .find(|e| e.to as usize == ib)
                    .expect("abstract paths follow edges");
                if edge.path != NO_PATH {
                    // Cached: replay the step codes from the lower node, reversed if needed.
                    let (start, len) = cl.spans[edge.path as usize];
                    let mut cur = cl.nodes[ia.min(ib)].cell;
                    sc.seg.push(cur);
                    for &code in &cl.codes[start as usize..(start + len) as usize] {
                        cur = (cur as usize).wrapping_add_signed(off[code as usize]) as u32;
                        sc.seg.push(cur);
                    }
                    if ia > ib {
                        sc.seg.reverse();
                    }
                } else {
                    let r = layout.rect(ca);
                    let (from, to) = (cl.nodes[ia].cell, cl.nodes[ib].cell);
                    let found = sc.work.astar(grid, r, r.local(pw, from), r.local(pw, to));
                    debug_assert!(found, "an intra-cluster edge has an in-cluster path");
                    sc.work.path_to(r.local(pw, to), &mut sc.seg);
                    stats.expanded += sc.work.expanded;
                    stats.generated += sc.work.generated;
                }
            }
        }
        debug_assert_eq!(sc.seg.first(), sc.cells.last());
        sc.cells.extend_from_slice(&sc.seg[1..]);
    }
}
