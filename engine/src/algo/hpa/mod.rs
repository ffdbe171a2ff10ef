//! HPA*: hierarchical path-finding on cluster abstractions (Botea, Müller & Schaeffer,
//! "Near Optimal Hierarchical Path-Finding", 2004).
//!
//! # The picture
//!
//! The map is cut into square *clusters*. Where two neighbouring clusters touch, every
//! maximal run of facing passable cell pairs is an *entrance*; Botea's rule puts one
//! *transition* (a pair of facing cells, one per side) in the middle of a short entrance and
//! two at the ends of a long one. Each transition cell is a node of the abstract graph; the
//! two cells of a transition are joined by the one-step edge across the border, and the nodes
//! of one cluster are joined by *intra-cluster edges* whose costs are the exact costs of the
//! cheapest path that stays inside the cluster, under the map's movement rule and weights
//! (one Dijkstra per node, confined to the cluster, yields all of them). Those paths are
//! cached (as 1-byte step directions) while they fit in the configured budget.
//!
//! A query, in order:
//!
//! 1. *Window.* Start and goal at most two cluster sides apart are first joined by A* in
//!    their bounding box grown by a cluster side; when that path is provably no dearer than
//!    any path leaving the box, it is the (optimal) answer. Short queries cost what plain A*
//!    costs, and never suffer from transitions placed far from where the optimum crosses.
//! 2. *Insert* start and goal: a Dijkstra inside each one's cluster gives its edges to the
//!    cluster's transitions (and the direct in-cluster path when both share a cluster).
//! 3. *Abstract A\** over the flat abstract graph, with the map's admissible heuristic.
//! 4. *Refine* each abstract edge into cells (cached path, else A* inside the cluster); on
//!    weighted maps, by default, also re-run A* inside the corridor of clusters the path
//!    crosses ([`Refine`]).
//! 5. *Straighten* as Botea et al. do: from each path cell, straight rays in the move
//!    directions that meet the path further on replace the stretch between when cheaper.
//!
//! The answer is a legal cell path whose cost is the sum of [`Grid::step_cost`] over its
//! steps. On the Moving AI maps of 512x512 and more it is 0.29% longer than optimal on
//! average (`tests/hpa.rs` prints the table); on the 1024x1024 maps it comes 35-60x faster
//! than A* over a mix of short and long queries (`benches/hpa.rs`).
//!
//! # Why it never misses a path
//!
//! Every legal step that leaves a cluster crosses a facing pair of passable cells (a diagonal
//! crossing needs both orthogonal cells passable, and one of them faces the start cell), so
//! it lies in some entrance; the near-side cells of an entrance form a straight passable run
//! inside the cluster, and so do the far-side ones. Any cell path can therefore be rerouted,
//! cluster by cluster, through the transitions of the entrances it crosses, and the abstract
//! graph is connected exactly where the map is. Unreachable goals are answered from the
//! map's components without searching.
//!
//! # Versions
//!
//! An [`Abstraction`] is immutable and cheap to clone (one `Arc`); a server keeps one next to
//! each map version and swaps both together. [`Abstraction::update`] builds the next version
//! from the changed cells of a patch: it rescans only the borders those cells lie on and
//! rebuilds only the clusters whose cells or border transitions changed, sharing every other
//! cluster with the previous version; only the flat adjacency array the search reads is
//! rebuilt whole (one pass over the graph, well under a millisecond at 1024x1024). The
//! result equals a fresh build on the patched map ([`Abstraction::diff`] checks that).

mod build;
mod corridor;
mod inspect;
mod local;
mod query;
mod straighten;
mod update;
mod window;

use crate::clock::Instant;
use std::sync::Arc;
use std::time::Duration;

use build::{Borders, Cluster, Layout};
use local::Local;
pub(crate) use query::Scratch as QueryScratch;

use crate::grid::{Grid, Movement, Point};
use crate::query::{Query, QueryError, SearchResult};

/// Tunables of an [`Abstraction`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpaConfig {
    /// Side of a square cluster in cells, clamped to `4..=128`. Larger clusters mean a
    /// smaller abstract graph (faster long queries) but costlier start/goal insertion and
    /// slightly longer paths. Default 32: on the 1024x1024 Moving AI maps it answers long
    /// queries about twice as fast as 16 for 0.1-0.2% more path length.
    pub cluster_size: u32,
    /// Bytes allowed for cached intra-cluster cell paths over the whole map. Each cluster
    /// gets an equal share and caches all of its paths or none (so an update decides exactly
    /// as a fresh build would). Uncached edges are refined by A* inside the cluster.
    pub path_cache_bytes: usize,
    /// Extra transitions on long entrances: `0` is Botea's rule (one per short entrance, one
    /// at each end of a long one); `s > 0` also spreads transitions so that neighbours on a
    /// long entrance are at most `s` cells apart (better paths, bigger graph).
    pub entrance_spacing: u32,
    /// How abstract paths become cell paths.
    pub refine: Refine,
}

