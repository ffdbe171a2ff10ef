//! JPS, Theta* and string-pulling smoothing.
//!
//! JPS is checked against the reference Dijkstra on random unweighted maps (both movement
//! rules, open to maze-dense, patched), with its limits, partial answers and waypoints.
//! Any-angle output (Theta* and every smoothed path) is checked with a line-of-sight test
//! written only here: it samples each segment finely and just before and after every grid
//! line it crosses, and demands that every cell whose closure a sample touches is passable
//! (two cells on an edge, four at a corner). Segment costs are recomputed independently from
//! the same crossings.

use crate::common::{
    check_path, load_map, load_scen, random_grid, random_passable, reference, show,
};
use pathd_engine::{
    Algorithm, Grid, Limits, Movement, Patch, Point, Query, QueryError, Rect, Searcher, Status,
    resolve_auto,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How much longer than string-pulled A* Theta* may be on a uniform map, relative. Neither
/// is optimal among any-angle paths, so either can win a given query. Measured worst cases:
/// 3.8% on the cluttered random maps below (up to 45% walls), 0.3% on the Moving AI
/// sample. On weighted maps Theta* is only held to the grid optimum: its one-parent shortcut
/// rarely pays through mixed terrain, and smoothed A* was up to 15% cheaper there.
const THETA_VS_SMOOTHED_ASTAR: f64 = 0.05;

/// Parameters `t` along `a -> b` (cell centres) where the segment crosses a grid line.
fn crossings(a: Point, b: Point) -> Vec<f64> {
    let (x0, y0) = (a.x as f64 + 0.5, a.y as f64 + 0.5);
    let (x1, y1) = (b.x as f64 + 0.5, b.y as f64 + 0.5);
    let mut ts = Vec::new();
    for (p0, p1) in [(x0, x1), (y0, y1)] {
        let (lo, hi) = (p0.min(p1), p0.max(p1));
        let mut line = lo.ceil();
        while line < hi {
            ts.push((line - p0) / (p1 - p0));
            line += 1.0;
        }
    }
    ts.sort_by(f64::total_cmp);
    ts
}

/// Point on the segment at parameter `t`.
fn at(a: Point, b: Point, t: f64) -> (f64, f64) {
    let (x0, y0) = (a.x as f64 + 0.5, a.y as f64 + 0.5);
    let (x1, y1) = (b.x as f64 + 0.5, b.y as f64 + 0.5);
    (x0 + t * (x1 - x0), y0 + t * (y1 - y0))
}

/// Every cell whose closed square contains `(x, y)` is on the map and passable.
fn point_clear(grid: &Grid, x: f64, y: f64) -> bool {
    let near = |v: f64| (v - v.round()).abs() < 1e-9;
    let span = |v: f64| -> Vec<i64> {
        if near(v) {
            vec![v.round() as i64 - 1, v.round() as i64]
        } else {
            vec![v.floor() as i64]
        }
    };
    for cx in span(x) {
        for cy in span(y) {
            if cx < 0 || cy < 0 || !grid.is_passable(Point::new(cx as u32, cy as u32)) {
                return false;
            }
        }
    }
    true
}

/// The test-only line-of-sight check (see the module docs).
fn sees(grid: &Grid, a: Point, b: Point) -> bool {
    if grid.movement() == Movement::Cardinal && a.x != b.x && a.y != b.y {
        return false;
    }
    let len = (a.x.abs_diff(b.x) as f64).hypot(a.y.abs_diff(b.y) as f64);
    let n = (64.0 * (len + 1.0)) as usize;
    let mut ts: Vec<f64> = (0..=n).map(|k| k as f64 / n as f64).collect();
    for t in crossings(a, b) {
        // The segment's own length scales the offsets: 1e-7 cells either side.
        let d = 1e-7 / len.max(1.0);
        ts.extend([t - d, t, t + d]);
    }
    ts.iter().filter(|t| (0.0..=1.0).contains(*t)).all(|&t| {
        let (x, y) = at(a, b, t);
        point_clear(grid, x, y)
    })
}

/// Independent segment cost: each stretch between consecutive grid-line crossings lies in
/// one cell (found from its midpoint), costed by its length.
fn segment_cost(grid: &Grid, a: Point, b: Point) -> f64 {
    let len = (a.x.abs_diff(b.x) as f64).hypot(a.y.abs_diff(b.y) as f64);
    let mut ts = vec![0.0];
    ts.extend(crossings(a, b));
    ts.push(1.0);
    ts.windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| {
            let (x, y) = at(a, b, (w[0] + w[1]) / 2.0);
            let c = grid.cost(Point::new(x.floor() as u32, y.floor() as u32));
            c as f64 * (w[1] - w[0]) * len
        })
        .sum()
}

