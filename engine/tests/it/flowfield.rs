//! Flow fields and agent sizes against an independent reference: a Dijkstra from the goal
//! written here, on the map eroded for the agent's footprint (computed cell by cell, not
//! from the clearance annotation), restricted to the field's region. Before and after random
//! patch sequences, on seeded random maps, octile and cardinal, uniform and weighted.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use pathd_engine::{
    AT_GOAL, Clearance, FlowField, FlowSpec, Grid, MAX_AGENT_SIZE, Movement, Patch, Point, Rect,
    Region, UNREACHABLE,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Whether a `k x k` agent anchored at `p` stands on passable cells only (cell by cell).
fn fits(grid: &Grid, p: Point, k: u32) -> bool {
    (0..k).all(|dy| (0..k).all(|dx| grid.is_passable(Point::new(p.x + dx, p.y + dy))))
}

/// The step cost from `a` to `b` for a `k x k` agent inside `region` (anchor costs, the
/// Moving AI rule on the eroded map), if legal.
fn step(grid: &Grid, region: Region, k: u32, a: Point, b: Point) -> Option<f64> {
    let ok = |p: Point| region.contains(p) && fits(grid, p, k);
    if !ok(a) || !ok(b) {
        return None;
    }
    let dx = b.x as i64 - a.x as i64;
    let dy = b.y as i64 - a.y as i64;
    let half = (grid.cost(a) as f64 + grid.cost(b) as f64) / 2.0;
    match (dx.abs(), dy.abs()) {
        (1, 0) | (0, 1) => Some(half),
        (1, 1) if grid.movement() == Movement::Octile => (ok(Point::new(b.x, a.y))
            && ok(Point::new(a.x, b.y)))
        .then_some(std::f64::consts::SQRT_2 * half),
        _ => None,
    }
}

