//! Subgoal graphs with a contraction hierarchy, for uniform octile maps: optimal paths with
//! a search over a few hundred graph nodes where JPS drowns in jump points (maps full of
//! small obstacles).
//!
//! After Uras, Hernández and Koenig, "Subgoal Graphs for Optimal Pathfinding in
//! Eight-Neighbor Grids" (ICAPS 2013), with the graph contracted as in Geisberger et al.'s
//! contraction hierarchies (Uras and Koenig's SGCH combines the two; this code follows the
//! papers' descriptions, not their code).
//!
//! # The pieces, one file each
//!
//! - [`place`]: *subgoals*, the cells just outside convex obstacle corners.
//! - [`reach`]: the *direct-h-reachable* subgoals of a cell, by diagonal-first scans; the
//!   graph's edges join each subgoal to those (cost: the octile distance).
//! - [`contract`]: a contraction hierarchy over that graph (on dense graphs, where its work
//!   budget runs out, with an uncontracted core at the top).
//! - [`query`]: connect start and goal, search upward from both, unpack, refine to cells.
//! - [`update`]: the graph of a patched version from its predecessor's.
//!
//! # Why it is optimal
//!
//! Write `h` for the octile distance, a lower bound on every path's cost; `t` is
//! *h-reachable* from `s` when some path between them costs exactly `h(s, t)`.
//!
//! 1. *Every optimal path can be taken to bend only at subgoals* (Uras et al. 2013): between
//!    `s` and `g` there is an optimal path `s, σ1, ..., σk, g` whose `σi` are subgoals and
//!    whose consecutive points are h-reachable from each other, so its cost is the sum of
//!    their octile distances. The intuition: a taut octile path changes its pair of move
//!    directions only where an obstacle's convex corner forces it, and the cell it bends at
//!    is the one diagonally outside that corner, a subgoal.
//! 2. *Direct edges suffice.* If an h-path between `u` and `v` passes a subgoal `w`, both of
//!    its parts are h-paths (each costs at least its `h`, together exactly `h(u, v) <=
//!    h(u, w) + h(w, v)`), so `u - v` can be replaced by `u - w - v` at the same cost;
//!    repeating (the distances shrink) leaves only pairs none of whose h-paths pass another
//!    subgoal: the *direct*-h-reachable pairs. The scans of [`reach`] report every such pair
//!    from both ends (its two lemmas), and only h-reachable pairs; the graph keeps the pairs
//!    both ends report. So the graph, with the start and the goal joined to what their own
//!    scans find, holds an optimal path at its exact cost, and no path cheaper than a real
//!    one.
//! 3. *The start-goal pair itself*: if `g` is h-reachable from `s` with no subgoal on its
//!    h-paths, the diagonal-first path is legal (the same lemma), and the query answers it
//!    before searching; otherwise 1 and 2 route it through subgoals.
//! 4. *The hierarchy keeps distances* ([`contract`]): the bidirectional upward search
//!    returns the graph's shortest distance, and unpacking its shortcuts gives the graph
//!    path, each of whose legs [`reach::h_path`] turns into cells at exactly its octile
//!    cost. Unpacking stops early at a *direct* shortcut, one whose ends a legal
//!    diagonal-first or cardinal-first path joins at the shortcut's cost (the octile
//!    distance): that leg is refined like an edge.
//!
//! The tests hold every answer against a reference Dijkstra on seeded random maps (dense
//! ones included, and after random patch sequences) and against the Moving AI optima.
//!
//! # Measured
//!
//! One run on a shared 2-core machine (`REPEAT=3 scripts/side-by-side-sample.sh 250`, mean
//! µs a query, the fastest of three rounds; the subgoal figure is the whole query:
//! connection, search, unpacking and the cell path), with the build time and memory
//! `pathd scen` reports:
//!
//! | map | warthog's fastest | JPS+ (16 landmarks) | subgoal | subgoal build | memory | core |
//! |---|---:|---:|---:|---:|---:|---:|
//! | random512-40-0 | 1,643 | 502 | 38 | 0.2 s | 5.9 MB | 0 |
//! | random512-30-0 | 2,117 | 688 | 74 | 1.4 s | 11.8 MB | 0 |
//! | random512-20-0 | 1,710 | 766 | 202 | 6.6 s | 17.2 MB | 0 |
//! | maze512-1-0 | 1,764 | 235 | 59 | 0.04 s | 4.2 MB | 0 |
//! | arena2 | 9.5 | 3.7 | 10.3 | 0.02 s | 0.4 MB | 0 |
//! | 16room_000 | 59 | 27.0 | 17.6 | 0.05 s | 1.6 MB | 0 |
//! | Berlin_1_1024 | 40 | 27.7 | 1,494 | 0.9 s | 10.2 MB | 3,037 |
//!
//! (JPS+ with its landmarks: 21 MB on the 512x512 maps, 84 MB on Berlin_1_1024.) A 1-cell
//! patch costs about a build, as the contraction dominates it: 0.12 s on random512-40-0,
//! 1.0 s on Berlin_1_1024.
//!
//! The table predates the query layout of [`contract::Hierarchy`] (one CSR array of 16-byte
//! edges, nodes numbered by contraction order, edge lists sorted by head) and the query's
//! 8-byte distance slots. Measured back to back with the previous layout on a heavily loaded
//! machine (`cargo run --release -p pathd-engine --example subgoal_bench -- MAP SCEN 3`, every
//! row of the scenario file, fastest of three rounds, both builds in the same minutes):
//! random512-20-0 726 -> 475 µs, random512-30-0 379 -> 208, random512-40-0 67 -> 48, with
//! 12% less memory (65.5 -> 57.3 bytes a cell on random512-20-0) and the same build time;
//! absolute figures there are about 3x the table's.
//!
//! Since then the two upward searches are A* searches towards the other end (the octile
//! bound; see [`query`]), and a shortcut whose ends a legal diagonal-first or
//! cardinal-first path joins at its cost is refined at once rather than unpacked. On
//! random512-20-0 a query now expands 223.5 nodes and scans 4,979 edges (was 707 and
//! 18,457) and unpacks to 88 path nodes (was 186). Measured on the shared machine, both
//! release binaries in the same minutes, as CPU time (user + sys of `pathd scen --algorithm
//! subgoal` on the scenario file repeated 20 or 10 times, less a one-row run's build, per
//! query; wall-clock figures there swing 5x with the neighbours' load): random512-20-0
//! 325 -> 137 µs (0.42), random512-30-0 124 -> 62 (0.50), random512-40-0 39.2 -> 32.0
//! (0.82), with the same build time and 2% more memory (node coordinates, 4 bytes a node).
//!
//! # Patches
//!
//! [`SubgoalGraph::update`] moves the subgoals within one step of the changed cells and
//! rescans only the subgoals whose earlier scans read a cell whose state changed (each scan
//! remembers the bounding box of what it read), then contracts the graph anew: the
//! hierarchy is the one part rebuilt whole. A patch of more than [`LOCAL_PATCH`] cells
//! rebuilds everything.