/// Checks an any-angle polyline: ends, sight along every segment, and returns its
/// independently computed cost.
fn check_polyline(grid: &Grid, pts: &[Point], start: Point, goal: Point) -> Result<f64, String> {
    if pts.first() != Some(&start) || pts.last() != Some(&goal) {
        return Err(format!("polyline {pts:?} does not run {start} -> {goal}"));
    }
    let mut total = 0.0;
    for w in pts.windows(2) {
        if !sees(grid, w[0], w[1]) {
            return Err(format!("segment {} -> {} is not clear", w[0], w[1]));
        }
        total += segment_cost(grid, w[0], w[1]);
    }
    Ok(total)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-7 * (1.0 + a.abs())
}

/// A random map of one of three kinds: scattered walls, maze-like walls with gaps, or rooms.
fn random_map(rng: &mut StdRng, case: usize, weighted: bool, movement: Movement) -> Grid {
    let (w, h) = match case % 3 {
        0 => (rng.random_range(1..=12), rng.random_range(1..=12)),
        1 => (rng.random_range(8..=48), rng.random_range(8..=48)),
        _ => (rng.random_range(48..=96), rng.random_range(16..=96)),
    };
    match case % 4 {
        0 | 1 => {
            let density = rng.random_range(0.0..0.45);
            random_grid(rng, w, h, density, weighted, movement)
        }
        _ => {
            // Long walls with random gaps (corridors and rooms), plus a little noise.
            let base = random_grid(rng, w, h, 0.03, weighted, movement);
            let mut costs = base.costs();
            let step = rng.random_range(3..=6);
            for y in (step..h).step_by(step as usize) {
                for x in 0..w {
                    if !rng.random_bool(0.15) {
                        costs[(y * w + x) as usize] = 0;
                    }
                }
            }
            for x in (step..w).step_by(step as usize + 1) {
                for y in 0..h {
                    if rng.random_bool(0.7) {
                        costs[(y * w + x) as usize] = 0;
                    }
                }
            }
            Grid::from_costs(w, h, costs, movement).unwrap()
        }
    }
}

fn movement(rng: &mut StdRng) -> Movement {
    if rng.random_bool(0.6) {
        Movement::Octile
    } else {
        Movement::Cardinal
    }
}

#[test]
fn jps_matches_reference_on_random_unweighted_maps() {
    let mut rng = StdRng::seed_from_u64(0x1a5);
    let mut s = Searcher::new();
    let mut found = 0;
    for case in 0..1500 {
        let mv = movement(&mut rng);
        let grid = random_map(&mut rng, case, false, mv);
        for _ in 0..3 {
            let (Some(start), Some(goal)) = (
                random_passable(&mut rng, &grid),
                random_passable(&mut rng, &grid),
            ) else {
                continue;
            };
            let r = s
                .find_path(
                    &grid,
                    &Query::new(start, goal).with_algorithm(Algorithm::Jps),
                )
                .unwrap();
            match reference(&grid, start, goal) {
                None => assert_eq!(r.status, Status::NoPath, "case {case}"),
                Some((cost, path)) => {
                    assert!(
                        r.status == Status::Found && (r.cost - cost).abs() <= 1e-9 * (1.0 + cost),
                        "case {case}: reference {cost}, JPS {:?} {}\nreference:\n{}JPS:\n{}",
                        r.status,
                        r.cost,
                        show(&grid, start, goal, &path),
                        show(&grid, start, goal, &r.path)
                    );
                    check_path(&grid, &r.path, start, goal, r.cost).unwrap();
                    check_jump_points(&grid, &r.path, r.waypoints.as_deref().unwrap());
                    found += 1;
                }
            }
        }
    }
    assert!(found > 2500, "only {found} reachable cases");
}