/// Reference Dijkstra from the goal: cost per region cell (`inf` when unreachable or dearer
/// than `max_cost`).
fn reference(grid: &Grid, region: Region, goal: Point, k: u32, max_cost: f64) -> Vec<f64> {
    let mut dist = vec![f64::INFINITY; region.cells()];
    if !region.contains(goal) || !fits(grid, goal, k) {
        return dist;
    }
    let mut heap = BinaryHeap::new();
    dist[region.index(goal)] = 0.0;
    heap.push(Reverse((0u64, region.index(goal))));
    while let Some(Reverse((bits, i))) = heap.pop() {
        let g = f64::from_bits(bits);
        if g > dist[i] {
            continue;
        }
        let p = region.point(i);
        for dy in -1i64..=1 {
            for dx in -1i64..=1 {
                let (x, y) = (p.x as i64 + dx, p.y as i64 + dy);
                if (dx, dy) == (0, 0) || x < 0 || y < 0 {
                    continue;
                }
                let q = Point::new(x as u32, y as u32);
                if let Some(s) = step(grid, region, k, p, q) {
                    let j = region.index(q);
                    if g + s < dist[j] && g + s <= max_cost {
                        dist[j] = g + s;
                        heap.push(Reverse(((g + s).to_bits(), j)));
                    }
                }
            }
        }
    }
    dist
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

/// Every cell's cost equals the reference; following directions from every reachable cell
/// reaches the goal at exactly (up to rounding) that cost.
fn check(grid: &Grid, f: &FlowField, what: &str) {
    let r = f.region();
    let want = reference(grid, r, f.goal(), f.size(), f.max_cost());
    for (i, &w) in want.iter().enumerate() {
        let p = r.point(i);
        let got = f.costs()[i];
        assert!(
            got == w || close(got, w),
            "{what}: cost at {p}: field {got}, reference {w}"
        );
        let d = f.directions()[i];
        if !w.is_finite() {
            assert_eq!(d, UNREACHABLE, "{what}: direction at unreachable {p}");
            continue;
        }
        // Follow the directions.
        let (mut cur, mut sum, mut steps) = (p, 0.0, 0usize);
        while f.direction_at(cur) != AT_GOAL {
            let next = f
                .next(cur)
                .unwrap_or_else(|| panic!("{what}: dead end at {cur} from {p}"));
            sum += step(grid, r, f.size(), cur, next)
                .unwrap_or_else(|| panic!("{what}: illegal step {cur} -> {next} from {p}"));
            cur = next;
            steps += 1;
            assert!(steps <= r.cells(), "{what}: direction cycle from {p}");
        }
        assert_eq!(cur, f.goal());
        assert!(
            close(sum, w),
            "{what}: following from {p} costs {sum}, field says {w}"
        );
    }
}

fn random_patch(rng: &mut StdRng, grid: &Grid, weighted: bool) -> Patch {
    let cost = |rng: &mut StdRng| {
        if rng.random_bool(0.45) {
            0
        } else if weighted {
            rng.random_range(1..=9)
        } else {
            1
        }
    };
    let mut p = Patch::default();
    for _ in 0..rng.random_range(1..=4) {
        let c = Point::new(
            rng.random_range(0..grid.width()),
            rng.random_range(0..grid.height()),
        );
        p.cells.push((c, cost(rng)));
    }
    if rng.random_bool(0.3) {
        let x = rng.random_range(0..grid.width());
        let y = rng.random_range(0..grid.height());
        p.rects.push(Rect {
            x,
            y,
            width: rng.random_range(1..=(grid.width() - x).min(4)),
            height: rng.random_range(1..=(grid.height() - y).min(4)),
            cost: cost(rng),
        });
    }
    p
}

/// Runs `rounds` random maps with `patches` random patches each for agent sizes `sizes`.
fn fields_under_patches(seed: u64, sizes: &[u32], rounds: usize, patches: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    for round in 0..rounds {
        let movement = if round % 2 == 0 {
            Movement::Octile
        } else {
            Movement::Cardinal
        };
        let weighted = round % 4 >= 2;
        let (w, h) = (rng.random_range(4..28), rng.random_range(4..28));
        let mut grid = crate::common::random_grid(&mut rng, w, h, 0.2, weighted, movement);
        let k = sizes[round % sizes.len()];
        // A goal the agent fits at (skip maps without one).
        let goals: Vec<Point> = (0..w * h)
            .map(|i| Point::new(i % w, i / w))
            .filter(|&p| fits(&grid, p, k))
            .collect();
        if goals.is_empty() {
            continue;
        }
        let goal = goals[rng.random_range(0..goals.len())];
        let region = if rng.random_bool(0.5) {
            None
        } else {
            let x = rng.random_range(0..=goal.x);
            let y = rng.random_range(0..=goal.y);
            Some(Region {
                x,
                y,
                width: rng.random_range(goal.x - x + 1..=w - x),
                height: rng.random_range(goal.y - y + 1..=h - y),
            })
        };
        let max_cost = rng.random_bool(0.3).then(|| rng.random_range(3.0..40.0));
        let spec = FlowSpec {
            goal,
            region,
            max_cost,
            size: k,
        };
        let mut f = FlowField::new(&grid, &spec).unwrap();
        let what = format!("seed {seed} round {round} {w}x{h} {movement:?} k={k}");
        check(&grid, &f, &what);
        for n in 0..patches {
            let patch = random_patch(&mut rng, &grid, weighted);
            let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                continue;
            };
            // Some versions skip their clearance, so later ones derive across several.
            if rng.random_bool(0.7) {
                next.clearance();
            }
            let before = f.clone();
            let reported = f.update(&next, &changed);
            grid = next;
            let what = format!("{what} patch {n}");
            check(&grid, &f, &what);
            // The reported cells are exactly those whose cost or direction changed.
            let r = f.region();
            for i in 0..r.cells() {
                let p = r.point(i);
                let differs = before.directions()[i] != f.directions()[i]
                    || before.costs()[i].to_bits() != f.costs()[i].to_bits();
                assert_eq!(
                    differs,
                    reported
                        .binary_search_by_key(&(p.y, p.x), |q| (q.y, q.x))
                        .is_ok(),
                    "{what}: change at {p} reported wrongly"
                );
            }
            // And the costs equal a fresh computation's.
            if let Ok(fresh) = FlowField::new(&grid, &spec) {
                for i in 0..r.cells() {
                    let (a, b) = (f.costs()[i], fresh.costs()[i]);
                    assert!(a == b || close(a, b), "{what}: repaired {a} vs fresh {b}");
                }
            }
        }
    }
}

