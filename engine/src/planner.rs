//! The entry point: validates a query, picks the algorithm, and turns the core's outcome
//! into a [`SearchResult`].

use crate::algo;
use crate::algo::hpa::{Abstraction, QueryScratch};
use crate::algo::jps_plus::JumpTable;
use crate::algo::subgoal::SubgoalGraph;
use crate::eroded::Eroded;
use crate::grid::{Grid, Movement, Point};
use crate::landmarks::Landmarks;
use crate::query::{Algorithm, Query, QueryError, SearchResult, Stats, Status};
use crate::search::Scratch;

/// Reusable search memory: everything a query needs besides the map (the core's records and
/// open list, HPA*'s in-cluster and abstract search memory, a traced query's recorder). It
/// grows to the largest map it has seen and is never cleared (starting a search bumps a
/// generation stamp, see `search`), so keep one per thread, or a pool that threads check
/// searchers out of (the server does). The free functions ([`find_path`], ...) make a fresh
/// one per call.
#[derive(Default)]
pub struct Searcher {
    /// The core's scratch, sized to the largest map seen; holds the recorder of a traced
    /// query.
    pub(crate) scratch: Scratch,
    /// HPA*'s query memory (its searches are cluster-sized or abstract-graph-sized).
    hpa: QueryScratch,
    /// The subgoal graph's bidirectional search memory (graph-sized).
    subgoal: algo::subgoal::query::QueryScratch,
}

impl Searcher {
    /// A searcher with no memory reserved yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The core's scratch and HPA*'s memory, borrowed apart.
    pub(crate) fn parts(&mut self) -> (&mut Scratch, &mut QueryScratch) {
        (&mut self.scratch, &mut self.hpa)
    }

    /// Answers `query` on `grid`.
    ///
    /// Errors are for misuse only (points off the map or blocked, a bad weight, an
    /// algorithm that does not apply); an unreachable goal or a limit is a [`Status`].
    ///
    /// ```
    /// use pathd_engine::{Grid, Movement, Point, Query, Searcher, Status};
    /// let grid = Grid::from_costs(3, 3, vec![1, 1, 1, 0, 0, 1, 1, 1, 1], Movement::Octile).unwrap();
    /// let r = Searcher::new().find_path(&grid, &Query::new(Point::new(0, 0), Point::new(0, 2))).unwrap();
    /// assert_eq!(r.status, Status::Found);
    /// assert_eq!(r.path.first(), Some(&Point::new(0, 0)));
    /// // Round the wall: no diagonal may cut the corner of (0,1) or (1,1), so 6 straight steps.
    /// assert_eq!(r.cost, 6.0);
    /// ```
    pub fn find_path(&mut self, grid: &Grid, query: &Query) -> Result<SearchResult, QueryError> {
        self.find_path_with(grid, None, query)
    }

    /// [`Searcher::find_path`] with the map's HPA* abstraction, when it has one: it serves
    /// [`Algorithm::Hpa`], and [`Algorithm::Auto`] picks HPA* where it pays (see
    /// [`resolve_auto`]). Without one (or with one built for another grid size or movement
    /// rule), `hpa` is `NotApplicable` and `auto` falls back to the grid-only rule.
    pub fn find_path_with(
        &mut self,
        grid: &Grid,
        hpa: Option<&Abstraction>,
        query: &Query,
    ) -> Result<SearchResult, QueryError> {
        let derived = Derived {
            hpa,
            ..Derived::default()
        };
        self.find_path_derived(grid, derived, query)
    }