/// The waypoints are a subsequence of the path, start to goal, joined by straight or
/// diagonal runs.
fn check_jump_points(grid: &Grid, path: &[Point], jumps: &[Point]) {
    assert_eq!(jumps.first(), path.first());
    assert_eq!(jumps.last(), path.last());
    let mut i = 0;
    for j in jumps {
        while path[i] != *j {
            i += 1;
        }
    }
    for w in jumps.windows(2) {
        let (dx, dy) = (w[0].x.abs_diff(w[1].x), w[0].y.abs_diff(w[1].y));
        assert!(dx == 0 || dy == 0 || dx == dy, "{} -> {}", w[0], w[1]);
        assert!(grid.movement() == Movement::Octile || dx == 0 || dy == 0);
    }
}

#[test]
fn jps_on_patched_grids() {
    let mut rng = StdRng::seed_from_u64(77);
    let mut s = Searcher::new();
    let mut grid = random_grid(&mut rng, 64, 48, 0.2, false, Movement::Octile);
    for round in 0..40 {
        let (x, y) = (rng.random_range(0..60), rng.random_range(0..44));
        let patch = Patch {
            cells: vec![],
            rects: vec![Rect {
                x,
                y,
                width: rng.random_range(1..=4),
                height: rng.random_range(1..=4),
                cost: if rng.random_bool(0.6) { 0 } else { 1 },
            }],
        };
        if let Some((next, _)) = grid.apply_patch(&patch).unwrap() {
            grid = next;
        }
        for _ in 0..5 {
            let (start, goal) = (
                random_passable(&mut rng, &grid).unwrap(),
                random_passable(&mut rng, &grid).unwrap(),
            );
            let r = s
                .find_path(
                    &grid,
                    &Query::new(start, goal).with_algorithm(Algorithm::Jps),
                )
                .unwrap();
            match reference(&grid, start, goal) {
                None => assert_eq!(r.status, Status::NoPath),
                Some((cost, _)) => {
                    assert!((r.cost - cost).abs() < 1e-9 * (1.0 + cost), "round {round}");
                    check_path(&grid, &r.path, start, goal, r.cost).unwrap();
                }
            }
        }
    }
    // A patch that adds terrain cost makes the map weighted: JPS no longer applies.
    let p = random_passable(&mut rng, &grid).unwrap();
    let (weighted, _) = grid
        .apply_patch(&Patch {
            cells: vec![(p, 9)],
            rects: vec![],
        })
        .unwrap()
        .unwrap();
    let q = Query::new(p, p).with_algorithm(Algorithm::Jps);
    assert!(matches!(
        s.find_path(&weighted, &q),
        Err(QueryError::NotApplicable {
            algorithm: Algorithm::Jps,
            ..
        })
    ));
    assert_eq!(resolve_auto(&weighted), Algorithm::AStar);
    assert_eq!(resolve_auto(&grid), Algorithm::Jps);
    let r = s
        .find_path(&weighted, &q.clone().with_algorithm(Algorithm::Auto))
        .unwrap();
    assert_eq!(r.algorithm, Algorithm::AStar);
}