#[test]
fn flow_fields_match_reference_before_and_after_random_patches() {
    for seed in 0..6 {
        fields_under_patches(seed, &[1], 24, 12);
    }
}

#[test]
fn sized_flow_fields_match_eroded_reference_after_random_patches() {
    for seed in 100..104 {
        fields_under_patches(seed, &[2, 3, 1, 4], 24, 10);
    }
}

#[test]
fn clearance_after_random_patches_equals_a_fresh_computation() {
    let mut rng = StdRng::seed_from_u64(7);
    for round in 0..20 {
        let (w, h) = (rng.random_range(1..40), rng.random_range(1..40));
        let mut grid = crate::common::random_grid(&mut rng, w, h, 0.15, false, Movement::Octile);
        grid.clearance();
        for n in 0..15 {
            let patch = random_patch(&mut rng, &grid, false);
            if let Some((next, _)) = grid.apply_patch(&patch).unwrap() {
                grid = next;
            }
            if rng.random_bool(0.6) {
                let fresh = Clearance::build(&grid);
                for y in 0..h {
                    for x in 0..w {
                        let p = Point::new(x, y);
                        let want = (1..=MAX_AGENT_SIZE)
                            .take_while(|&k| fits(&grid, p, k))
                            .last()
                            .unwrap_or(0);
                        assert_eq!(grid.clearance().at(p), want, "round {round} patch {n} {p}");
                        assert_eq!(fresh.at(p), want, "fresh, round {round} {p}");
                    }
                }
            }
        }
    }
}

#[test]
fn field_errors() {
    let g = Grid::from_costs(4, 2, vec![1, 1, 0, 1, 1, 1, 1, 1], Movement::Octile).unwrap();
    let spec = |goal, size| FlowSpec {
        size,
        ..FlowSpec::new(goal)
    };
    assert!(FlowField::new(&g, &spec(Point::new(2, 0), 1)).is_err());
    assert!(FlowField::new(&g, &spec(Point::new(9, 0), 1)).is_err());
    assert!(FlowField::new(&g, &spec(Point::new(0, 0), 0)).is_err());
    assert!(FlowField::new(&g, &spec(Point::new(0, 0), 9)).is_err());
    // (1,0)'s 2x2 square holds the wall at (2,0); (0,0)'s does not.
    assert!(FlowField::new(&g, &spec(Point::new(1, 0), 2)).is_err());
    let f = FlowField::new(&g, &spec(Point::new(0, 0), 2)).unwrap();
    assert_eq!(f.direction_at(Point::new(0, 1)), UNREACHABLE);
    assert_eq!(f.direction_at(Point::new(2, 0)), UNREACHABLE);
    let region = Region {
        x: 1,
        y: 0,
        width: 4,
        height: 1,
    };
    let bad = FlowSpec {
        region: Some(region),
        ..FlowSpec::new(Point::new(1, 0))
    };
    assert!(FlowField::new(&g, &bad).is_err());
}

/// Repair versus fresh computation on benchmark maps: random single-cell walls dropped at
/// random passable cells. Prints the medians (run with `--ignored --nocapture`).
#[test]
#[ignore = "measurement"]
fn measure_repair_against_fresh() {
    use std::time::Instant;
    for name in ["den520d.map", "Berlin_1_1024.map", "16room_000.map"] {
        let mut grid = crate::common::load_map(name);
        let mut rng = StdRng::seed_from_u64(1);
        let goal = crate::common::random_passable(&mut rng, &grid).unwrap();
        let spec = FlowSpec::new(goal);
        let t = Instant::now();
        let mut f = FlowField::new(&grid, &spec).unwrap();
        let fresh = t.elapsed();
        let (mut times, mut touched) = (Vec::new(), Vec::new());
        for _ in 0..200 {
            let p = crate::common::random_passable(&mut rng, &grid).unwrap();
            let cost = if rng.random_bool(0.5) { 0 } else { 1 };
            let patch = Patch {
                cells: vec![(p, cost)],
                rects: vec![],
            };
            let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                continue;
            };
            let t = Instant::now();
            let out = f.update(&next, &changed);
            times.push(t.elapsed());
            touched.push(f.stats().expanded as usize + f.stats().invalidated as usize);
            grid = next;
            let _ = out;
        }
        times.sort();
        touched.sort();
        let n = times.len();
        println!(
            "{name}: fresh {:?} ({} cells); repair p50 {:?} p90 {:?} max {:?}; cells touched p50 {} p90 {}",
            fresh,
            grid.passable_cells(),
            times[n / 2],
            times[n * 9 / 10],
            times[n - 1],
            touched[n / 2],
            touched[n * 9 / 10],
        );
    }
}

