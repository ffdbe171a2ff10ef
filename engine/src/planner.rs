//! The entry point: validates a query, picks the algorithm, and turns the core's outcome
//! into a [`SearchResult`].

use std::cell::RefCell;

use crate::algo;
use crate::grid::{Grid, Point};
use crate::query::{Algorithm, Query, QueryError, SearchResult, Stats, Status};
use crate::search::{CoreEnd, CoreOutcome, Scratch, chain};

/// Reusable search memory. Keep one per thread (the free function [`find_path`] does that for
/// you with a thread-local); it grows to the largest map it has seen and is never cleared.
#[derive(Default)]
pub struct Searcher {
    scratch: Scratch,
}

impl Searcher {
    /// A searcher with no memory reserved yet.
    pub fn new() -> Self {
        Self::default()
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
    /// assert!((r.cost - (2.0 + 2.0 * std::f64::consts::SQRT_2)).abs() < 1e-9);
    /// ```
    pub fn find_path(&mut self, grid: &Grid, query: &Query) -> Result<SearchResult, QueryError> {
        validate(grid, query)?;
        let algorithm = resolve(grid, query.algorithm)?;
        if query.start == query.goal {
            return Ok(trivial(query.start, algorithm));
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
            });
        }
        let s = &mut self.scratch;
        Ok(match algorithm {
            Algorithm::AStar => algo::astar::search(grid, s, query, algorithm, 1.0),
            Algorithm::Dijkstra => algo::astar::search(grid, s, query, algorithm, 0.0),
            Algorithm::WeightedAStar => {
                algo::astar::search(grid, s, query, algorithm, query.weight)
            }
            Algorithm::Jps | Algorithm::Theta | Algorithm::Hpa | Algorithm::Auto => {
                return Err(QueryError::NotApplicable {
                    algorithm,
                    reason: "not available in this build".into(),
                });
            }
        })
    }
}

thread_local! {
    static SEARCHER: RefCell<Searcher> = RefCell::new(Searcher::new());
}

/// [`Searcher::find_path`] with a per-thread searcher, so a pool of worker threads reuses its
/// scratch memory across queries.
pub fn find_path(grid: &Grid, query: &Query) -> Result<SearchResult, QueryError> {
    SEARCHER.with(|s| s.borrow_mut().find_path(grid, query))
}

/// The algorithm [`Algorithm::Auto`] picks on this map.
///
/// Rule: A* everywhere for now (the fastest optimal algorithm this build has).
pub fn resolve_auto(_grid: &Grid) -> Algorithm {
    Algorithm::AStar
}

fn resolve(grid: &Grid, a: Algorithm) -> Result<Algorithm, QueryError> {
    Ok(match a {
        Algorithm::Auto => resolve_auto(grid),
        other => other,
    })
}

fn validate(grid: &Grid, q: &Query) -> Result<(), QueryError> {
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
    if q.algorithm == Algorithm::WeightedAStar && !(q.weight.is_finite() && q.weight >= 1.0) {
        return Err(QueryError::InvalidWeight(q.weight));
    }
    Ok(())
}

fn trivial(p: Point, algorithm: Algorithm) -> SearchResult {
    SearchResult {
        status: Status::Found,
        path: vec![p],
        cost: 0.0,
        algorithm,
        stats: Stats::default(),
        limit: None,
        expanded_cells: Vec::new(),
    }
}

/// Turns the core's outcome into a result. `to_cells` maps the parent chain (padded node ids,
/// start first) to the reported path: identity for A*, straight-run filling for JPS.
pub(crate) fn finish(
    grid: &Grid,
    scratch: &Scratch,
    outcome: CoreOutcome,
    query: &Query,
    algorithm: Algorithm,
    to_cells: impl Fn(&Grid, &[u32]) -> Vec<Point>,
) -> SearchResult {
    let (status, end, limit) = match outcome.end {
        CoreEnd::Goal => (Status::Found, Some(grid.pidx(query.goal) as u32), None),
        CoreEnd::Exhausted => match outcome.closest {
            Some(c) if query.partial => (Status::Partial, Some(c), None),
            _ => (Status::NoPath, None, None),
        },
        CoreEnd::Limit(kind) => match outcome.closest {
            Some(c) if query.partial => (Status::Partial, Some(c), Some(kind)),
            _ => (Status::LimitReached, None, Some(kind)),
        },
    };
    let (path, cost) = match end {
        Some(e) => {
            let ch = chain(scratch, e);
            (to_cells(grid, &ch), scratch.nodes().g(e))
        }
        None => (Vec::new(), 0.0),
    };
    SearchResult {
        status,
        path,
        cost,
        algorithm,
        stats: outcome.stats,
        limit,
        expanded_cells: outcome
            .debug
            .iter()
            .map(|&n| grid.ppoint(n as usize))
            .collect(),
    }
}
