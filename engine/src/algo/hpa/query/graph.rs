//! HPA*'s abstract search: start and goal inserted into the abstract graph, then A* over it
//! with the map's heuristic on abstract nodes.

use super::super::Inner;
use super::super::local::Local;
use super::{CHECK_EVERY, Ends, Scratch};
use crate::grid::{Grid, Point, distance};
use crate::query::Limits;
use crate::query::{Query, Stats};
use crate::search::trace::Recorder;
use crate::search::{Estimate, Expander, Run, Succ, best_first_with};

/// Step 1: one Dijkstra inside the start's cluster (to its transitions, and to the goal
/// when it shares the cluster) and one inside the goal's cluster (to its transitions). The
/// goal's distances land in `sc.goal_dist`, by node index of its cluster.
pub(super) fn insert(
    me: &Inner,
    grid: &Grid,
    q: &Query,
    sc: &mut Scratch,
    stats: &mut Stats,
    tr: &mut Option<Recorder>,
) -> Ends {
    let layout = me.layout;
    let pw = grid.padded_width();
    let (s_cell, g_cell) = (grid.pidx(q.start) as u32, grid.pidx(q.goal) as u32);
    let (cs, cg) = (layout.cluster_of(q.start), layout.cluster_of(q.goal));
    let (rs, rg) = (layout.rect(cs), layout.rect(cg));
    sc.targets.clear();
    sc.targets
        .extend(me.clusters[cs].nodes.iter().map(|n| rs.local(pw, n.cell)));
    if cs == cg {
        sc.targets.push(rs.local(pw, g_cell));
    }
    sc.s.dijkstra(grid, rs, rs.local(pw, s_cell), &sc.targets, tr);
    sc.targets.clear();
    sc.targets
        .extend(me.clusters[cg].nodes.iter().map(|n| rg.local(pw, n.cell)));
    sc.g.dijkstra(grid, rg, rg.local(pw, g_cell), &sc.targets, tr);
    sc.goal_dist.clear();
    sc.goal_dist
        .extend(sc.targets.iter().map(|&l| sc.g.dist(l)));
    stats.expanded += sc.s.expanded + sc.g.expanded;
    stats.generated += sc.s.generated + sc.g.generated;
    let total = me.gnodes.len() as u32;
    Ends {
        s_cell,
        g_cell,
        cs,
        cg,
        rs,
        direct: if cs == cg {
            sc.s.dist(rs.local(pw, g_cell))
        } else {
            f64::INFINITY
        },
        s_id: total,
        g_id: total + 1,
    }
}

/// The map's heuristic on abstract nodes (S at the start, G at the goal).
pub(super) struct AbsHeuristic<'a> {
    me: &'a Inner,
    goal: Point,
    movement: crate::grid::Movement,
    scale: f64,
    s_id: u32,
    g_id: u32,
    s_h: f64,
}

impl<'a> AbsHeuristic<'a> {
    pub(super) fn new(me: &'a Inner, grid: &Grid, q: &Query, ends: &Ends) -> Self {
        let mut h = AbsHeuristic {
            me,
            goal: q.goal,
            movement: grid.movement(),
            scale: grid.min_cost() as f64,
            s_id: ends.s_id,
            g_id: ends.g_id,
            s_h: 0.0,
        };
        h.s_h = h.xy(q.start.x, q.start.y);
        h
    }

    /// [`heuristic_to`] the goal.
    #[inline]
    fn xy(&self, x: u32, y: u32) -> f64 {
        let (dx, dy) = (x.abs_diff(self.goal.x), y.abs_diff(self.goal.y));
        distance(self.movement, dx as f64, dy as f64) * self.scale
    }
}

impl Estimate for AbsHeuristic<'_> {
    #[inline]
    fn h(&self, id: u32) -> f64 {
        if id == self.s_id {
            self.s_h
        } else if id == self.g_id {
            0.0
        } else {
            let n = &self.me.gnodes[id as usize];
            self.xy(n.x as u32, n.y as u32)
        }
    }
}

/// The abstract graph's successor policy: S has its insertion edges; a transition node its
/// flat adjacency (intra edges, then the step across its border) and, in the goal's cluster,
/// the edge to G. Node ids name their cells in traces (S the start, G the goal).
struct AbstractExpander<'a> {
    me: &'a Inner,
    ends: &'a Ends,
    start_tree: &'a Local,
    goal_dist: &'a [f64],
    pw: usize,
}

impl Expander for AbstractExpander<'_> {
    const CHECK_EVERY: u64 = CHECK_EVERY;

    fn successors(
        &mut self,
        _grid: &Grid,
        id: u32,
        g: f64,
        _parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        let (me, ends) = (self.me, self.ends);
        let mut edge = |node: u32, d: f64| {
            if d.is_finite() {
                out.push(Succ {
                    node,
                    g: g + d,
                    parent: id,
                });
            }
        };
        if id == ends.s_id {
            for (i, n) in me.clusters[ends.cs].nodes.iter().enumerate() {
                let d = self.start_tree.dist(ends.rs.local(self.pw, n.cell));
                edge(me.offsets[ends.cs] + i as u32, d);
            }
            edge(ends.g_id, ends.direct);
        } else {
            let (from, to) = (me.gadj_start[id as usize], me.gadj_start[id as usize + 1]);
            for e in &me.gadj[from as usize..to as usize] {
                edge(e.to, e.cost);
            }
            let c = me.gnodes[id as usize].cluster as usize;
            if c == ends.cg {
                edge(ends.g_id, self.goal_dist[(id - me.offsets[c]) as usize]);
            }
        }
    }

    #[inline]
    fn cell(&self, id: u32) -> u32 {
        self.ends.cell_of(self.me, id)
    }
}

/// Step 2: A* over the abstract graph plus the temporary nodes S and G, on the shared core,
/// under the query's limits (the expansion budget is what the window and the insertion left
/// of it). The records stay in `sc.nodes` for the refinement.
pub(super) fn abstract_astar(
    me: &Inner,
    grid: &Grid,
    q: &Query,
    sc: &mut Scratch,
    ends: &Ends,
    stats: &mut Stats,
    tr: &mut Option<Recorder>,
) -> crate::search::CoreOutcome {
    let limits = Limits {
        max_expansions: q
            .limits
            .max_expansions
            .map(|m| m.saturating_sub(stats.expanded)),
        ..q.limits.clone()
    };
    let run = Run {
        start: ends.s_id,
        goal: ends.g_id,
        weight: 1.0,
        heuristic: AbsHeuristic::new(me, grid, q, ends),
        limits: &limits,
        track_closest: q.partial,
        debug_cap: q.debug_cap,
    };
    let mut expander = AbstractExpander {
        me,
        ends,
        start_tree: &sc.s,
        goal_dist: &sc.goal_dist,
        pw: grid.padded_width(),
    };
    sc.nodes.begin(ends.g_id as usize + 1);
    let out = best_first_with(grid, &mut sc.nodes, &mut expander, &run, tr);
    stats.expanded += out.stats.expanded;
    stats.generated += out.stats.generated;
    out
}
