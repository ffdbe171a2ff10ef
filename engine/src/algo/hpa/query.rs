//! One HPA* query: insert start and goal, A* over the abstract graph, refine into cells,
//! straighten.

mod graph;
mod refine;

use crate::clock::Instant;

use super::corridor::Corridor;
use super::local::{Local, Rect};
use super::straighten::Straightener;
use super::window;
use super::{Abstraction, Inner, Refine};
use crate::grid::{Grid, Point, distance};
use crate::query::{Algorithm, LimitKind, Query, QueryError, SearchResult, Stats, Status};
use crate::search::trace::{HpaRecord, RawStep, Recorder};
use crate::search::{CoreEnd, Estimate, chain};
use crate::trace::{Phase, RefineKind};
use graph::{AbsHeuristic, abstract_astar, insert};
use refine::refine;

/// Check the clock and the cancellation flag every this many abstract expansions (an
/// abstract expansion does about as much work as a dozen grid expansions).
const CHECK_EVERY: u64 = 32;

/// Longest straightening ray. Measured on the 1024x1024 city maps: 64 leaves 0.2-0.6% of
/// excess that 256 removes, beyond 256 nothing changes, and rays stop early anyway (walls,
/// the path's bounding box), so the cost grows little.
const MAX_RAY: u32 = 256;

/// HPA*'s query memory, owned by a [`crate::Searcher`]: three in-cluster searches (start
/// tree, goal tree, refinement), the abstract search's core scratch (node ids are abstract
/// nodes), the corridor's cluster marks and the straightener.
#[derive(Default)]
pub(crate) struct Scratch {
    s: Local,
    g: Local,
    work: Local,
    nodes: crate::search::Scratch,
    straight: Straightener,
    corridor: Corridor,
    targets: Vec<u32>,
    goal_dist: Vec<f64>,
    cells: Vec<u32>,
    seg: Vec<u32>,
}

/// Validates, short-circuits the trivial and unreachable cases, then searches. `core` is the
/// searcher's map-sized scratch (with its trace recorder, when the query is traced), for the
/// corridor search and the A* fallback below; `sc` the rest of its HPA* memory.
pub(super) fn find_path(
    abs: &Abstraction,
    grid: &Grid,
    q: &Query,
    core: &mut crate::search::Scratch,
    sc: &mut Scratch,
) -> Result<SearchResult, QueryError> {
    // HPA* plans for a one-cell agent (the planner turns sized HPA* queries away).
    crate::query::check_ends(grid, q.start, q.goal, 1)?;
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
    // The recorder is lent to each search of the query in turn.
    let mut tr = core.trace.take();
    let r = search(&abs.inner, grid, q, sc, core, &mut tr);
    core.trace = tr;
    if r.status == Status::NoPath && grid.same_component(q.start, q.goal) {
        // The abstract graph is connected exactly where its map is (see the module docs), so
        // this only happens when the caller hands in an abstraction of another version of the
        // map (`fits` sees sizes, not cells). Answer correctly rather than wrongly: plain A*
        // on the caller's scratch, reported as A* (the tests check HPA* never gets here on
        // its own map).
        let mut plain = q.clone();
        plain.algorithm = Algorithm::AStar;
        return Ok(crate::algo::astar::search(
            grid,
            core,
            &plain,
            Algorithm::AStar,
            1.0,
        ));
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
        // Smoothing, when asked for, is the planner's common post-step.
        waypoints: None,
        smoothed_length: None,
        keeps_guarantee: true,
    }
}

/// The partial-answer endpoint: an expanded abstract node or a cell of the start's cluster.
enum Closest {
    Node(u32),
    Cell(u32),
}

/// Where a query's start and goal sit in the abstraction, once inserted.
struct Ends {
    s_cell: u32,
    g_cell: u32,
    /// Clusters of start and goal.
    cs: usize,
    cg: usize,
    /// The start's cluster rectangle (the start tree in `Scratch::s` lives there).
    rs: Rect,
    /// In-cluster distance start -> goal when they share a cluster, else infinity.
    direct: f64,
    /// Ids of the temporary abstract nodes S and G.
    s_id: u32,
    g_id: u32,
}

