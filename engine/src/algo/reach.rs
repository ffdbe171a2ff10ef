//! What a unit can reach: every cell within a path distance of a start (a bounded
//! Dijkstra), and a uniformly random one of them.
//!
//! The Dijkstra is the core with `h = 0` over the grid expander, which drops every move
//! that would end beyond the radius: nothing farther is ever queued, so the search ends
//! when its open list runs dry, having expanded exactly the cells whose optimal cost is at
//! most the radius (each of them has an optimal path whose every prefix is within the
//! radius too, and costs are final when expanded). Its work is proportional to that region,
//! never to the map.
//!
//! The pick is uniform over the region's cells, each counted once, in the order the search
//! settled them (deterministic, see [`crate::search`]), with a seeded SplitMix64 generator:
//! the same seed on the same map version and query picks the same cell, on every platform.
//!
//! Agents wider than one cell: pass the map eroded for their size ([`crate::Eroded`]).

use crate::grid::{Grid, Point};
use crate::planner::Searcher;
use crate::query::{LimitKind, Limits, QueryError, Stats, check_in_bounds};
use crate::search::{CoreEnd, Expander, GridExpander, Run, Succ, Zero, best_first};

/// The cells within a path distance of a start ([`Searcher::reachable_within`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Reach {
    /// Every cell whose optimal cost from the start is at most the radius, with that cost,
    /// in the order the search settled them (the start first, costs non-decreasing).
    pub cells: Vec<(Point, f64)>,
    /// The search's work.
    pub stats: Stats,
    /// The limit that stopped the search before the region was complete, if one did (then
    /// `cells` holds the part settled so far: every cell up to some smaller radius).
    pub limit: Option<LimitKind>,
}

/// A random cell of a region ([`Searcher::random_reachable`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomPick {
    /// The cell.
    pub point: Point,
    /// Its optimal path cost from the start (at most the radius).
    pub distance: f64,
    /// How many cells the pick was drawn from.
    pub candidates: usize,
}

/// The grid expander, keeping moves within `radius` and recording settled cells.
struct BoundedExpander {
    grid: GridExpander,
    radius: f64,
    settled: Vec<u32>,
}

impl Expander for BoundedExpander {
    const TARGETS: bool = true;
    const PARENT_G: bool = false;

    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        let from = out.len();
        self.grid.successors(grid, node, g, parent, out);
        let radius = self.radius;
        let mut k = from;
        for i in from..out.len() {
            if out[i].g <= radius {
                out[k] = out[i];
                k += 1;
            }
        }
        out.truncate(k);
    }

    #[inline]
    fn settle(&mut self, node: u32) -> bool {
        self.settled.push(node);
        false
    }
}

/// SplitMix64 (Steele, Lea and Flood): a tiny seeded generator with full 64-bit output,
/// enough for one uniform draw per query.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform index below `n` (`n > 0`) from the generator: a 128-bit multiply-shift with
/// Lemire's rejection step, so every index is exactly equally likely.
fn below(state: &mut u64, n: u64) -> u64 {
    let threshold = n.wrapping_neg() % n;
    loop {
        let m = splitmix64(state) as u128 * n as u128;
        if (m as u64) >= threshold {
            return (m >> 64) as u64;
        }
    }
}