    /// [`Searcher::find_path_with`] with everything the map version has derived: its HPA*
    /// abstraction and its JPS+ [`JumpTable`], each when it has one (built for this very
    /// version; one built for another size or movement rule is ignored). The table serves
    /// [`Algorithm::JpsPlus`] (`NotApplicable` without one), and [`Algorithm::Auto`] takes
    /// JPS+ instead of JPS when there is one: the same optimal costs, table lookups instead
    /// of scans. A [`SubgoalGraph`] serves [`Algorithm::Subgoal`], and `auto` where it pays
    /// off ([`SubgoalGraph::pays_off`]: maps dense in obstacle corners).
    ///
    /// ```
    /// use pathd_engine::{Algorithm, Derived, Grid, JumpTable, Movement, Point, Query, Searcher};
    /// let grid = Grid::from_costs(3, 3, vec![1, 1, 1, 0, 0, 1, 1, 1, 1], Movement::Octile).unwrap();
    /// let table = JumpTable::build(&grid).unwrap();
    /// let derived = Derived { jump_table: Some(&table), ..Derived::default() };
    /// let q = Query::new(Point::new(0, 0), Point::new(0, 2));
    /// let r = Searcher::new().find_path_derived(&grid, derived, &q.with_algorithm(Algorithm::Auto)).unwrap();
    /// assert_eq!((r.algorithm, r.cost), (Algorithm::JpsPlus, 6.0));
    /// ```
    pub fn find_path_derived(
        &mut self,
        grid: &Grid,
        derived: Derived<'_>,
        query: &Query,
    ) -> Result<SearchResult, QueryError> {
        // A recorder left by a traced query that panicked must not record this one.
        self.scratch.trace = None;
        self.answer(grid, derived, query)
    }