#[test]
fn jps_limits_partial_and_debug() {
    // A comb: many jump points between the corners.
    let mut costs = vec![1u8; 60 * 40];
    for x in (3..57).step_by(4) {
        for y in 0..36 {
            costs[(if x % 8 == 3 { y } else { y + 4 }) * 60 + x] = 0;
        }
    }
    let grid = Grid::from_costs(60, 40, costs, Movement::Octile).unwrap();
    let (s, g) = (Point::new(0, 0), Point::new(59, 39));
    let mut searcher = Searcher::new();
    let full = searcher
        .find_path(&grid, &Query::new(s, g).with_algorithm(Algorithm::Jps))
        .unwrap();
    assert_eq!(full.status, Status::Found);
    assert!(full.stats.expanded > 10);
    let astar = searcher.find_path(&grid, &Query::new(s, g)).unwrap();
    assert!((full.cost - astar.cost).abs() < 1e-9);
    assert!(full.stats.expanded * 4 < astar.stats.expanded);

    let mut q = Query::new(s, g).with_algorithm(Algorithm::Jps);
    q.limits = Limits {
        max_expansions: Some(5),
        ..Limits::default()
    };
    q.debug_cap = 3;
    let r = searcher.find_path(&grid, &q).unwrap();
    assert_eq!(r.status, Status::LimitReached);
    assert_eq!(r.stats.expanded, 5);
    assert!(r.path.is_empty() && r.waypoints.is_none());
    assert_eq!(r.expanded_cells.len(), 3);
    assert_eq!(r.expanded_cells[0], s);

    q.partial = true;
    let r = searcher.find_path(&grid, &q).unwrap();
    assert_eq!(r.status, Status::Partial);
    let end = *r.path.last().unwrap();
    check_path(&grid, &r.path, s, end, r.cost).unwrap();
    assert!(grid.heuristic(end, g) < grid.heuristic(s, g));

    // Same query, same answer.
    let again = Searcher::new()
        .find_path(&grid, &Query::new(s, g).with_algorithm(Algorithm::Jps))
        .unwrap();
    assert_eq!(again.path, full.path);
    assert_eq!(again.waypoints, full.waypoints);
}

#[test]
fn jps_needs_a_uniform_map_and_theta_an_octile_one() {
    let weighted = Grid::from_costs(3, 1, vec![1, 5, 1], Movement::Octile).unwrap();
    let q = Query::new(Point::new(0, 0), Point::new(2, 0));
    let err =
        pathd_engine::find_path(&weighted, &q.clone().with_algorithm(Algorithm::Jps)).unwrap_err();
    assert!(err.to_string().contains("jps"), "{err}");
    let cardinal = Grid::from_costs(3, 1, vec![1, 1, 1], Movement::Cardinal).unwrap();
    assert!(matches!(
        pathd_engine::find_path(&cardinal, &q.clone().with_algorithm(Algorithm::Theta)),
        Err(QueryError::NotApplicable {
            algorithm: Algorithm::Theta,
            ..
        })
    ));
    // Theta* does run on weighted octile maps; JPS on cardinal ones.
    assert!(
        pathd_engine::find_path(&weighted, &q.clone().with_algorithm(Algorithm::Theta)).is_ok()
    );
    let r = pathd_engine::find_path(&cardinal, &q.with_algorithm(Algorithm::Jps)).unwrap();
    assert_eq!(r.cost, 2.0);
}