/// How an abstract path becomes a cell path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Refine {
    /// Edge by edge (cached path, else A* inside the cluster), then straightening. The fast
    /// one; on uniform-cost maps within a few tenths of a percent of optimal on average.
    Edges,
    /// Then A* on the map restricted to the clusters the path crosses and their eight
    /// neighbours. Near-optimal on weighted terrain too (where transitions forced onto
    /// expensive cells cost more than straightening can recover), at several times the cost.
    Corridor,
    /// [`Refine::Corridor`] on weighted maps, [`Refine::Edges`] on uniform ones.
    #[default]
    CorridorOnWeighted,
}

impl Default for HpaConfig {
    fn default() -> Self {
        HpaConfig {
            cluster_size: 32,
            path_cache_bytes: 64 << 20,
            entrance_spacing: 0,
            refine: Refine::default(),
        }
    }
}

impl HpaConfig {
    /// The default configuration with another cluster size.
    pub fn with_cluster_size(cluster_size: u32) -> Self {
        HpaConfig {
            cluster_size,
            ..Self::default()
        }
    }
}

/// Sizes of an abstraction, for a map summary or metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpaSummary {
    /// Cluster side in cells.
    pub cluster_size: u32,
    /// Number of clusters.
    pub clusters: usize,
    /// Abstract nodes (transition cells).
    pub nodes: usize,
    /// Intra-cluster edges (each pair counted once) plus inter-cluster edges.
    pub edges: usize,
    /// Intra-cluster edges whose cell path is cached.
    pub cached_paths: usize,
    /// Heap bytes held (see [`Abstraction::memory_bytes`]).
    pub memory_bytes: usize,
}

/// What an [`Abstraction::update_with_report`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateReport {
    /// True when the map's size or movement changed and everything was rebuilt.
    pub full_rebuild: bool,
    /// Borders rescanned whose transitions changed.
    pub borders_changed: usize,
    /// Clusters whose intra-cluster edges were recomputed.
    pub clusters_rebuilt: usize,
    /// Wall-clock time of the update.
    pub elapsed: Duration,
}

/// The HPA* abstraction of one map version. Immutable; `clone` is one `Arc` increment.
#[derive(Clone)]
pub struct Abstraction {
    inner: Arc<Inner>,
}

struct Inner {
    config: HpaConfig,
    layout: Layout,
    movement: Movement,
    /// East and south borders of each cluster.
    borders: Vec<Arc<Borders>>,
    /// Each cluster's nodes and edges; shared between versions when unchanged.
    clusters: Vec<Arc<Cluster>>,
    /// First global node id of each cluster; the last entry is the node count.
    offsets: Vec<u32>,
    /// Per global node id: where it is and which cluster owns it.
    gnodes: Vec<GNode>,
    /// The whole abstract graph as one flat adjacency array, derived from `clusters` (each
    /// version rebuilds it in one pass): node `id`'s edges, its intra-cluster edges then the
    /// step across its border, are `gadj[gadj_start[id]..gadj_start[id + 1]]`. The search
    /// would otherwise chase three pointers into a different cluster on every expansion.
    gadj_start: Vec<u32>,
    gadj: Vec<GEdge>,
    /// Time the build (or update) took.
    built_in: Duration,
}

/// A node as the abstract search sees it.
#[derive(Clone, Copy, Debug)]
struct GNode {
    x: u16,
    y: u16,
    cluster: u32,
}

/// An edge of the flat abstract graph.
#[derive(Clone, Copy, Debug)]
struct GEdge {
    to: u32,
    cost: f64,
}

impl std::fmt::Debug for Abstraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Abstraction")
            .field("summary", &self.summary())
            .finish_non_exhaustive()
    }
}

