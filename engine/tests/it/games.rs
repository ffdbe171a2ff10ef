//! The questions games ask: distance tables, line of sight with the first blocking cell,
//! and random reachable points, each against an independent reference.

use crate::common::{load_map, random_grid, random_passable, reference, show};
use pathd_engine::{Eroded, Grid, Limits, Movement, Point, Query, Searcher, Status, line_of_sight};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A random cell of the map, passable or not (a table answers blocked ends with `None`).
fn any_cell(rng: &mut impl Rng, grid: &Grid) -> Point {
    Point::new(
        rng.random_range(0..grid.width()),
        rng.random_range(0..grid.height()),
    )
}

/// The reference cost of one pair: `None` when an end is blocked or no path exists.
fn reference_cost(grid: &Grid, s: Point, t: Point) -> Option<f64> {
    if !grid.is_passable(s) || !grid.is_passable(t) {
        return None;
    }
    reference(grid, s, t).map(|(c, _)| c)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

/// Checks a 20 x 20 table on `grid` against one reference Dijkstra per entry.
fn check_table(grid: &Grid, rng: &mut StdRng, what: &str) {
    let pick = |rng: &mut StdRng| {
        if rng.random_bool(0.9) {
            random_passable(rng, grid).unwrap()
        } else {
            any_cell(rng, grid)
        }
    };
    let sources: Vec<Point> = (0..20).map(|_| pick(rng)).collect();
    let mut targets: Vec<Point> = (0..20).map(|_| pick(rng)).collect();
    targets[7] = targets[3]; // a repeated target
    targets[11] = sources[2]; // the source itself
    let rows = Searcher::new()
        .cost_matrix(grid, &sources, &targets, &Limits::default())
        .unwrap();
    let mut reachable = 0;
    for (row, &s) in rows.iter().zip(&sources) {
        assert_eq!(row.limit, None);
        for (&got, &t) in row.costs.iter().zip(&targets) {
            let want = reference_cost(grid, s, t);
            match (got, want) {
                (Some(g), Some(w)) if close(g, w) => reachable += 1,
                (None, None) => {}
                _ => panic!(
                    "{what}: {s} -> {t}: table {got:?}, reference {want:?}\n{}",
                    show(grid, s, t, &[])
                ),
            }
        }
    }
    assert!(reachable > 100, "{what}: only {reachable} reachable pairs");
}

#[test]
fn matrix_entries_equal_reference_dijkstra() {
    let mut rng = StdRng::seed_from_u64(0x3a7);
    let uniform = random_grid(&mut rng, 48, 40, 0.25, false, Movement::Octile);
    check_table(&uniform, &mut rng, "uniform octile");
    let weighted = random_grid(&mut rng, 40, 48, 0.2, true, Movement::Octile);
    check_table(&weighted, &mut rng, "weighted octile");
    let cardinal = random_grid(&mut rng, 32, 32, 0.2, true, Movement::Cardinal);
    check_table(&cardinal, &mut rng, "weighted cardinal");
    let arena = load_map("arena.map");
    check_table(&arena, &mut rng, "arena.map");
    // Uniform octile maps take canonical Dijkstra: more of them, sparse to dense.
    for density in [0.0, 0.05, 0.1, 0.2, 0.3, 0.4] {
        let grid = random_grid(&mut rng, 36, 30, density, false, Movement::Octile);
        check_table(&grid, &mut rng, &format!("uniform octile, {density} walls"));
    }
    let den = load_map("den200d.map");
    check_table(&den, &mut rng, "den200d.map");
}

#[test]
fn matrix_on_the_eroded_map_answers_sized_agents() {
    let mut rng = StdRng::seed_from_u64(0x51e);
    let grid = random_grid(&mut rng, 40, 40, 0.12, true, Movement::Octile);
    let eroded = Eroded::build(&grid, 2);
    let points: Vec<Point> = (0..12).map(|_| any_cell(&mut rng, &grid)).collect();
    let rows = Searcher::new()
        .cost_matrix(eroded.grid(), &points, &points, &Limits::default())
        .unwrap();
    let mut searcher = Searcher::new();
    for (row, &s) in rows.iter().zip(&points) {
        for (&got, &t) in row.costs.iter().zip(&points) {
            let mut q = Query::new(s, t);
            q.size = 2;
            let want = match searcher.find_path(&grid, &q) {
                Ok(r) if r.status == Status::Found => Some(r.cost),
                _ => None,
            };
            assert_eq!(got.is_some(), want.is_some(), "{s} -> {t}");
            if let (Some(g), Some(w)) = (got, want) {
                assert!(close(g, w), "{s} -> {t}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn matrix_rows_stop_at_limits_and_reject_points_off_the_map() {
    // A weighted map (the bucket flood) and a uniform one full of walls (canonical
    // Dijkstra, whose expansions are jump points).
    let mut costs = vec![1; 64 * 64];
    costs[5] = 2;
    let weighted = Grid::from_costs(64, 64, costs, Movement::Octile).unwrap();
    let mut rng = StdRng::seed_from_u64(0x11);
    let walls = random_grid(&mut rng, 64, 64, 0.3, false, Movement::Octile);
    let limits = Limits {
        max_expansions: Some(3),
        ..Limits::default()
    };
    for grid in [&weighted, &walls] {
        let (s, t) = loop {
            let s = random_passable(&mut rng, grid).unwrap();
            let t = random_passable(&mut rng, grid).unwrap();
            if grid.same_component(s, t) && grid.heuristic(s, t) > 30.0 {
                break (s, t);
            }
        };
        let row = Searcher::new().cost_row(grid, s, &[t], &limits).unwrap();
        assert_eq!(row.costs, vec![None], "{s} -> {t}");
        assert!(row.limit.is_some());
    }
    let grid = weighted;
    let off = Searcher::new().cost_row(
        &grid,
        Point::new(0, 0),
        &[Point::new(64, 0)],
        &Limits::default(),
    );
    assert!(off.is_err());
}

/// Reference line of sight, written from the rule rather than the traversal: in doubled
/// coordinates (cell `(x, y)` is the open square `(2x, 2x + 2) x (2y, 2y + 2)`, centres
/// odd), collect every event of the segment — the start cell at `t = 0`, each cell whose
/// interior it enters, each grid corner it passes with its two side cells — sort them by
/// `t` (at a corner: the side along x, the side along y, then the next cell) and return the
/// first blocked cell.
fn reference_sight(grid: &Grid, a: Point, b: Point) -> (bool, Option<Point>) {
    let (ax, ay) = (2.0 * a.x as f64 + 1.0, 2.0 * a.y as f64 + 1.0);
    let (dx, dy) = (
        2.0 * (b.x as f64 - a.x as f64),
        2.0 * (b.y as f64 - a.y as f64),
    );
    // Open t interval where the coordinate lies strictly inside (lo, hi).
    let inside = |p: f64, d: f64, lo: f64, hi: f64| -> Option<(f64, f64)> {
        if d == 0.0 {
            return (lo < p && p < hi).then_some((f64::NEG_INFINITY, f64::INFINITY));
        }
        let (t1, t2) = ((lo - p) / d, (hi - p) / d);
        Some((t1.min(t2), t1.max(t2)))
    };
    let mut events: Vec<(f64, u8, Point)> = vec![(0.0, 0, a)];
    let (x0, x1) = (a.x.min(b.x), a.x.max(b.x));
    let (y0, y1) = (a.y.min(b.y), a.y.max(b.y));
    for y in y0..=y1 {
        for x in x0..=x1 {
            let c = Point::new(x, y);
            if c == a {
                continue;
            }
            let fx = 2.0 * x as f64;
            let fy = 2.0 * y as f64;
            let (Some((lx, hx)), Some((ly, hy))) =
                (inside(ax, dx, fx, fx + 2.0), inside(ay, dy, fy, fy + 2.0))
            else {
                continue;
            };
            let (lo, hi) = (lx.max(ly).max(0.0), hx.min(hy).min(1.0));
            if lo < hi {
                events.push((lo, 2, c));
            }
        }
    }
    // Corners: lattice points (2i, 2j) strictly inside the segment.
    let (sx, sy) = ((dx as i64).signum(), (dy as i64).signum());
    if sx != 0 && sy != 0 {
        for j in y0..=y1 + 1 {
            for i in x0..=x1 + 1 {
                let (px, py) = (2.0 * i as f64, 2.0 * j as f64);
                let t = (px - ax) / dx;
                if t <= 0.0 || t >= 1.0 || (py - ay) / dy != t {
                    continue;
                }
                let bx = if sx > 0 { i as i64 - 1 } else { i as i64 };
                let by = if sy > 0 { j as i64 - 1 } else { j as i64 };
                let xs = Point::new((bx + sx) as u32, by as u32);
                let ys = Point::new(bx as u32, (by + sy) as u32);
                events.push((t, 0, xs));
                events.push((t, 1, ys));
            }
        }
    }
    events.sort_by(|p, q| p.0.total_cmp(&q.0).then(p.1.cmp(&q.1)));
    match events.iter().find(|e| !grid.is_passable(e.2)) {
        Some(e) => (false, Some(e.2)),
        None => (true, None),
    }
}

#[test]
fn los_equals_a_reference_of_the_corner_rule() {
    let mut rng = StdRng::seed_from_u64(0x105);
    let mut maps = vec![load_map("arena.map")];
    for density in [0.05, 0.15, 0.3] {
        maps.push(random_grid(
            &mut rng,
            30,
            24,
            density,
            false,
            Movement::Octile,
        ));
    }
    let (mut visible, mut blocked) = (0, 0);
    for grid in &maps {
        for _ in 0..3000 {
            let a = any_cell(&mut rng, grid);
            let b = if rng.random_bool(0.2) {
                // Exact diagonals and straight lines: through corners, along one axis.
                let k = rng.random_range(0..grid.width().min(grid.height()));
                match rng.random_range(0..3) {
                    0 => Point::new((a.x + k).min(grid.width() - 1), a.y),
                    1 => Point::new(a.x.saturating_sub(k), a.y.saturating_sub(k)),
                    _ => Point::new((a.x + k) % grid.width(), a.y.saturating_sub(k)),
                }
            } else {
                any_cell(&mut rng, grid)
            };
            let got = line_of_sight(grid, a, b).unwrap();
            let want = reference_sight(grid, a, b);
            assert_eq!(
                (got.visible, got.blocked_at),
                want,
                "{a} -> {b}\n{}",
                show(grid, a, b, &[])
            );
            if got.visible {
                visible += 1;
            } else {
                blocked += 1;
            }
        }
    }
    assert!(visible > 1000 && blocked > 1000, "{visible} / {blocked}");
}

#[test]
fn los_on_cardinal_maps_is_axis_parallel_and_off_map_is_an_error() {
    let grid = Grid::from_costs(4, 3, vec![1; 12], Movement::Cardinal).unwrap();
    let s = line_of_sight(&grid, Point::new(0, 0), Point::new(2, 1)).unwrap();
    assert_eq!((s.visible, s.blocked_at), (false, None));
    assert!(
        line_of_sight(&grid, Point::new(0, 0), Point::new(3, 0))
            .unwrap()
            .visible
    );
    assert!(line_of_sight(&grid, Point::new(0, 0), Point::new(4, 0)).is_err());
}

/// The reference region: every cell whose reference cost from `start` is at most `radius`.
fn reference_region(grid: &Grid, start: Point, radius: f64) -> Vec<(Point, f64)> {
    let mut out = Vec::new();
    for y in 0..grid.height() {
        for x in 0..grid.width() {
            let p = Point::new(x, y);
            if let Some(c) = reference_cost(grid, start, p) {
                if c <= radius + 1e-9 {
                    out.push((p, c));
                }
            }
        }
    }
    out
}

#[test]
fn reachable_region_equals_reference_and_random_picks_cover_it_uniformly() {
    let mut rng = StdRng::seed_from_u64(0x4a2d);
    for (weighted, radius) in [(false, 4.5), (true, 12.0)] {
        let grid = random_grid(&mut rng, 16, 14, 0.25, weighted, Movement::Octile);
        // A start with a region worth drawing from (weighted terrain can wall a cell in).
        let (start, want) = loop {
            let start = random_passable(&mut rng, &grid).unwrap();
            let want = reference_region(&grid, start, radius);
            if want.len() >= 8 {
                break (start, want);
            }
        };
        let mut searcher = Searcher::new();
        let reach = searcher
            .reachable_within(&grid, start, radius, &Limits::default())
            .unwrap();
        let mut got = reach.cells.clone();
        got.sort_by_key(|c| (c.0.y, c.0.x));
        assert_eq!(got.len(), want.len(), "{}", show(&grid, start, start, &[]));
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.0, w.0);
            assert!(close(g.1, w.1) && g.1 <= radius, "{g:?} vs {w:?}");
        }
        // Draws with seeds 0..N: every cell drawn, counts close to uniform (a chi-square
        // statistic far below what a skewed pick would give; the seeds are fixed, so the
        // test is deterministic).
        let k = want.len();
        let per = 200;
        let mut counts = std::collections::HashMap::new();
        for seed in 0..(per * k) as u64 {
            let pick = searcher
                .random_reachable(&grid, start, radius, seed, &Limits::default())
                .unwrap()
                .unwrap();
            assert!(pick.distance <= radius && pick.candidates == k);
            *counts.entry(pick.point).or_insert(0usize) += 1;
        }
        assert_eq!(counts.len(), k, "every reachable cell drawn at least once");
        let chi2: f64 = counts
            .values()
            .map(|&c| (c as f64 - per as f64).powi(2) / per as f64)
            .sum();
        // Mean k - 1, standard deviation sqrt(2 (k - 1)): allow six of them.
        let bound = (k - 1) as f64 + 6.0 * (2.0 * (k - 1) as f64).sqrt();
        assert!(
            chi2 < bound,
            "chi-square {chi2:.1} over {k} cells (bound {bound:.1})"
        );
        // The same seed picks the same cell.
        let a = searcher.random_reachable(&grid, start, radius, 99, &Limits::default());
        let b = searcher.random_reachable(&grid, start, radius, 99, &Limits::default());
        assert_eq!(a.unwrap(), b.unwrap());
    }
}

#[test]
fn reachable_region_rejects_a_blocked_start_and_stops_at_limits() {
    let grid = Grid::from_costs(3, 1, vec![1, 0, 1], Movement::Octile).unwrap();
    let mut searcher = Searcher::new();
    assert!(
        searcher
            .reachable_within(&grid, Point::new(1, 0), 5.0, &Limits::default())
            .is_err()
    );
    let r = searcher
        .reachable_within(&grid, Point::new(0, 0), 0.0, &Limits::default())
        .unwrap();
    assert_eq!(r.cells, vec![(Point::new(0, 0), 0.0)]);
    let open = Grid::from_costs(64, 64, vec![1; 64 * 64], Movement::Octile).unwrap();
    let limits = Limits {
        max_expansions: Some(5),
        ..Limits::default()
    };
    let pick = searcher
        .random_reachable(&open, Point::new(9, 9), 30.0, 1, &limits)
        .unwrap();
    assert!(pick.is_err());
}