mod contract;
mod place;
pub(crate) mod query;
mod reach;
mod update;

use contract::{DIRECT, Hierarchy, NONE};
use place::Placement;
use reach::Bbox;

use crate::grid::{Grid, Movement, SQRT2};

/// Largest patch (changed cells) [`SubgoalGraph::update`] repairs locally; above it the
/// graph is built anew.
pub const LOCAL_PATCH: usize = 4096;

/// The subgoal graph and its contraction hierarchy of one octile map version (module docs).
#[derive(Clone, PartialEq)]
pub struct SubgoalGraph {
    width: u32,
    height: u32,
    place: Placement,
    /// Padded cell of each node.
    cells: Vec<u32>,
    /// Padded `x | y << 16` of each node (padded sides are at most 8194): the query's
    /// octile bound reads it without a division.
    pos: Vec<u32>,
    /// Node of each padded cell ([`NONE`] where it is no subgoal).
    node_of: Vec<u32>,
    /// Each node's scan: the padded subgoal cells it reported, and the box it read.
    scans: Vec<(Vec<u32>, Bbox)>,
    ch: Hierarchy,
    /// Passable cells of the map version.
    passable: usize,
}

impl std::fmt::Debug for SubgoalGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubgoalGraph")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("subgoals", &self.cells.len())
            .field("edges", &self.ch.arcs.len())
            .field("core", &self.ch.core)
            .field("memory_bytes", &self.memory_bytes())
            .finish()
    }
}

