//! The questions games ask (`pathd_engine::targets`), each against a brute force on seeded
//! random maps (weighted and not, both movement rules): many goals against the minimum of
//! separate queries, ranges and flights against a reference Dijkstra from the start minimised
//! over the qualifying cells, snapping against a scan of the whole map.

use crate::common::{check_path, random_grid, random_passable, reference_all, show};
use pathd_engine::targets::{Target, nearest_usable, snap_ends, usable};
use pathd_engine::{Algorithm, Eroded, Grid, Movement, Point, Query, Searcher, Status};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn random_map(rng: &mut StdRng) -> Grid {
    let (w, h) = (rng.random_range(1..=40), rng.random_range(1..=40));
    let density = rng.random_range(0.0..0.45);
    let weighted = rng.random_bool(0.5);
    let movement = if rng.random_bool(0.5) {
        Movement::Octile
    } else {
        Movement::Cardinal
    };
    random_grid(rng, w, h, density, weighted, movement)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn at(grid: &Grid, d: &[f64], p: Point) -> f64 {
    d[p.y as usize * grid.width() as usize + p.x as usize]
}

fn cells(grid: &Grid) -> impl Iterator<Item = Point> + '_ {
    (0..grid.height()).flat_map(move |y| (0..grid.width()).map(move |x| Point::new(x, y)))
}

#[test]
fn goals_cost_the_minimum_of_separate_queries() {
    let mut rng = StdRng::seed_from_u64(0x6a3e5);
    let mut searcher = Searcher::new();
    let mut found = 0;
    for case in 0..300 {
        let grid = random_map(&mut rng);
        let Some(start) = random_passable(&mut rng, &grid) else {
            continue;
        };
        let size = if case % 5 == 0 { 2 } else { 1 };
        if !usable(&grid, start, size) {
            continue;
        }
        // Up to 40 goals: above 16 the estimate is the bounding box's.
        let k = rng.random_range(1..=40);
        let goals: Vec<Point> = (0..k)
            .filter_map(|_| random_passable(&mut rng, &grid))
            .filter(|&g| usable(&grid, g, size))
            .collect();
        if goals.is_empty() {
            continue;
        }
        let mut base = Query::new(start, goals[0]);
        base.size = size;
        let separate: Vec<Option<f64>> = goals
            .iter()
            .map(|&g| {
                let mut q = base.clone().with_algorithm(Algorithm::Dijkstra);
                q.goal = g;
                let r = searcher.find_path(&grid, &q).unwrap();
                (r.status == Status::Found).then_some(r.cost)
            })
            .collect();
        let best = separate
            .iter()
            .flatten()
            .copied()
            .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.min(c))));
        let target = Target::Any(goals.clone());
        for alg in [
            Algorithm::AStar,
            Algorithm::Dijkstra,
            Algorithm::Auto,
            Algorithm::WeightedAStar,
        ] {
            let mut q = base.clone().with_algorithm(alg);
            q.weight = 1.5;
            let r = searcher.find_target(&grid, &q, &target).unwrap();
            let ctx = || {
                format!(
                    "case {case} {alg} size {size} goals {goals:?}\n{}",
                    show(&grid, start, goals[0], &r.result.path)
                )
            };
            match best {
                None => assert_eq!(r.result.status, Status::NoPath, "{}", ctx()),
                Some(best) => {
                    assert_eq!(r.result.status, Status::Found, "{}", ctx());
                    let i = r.goal_index.expect("a found answer names its goal");
                    let end = goals[i];
                    assert_eq!(r.reached, Some(end));
                    // The first index among duplicates.
                    assert_eq!(goals.iter().position(|&g| g == end), Some(i));
                    check_path(&grid, &r.result.path, start, end, r.result.cost).unwrap();
                    if alg == Algorithm::WeightedAStar {
                        assert!(r.result.cost <= 1.5 * best + 1e-9, "{}", ctx());
                    } else {
                        assert!(
                            close(r.result.cost, best),
                            "{} got {} want {best}",
                            ctx(),
                            r.result.cost
                        );
                        assert!(close(separate[i].unwrap(), best));
                    }
                    found += 1;
                }
            }
        }
    }
    assert!(found > 400, "only {found} found answers");
}