    /// [`Searcher::find_path_derived`], recording into the recorder in `self.scratch`, if
    /// any (see [`crate::trace`]).
    pub(crate) fn answer(
        &mut self,
        grid: &Grid,
        derived: Derived<'_>,
        query: &Query,
    ) -> Result<SearchResult, QueryError> {
        validate(grid, query)?;
        // JPS and HPA* for a sized agent: the one-cell search on the eroded map (whose open
        // cells are the anchors where the agent fits; `validate` checked both ends fit).
        if query.size > 1
            && !query.smooth
            && matches!(query.algorithm, Algorithm::Jps | Algorithm::Hpa)
        {
            if let Some(view) = derived
                .sized
                .filter(|v| v.eroded.size() == query.size && v.eroded.fits(grid))
            {
                let on_eroded = Derived {
                    hpa: view.hpa,
                    ..Derived::default()
                };
                let mut one = query.clone();
                one.size = 1;
                return self.answer(view.eroded.grid(), on_eroded, &one);
            }
        }
        let hpa = derived.hpa.filter(|a| a.fits(grid));
        let table = derived.jump_table.filter(|t| t.fits(grid));
        let subgoal = derived.subgoal.filter(|g| g.fits(grid));
        let algorithm = match (query.algorithm, hpa) {
            _ if query.size > 1 => sized_algorithm(query)?,
            // JPS beats HPA* on uniform maps (e.g. Berlin_1_1024: 0.33 ms vs 0.86 ms a query,
            // and it is optimal), so HPA* only serves `auto` where JPS cannot run.
            (Algorithm::Auto, Some(a))
                if !grid.is_uniform() && a.pays_off(query.start, query.goal) =>
            {
                Algorithm::Hpa
            }
            (Algorithm::Hpa, None) => {
                return Err(QueryError::NotApplicable {
                    algorithm: Algorithm::Hpa,
                    reason: "this map has no HPA* abstraction (yet): it is built in the \
                             background for large maps; use astar, jps or auto meanwhile"
                        .into(),
                });
            }
            (Algorithm::JpsPlus, _)
                if table.is_none() && grid.is_uniform() && grid.movement() == Movement::Octile =>
            {
                return Err(QueryError::NotApplicable {
                    algorithm: Algorithm::JpsPlus,
                    reason: "this map has no JPS+ jump table (yet): it is built in the \
                             background for uniform octile maps; use jps or auto meanwhile"
                        .into(),
                });
            }
            // `auto` takes the subgoal graph where it measured faster than JPS+: maps dense
            // in subgoals (see `SubgoalGraph::pays_off`). Partial answers stay with JPS(+),
            // which see every reachable cell.
            (Algorithm::Auto, _)
                if grid.is_uniform()
                    && grid.movement() == Movement::Octile
                    && !query.partial
                    && subgoal.is_some_and(SubgoalGraph::pays_off) =>
            {
                Algorithm::Subgoal
            }
            (Algorithm::Subgoal, _)
                if subgoal.is_none()
                    && grid.is_uniform()
                    && grid.movement() == Movement::Octile =>
            {
                return Err(QueryError::NotApplicable {
                    algorithm: Algorithm::Subgoal,
                    reason: "this map has no subgoal graph: it is precomputed per map version \
                             (pathd scen builds one; the server does not yet); use jps_plus, \
                             jps or auto"
                        .into(),
                });
            }
            // `auto` takes JPS+ whenever the version has its table: both expand the same jump
            // points (diagonal ones pruned, see `algo::jps`), and a lookup is never dearer than
            // a scan. Measured after that pruning (mean of per-row minima over 3-6 passes of
            // 100-200 sampled rows, one process): JPS+ vs JPS 52-108 vs 117-198 us on
            // Berlin_1_1024, 3041-3773 vs 3710-4111 on maze512-1-0, and on random512-20-0,
            // the closest (short jumps, so short scans), 2984-3913 vs 3429-3763, level within
            // the noise; before the pruning JPS+ was slower there, as its every diagonal jump
            // point cost a heap push and pop on top of the lookups.
            (a, _) => match resolve(grid, a)? {
                Algorithm::Jps if a == Algorithm::Auto && table.is_some() => Algorithm::JpsPlus,
                r => r,
            },
        };
        if query.has_lesson()
            && (query.size > 1
                || !matches!(
                    algorithm,
                    Algorithm::AStar | Algorithm::Dijkstra | Algorithm::WeightedAStar
                ))
        {
            return Err(QueryError::NotApplicable {
                algorithm,
                reason: "heuristic and tie_break (the lessons' options) apply to astar, \
                         dijkstra and weighted_astar for one-cell agents"
                    .into(),
            });
        }
        if query.start == query.goal {
            return Ok(trivial(query.start, algorithm, query.smooth));
        }
        if !query.partial && !grid.same_component(query.start, query.goal) {
            return Ok(SearchResult {
                status: Status::NoPath,
                path: Vec::new(),
                cost: 0.0,
                algorithm,
                stats: Stats::default(),
                limit: None,
                expanded_cells: Vec::new(),
                waypoints: None,
                smoothed_length: None,
                keeps_guarantee: true,
            });
        }
        let s = &mut self.scratch;
        let mut result = match algorithm {
            Algorithm::AStar if query.size > 1 => {
                algo::sized::search(grid, s, query, algorithm, 1.0)
            }
            Algorithm::Dijkstra if query.size > 1 => {
                algo::sized::search(grid, s, query, algorithm, 0.0)
            }
            Algorithm::WeightedAStar if query.size > 1 => {
                algo::sized::search(grid, s, query, algorithm, query.weight)
            }
            Algorithm::AStar => algo::astar::search(grid, s, query, algorithm, 1.0),
            Algorithm::Dijkstra => algo::astar::search(grid, s, query, algorithm, 0.0),
            Algorithm::WeightedAStar => {
                algo::astar::search(grid, s, query, algorithm, query.weight)
            }
            Algorithm::Jps => algo::jps::search(grid, grid.jps_planes(), s, query),
            Algorithm::JpsPlus => {
                let landmarks = derived.landmarks.filter(|l| l.fits(grid));
                algo::jps_plus::search(grid, table.expect("checked above"), landmarks, s, query)
            }
            Algorithm::Theta => algo::theta::search(grid, s, query),
            // A partial answer needs a search that sees every cell it can reach; the
            // hierarchy's upward searches do not, so JPS gives it (and says so).
            Algorithm::Subgoal if query.partial => {
                algo::jps::search(grid, grid.jps_planes(), s, query)
            }
            Algorithm::Subgoal => {
                let graph = subgoal.expect("checked above");
                algo::subgoal::query::search(grid, graph, &mut self.subgoal, query)
            }
            Algorithm::Hpa => {
                let abs = hpa.expect("checked above");
                abs.find_path_in(grid, query, s, &mut self.hpa)?
            }
            Algorithm::Auto => unreachable!("resolve never answers auto"),
        };
        if query.smooth {
            crate::search::smooth_result(grid, &mut result);
        }
        Ok(result)
    }
}