impl Abstraction {
    /// Builds the abstraction of `grid` with square clusters of `cluster_size` cells (clamped
    /// to `4..=128`) and the default path-cache budget.
    ///
    /// ```
    /// use pathd_engine::{Abstraction, Grid, Movement, Point, Query, Status};
    /// let grid = Grid::from_costs(40, 30, vec![1; 1200], Movement::Octile).unwrap();
    /// let hpa = Abstraction::build(&grid, 8);
    /// let r = hpa.find_path(&grid, &Query::new(Point::new(0, 0), Point::new(39, 29))).unwrap();
    /// assert_eq!(r.status, Status::Found);
    /// assert_eq!(grid.path_cost(&r.path), Some(r.cost));
    /// ```
    pub fn build(grid: &Grid, cluster_size: u32) -> Abstraction {
        Self::build_with(grid, HpaConfig::with_cluster_size(cluster_size))
    }

    /// Builds the abstraction of `grid` with an explicit configuration.
    pub fn build_with(grid: &Grid, config: HpaConfig) -> Abstraction {
        let started = Instant::now();
        let config = HpaConfig {
            cluster_size: config.cluster_size.clamp(4, 128),
            ..config
        };
        let layout = Layout::new(grid.width(), grid.height(), config.cluster_size);
        let borders: Vec<Arc<Borders>> = (0..layout.count())
            .map(|c| Arc::new(build::borders(grid, &layout, c, config.entrance_spacing)))
            .collect();
        let share = config.path_cache_bytes / layout.count();
        let mut local = Local::default();
        let clusters = (0..layout.count())
            .map(|c| {
                Arc::new(build::cluster(
                    grid, &layout, &borders, c, share, &mut local,
                ))
            })
            .collect();
        Self::assemble(config, layout, grid.movement(), borders, clusters, started)
    }

    fn assemble(
        config: HpaConfig,
        layout: Layout,
        movement: Movement,
        borders: Vec<Arc<Borders>>,
        clusters: Vec<Arc<Cluster>>,
        started: Instant,
    ) -> Abstraction {
        let mut offsets = Vec::with_capacity(clusters.len() + 1);
        let mut total = 0;
        for cl in &clusters {
            offsets.push(total);
            total += cl.nodes.len() as u32;
        }
        offsets.push(total);
        let pw = layout.width as usize + 2;
        let mut gnodes = Vec::with_capacity(total as usize);
        let mut gadj_start = Vec::with_capacity(total as usize + 1);
        let edges: usize = clusters.iter().map(|c| c.adj.len() + c.nodes.len()).sum();
        let mut gadj = Vec::with_capacity(edges);
        for (c, cl) in clusters.iter().enumerate() {
            let base = offsets[c];
            for (i, n) in cl.nodes.iter().enumerate() {
                let cell = n.cell as usize;
                gnodes.push(GNode {
                    x: (cell % pw - 1) as u16,
                    y: (cell / pw - 1) as u16,
                    cluster: c as u32,
                });
                gadj_start.push(gadj.len() as u32);
                gadj.extend(cl.edges(i).iter().map(|e| GEdge {
                    to: base + e.to as u32,
                    cost: e.cost,
                }));
                let side = n.side as usize;
                let across = layout
                    .neighbour(c, side)
                    .expect("transitions face a cluster");
                let j = clusters[across].side_start[(side + 2) % 4] as u32 + n.k as u32;
                gadj.push(GEdge {
                    to: offsets[across] + j,
                    cost: build::side_transitions(&layout, &borders, c, side)[n.k as usize].cross,
                });
            }
        }
        gadj_start.push(gadj.len() as u32);
        Abstraction {
            inner: Arc::new(Inner {
                config,
                layout,
                movement,
                borders,
                clusters,
                offsets,
                gnodes,
                gadj_start,
                gadj,
                built_in: started.elapsed(),
            }),
        }
    }

    /// Answers `query` on `grid`, which must be the map version this abstraction was built
    /// (or updated) for. `query.algorithm` is ignored; the result says [`crate::Algorithm::Hpa`].
    ///
    /// The path is legal and its cost is its true cost, but it is not always optimal
    /// (typically within a few tenths of a percent on game maps after straightening).
    /// Limits, `partial` and the statuses mean what they mean for every algorithm. The
    /// expansion count (and `max_expansions`) covers abstract nodes plus the cells expanded
    /// by the window and in-cluster searches; the deadline and cancellation are checked in
    /// the abstract search and the corridor search (the other searches are bounded by a few
    /// cluster areas). A partial answer ends at the explored place closest to the goal: an
    /// expanded transition or a cell of the start's cluster. `expanded_cells` lists the
    /// cells of expanded abstract nodes. An unreachable goal is answered from the map's
    /// components without searching. Pass the abstraction of this very map version: handed one
    /// of another version of the same size, a path it misses is answered by plain A* instead
    /// (reported as [`crate::Algorithm::AStar`]).
    ///
    /// Errors: the query's points are off the map or blocked, or `grid` has another size or
    /// movement rule than the abstraction ([`QueryError::NotApplicable`]).
    ///
    /// Its search memory is allocated for this call; to answer many queries, keep a
    /// [`crate::Searcher`] and ask it with [`crate::Algorithm::Hpa`]
    /// ([`crate::Searcher::find_path_with`]).
    pub fn find_path(&self, grid: &Grid, query: &Query) -> Result<SearchResult, QueryError> {
        let mut searcher = crate::Searcher::new();
        let (core, hpa) = searcher.parts();
        query::find_path(self, grid, query, core, hpa)
    }