/// Line of sight by sampling the segment between the crossings of grid lines (an
/// independent reading of the Theta* rule: crossed cell interiors open, and all four cells
/// open where it passes exactly through a corner).
fn sees(grid: &Grid, a: Point, b: Point) -> bool {
    if !grid.is_passable(a) || !grid.is_passable(b) {
        return false;
    }
    let (ax, ay) = (a.x as f64, a.y as f64);
    let (dx, dy) = (b.x as f64 - ax, b.y as f64 - ay);
    if grid.movement() == Movement::Cardinal && dx != 0.0 && dy != 0.0 {
        return false;
    }
    let open =
        |x: f64, y: f64| x >= 0.0 && y >= 0.0 && grid.is_passable(Point::new(x as u32, y as u32));
    let mut ts = vec![(0.0, false), (1.0, false)];
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let lines = |from: f64, d: f64, out: &mut Vec<f64>| {
        let (lo, hi) = (from.min(from + d), from.max(from + d));
        let mut k = lo.floor() + 0.5;
        while k < hi {
            if k > lo {
                out.push((k - from) / d);
            }
            k += 1.0;
        }
    };
    if dx != 0.0 {
        lines(ax, dx, &mut xs);
    }
    if dy != 0.0 {
        lines(ay, dy, &mut ys);
    }
    for &t in &xs {
        let corner = ys.iter().any(|&u| (u - t).abs() < 1e-9);
        ts.push((t, corner));
    }
    for &t in &ys {
        if !xs.iter().any(|&u| (u - t).abs() < 1e-9) {
            ts.push((t, false));
        }
    }
    ts.sort_by(|p, q| p.0.total_cmp(&q.0));
    for w in ts.windows(2) {
        let m = (w[0].0 + w[1].0) / 2.0;
        if !open((ax + m * dx + 0.5).floor(), (ay + m * dy + 0.5).floor()) {
            return false;
        }
    }
    for &(t, corner) in &ts {
        if corner {
            let (x, y) = (ax + t * dx, ay + t * dy);
            for (ox, oy) in [(-0.5, -0.5), (0.5, -0.5), (-0.5, 0.5), (0.5, 0.5)] {
                if !open((x + ox + 0.5).floor(), (y + oy + 0.5).floor()) {
                    return false;
                }
            }
        }
    }
    true
}

fn euclid(a: Point, b: Point) -> f64 {
    let (dx, dy) = (a.x.abs_diff(b.x) as f64, a.y.abs_diff(b.y) as f64);
    (dx * dx + dy * dy).sqrt()
}

#[test]
fn ranges_are_optimal_and_satisfy_their_condition() {
    let mut rng = StdRng::seed_from_u64(0x7a46e);
    let mut searcher = Searcher::new();
    let (mut found, mut seen) = (0, 0);
    for case in 0..400 {
        let grid = random_map(&mut rng);
        let Some(start) = random_passable(&mut rng, &grid) else {
            continue;
        };
        let goal = Point::new(
            rng.random_range(0..grid.width()),
            rng.random_range(0..grid.height()),
        );
        let visible = case % 2 == 1;
        if visible && !grid.is_passable(goal) {
            continue;
        }
        let radius = rng.random_range(0.0..8.0f64).floor() + [0.0, 0.5, 0.99][case % 3];
        // A 2x2 agent now and then: its moves are a one-cell agent's on the eroded map.
        let size = if case % 5 == 0 { 2 } else { 1 };
        if !usable(&grid, start, size) {
            continue;
        }
        let eroded = Eroded::build(&grid, size);
        let dist = reference_all(if size > 1 { eroded.grid() } else { &grid }, start);
        let ok = |p: Point| euclid(p, goal) <= radius && (!visible || sees(&grid, p, goal));
        let best = cells(&grid)
            .filter(|&p| ok(p))
            .map(|p| at(&grid, &dist, p))
            .fold(f64::INFINITY, f64::min);
        let target = Target::Near {
            goal,
            radius,
            visible,
        };
        for alg in [
            Algorithm::AStar,
            Algorithm::Dijkstra,
            Algorithm::WeightedAStar,
        ] {
            let mut q = Query::new(start, goal).with_algorithm(alg);
            q.weight = 2.0;
            q.size = size;
            let r = searcher.find_target(&grid, &q, &target).unwrap();
            let ctx = || {
                format!(
                    "case {case} {alg} size {size} goal {goal} r {radius} visible {visible}\n{}",
                    show(&grid, start, goal, &r.result.path)
                )
            };
            if best.is_infinite() {
                assert_eq!(r.result.status, Status::NoPath, "{}", ctx());
                continue;
            }
            assert_eq!(r.result.status, Status::Found, "{}", ctx());
            let end = r.reached.unwrap();
            assert!(ok(end), "{} ends at {end}", ctx());
            let walked = if size > 1 { eroded.grid() } else { &grid };
            check_path(walked, &r.result.path, start, end, r.result.cost).unwrap();
            if alg == Algorithm::WeightedAStar {
                assert!(r.result.cost <= 2.0 * best + 1e-9, "{}", ctx());
            } else {
                assert!(
                    close(r.result.cost, best),
                    "{} got {} want {best}",
                    ctx(),
                    r.result.cost
                );
            }
            found += 1;
            seen += usize::from(visible);
        }
    }
    assert!(found > 400 && seen > 100, "found {found}, visible {seen}");
}

