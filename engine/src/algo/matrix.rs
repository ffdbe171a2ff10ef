//! Distance tables: the costs from each of a few sources to each of a few targets, one
//! Dijkstra per source instead of one search per pair.
//!
//! A row is a Dijkstra flood from its source that stops as soon as the last of its
//! *reachable* targets has its final cost (canonical Dijkstra, [`crate::algo::canonical`],
//! on uniform octile maps; else a bucket queue, [`crate::algo::flood`]):
//! targets in another connected component (or blocked) are answered `None` from the map's
//! components before the search starts, so an unreachable target never makes a row flood
//! its whole component. Settled costs are final (Dijkstra), so a row's entries are exactly
//! the optimal costs a separate query per pair would report (up to the rounding of sums
//! taken in another order, below [`crate::search::IMPROVES_BY`]).
//!
//! Why not A* per pair: `n` targets cost `n` searches that each re-expand much of what the
//! others did; one Dijkstra expands every cell closer than the farthest target once. Why not
//! one A* per row towards several goals: a heuristic to the nearest unsettled target is
//! admissible but has to be recomputed for every open node whenever that target is settled.
//!
//! Targets are looked up in a small open-addressing set of padded indices (at least four
//! slots per target), one multiply and usually one comparison per expanded cell; repeated
//! targets share a slot.
//!
//! Agents wider than one cell: pass the map eroded for their size ([`crate::Eroded`]), on
//! which a one-cell search answers the sized query (its components are the agent's).

use crate::algo::canonical;
use crate::algo::flood::flood;
use crate::grid::{Grid, Movement, Point};
use crate::planner::Searcher;
use crate::query::{LimitKind, Limits, QueryError, Stats, check_in_bounds};

/// One row of a distance table ([`Searcher::cost_row`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CostRow {
    /// The cost to each target, in the order given: `None` when the target is unreachable
    /// from the source or either end is blocked.
    pub costs: Vec<Option<f64>>,
    /// The row's search work.
    pub stats: Stats,
    /// The limit that stopped the row's search before every reachable target was settled,
    /// if one did (then every cost is `None`).
    pub limit: Option<LimitKind>,
}

/// Padded indices of a row's targets, as an open-addressing set (module docs).
struct TargetSet {
    slots: Vec<u32>,
    mask: usize,
}

const EMPTY: u32 = u32::MAX;

impl TargetSet {
    fn new(n: usize) -> Self {
        let len = (4 * n).next_power_of_two().max(8);
        TargetSet {
            slots: vec![EMPTY; len],
            mask: len - 1,
        }
    }

    #[inline]
    fn home(&self, node: u32) -> usize {
        (node.wrapping_mul(0x9e37_79b9) >> 7) as usize & self.mask
    }

    /// Adds `node`; false when it was already in.
    fn insert(&mut self, node: u32) -> bool {
        let mut i = self.home(node);
        loop {
            match self.slots[i] {
                EMPTY => {
                    self.slots[i] = node;
                    return true;
                }
                n if n == node => return false,
                _ => i = (i + 1) & self.mask,
            }
        }
    }

    #[inline]
    fn contains(&self, node: u32) -> bool {
        let mut i = self.home(node);
        loop {
            match self.slots[i] {
                EMPTY => return false,
                n if n == node => return true,
                _ => i = (i + 1) & self.mask,
            }
        }
    }
}

impl Searcher {
    /// One row of a distance table: the optimal cost from `source` to each of `targets`
    /// (`None`: unreachable, or an end blocked), by one Dijkstra that stops once every
    /// target in the source's component is settled (see the module docs). Costs are those
    /// of [`crate::find_path`] for the same pair. `limits` bound the search (expansions,
    /// deadline, cancellation); a row stopped by one reports it in [`CostRow::limit`].
    ///
    /// Errors: a point off the map ([`QueryError::OutOfBounds`], `"start"` for the source,
    /// `"goal"` for a target).
    ///
    /// ```
    /// use pathd_engine::{movingai, Point, Searcher, Limits};
    /// let grid = movingai::parse_map("type octile\nheight 2\nwidth 4\nmap\n..@.\n..@.\n").unwrap();
    /// let p = Point::new;
    /// let row = Searcher::new()
    ///     .cost_row(&grid, p(0, 0), &[p(0, 0), p(1, 1), p(3, 0), p(2, 0)], &Limits::default())
    ///     .unwrap();
    /// assert_eq!(row.costs, vec![Some(0.0), Some(std::f64::consts::SQRT_2), None, None]);
    /// ```
    pub fn cost_row(
        &mut self,
        grid: &Grid,
        source: Point,
        targets: &[Point],
        limits: &Limits,
    ) -> Result<CostRow, QueryError> {
        check_in_bounds(grid, "start", source)?;
        for &t in targets {
            check_in_bounds(grid, "goal", t)?;
        }
        let mut row = CostRow {
            costs: vec![None; targets.len()],
            stats: Stats::default(),
            limit: None,
        };
        // Step 1: the targets the source can reach, from the components (no search).
        let Some(label) = grid.component(source) else {
            return Ok(row);
        };
        let mut set = TargetSet::new(targets.len());
        let mut distinct = Vec::new();
        for &t in targets {
            let n = grid.pidx(t) as u32;
            if grid.component(t) == Some(label) && set.insert(n) {
                distinct.push(n);
            }
        }
        if distinct.is_empty() {
            return Ok(row);
        }
        // Step 2: flood until the last of them has its final cost: canonical Dijkstra on
        // uniform octile maps, else Dijkstra on a bucket queue.
        let start = grid.pidx(source) as u32;
        let (stats, limit) = if grid.is_uniform() && grid.movement() == Movement::Octile {
            canonical::flood(grid, &mut self.scratch, start, &distinct, limits)
        } else {
            let mut remaining = distinct.len();
            flood(grid, &mut self.scratch, start, limits, |n| {
                if !set.contains(n) {
                    return false;
                }
                remaining -= 1;
                remaining == 0
            })
        };
        row.stats = stats;
        row.limit = limit;
        if limit.is_some() {
            return Ok(row);
        }
        // Step 3: read the costs back.
        let nodes = self.scratch.nodes();
        for (cost, &t) in row.costs.iter_mut().zip(targets) {
            if grid.component(t) == Some(label) {
                *cost = Some(nodes.g(grid.pidx(t) as u32));
            }
        }
        Ok(row)
    }

    /// A whole distance table: [`Searcher::cost_row`] for each source, in order, on this
    /// searcher's memory. (A server runs the rows as separate jobs instead.)
    pub fn cost_matrix(
        &mut self,
        grid: &Grid,
        sources: &[Point],
        targets: &[Point],
        limits: &Limits,
    ) -> Result<Vec<CostRow>, QueryError> {
        sources
            .iter()
            .map(|&s| self.cost_row(grid, s, targets, limits))
            .collect()
    }
}