impl SubgoalGraph {
    /// Builds the graph of an octile map (`None` for cardinal movement; any cost counts as
    /// open, the planner serves uniform maps only).
    ///
    /// ```
    /// use pathd_engine::{Grid, Movement, SubgoalGraph};
    /// let grid = Grid::from_costs(3, 3, vec![1, 1, 1, 1, 0, 1, 1, 1, 1], Movement::Octile).unwrap();
    /// let graph = SubgoalGraph::build(&grid).unwrap();
    /// // The four cells diagonally outside the pillar's corners.
    /// assert_eq!(graph.subgoals(), 4);
    /// assert!(graph.fits(&grid) && graph.memory_bytes() > 0);
    /// ```
    pub fn build(grid: &Grid) -> Option<SubgoalGraph> {
        if grid.movement() != Movement::Octile {
            return None;
        }
        let place = Placement::new(grid);
        let cells = place.subgoals();
        let scans = cells.iter().map(|&c| scan_of(&place, c as usize)).collect();
        let budget = contract::work_budget(cells.len());
        Some(Self::assemble(grid, place, cells, scans, budget))
    }

    /// The graph from its subgoals and their scans: node ids, edges, hierarchy.
    fn assemble(
        grid: &Grid,
        place: Placement,
        cells: Vec<u32>,
        scans: Vec<(Vec<u32>, Bbox)>,
        budget: u64,
    ) -> SubgoalGraph {
        let mut node_of = vec![NONE; grid.padded_len()];
        for (v, &c) in cells.iter().enumerate() {
            node_of[c as usize] = v as u32;
        }
        let pw = place.pw;
        let mut edges: Vec<(u32, u32, f64)> = Vec::new();
        for (v, (found, _)) in scans.iter().enumerate() {
            for &c in found {
                let w = node_of[c as usize];
                debug_assert!(w != NONE, "a scan reports subgoals only");
                let (a, b) = if (v as u32) < w {
                    (v as u32, w)
                } else {
                    (w, v as u32)
                };
                edges.push((a, b, octile(pw, cells[a as usize], cells[b as usize])));
            }
        }
        // An edge needs both ends' scans to report it (module docs, 2): each scan reports a
        // pair one of whose extreme h-paths is legal and free of other subgoals, and a
        // direct pair has both.
        edges.sort_unstable_by_key(|e| (e.0, e.1));
        let mut kept = 0;
        let mut i = 0;
        while i < edges.len() {
            let mutual =
                i + 1 < edges.len() && (edges[i].0, edges[i].1) == (edges[i + 1].0, edges[i + 1].1);
            if mutual {
                edges[kept] = edges[i];
                kept += 1;
            }
            i += if mutual { 2 } else { 1 };
        }
        edges.truncate(kept);
        let (mut ch, order) = contract::contract(cells.len(), &edges, budget);
        // Renumber the nodes as the hierarchy does.
        let cells: Vec<u32> = order.iter().map(|&v| cells[v as usize]).collect();
        mark_direct(&mut ch, &place, &cells);
        let mut scans: Vec<_> = scans.into_iter().map(Some).collect();
        let scans = order
            .iter()
            .map(|&v| scans[v as usize].take().expect("a permutation"))
            .collect();
        for (v, &c) in cells.iter().enumerate() {
            node_of[c as usize] = v as u32;
        }
        let pos = cells
            .iter()
            .map(|&c| (c % pw as u32) | (c / pw as u32) << 16)
            .collect();
        SubgoalGraph {
            width: grid.width(),
            height: grid.height(),
            place,
            cells,
            pos,
            node_of,
            scans,
            ch,
            passable: grid.passable_cells(),
        }
    }