/// [`Searcher::find_path`] with a fresh searcher: for one-off queries. Its scratch memory is
/// allocated (and sized to the map) for this call; keep a [`Searcher`] to answer many.
pub fn find_path(grid: &Grid, query: &Query) -> Result<SearchResult, QueryError> {
    Searcher::new().find_path(grid, query)
}

/// [`Searcher::find_path_derived`] with a fresh searcher (see [`find_path`]).
pub fn find_path_derived(
    grid: &Grid,
    derived: Derived<'_>,
    query: &Query,
) -> Result<SearchResult, QueryError> {
    Searcher::new().find_path_derived(grid, derived, query)
}

/// What a map version may have derived beside its grid, for [`Searcher::find_path_derived`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Derived<'a> {
    /// The HPA* abstraction.
    pub hpa: Option<&'a Abstraction>,
    /// The JPS+ jump table.
    pub jump_table: Option<&'a JumpTable>,
    /// The subgoal graph, which serves [`Algorithm::Subgoal`].
    pub subgoal: Option<&'a SubgoalGraph>,
    /// Landmark distances, which sharpen JPS+'s heuristic: measured on this version, carried
    /// over from an earlier one it only differs from by blocked cells
    /// ([`Landmarks::carry_over`]), or updated from an earlier one ([`Landmarks::update`]).
    pub landmarks: Option<&'a Landmarks>,
    /// For a sized query: the map eroded for its agent size, and that map's HPA*
    /// abstraction when it has one. JPS and HPA* answer a sized query on it (see
    /// [`Eroded`]); without it they are `NotApplicable` for sizes above one.
    pub sized: Option<SizedDerived<'a>>,
}

/// What a map version has derived for one agent size (see [`Derived::sized`]).
#[derive(Clone, Copy, Debug)]
pub struct SizedDerived<'a> {
    /// The map as an agent of that size sees it.
    pub eroded: &'a Eroded,
    /// The eroded map's HPA* abstraction.
    pub hpa: Option<&'a Abstraction>,
}

/// [`Searcher::find_path_with`] with a fresh searcher (see [`find_path`]).
pub fn find_path_with(
    grid: &Grid,
    hpa: Option<&Abstraction>,
    query: &Query,
) -> Result<SearchResult, QueryError> {
    Searcher::new().find_path_with(grid, hpa, query)
}

/// The algorithm [`Algorithm::Auto`] picks on this map.
///
/// Rule: the fastest optimal algorithm that applies. JPS on uniform maps (every passable
/// cell costs 1, octile or cardinal), where it returns A*'s cost for a small fraction of its
/// work; A* on weighted maps, where JPS does not apply. With an HPA* abstraction
/// ([`Searcher::find_path_with`]), a weighted map's long queries (octile distance at least
/// four clusters, [`Abstraction::pays_off`]) go to HPA* instead: near-optimal, many times
/// faster than A* there.
///
/// ```
/// use pathd_engine::{resolve_auto, Algorithm, Grid, Movement};
/// let flat = Grid::from_costs(2, 1, vec![1, 1], Movement::Octile).unwrap();
/// let hilly = Grid::from_costs(2, 1, vec![1, 7], Movement::Octile).unwrap();
/// assert_eq!(resolve_auto(&flat), Algorithm::Jps);
/// assert_eq!(resolve_auto(&hilly), Algorithm::AStar);
/// ```
pub fn resolve_auto(grid: &Grid) -> Algorithm {
    if grid.is_uniform() {
        Algorithm::Jps
    } else {
        Algorithm::AStar
    }
}