    /// [`Abstraction::find_path`] on a searcher's memory: `core` its map-sized scratch (for
    /// the corridor search and the A* fallback, with the recorder of a traced query), `sc`
    /// its HPA* memory.
    pub(crate) fn find_path_in(
        &self,
        grid: &Grid,
        query: &Query,
        core: &mut crate::search::Scratch,
        sc: &mut QueryScratch,
    ) -> Result<SearchResult, QueryError> {
        query::find_path(self, grid, query, core, sc)
    }

    /// Whether HPA* should answer a query from `start` to `goal` when the caller lets the
    /// engine choose ([`crate::Algorithm::Auto`]): when they are at least four cluster sides
    /// apart (octile distance; 128 cells at the default size).
    ///
    /// Measured with `benches/hpa.rs` on the 1024x1024 maps (12 scenario rows per band, A*
    /// vs HPA* per query): below 64 both take tens of microseconds (HPA* answers from a
    /// provably optimal window there); 64-128: 1.1 ms vs 0.5 ms; 128-256: 3-4 ms vs
    /// 0.7-1 ms; 256-512: 12-16 ms vs about 1 ms; beyond: about 100 ms vs 2-2.5 ms. Under
    /// 128 the gain is below 2x and A* is exact; above, HPA* is 4x to 50x faster for a few
    /// tenths of a percent of path length. The abstraction itself pays on maps from about
    /// 512x512 (its build takes 0.1-1 s there); below that A* is fast everywhere.
    pub fn pays_off(&self, start: Point, goal: Point) -> bool {
        let dx = start.x.abs_diff(goal.x) as f64;
        let dy = start.y.abs_diff(goal.y) as f64;
        crate::grid::distance(self.inner.movement, dx, dy)
            >= 4.0 * self.inner.config.cluster_size as f64
    }

    /// True when `grid` has the size and movement rule this abstraction was built for (the
    /// cells themselves are the caller's business: keep map and abstraction versioned together).
    pub fn fits(&self, grid: &Grid) -> bool {
        let l = &self.inner.layout;
        grid.width() == l.width
            && grid.height() == l.height
            && grid.movement() == self.inner.movement
    }

    /// The configuration (cluster size after clamping).
    pub fn config(&self) -> HpaConfig {
        self.inner.config
    }

    /// How long the build (or the update that produced this version) took.
    pub fn build_time(&self) -> Duration {
        self.inner.built_in
    }

    /// Heap bytes held by this version, counting shared clusters in full (they are shared
    /// with neighbouring versions, so the sum over versions overcounts).
    pub fn memory_bytes(&self) -> usize {
        let me = &*self.inner;
        std::mem::size_of::<Inner>()
            + me.borders.iter().map(|b| b.bytes() + 8).sum::<usize>()
            + me.clusters.iter().map(|c| c.bytes() + 8).sum::<usize>()
            + me.offsets.capacity() * 4
            + me.gnodes.capacity() * std::mem::size_of::<GNode>()
            + me.gadj_start.capacity() * 4
            + me.gadj.capacity() * std::mem::size_of::<GEdge>()
    }

    /// Sizes for a map summary or `/metrics`.
    pub fn summary(&self) -> HpaSummary {
        let me = &*self.inner;
        let intra: usize = me.clusters.iter().map(|c| c.adj.len() / 2).sum();
        let cached: usize = me.clusters.iter().map(|c| c.spans.len()).sum();
        let inter: usize = me
            .borders
            .iter()
            .map(|b| b.east.len() + b.south.len())
            .sum();
        HpaSummary {
            cluster_size: me.config.cluster_size,
            clusters: me.clusters.len(),
            nodes: me.gnodes.len(),
            edges: intra + inter,
            cached_paths: cached,
            memory_bytes: self.memory_bytes(),
        }
    }
}