    /// Whether this graph can serve `grid`: same size, octile movement (being built for this
    /// very version is the caller's business, as for the JPS+ table).
    pub fn fits(&self, grid: &Grid) -> bool {
        grid.width() == self.width
            && grid.height() == self.height
            && grid.movement() == Movement::Octile
    }

    /// Number of subgoals (graph nodes).
    pub fn subgoals(&self) -> usize {
        self.cells.len()
    }

    /// Subgoals left uncontracted at the top of the hierarchy (0 unless the contraction ran
    /// out of its work budget, as on dense street maps): the queries search them like a
    /// plain graph, so a large core makes them slow.
    pub fn core(&self) -> usize {
        self.ch.core
    }

    /// Whether [`crate::Algorithm::Auto`] should take this graph over JPS+: the hierarchy is
    /// complete (no core) and at least one passable cell in 32 is a subgoal.
    ///
    /// Measured (module docs): several times faster than JPS+ with landmarks where subgoals
    /// are about 30% of the passable cells (the random maps, maze512-1-0); level with it or
    /// faster, within the noise of a shared machine, on open game maps with about 1.4%
    /// (arena2, 16room_000), where JPS+ stays the choice; much slower where the work budget
    /// left a core (Berlin_1_1024).
    pub fn pays_off(&self) -> bool {
        self.ch.core == 0 && self.cells.len() * 32 >= self.passable
    }

    /// Edges of the hierarchy (subgoal-graph edges and shortcuts, each once).
    pub fn edges(&self) -> usize {
        self.ch.arcs.len()
    }

    /// Heap bytes held: the placement planes (3/8 byte a cell), the node index (4 bytes a
    /// cell), each node's cell and coordinates (8 bytes a node), the scans kept for
    /// updates, and the hierarchy (16 bytes an edge).
    pub fn memory_bytes(&self) -> usize {
        self.place.memory_bytes()
            + self.cells.len() * 8
            + self.node_of.len() * 4
            + self
                .scans
                .iter()
                .map(|(f, _)| f.capacity() * 4 + size_of::<(Vec<u32>, Bbox)>())
                .sum::<usize>()
            + self.ch.memory_bytes()
    }
}

/// Marks the shortcuts of `ch` (over nodes at padded `cells`) whose ends a legal
/// diagonal-first or cardinal-first path joins at the shortcut's cost as [`DIRECT`]: the
/// query refines such a leg into cells with [`reach::h_path`] as it does an edge of the
/// subgoal graph, skipping the unpacking below it (most of a path's legs on maps full of
/// small obstacles, where nearly every other cell of a path is a subgoal). The path found
/// has the same cost as the unpacked one: the octile distance, a lower bound.
fn mark_direct(ch: &mut Hierarchy, place: &Placement, cells: &[u32]) {
    let pw = place.pw;
    let xy = |v: u32| {
        let c = cells[v as usize] as usize;
        (c % pw, c / pw)
    };
    let mut buf = Vec::new();
    for v in 0..cells.len() {
        let (from, to) = (ch.first[v] as usize, ch.first[v + 1] as usize);
        for arc in &mut ch.arcs[from..to] {
            if arc.mid == NONE {
                continue;
            }
            let h = octile(pw, cells[v], cells[arc.head as usize]);
            // Costs are sums of 1s and sqrt 2s: equal true costs may differ in their last
            // bits, and an h-path costs no less than the octile distance.
            if arc.cost <= h * (1.0 + 1e-12) {
                buf.clear();
                if reach::h_path(place, xy(v as u32), xy(arc.head), &mut buf) {
                    arc.mid = DIRECT;
                }
            }
        }
    }
}