/// Resolves `Auto` and rejects an algorithm that does not apply to this map.
fn resolve(grid: &Grid, a: Algorithm) -> Result<Algorithm, QueryError> {
    let algorithm = match a {
        Algorithm::Auto => resolve_auto(grid),
        other => other,
    };
    let reason = match algorithm {
        Algorithm::Jps if !grid.is_uniform() => {
            "jps needs a map where every passable cell costs 1, and this map has weighted \
             cells; use astar (or auto, which picks it)"
        }
        Algorithm::JpsPlus if !grid.is_uniform() => {
            "jps_plus needs a map where every passable cell costs 1, and this map has \
             weighted cells; use astar (or auto, which picks it)"
        }
        Algorithm::JpsPlus if grid.movement() == Movement::Cardinal => {
            "jps_plus has jump tables for octile movement only; use jps (or auto, which \
             picks it) on a map with cardinal movement"
        }
        Algorithm::Subgoal if !grid.is_uniform() => {
            "subgoal needs a map where every passable cell costs 1, and this map has \
             weighted cells; use astar (or auto, which picks it)"
        }
        Algorithm::Subgoal if grid.movement() == Movement::Cardinal => {
            "subgoal graphs are for octile movement only; use jps (or auto, which picks it) \
             on a map with cardinal movement"
        }
        Algorithm::Theta if grid.movement() == Movement::Cardinal => {
            "theta makes any-angle paths, which a map with cardinal movement cannot follow; \
             use astar or jps (optionally with smoothing, which merges straight runs there)"
        }
        _ => return Ok(algorithm),
    };
    Err(QueryError::NotApplicable {
        algorithm,
        reason: reason.into(),
    })
}

/// The algorithm a sized query (`size > 1`) runs: A*, Dijkstra and weighted A* have a
/// sized variant (`auto` is A*); JPS, Theta* and HPA* do not, and neither does smoothing,
/// whose line-of-sight test is for a one-cell agent.
fn sized_algorithm(q: &Query) -> Result<Algorithm, QueryError> {
    let reason = match q.algorithm {
        Algorithm::Auto => return Ok(Algorithm::AStar),
        Algorithm::AStar | Algorithm::Dijkstra | Algorithm::WeightedAStar if !q.smooth => {
            return Ok(q.algorithm);
        }
        Algorithm::AStar | Algorithm::Dijkstra | Algorithm::WeightedAStar => {
            "smoothing checks line of sight for a one-cell agent, so it is not available \
             with size > 1"
        }
        Algorithm::Jps | Algorithm::Hpa if !q.smooth => {
            "jps and hpa search agents wider than one cell (size > 1) on the map eroded for \
             that size (Derived::sized), which was not given"
        }
        Algorithm::Jps
        | Algorithm::JpsPlus
        | Algorithm::Theta
        | Algorithm::Hpa
        | Algorithm::Subgoal => {
            "agents wider than one cell (size > 1) are searched by astar, dijkstra or \
             weighted_astar (auto picks astar), and by jps or hpa on the map eroded for their \
             size; jps_plus, subgoal and theta have no sized variant, nor has smoothing"
        }
    };
    Err(QueryError::NotApplicable {
        algorithm: q.algorithm,
        reason: reason.into(),
    })
}

fn validate(grid: &Grid, q: &Query) -> Result<(), QueryError> {
    crate::query::check_ends(grid, q.start, q.goal, q.size)?;
    crate::query::check_weight(q.weight)
}

fn trivial(p: Point, algorithm: Algorithm, smooth: bool) -> SearchResult {
    let corners = smooth
        || matches!(
            algorithm,
            Algorithm::Jps | Algorithm::JpsPlus | Algorithm::Theta
        );
    let length = smooth || algorithm == Algorithm::Theta;
    SearchResult {
        status: Status::Found,
        path: vec![p],
        cost: 0.0,
        algorithm,
        stats: Stats::default(),
        limit: None,
        expanded_cells: Vec::new(),
        waypoints: corners.then(|| vec![p]),
        smoothed_length: length.then_some(0.0),
        keeps_guarantee: true,
    }
}