impl Searcher {
    /// Every cell whose optimal path cost from `start` is at most `radius` (see the module
    /// docs), under `limits`. The start itself is always in (cost 0).
    ///
    /// Errors: `start` off the map ([`QueryError::OutOfBounds`]) or blocked
    /// ([`QueryError::StartBlocked`]). A negative or NaN radius reaches the start only
    /// (validating it is the caller's business).
    ///
    /// ```
    /// use pathd_engine::{movingai, Limits, Point, Searcher};
    /// let grid = movingai::parse_map("type octile\nheight 1\nwidth 5\nmap\n..@..\n").unwrap();
    /// let r = Searcher::new().reachable_within(&grid, Point::new(0, 0), 10.0, &Limits::default()).unwrap();
    /// assert_eq!(r.cells, vec![(Point::new(0, 0), 0.0), (Point::new(1, 0), 1.0)]);
    /// ```
    pub fn reachable_within(
        &mut self,
        grid: &Grid,
        start: Point,
        radius: f64,
        limits: &Limits,
    ) -> Result<Reach, QueryError> {
        let (settled, stats, limit) = self.region(grid, start, radius, limits)?;
        let nodes = self.scratch.nodes();
        let cells = settled
            .iter()
            .map(|&n| (grid.ppoint(n as usize), nodes.g(n)))
            .collect();
        Ok(Reach {
            cells,
            stats,
            limit,
        })
    }

    /// The bounded Dijkstra of [`Searcher::reachable_within`]: the padded indices it
    /// settled, in order (their costs stay in the scratch until the next search), its work
    /// and the limit that stopped it, if any.
    fn region(
        &mut self,
        grid: &Grid,
        start: Point,
        radius: f64,
        limits: &Limits,
    ) -> Result<(Vec<u32>, Stats, Option<LimitKind>), QueryError> {
        check_in_bounds(grid, "start", start)?;
        if !grid.is_passable(start) {
            return Err(QueryError::StartBlocked(start));
        }
        let scratch = &mut self.scratch;
        scratch.begin(grid.padded_len());
        let run = Run {
            start: grid.pidx(start) as u32,
            goal: u32::MAX, // no padded index: run until the open list is empty
            weight: 0.0,
            heuristic: Zero,
            limits,
            track_closest: false,
            debug_cap: 0,
        };
        let mut expander = BoundedExpander {
            grid: GridExpander::new(grid),
            // `!(x >= 0)` also catches NaN: such a radius reaches the start only.
            radius: if radius >= 0.0 { radius } else { 0.0 },
            settled: Vec::new(),
        };
        let outcome = best_first(grid, scratch, &mut expander, &run);
        let limit = match outcome.end {
            CoreEnd::Limit(kind) => Some(kind),
            CoreEnd::Goal | CoreEnd::Exhausted => None,
        };
        Ok((expander.settled, outcome.stats, limit))
    }

    /// A uniformly random cell among those within path cost `radius` of `start`
    /// ([`Searcher::reachable_within`]), drawn with `seed` (the same seed, map and query
    /// give the same cell). `Ok(Err(limit))` when a limit stopped the search first: the
    /// region is not known, so no uniform pick can be made.
    ///
    /// ```
    /// use pathd_engine::{movingai, Limits, Point, Searcher};
    /// let grid = movingai::parse_map("type octile\nheight 3\nwidth 3\nmap\n...\n...\n...\n").unwrap();
    /// let pick = Searcher::new()
    ///     .random_reachable(&grid, Point::new(1, 1), 1.0, 7, &Limits::default())
    ///     .unwrap()
    ///     .unwrap();
    /// assert!(pick.distance <= 1.0 && pick.candidates == 5);
    /// ```
    pub fn random_reachable(
        &mut self,
        grid: &Grid,
        start: Point,
        radius: f64,
        seed: u64,
        limits: &Limits,
    ) -> Result<Result<RandomPick, LimitKind>, QueryError> {
        // Drawn from the settled ids (4 bytes a cell), not a list of points and costs.
        let (settled, _, limit) = self.region(grid, start, radius, limits)?;
        if let Some(limit) = limit {
            return Ok(Err(limit));
        }
        let mut state = seed;
        let n = settled[below(&mut state, settled.len() as u64) as usize];
        Ok(Ok(RandomPick {
            point: grid.ppoint(n as usize),
            distance: self.scratch.nodes().g(n),
            candidates: settled.len(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_is_in_range_and_spread() {
        let mut s = 42;
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[below(&mut s, 7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }
}