impl Ends {
    /// The padded cell of abstract node `id` (S and G included).
    fn cell_of(&self, me: &Inner, id: u32) -> u32 {
        if id == self.s_id {
            self.s_cell
        } else if id == self.g_id {
            self.g_cell
        } else {
            let c = me.gnodes[id as usize].cluster as usize;
            me.clusters[c].nodes[(id - me.offsets[c]) as usize].cell
        }
    }
}

/// Records the entrances of every cluster the abstract search reached, up to the cap.
fn record_entrances(me: &Inner, sc: &Scratch, rec: &mut Recorder) {
    let nodes = sc.nodes.nodes();
    let mut seen = vec![false; me.clusters.len()];
    let mut out = Vec::new();
    let mut truncated = false;
    for id in 0..me.gnodes.len() as u32 {
        let c = me.gnodes[id as usize].cluster as usize;
        if nodes.g(id).is_infinite() || seen[c] {
            continue;
        }
        seen[c] = true;
        for n in &me.clusters[c].nodes {
            if out.len() >= rec.cap {
                truncated = true;
                break;
            }
            out.push(n.cell);
        }
    }
    if let Some(h) = rec.hpa.as_mut() {
        h.entrances = out;
        h.entrances_truncated = truncated;
    }
}

/// Sets the phase of the events that follow (traced queries only).
fn phase(tr: &mut Option<Recorder>, p: Phase) {
    if let Some(r) = tr {
        r.phase = p;
    }
}

/// Records a refinement step (traced queries only).
fn step(tr: &mut Option<Recorder>, kind: RefineKind, cells: &[u32]) {
    if let Some(r) = tr {
        let events = r.events.len();
        if let Some(h) = r.hpa.as_mut() {
            h.steps.push(RawStep {
                kind,
                cells: cells.to_vec(),
                events,
            });
        }
    }
}