/// Checks a sized query's answer against the eroded reference: same cost (or both without a
/// path), and every step legal for the footprint.
fn check_sized_path(
    grid: &Grid,
    k: u32,
    start: Point,
    goal: Point,
    path: &[Point],
    cost: Option<f64>,
    what: &str,
) {
    let whole = Region {
        x: 0,
        y: 0,
        width: grid.width(),
        height: grid.height(),
    };
    let want = reference(grid, whole, goal, k, f64::INFINITY)[whole.index(start)];
    match cost {
        None => assert!(!want.is_finite(), "{what}: no path, reference {want}"),
        Some(c) => {
            assert!(close(c, want), "{what}: cost {c}, reference {want}");
            assert_eq!(
                (path.first(), path.last()),
                (Some(&start), Some(&goal)),
                "{what}"
            );
            let mut sum = 0.0;
            for s in path.windows(2) {
                sum += step(grid, whole, k, s[0], s[1]).unwrap_or_else(|| {
                    panic!("{what}: step {} -> {} illegal for {k}x{k}", s[0], s[1])
                });
            }
            assert!(close(sum, c), "{what}: steps sum {sum}, cost {c}");
        }
    }
}

#[test]
fn sized_queries_and_dstar_match_the_eroded_reference_under_patches() {
    use pathd_engine::{Algorithm, DStarLite, Limits, Query, Status, find_path};
    let mut rng = StdRng::seed_from_u64(42);
    let mut checked = 0;
    for round in 0..40 {
        let movement = if round % 2 == 0 {
            Movement::Octile
        } else {
            Movement::Cardinal
        };
        let weighted = round % 4 >= 2;
        let (w, h) = (rng.random_range(6..30), rng.random_range(6..30));
        let mut grid = crate::common::random_grid(&mut rng, w, h, 0.12, weighted, movement);
        let k = 1 + round as u32 % 4;
        let anchors: Vec<Point> = (0..w * h)
            .map(|i| Point::new(i % w, i / w))
            .filter(|&p| fits(&grid, p, k))
            .collect();
        if anchors.len() < 2 {
            continue;
        }
        let start = anchors[rng.random_range(0..anchors.len())];
        let goal = anchors[rng.random_range(0..anchors.len())];
        let mut dstar = DStarLite::new_sized(&grid, start, goal, k, Limits::default()).unwrap();
        for n in 0..8 {
            let what = format!("round {round} {w}x{h} {movement:?} k={k} patch {n}");
            for algorithm in [Algorithm::AStar, Algorithm::Dijkstra, Algorithm::Auto] {
                let q = Query {
                    size: k,
                    ..Query::new(start, goal).with_algorithm(algorithm)
                };
                match find_path(&grid, &q) {
                    Ok(r) => {
                        let cost = (r.status == Status::Found).then_some(r.cost);
                        check_sized_path(
                            &grid,
                            k,
                            start,
                            goal,
                            &r.path,
                            cost,
                            &format!("{what} {algorithm}"),
                        );
                        checked += 1;
                    }
                    Err(e) => {
                        // A patch walled the start or goal in for this footprint.
                        assert!(
                            !fits(&grid, start, k) || !fits(&grid, goal, k),
                            "{what}: {e}"
                        );
                    }
                }
            }
            match dstar.path() {
                Some((p, c)) => {
                    check_sized_path(&grid, k, start, goal, p, Some(c), &format!("{what} dstar"))
                }
                None if fits(&grid, start, k) && fits(&grid, goal, k) => {
                    check_sized_path(&grid, k, start, goal, &[], None, &format!("{what} dstar"))
                }
                None => {}
            }
            let patch = random_patch(&mut rng, &grid, weighted);
            if let Some((next, changed)) = grid.apply_patch(&patch).unwrap() {
                dstar.update(&next, &changed);
                grid = next;
            }
        }
    }
    assert!(checked > 300, "only {checked} sized queries checked");
}