#[test]
fn flights_are_optimal_and_get_far_enough() {
    let mut rng = StdRng::seed_from_u64(0xf1ee);
    let mut searcher = Searcher::new();
    let mut found = 0;
    for case in 0..400 {
        let grid = random_map(&mut rng);
        let Some(start) = random_passable(&mut rng, &grid) else {
            continue;
        };
        // The threat: usually open, sometimes a wall (then every cell is far enough).
        let from = if case % 7 == 0 {
            Point::new(
                rng.random_range(0..grid.width()),
                rng.random_range(0..grid.height()),
            )
        } else {
            random_passable(&mut rng, &grid).unwrap()
        };
        let distance = rng.random_range(0.0..40.0);
        let size = if case % 5 == 0 { 2 } else { 1 };
        if !usable(&grid, start, size) {
            continue;
        }
        // The threat is a one-cell unit; a 2x2 fleer moves on the eroded map.
        let eroded = Eroded::build(&grid, size);
        let walked = if size > 1 { eroded.grid() } else { &grid };
        let threat = reference_all(&grid, from);
        let dist = reference_all(walked, start);
        let best = cells(&grid)
            .filter(|&p| at(&grid, &threat, p) >= distance)
            .map(|p| at(&grid, &dist, p))
            .fold(f64::INFINITY, f64::min);
        let target = Target::Flee { from, distance };
        for alg in [Algorithm::Auto, Algorithm::AStar, Algorithm::WeightedAStar] {
            let mut q = Query::new(start, start).with_algorithm(alg);
            q.size = size;
            let r = searcher.find_target(&grid, &q, &target).unwrap();
            let ctx = || {
                format!(
                    "case {case} {alg} size {size} from {from} d {distance}\n{}",
                    show(&grid, start, from, &r.result.path)
                )
            };
            if best.is_infinite() {
                assert_eq!(r.result.status, Status::NoPath, "{}", ctx());
                continue;
            }
            assert_eq!(r.result.status, Status::Found, "{}", ctx());
            let end = r.reached.unwrap();
            assert!(at(&grid, &threat, end) >= distance, "{}", ctx());
            check_path(walked, &r.result.path, start, end, r.result.cost).unwrap();
            assert!(
                close(r.result.cost, best),
                "{} got {} want {best}",
                ctx(),
                r.result.cost
            );
            found += 1;
        }
    }
    assert!(found > 300, "only {found}");
}

/// The nearest usable cell by a scan of the whole map (ties: smaller y, then x).
fn brute_nearest(
    grid: &Grid,
    p: Point,
    r: u32,
    size: u32,
    accept: impl Fn(Point) -> bool,
) -> Option<Point> {
    let mut best: Option<(u64, u32, u32)> = None;
    for q in cells(grid) {
        if q.x.abs_diff(p.x) > r || q.y.abs_diff(p.y) > r || !usable(grid, q, size) || !accept(q) {
            continue;
        }
        let (dx, dy) = (q.x.abs_diff(p.x) as u64, q.y.abs_diff(p.y) as u64);
        let key = (dx * dx + dy * dy, q.y, q.x);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    best.map(|(_, y, x)| Point::new(x, y))
}

#[test]
fn snapping_finds_the_nearest_usable_cell_preferring_the_other_end() {
    let mut rng = StdRng::seed_from_u64(0x5a4b);
    let mut moved = 0;
    for case in 0..500 {
        let grid = random_map(&mut rng);
        let size = if case % 4 == 0 { 2 } else { 1 };
        let r = rng.random_range(0..6);
        let any = |g: &Grid| {
            Point::new(
                rng.random_range(0..g.width()),
                rng.random_range(0..g.height()),
            )
        };
        let mut any = any;
        let (start, goal) = (any(&grid), any(&grid));
        // nearest_usable against the scan.
        let want = brute_nearest(&grid, start, r, size, |_| true);
        assert_eq!(
            nearest_usable(&grid, start, r, size, |_| true).map(|x| x.0),
            want,
            "case {case}"
        );
        // snap_ends against the documented rule, spelled out over the scan.
        let comp = |p: Point| usable(&grid, p, size).then(|| grid.component(p)).flatten();
        let near = |p: Point, other: Point| {
            comp(other)
                .and_then(|c| brute_nearest(&grid, p, r, size, |q| grid.component(q) == Some(c)))
                .or_else(|| brute_nearest(&grid, p, r, size, |_| true))
        };
        let mut s = start;
        if !usable(&grid, s, size) {
            s = near(s, goal).unwrap_or(s);
        }
        let mut g = goal;
        if !usable(&grid, g, size) {
            g = near(g, s).unwrap_or(g);
        }
        if usable(&grid, s, size) && usable(&grid, g, size) && !grid.same_component(s, g) {
            let (cs, cg) = (grid.component(s), grid.component(g));
            if let Some(q) = brute_nearest(&grid, g, r, size, |q| grid.component(q) == cs) {
                g = q;
            } else if let Some(q) = brute_nearest(&grid, s, r, size, |q| grid.component(q) == cg) {
                s = q;
            }
        }
        let got = snap_ends(&grid, start, Some(goal), r, size);
        assert_eq!(
            (got.start, got.goal),
            (s, Some(g)),
            "case {case} size {size} r {r} {start} -> {goal}\n{}",
            show(&grid, start, goal, &[])
        );
        assert_eq!(got.moved, (s, g) != (start, goal));
        moved += usize::from(got.moved);
    }
    assert!(moved > 100, "only {moved} snaps moved");
}