fn search(
    me: &Inner,
    grid: &Grid,
    q: &Query,
    sc: &mut Scratch,
    core: &mut crate::search::Scratch,
    tr: &mut Option<Recorder>,
) -> SearchResult {
    let started = Instant::now();
    let mut stats = Stats::default();
    // A traced query (see `crate::trace`) also records phases, the abstract path and the
    // refinement steps.
    if let Some(r) = tr {
        r.hpa = Some(HpaRecord {
            cluster_size: me.layout.size,
            ..HpaRecord::default()
        });
    }

    // Step 0: a start and goal close together are first tried in a small window; when that
    // answer provably beats any path leaving the window, it is the answer.
    phase(tr, Phase::Window);
    let near = window::nearby(&me.layout, grid, q, &mut sc.work, &mut stats, tr);
    if let Some((path, cost, true)) = near {
        if tr.is_some() {
            let cells: Vec<u32> = path.iter().map(|&p| grid.pidx(p) as u32).collect();
            step(tr, RefineKind::Window, &cells);
        }
        stats.elapsed = started.elapsed();
        return result(Status::Found, path, cost, stats, None);
    }

    // Steps 1 and 2: insert start and goal, search the abstract graph.
    phase(tr, Phase::Insert);
    let ends = insert(me, grid, q, sc, &mut stats, tr);
    phase(tr, Phase::Abstract);
    let out = abstract_astar(me, grid, q, sc, &ends, &mut stats, tr);
    if let Some(rec) = tr {
        record_entrances(me, sc, rec);
    }

    // Step 3: pick the endpoint: the goal, or for a partial answer the explored place
    // closest to it (an expanded abstract node or a cell the start's Dijkstra reached).
    let h = heuristic_to(grid, q.goal);
    let (status, limit, target) = match out.end {
        CoreEnd::Goal => (Status::Found, None, Some(Closest::Node(ends.g_id))),
        CoreEnd::Exhausted | CoreEnd::Limit(_) if q.partial => {
            let abs_h = AbsHeuristic::new(me, grid, q, &ends);
            let mut best = out
                .closest
                .map(|id| (abs_h.h(id), sc.nodes.nodes().g(id), Closest::Node(id)));
            for (l, d) in sc.s.touched() {
                let (x, y) = ends.rs.xy(l);
                let hh = h(x, y);
                if best
                    .as_ref()
                    .is_none_or(|(bh, bg, _)| hh < *bh || hh == *bh && d < *bg)
                {
                    best = Some((hh, d, Closest::Cell(l)));
                }
            }
            let limit = match out.end {
                CoreEnd::Limit(k) => Some(k),
                _ => None,
            };
            (Status::Partial, limit, best.map(|b| b.2))
        }
        CoreEnd::Exhausted => (Status::NoPath, None, None),
        CoreEnd::Limit(k) => (Status::LimitReached, Some(k), None),
    };

    // Step 4: refine into cells (and the corridor, where configured), straighten, and keep
    // the window's path if that is cheaper still.
    let mut path = Vec::new();
    let mut cost = 0.0;
    if let Some(t) = target {
        sc.cells.clear();
        phase(tr, Phase::Refine);
        match &t {
            Closest::Cell(l) => {
                sc.s.path_to(*l, &mut sc.cells);
                step(tr, RefineKind::Start, &sc.cells);
            }
            Closest::Node(end) => {
                let chain = chain(&sc.nodes, *end);
                if tr.is_some() {
                    let path = chain
                        .iter()
                        .map(|&id| (ends.cell_of(me, id), sc.nodes.nodes().g(id)))
                        .collect();
                    if let Some(h) = tr.as_mut().and_then(|r| r.hpa.as_mut()) {
                        h.abstract_path = path;
                    }
                }
                refine(me, grid, sc, &chain, &ends, &mut stats, tr);
            }
        }
        let corridor = match me.config.refine {
            Refine::Edges => false,
            Refine::Corridor => true,
            Refine::CorridorOnWeighted => !grid.is_uniform(),
        };
        if corridor && !matches!(t, Closest::Cell(_)) {
            phase(tr, Phase::Corridor);
            let limits = &q.limits;
            let (cells, stats) = (&mut sc.cells, &mut stats);
            sc.corridor
                .refine(grid, &me.layout, limits, cells, stats, core, tr);
            step(tr, RefineKind::Corridor, &sc.cells);
        }
        sc.straight.straighten(grid, &mut sc.cells, MAX_RAY);
        step(tr, RefineKind::Straighten, &sc.cells);
        path = sc.cells.iter().map(|&c| grid.ppoint(c as usize)).collect();
        cost = grid
            .path_cost(&path)
            .expect("refined HPA* paths are legal by construction");
        if status == Status::Found {
            if let Some((local_path, local_cost, _)) = near {
                if local_cost < cost {
                    (path, cost) = (local_path, local_cost);
                    if tr.is_some() {
                        let cells: Vec<u32> = path.iter().map(|&p| grid.pidx(p) as u32).collect();
                        step(tr, RefineKind::Window, &cells);
                    }
                }
            }
        }
    }
    stats.elapsed = started.elapsed();
    let mut r = result(status, path, cost, stats, limit);
    r.expanded_cells = out.debug.iter().map(|&c| grid.ppoint(c as usize)).collect();
    r
}

/// The map's admissible heuristic towards `goal`, on map coordinates.
fn heuristic_to(grid: &Grid, goal: Point) -> impl Fn(u32, u32) -> f64 + Copy {
    let (gx, gy) = (goal.x, goal.y);
    let (movement, scale) = (grid.movement(), grid.min_cost() as f64);
    move |x: u32, y: u32| distance(movement, x.abs_diff(gx) as f64, y.abs_diff(gy) as f64) * scale
}