#[test]
fn gaps_narrower_than_the_agent_are_never_taken() {
    use pathd_engine::{Algorithm, Query, QueryError, Status, find_path};
    // A wall across column 6 with a 2-row gap at rows 4-5; the other way round is long.
    let (w, h) = (12u32, 12u32);
    let mut costs = vec![1u8; (w * h) as usize];
    for y in 0..h {
        if !(4..6).contains(&y) {
            costs[(y * w + 6) as usize] = 0;
        }
    }
    let grid = Grid::from_costs(w, h, costs, Movement::Octile).unwrap();
    let q = |k| Query {
        size: k,
        ..Query::new(Point::new(0, 0), Point::new(9, 0))
    };
    let two = find_path(&grid, &q(2)).unwrap();
    assert_eq!(two.status, Status::Found);
    assert!(
        two.path.iter().any(|p| p.x == 6 && p.y == 4),
        "{:?}",
        two.path
    );
    let three = find_path(&grid, &q(3)).unwrap();
    assert_eq!(three.status, Status::NoPath);
    // Unsupported algorithms and options say why.
    for a in [Algorithm::Jps, Algorithm::Theta, Algorithm::Hpa] {
        let e = find_path(&grid, &q(2).with_algorithm(a)).unwrap_err();
        assert!(matches!(e, QueryError::NotApplicable { .. }), "{e}");
    }
    assert!(matches!(
        find_path(&grid, &q(2).with_smooth(true)),
        Err(QueryError::NotApplicable { .. })
    ));
    assert_eq!(
        find_path(&grid, &q(9)).unwrap_err(),
        QueryError::InvalidSize(9)
    );
    // (5,0)'s 2x2 footprint holds the wall at (6,0).
    let bad = Query {
        size: 2,
        ..Query::new(Point::new(5, 0), Point::new(9, 0))
    };
    assert!(matches!(
        find_path(&grid, &bad),
        Err(QueryError::DoesNotFit { which: "start", .. })
    ));
}

/// Clearance build and per-patch derivation, and sized A* against size-1 A*, on benchmark
/// maps (run with `--ignored --nocapture`).
#[test]
#[ignore = "measurement"]
fn measure_clearance_and_sized_search() {
    use pathd_engine::{Query, Searcher, Status};
    use std::time::{Duration, Instant};
    for name in ["den520d.map", "Berlin_1_1024.map", "16room_000.map"] {
        let mut grid = crate::common::load_map(name);
        let t = Instant::now();
        grid.clearance();
        let build = t.elapsed();
        let mut rng = StdRng::seed_from_u64(3);
        let mut derive = Vec::new();
        for _ in 0..100 {
            let p = crate::common::random_passable(&mut rng, &grid).unwrap();
            let patch = Patch {
                cells: vec![(p, if rng.random_bool(0.5) { 0 } else { 1 })],
                rects: vec![],
            };
            if let Some((next, _)) = grid.apply_patch(&patch).unwrap() {
                let t = Instant::now();
                next.clearance();
                derive.push(t.elapsed());
                grid = next;
            }
        }
        derive.sort();
        let mut searcher = Searcher::new();
        let mut times = [Duration::ZERO; 3];
        let mut found = [0; 3];
        for _ in 0..100 {
            let a = crate::common::random_passable(&mut rng, &grid).unwrap();
            let b = crate::common::random_passable(&mut rng, &grid).unwrap();
            for (i, k) in [1u32, 2, 4].into_iter().enumerate() {
                let q = Query {
                    size: k,
                    ..Query::new(a, b)
                };
                let t = Instant::now();
                if let Ok(r) = searcher.find_path(&grid, &q) {
                    found[i] += usize::from(r.status == Status::Found);
                }
                times[i] += t.elapsed();
            }
        }
        println!(
            "{name}: clearance build {build:?}, derive after a 1-cell patch p50 {:?} max {:?}; \
             A* mean over 100 random pairs: size 1 {:?} ({} found), size 2 {:?} ({}), size 4 {:?} ({})",
            derive[derive.len() / 2],
            derive[derive.len() - 1],
            times[0] / 100,
            found[0],
            times[1] / 100,
            found[1],
            times[2] / 100,
            found[2],
        );
    }
}