#[test]
fn theta_and_smoothing_on_random_maps() {
    let mut rng = StdRng::seed_from_u64(0x7e7a);
    let mut s = Searcher::new();
    let (mut compared, mut worst) = (0, 0.0f64);
    for case in 0..500 {
        let weighted = case % 3 == 2;
        let grid = random_map(&mut rng, case, weighted, Movement::Octile);
        let (Some(start), Some(goal)) = (
            random_passable(&mut rng, &grid),
            random_passable(&mut rng, &grid),
        ) else {
            continue;
        };
        let Some((optimal, _)) = reference(&grid, start, goal) else {
            continue;
        };
        let ctx = || show(&grid, start, goal, &[]);

        // Theta*: a legal cell path under its any-angle polyline, never above the optimum.
        let theta = s
            .find_path(
                &grid,
                &Query::new(start, goal).with_algorithm(Algorithm::Theta),
            )
            .unwrap();
        assert_eq!(theta.status, Status::Found);
        check_path(&grid, &theta.path, start, goal, theta.cost).unwrap();
        let vertices = theta.waypoints.as_deref().unwrap();
        let truth = check_polyline(&grid, vertices, start, goal)
            .unwrap_or_else(|e| panic!("case {case} theta: {e}\n{}", ctx()));
        let length = theta.smoothed_length.unwrap();
        assert!(close(length, truth), "case {case}: {length} vs {truth}");
        assert!(
            length <= optimal + 1e-9,
            "case {case}: theta {length} > optimum {optimal}"
        );

        // Smoothing, on every algorithm that applies.
        let algs: &[Algorithm] = if grid.is_uniform() {
            &[
                Algorithm::AStar,
                Algorithm::Jps,
                Algorithm::Dijkstra,
                Algorithm::Theta,
            ]
        } else {
            &[Algorithm::AStar, Algorithm::WeightedAStar, Algorithm::Theta]
        };
        for &alg in algs {
            let mut q = Query::new(start, goal)
                .with_algorithm(alg)
                .with_smooth(true);
            q.weight = 2.0;
            let r = s.find_path(&grid, &q).unwrap();
            check_path(&grid, &r.path, start, goal, r.cost).unwrap();
            let corners = r.waypoints.as_deref().unwrap();
            let truth = check_polyline(&grid, corners, start, goal)
                .unwrap_or_else(|e| panic!("case {case} {alg} smoothed: {e}\n{}", ctx()));
            let len = r.smoothed_length.unwrap();
            assert!(
                close(len, truth),
                "case {case} {alg}: reported {len}, segments {truth}"
            );
            let unsmoothed = if alg == Algorithm::Theta {
                length
            } else {
                r.cost
            };
            assert!(
                len <= unsmoothed + 1e-9 * (1.0 + unsmoothed),
                "case {case} {alg}: smoothed {len} > {unsmoothed}"
            );
            if alg == Algorithm::AStar && grid.is_uniform() {
                let excess = (length - len) / len.max(1.0);
                worst = worst.max(excess);
                assert!(
                    excess <= THETA_VS_SMOOTHED_ASTAR,
                    "case {case}: theta {length} vs smoothed A* {len}\n{}",
                    ctx()
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 200, "only {compared} compared");
    eprintln!("theta vs smoothed A*: worst excess {:.4}%", worst * 100.0);
}

#[test]
fn smoothing_on_cardinal_maps_merges_straight_runs() {
    let mut rng = StdRng::seed_from_u64(5);
    let mut s = Searcher::new();
    for case in 0..200 {
        let grid = random_map(&mut rng, case, case % 2 == 0, Movement::Cardinal);
        let (Some(start), Some(goal)) = (
            random_passable(&mut rng, &grid),
            random_passable(&mut rng, &grid),
        ) else {
            continue;
        };
        let r = s
            .find_path(&grid, &Query::new(start, goal).with_smooth(true))
            .unwrap();
        if r.status != Status::Found {
            continue;
        }
        let corners = r.waypoints.as_deref().unwrap();
        let truth = check_polyline(&grid, corners, start, goal).unwrap();
        let len = r.smoothed_length.unwrap();
        assert!(close(len, truth) && len <= r.cost + 1e-9, "case {case}");
        for w in corners.windows(2) {
            assert!(w[0].x == w[1].x || w[0].y == w[1].y);
        }
        if grid.is_uniform() {
            assert!(close(len, r.cost));
        }
    }
}

#[test]
fn smoothing_pulls_round_a_corner() {
    // An L-shaped room: the smoothed path keeps exactly the inner corner.
    let rows = ["......", "......", "@@@@..", "@@@@..", "@@@@.."];
    let costs = rows
        .iter()
        .flat_map(|r| r.bytes().map(|b| u8::from(b == b'.')))
        .collect();
    let grid = Grid::from_costs(6, 5, costs, Movement::Octile).unwrap();
    let (start, goal) = (Point::new(0, 0), Point::new(4, 4));
    for alg in [Algorithm::AStar, Algorithm::Jps, Algorithm::Theta] {
        let r = pathd_engine::find_path(
            &grid,
            &Query::new(start, goal)
                .with_algorithm(alg)
                .with_smooth(true),
        )
        .unwrap();
        let corners = r.waypoints.unwrap();
        assert_eq!(corners.len(), 3, "{alg}: {corners:?}");
        assert_eq!(corners[1], Point::new(4, 1), "{alg}: {corners:?}");
        let want = 17f64.sqrt() + 3.0;
        assert!((r.smoothed_length.unwrap() - want).abs() < 1e-9, "{alg}");
    }
    // Unsmoothed A* has neither.
    let r = pathd_engine::find_path(&grid, &Query::new(start, goal)).unwrap();
    assert!(r.waypoints.is_none() && r.smoothed_length.is_none());
}

#[test]
fn los_never_squeezes_between_diagonal_walls() {
    // . @
    // @ .   the diagonal between two walls is closed, so is any segment through that corner.
    let grid = Grid::from_costs(
        4,
        4,
        vec![1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1],
        Movement::Octile,
    )
    .unwrap();
    let (start, goal) = (Point::new(1, 1), Point::new(3, 3));
    let r = pathd_engine::find_path(
        &grid,
        &Query::new(start, goal).with_algorithm(Algorithm::Theta),
    )
    .unwrap();
    let vertices = r.waypoints.unwrap();
    assert!(vertices.len() >= 3, "{vertices:?}");
    check_polyline(&grid, &vertices, start, goal).unwrap();
    assert!(!sees(&grid, start, goal));
}

#[test]
fn theta_on_moving_ai_maps() {
    // A sample of maps of every kind; Theta* never longer than the octile optimum, every
    // segment clear, the cell path legal.
    let mut s = Searcher::new();
    let (mut checked, mut worst) = (0, 0.0f64);
    for map in [
        "arena2",
        "den520d",
        "maze512-1-0",
        "16room_000",
        "Berlin_0_256",
        "AR0011SR",
    ] {
        let grid = load_map(&format!("{map}.map"));
        let rows = load_scen(&format!("{map}.map.scen"));
        for row in crate::common::sample(&rows, 12)
            .iter()
            .filter(|r| !r.unreachable())
        {
            let r = s
                .find_path(
                    &grid,
                    &Query::new(row.start, row.goal).with_algorithm(Algorithm::Theta),
                )
                .unwrap();
            assert_eq!(r.status, Status::Found, "{map} {row:?}");
            check_path(&grid, &r.path, row.start, row.goal, r.cost).unwrap();
            let len = r.smoothed_length.unwrap();
            let truth = check_polyline(&grid, r.waypoints.as_deref().unwrap(), row.start, row.goal)
                .unwrap_or_else(|e| panic!("{map} {row:?}: {e}"));
            assert!(close(len, truth));
            assert!(
                len <= row.optimal + 6e-3 + 1e-5 * row.optimal,
                "{map} {row:?}: {len}"
            );
            let smoothed = s
                .find_path(&grid, &Query::new(row.start, row.goal).with_smooth(true))
                .unwrap();
            let astar_len = smoothed.smoothed_length.unwrap();
            let excess = (len - astar_len) / astar_len.max(1.0);
            worst = worst.max(excess);
            assert!(
                excess <= THETA_VS_SMOOTHED_ASTAR,
                "{map} {row:?}: theta {len} vs smoothed A* {astar_len}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 6 * crate::common::sample_size(12));
    eprintln!(
        "Moving AI: theta vs smoothed A*: worst excess {:.4}%",
        worst * 100.0
    );
}

#[test]
fn jps_alternating_grids_of_one_size() {
    // One searcher, six same-sized maps in turn (more than it caches): every answer must come
    // from the map asked about, never from another map's cached planes.
    let mut rng = StdRng::seed_from_u64(31);
    let grids: Vec<Grid> = (0..6)
        .map(|_| random_grid(&mut rng, 40, 30, 0.3, false, Movement::Octile))
        .collect();
    let mut s = Searcher::new();
    for round in 0..120 {
        let grid = &grids[rng.random_range(0..grids.len())];
        let (start, goal) = (
            random_passable(&mut rng, grid).unwrap(),
            random_passable(&mut rng, grid).unwrap(),
        );
        let r = s
            .find_path(
                grid,
                &Query::new(start, goal).with_algorithm(Algorithm::Jps),
            )
            .unwrap();
        match reference(grid, start, goal) {
            None => assert_eq!(r.status, Status::NoPath),
            Some((cost, _)) => {
                assert!((r.cost - cost).abs() < 1e-9 * (1.0 + cost), "round {round}");
                check_path(grid, &r.path, start, goal, r.cost).unwrap();
            }
        }
    }
}