/// The scan of padded subgoal cell `c`.
fn scan_of(place: &Placement, c: usize) -> (Vec<u32>, Bbox) {
    let mut found = Vec::new();
    let bbox = reach::scan(place, c % place.pw, c / place.pw, &mut found);
    found.shrink_to_fit();
    (found, bbox)
}

/// Octile distance between padded cells `a` and `b`.
fn octile(pw: usize, a: u32, b: u32) -> f64 {
    let (a, b) = (a as usize, b as usize);
    let (dx, dy) = ((a % pw).abs_diff(b % pw), (a / pw).abs_diff(b / pw));
    let (lo, hi) = (dx.min(dy), dx.max(dy));
    (hi - lo) as f64 + lo as f64 * SQRT2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Algorithm, Derived, Point, Query, Searcher, Status};

    /// A map of pillars and walls with gaps, deterministic.
    fn map() -> Grid {
        let (w, h) = (48u32, 36u32);
        let mut x = 12345u64;
        let costs = (0..w * h)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                u8::from(x % 100 >= 30)
            })
            .collect();
        Grid::from_costs(w, h, costs, Movement::Octile).unwrap()
    }

    /// Every shortcut marked direct is refined by a legal h-path of exactly its cost, and
    /// the random map has some (they are what keeps unpacking short).
    #[test]
    fn direct_shortcuts_refine_at_their_cost() {
        let grid = map();
        let g = SubgoalGraph::build(&grid).unwrap();
        let pw = g.place.pw;
        let xy = |v: u32| {
            let c = g.cells[v as usize] as usize;
            (c % pw, c / pw)
        };
        let mut direct = 0;
        for v in 0..g.cells.len() as u32 {
            for a in g.ch.up(v).iter().filter(|a| a.mid == DIRECT) {
                direct += 1;
                let mut cells = Vec::new();
                assert!(reach::h_path(&g.place, xy(v), xy(a.head), &mut cells));
                let mut cost = 0.0;
                let mut prev = xy(v);
                for &c in &cells {
                    cost += if c.0 != prev.0 && c.1 != prev.1 {
                        SQRT2
                    } else {
                        1.0
                    };
                    prev = c;
                }
                assert!((cost - a.cost).abs() < 1e-9, "{v} -> {}", a.head);
            }
        }
        assert!(direct > 0);
    }

    /// With the work budget spent early (some core) or at once (all core), the answers stay
    /// A*'s: the core is searched like a plain graph.
    #[test]
    fn a_core_of_any_size_answers_optimally() {
        let grid = map();
        let place = Placement::new(&grid);
        let cells = place.subgoals();
        let scans: Vec<_> = cells.iter().map(|&c| scan_of(&place, c as usize)).collect();
        let full = SubgoalGraph::build(&grid).unwrap();
        assert_eq!(full.core(), 0);
        for budget in [0, 2_000, 20_000] {
            let g =
                SubgoalGraph::assemble(&grid, place.clone(), cells.clone(), scans.clone(), budget);
            assert!(g.core() > 0, "budget {budget}");
            let mut searcher = Searcher::new();
            let derived = Derived {
                subgoal: Some(&g),
                ..Derived::default()
            };
            for i in 0..300u32 {
                let s = Point::new(i * 7 % 48, i * 5 % 36);
                let t = Point::new(i * 11 % 48, i * 13 % 36);
                if !grid.is_passable(s) || !grid.is_passable(t) {
                    continue;
                }
                let q = Query::new(s, t);
                let a = searcher.find_path(&grid, &q).unwrap();
                let q = q.with_algorithm(Algorithm::Subgoal);
                let r = searcher.find_path_derived(&grid, derived, &q).unwrap();
                assert_eq!(r.status, a.status, "budget {budget}: {s} -> {t}");
                if a.status == Status::Found {
                    assert!(
                        (r.cost - a.cost).abs() < 1e-9,
                        "budget {budget}: {s} -> {t}"
                    );
                    assert_eq!(
                        grid.path_cost(&r.path).map(|c| (c - r.cost).abs() < 1e-9),
                        Some(true)
                    );
                }
            }
        }
    }
}
