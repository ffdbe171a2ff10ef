//! String pulling: drop every corner of a path that its neighbours can see past.
//!
//! Input is a polyline of cells whose consecutive points see each other (a grid path, or
//! Theta*'s vertices). From an anchor, the walk looks ahead for a far point the anchor sees
//! (galloping: 1, 2, 4, ... points ahead while visible, then bisecting between the last
//! visible and the first hidden one), makes it the next corner, and repeats from there. A
//! shortcut must pass the map's line of sight ([`super::los`]), so the result never crosses a
//! wall or cuts a corner; on weighted maps it must also cost no more than the stretch of path it
//! replaces (measured with the same segment cost), so the smoothed cost never exceeds the
//! input's and is never cheaper than the truth. On a map where every cell costs 1 the triangle
//! inequality makes that check unnecessary.
//!
//! Cost: `O(n log n)` line-of-sight walks of at most the shortcut's length, instead of the
//! quadratic look-at-every-point greedy.

use crate::grid::{Grid, Point};

use super::los;

/// The string-pulled corners of `points` and their total segment cost. `edge_costs[i]` is the
/// cost of the edge `points[i] -> points[i + 1]` (so `edge_costs.len() + 1 == points.len()`).
pub(crate) fn pull(grid: &Grid, points: &[Point], edge_costs: &[f64]) -> (Vec<Point>, f64) {
    debug_assert_eq!(edge_costs.len() + 1, points.len().max(1));
    if points.len() <= 2 {
        let total = edge_costs.iter().sum();
        return (points.to_vec(), total);
    }
    let uniform = grid.is_uniform();
    let cells = grid.cells();
    // prefix[i] = cost of points[0..=i] along the input.
    let mut prefix = Vec::with_capacity(points.len());
    prefix.push(0.0);
    for c in edge_costs {
        prefix.push(prefix.last().unwrap() + c);
    }
    let last = points.len() - 1;
    let mut out = vec![points[0]];
    let mut total = 0.0;
    let mut anchor = 0;
    while anchor < last {
        // Try a shortcut anchor -> k; `None` if it is hidden or (weighted) dearer.
        let shortcut = |k: usize| -> Option<f64> {
            if k == anchor + 1 {
                return Some(edge_costs[anchor]);
            }
            let c = los::segment_cost(grid, &cells, points[anchor], points[k])?;
            (uniform || c <= prefix[k] - prefix[anchor]).then_some(c)
        };
        let mut good = (anchor + 1, edge_costs[anchor]);
        let mut step = 1;
        let mut bad = None;
        // Gallop while the shortcut holds.
        loop {
            let k = (anchor + 2 * step).min(last);
            if k == good.0 {
                break;
            }
            match shortcut(k) {
                Some(c) => {
                    good = (k, c);
                    if k == last {
                        break;
                    }
                    step *= 2;
                }
                None => {
                    bad = Some(k);
                    break;
                }
            }
        }
        // Bisect between the last good and the first bad look-ahead.
        if let Some(mut hi) = bad {
            while hi - good.0 > 1 {
                let mid = good.0 + (hi - good.0) / 2;
                match shortcut(mid) {
                    Some(c) => good = (mid, c),
                    None => hi = mid,
                }
            }
        }
        out.push(points[good.0]);
        total += good.1;
        anchor = good.0;
    }
    (out, total)
}

/// Edge costs of a cell path (consecutive cells adjacent and the steps legal).
pub(crate) fn step_costs(grid: &Grid, path: &[Point]) -> Vec<f64> {
    path.windows(2)
        .map(|w| grid.step_cost(w[0], w[1]).unwrap_or(f64::INFINITY))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Movement;

    #[test]
    fn pulls_an_l_into_one_segment_in_the_open() {
        let g = Grid::from_costs(5, 5, vec![1; 25], Movement::Octile).unwrap();
        let path: Vec<Point> = (0..5)
            .map(|x| Point::new(x, 0))
            .chain((1..5).map(|y| Point::new(4, y)))
            .collect();
        let (w, len) = pull(&g, &path, &step_costs(&g, &path));
        assert_eq!(w, vec![Point::new(0, 0), Point::new(4, 4)]);
        assert!((len - 32f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn keeps_the_corner_of_a_wall() {
        // . . .
        // @ @ .
        // . . .  path from (0,0) round the wall to (0,2)
        let g = Grid::from_costs(3, 3, vec![1, 1, 1, 0, 0, 1, 1, 1, 1], Movement::Octile).unwrap();
        let path =
            [(0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (1, 2), (0, 2)].map(|(x, y)| Point::new(x, y));
        let (w, len) = pull(&g, &path, &step_costs(&g, &path));
        assert_eq!(w.first(), Some(&Point::new(0, 0)));
        assert_eq!(w.last(), Some(&Point::new(0, 2)));
        assert_eq!(
            w,
            [(0, 0), (2, 0), (2, 2), (0, 2)].map(|(x, y)| Point::new(x, y))
        );
        assert!(len <= g.path_cost(&path).unwrap() + 1e-12);
    }

    #[test]
    fn weighted_shortcut_is_refused_when_dearer() {
        // Row 1 is expensive: going straight through costs more than the cheap detour.
        let costs = vec![1, 1, 1, 1, 200, 1, 1, 1, 1];
        let g = Grid::from_costs(3, 3, costs, Movement::Octile).unwrap();
        let path = [(0, 1), (0, 0), (1, 0), (2, 0), (2, 1)].map(|(x, y)| Point::new(x, y));
        let grid_cost = g.path_cost(&path).unwrap();
        let (w, len) = pull(&g, &path, &step_costs(&g, &path));
        assert!(len <= grid_cost, "{len} > {grid_cost}");
        assert!(
            !w.windows(2)
                .any(|s| s == [Point::new(0, 1), Point::new(2, 1)])
        );
    }
}
