//! JPS+ and its jump table: a table updated through random patch sequences equals a fresh
//! build bit for bit, and JPS+ answers the reference Dijkstra's costs (random maps) and the
//! benchmarks' optimal lengths (Moving AI maps, sampled rows, also after patches), with and
//! without landmarks (also landmarks carried over patches that only block cells, and
//! updated after the others).

use crate::common::{
    check_path, load_map, load_scen, maps_with_scen, matches_optimal, random_grid, random_passable,
    reference, sample, show,
};
use pathd_engine::{
    Algorithm, Derived, Grid, JumpTable, Landmarks, Movement, Patch, Point, Query, QueryError,
    Rect, Searcher, Status,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The first cell whose entries differ, for failure messages.
fn first_difference(grid: &Grid, a: &JumpTable, b: &JumpTable) -> String {
    for y in 0..grid.height() {
        for x in 0..grid.width() {
            let p = Point::new(x, y);
            if a.entries(p) != b.entries(p) {
                return format!("{p}: updated {:?} fresh {:?}", a.entries(p), b.entries(p));
            }
        }
    }
    "no cell differs (padding?)".into()
}

/// A random uniform patch: walls and open cells, in cells and small rectangles.
fn random_patch(rng: &mut StdRng, w: u32, h: u32) -> Patch {
    let rects = (0..rng.random_range(0..=2))
        .map(|_| {
            let rw = rng.random_range(1..=w.min(6));
            let rh = rng.random_range(1..=h.min(6));
            Rect {
                x: rng.random_range(0..=w - rw),
                y: rng.random_range(0..=h - rh),
                width: rw,
                height: rh,
                cost: u8::from(rng.random_bool(0.5)),
            }
        })
        .collect();
    let cells = (0..rng.random_range(1..=5))
        .map(|_| {
            let p = Point::new(rng.random_range(0..w), rng.random_range(0..h));
            (p, u8::from(rng.random_bool(0.5)))
        })
        .collect();
    Patch { cells, rects }
}

/// [`random_patch`] with every cell and rectangle set to `cost` (0: walls only, 1: openings
/// only).
fn random_patch_of(rng: &mut StdRng, w: u32, h: u32, cost: u8) -> Patch {
    let mut patch = random_patch(rng, w, h);
    patch.cells.iter_mut().for_each(|c| c.1 = cost);
    patch.rects.iter_mut().for_each(|r| r.cost = cost);
    patch
}

/// JPS+ on `grid` with `table` (and `landmarks`) against the reference, `n` random queries;
/// panics with the seed, the map and both paths on a difference.
fn check_queries(
    rng: &mut StdRng,
    grid: &Grid,
    table: &JumpTable,
    landmarks: Option<&Landmarks>,
    n: usize,
    what: &str,
) {
    let mut searcher = Searcher::new();
    let derived = Derived {
        hpa: None,
        jump_table: Some(table),
        subgoal: None,
        landmarks,
        sized: None,
    };
    for _ in 0..n {
        let (Some(s), Some(g)) = (random_passable(rng, grid), random_passable(rng, grid)) else {
            return;
        };
        let q = Query::new(s, g).with_algorithm(Algorithm::JpsPlus);
        let r = searcher.find_path_derived(grid, derived, &q).unwrap();
        assert_eq!(r.algorithm, Algorithm::JpsPlus);
        match reference(grid, s, g) {
            None => assert_eq!(r.status, Status::NoPath, "{what}: {s} -> {g}"),
            Some((cost, path)) => {
                let ok = r.status == Status::Found
                    && (r.cost - cost).abs() < 1e-9 * (1.0 + cost)
                    && check_path(grid, &r.path, s, g, r.cost).is_ok();
                assert!(
                    ok,
                    "{what}: {s} -> {g}: reference {cost}, jps_plus {:?} {}\nreference:\n{}jps_plus:\n{}",
                    r.status,
                    r.cost,
                    show(grid, s, g, &path),
                    show(grid, s, g, &r.path)
                );
            }
        }
    }
}

#[test]
fn updated_tables_equal_fresh_tables_and_answer_like_dijkstra() {
    for seed in 0..60u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        // Some maps span several 1024-cell chunks of the table.
        let (w, h) = (rng.random_range(2..=70), rng.random_range(2..=50));
        let density = rng.random_range(0.0..0.45);
        let mut grid = random_grid(&mut rng, w, h, density, false, Movement::Octile);
        let mut table = JumpTable::build(&grid).unwrap();
        let mut landmarks = Landmarks::build(&grid, 4);
        check_queries(
            &mut rng,
            &grid,
            &table,
            None,
            10,
            &format!("seed {seed} fresh"),
        );
        let what = format!("seed {seed} fresh, landmarks");
        check_queries(&mut rng, &grid, &table, landmarks.as_ref(), 10, &what);
        for step in 0..12 {
            let patch = random_patch(&mut rng, w, h);
            let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                continue;
            };
            let updated = table.update(&next, &changed);
            let fresh = JumpTable::build(&next).unwrap();
            assert!(
                updated == fresh,
                "seed {seed} step {step}: updated table differs from a fresh one at {}\n{}",
                first_difference(&next, &updated, &fresh),
                show(&next, changed[0], changed[0], &[])
            );
            // Landmarks as the server keeps them: carried over walls, updated otherwise
            // (measured when there were none: a map without an open cell has none).
            landmarks = match landmarks {
                Some(l) if l.carry_over(&next, &changed) => Some(l),
                Some(l) => l.update(&next, &changed),
                None => Landmarks::build(&next, 4),
            };
            (grid, table) = (next, updated);
            let what = format!("seed {seed} step {step}");
            check_queries(&mut rng, &grid, &table, None, 4, &what);
            let what = format!("seed {seed} step {step}, landmarks");
            check_queries(&mut rng, &grid, &table, landmarks.as_ref(), 4, &what);
        }
    }
}

#[test]
fn open_and_walled_off_maps() {
    // Long empty rows (entries up to the width), and a map that is all wall but one cell.
    let mut rng = StdRng::seed_from_u64(1);
    let open = Grid::from_costs(300, 40, vec![1; 12000], Movement::Octile).unwrap();
    let table = JumpTable::build(&open).unwrap();
    assert_eq!(table.entries(Point::new(0, 0))[1], -299);
    check_queries(&mut rng, &open, &table, None, 20, "open");
    let landmarks = Landmarks::build(&open, 16);
    check_queries(
        &mut rng,
        &open,
        &table,
        landmarks.as_ref(),
        20,
        "open, landmarks",
    );
    let mut costs = vec![0; 100];
    costs[55] = 1;
    let walled = Grid::from_costs(10, 10, costs, Movement::Octile).unwrap();
    let t = JumpTable::build(&walled).unwrap();
    assert_eq!(t.entries(Point::new(5, 5)), [0; 8]);
    // Opening the whole map through a rectangle patch.
    let patch = Patch {
        cells: vec![],
        rects: vec![Rect {
            x: 0,
            y: 0,
            width: 10,
            height: 10,
            cost: 1,
        }],
    };
    let (next, changed) = walled.apply_patch(&patch).unwrap().unwrap();
    assert!(t.update(&next, &changed) == JumpTable::build(&next).unwrap());
}

#[test]
fn not_applicable_without_a_table_or_on_other_maps() {
    let grid = Grid::from_costs(3, 1, vec![1, 1, 1], Movement::Octile).unwrap();
    let q = Query::new(Point::new(0, 0), Point::new(2, 0)).with_algorithm(Algorithm::JpsPlus);
    let e = Searcher::new().find_path(&grid, &q).unwrap_err();
    assert!(matches!(e, QueryError::NotApplicable { .. }), "{e}");
    // auto without a table is JPS, with one JPS+.
    let auto = q.clone().with_algorithm(Algorithm::Auto);
    let r = Searcher::new().find_path(&grid, &auto).unwrap();
    assert_eq!((r.algorithm, r.cost), (Algorithm::Jps, 2.0));
    let table = JumpTable::build(&grid).unwrap();
    let derived = Derived {
        hpa: None,
        jump_table: Some(&table),
        subgoal: None,
        landmarks: None,
        sized: None,
    };
    let r = Searcher::new()
        .find_path_derived(&grid, derived, &auto)
        .unwrap();
    assert_eq!((r.algorithm, r.cost), (Algorithm::JpsPlus, 2.0));
    // Cardinal maps have no table; weighted maps are refused, and auto runs A* there.
    let cardinal = grid.with_movement(Movement::Cardinal);
    assert!(JumpTable::build(&cardinal).is_none());
    let weighted = Grid::from_costs(3, 1, vec![1, 5, 1], Movement::Octile).unwrap();
    let wt = JumpTable::build(&weighted).unwrap();
    let derived = Derived {
        hpa: None,
        jump_table: Some(&wt),
        subgoal: None,
        landmarks: None,
        sized: None,
    };
    let e = Searcher::new()
        .find_path_derived(&weighted, derived, &q)
        .unwrap_err();
    assert!(matches!(e, QueryError::NotApplicable { .. }), "{e}");
    let r = Searcher::new()
        .find_path_derived(&weighted, derived, &auto)
        .unwrap();
    assert_eq!(r.algorithm, Algorithm::AStar);
}

/// Every 12th benchmark map (all with `PATHD_FULL_SWEEP=1`, or of the repository's subset),
/// sampled rows against the
/// optimal lengths; then a few wall patches, the updated table against a fresh one, and
/// sampled rows against A* on the patched map.
#[test]
fn moving_ai_maps_before_and_after_patches() {
    let full = std::env::var_os("PATHD_FULL_SWEEP").is_some_and(|v| v == "1");
    let mut searcher = Searcher::new();
    let mut rng = StdRng::seed_from_u64(12);
    let maps = maps_with_scen();
    // Every 12th map of the full set; every map of the repository's subset (18).
    let every = if crate::common::full_set() { 12 } else { 1 };
    let mut checked = 0;
    for (i, (map, scen)) in maps.iter().enumerate() {
        let named = ["arena2.map", "16room_000.map", "maze512-1-0.map"].contains(&map.as_str());
        if !(full || named || i % every == 0) {
            continue;
        }
        let grid = load_map(map);
        let table = JumpTable::build(&grid).unwrap();
        let landmarks = Landmarks::build(&grid, 8).unwrap();
        let rows = sample(&load_scen(scen), 40);
        for (i, row) in rows.iter().enumerate() {
            // Every other row with landmarks.
            let derived = Derived {
                hpa: None,
                jump_table: Some(&table),
                subgoal: None,
                landmarks: (i % 2 == 1).then_some(&landmarks),
                sized: None,
            };
            let q = Query::new(row.start, row.goal).with_algorithm(Algorithm::JpsPlus);
            let r = searcher.find_path_derived(&grid, derived, &q).unwrap();
            if row.unreachable() {
                assert_eq!(r.status, Status::NoPath, "{map} {row:?}");
                continue;
            }
            assert!(
                r.status == Status::Found && matches_optimal(r.cost, row.optimal),
                "{map} {row:?}: {:?} {}",
                r.status,
                r.cost
            );
            check_path(&grid, &r.path, row.start, row.goal, r.cost)
                .unwrap_or_else(|e| panic!("{map} {row:?}: {e}"));
            checked += 1;
        }
        // Walls (and re-openings) on and beside the sampled paths' cells.
        let mut grid = grid;
        let mut table = table;
        let mut landmarks = landmarks;
        for step in 0..3 {
            let cells = (0..8)
                .map(|_| {
                    let row = &rows[rng.random_range(0..rows.len())];
                    let p = if rng.random_bool(0.5) {
                        row.start
                    } else {
                        row.goal
                    };
                    let x = (p.x + rng.random_range(0..3)).min(grid.width() - 1);
                    (Point::new(x, p.y), u8::from(rng.random_bool(0.3)))
                })
                .collect();
            let patch = Patch {
                cells,
                rects: vec![],
            };
            let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                continue;
            };
            let updated = table.update(&next, &changed);
            let fresh = JumpTable::build(&next).unwrap();
            assert!(
                updated == fresh,
                "{map} step {step}: {}",
                first_difference(&next, &updated, &fresh)
            );
            if !landmarks.carry_over(&next, &changed) {
                landmarks = landmarks.update(&next, &changed).unwrap();
            }
            (grid, table) = (next, updated);
            let derived = Derived {
                hpa: None,
                jump_table: Some(&table),
                subgoal: None,
                landmarks: Some(&landmarks),
                sized: None,
            };
            for row in rows.iter().step_by(3) {
                if !grid.is_passable(row.start) || !grid.is_passable(row.goal) {
                    continue;
                }
                let q = Query::new(row.start, row.goal);
                let a = searcher.find_path(&grid, &q).unwrap();
                let q = q.with_algorithm(Algorithm::JpsPlus);
                let r = searcher.find_path_derived(&grid, derived, &q).unwrap();
                assert_eq!(r.status, a.status, "{map} step {step} {row:?}");
                assert!(
                    (r.cost - a.cost).abs() < 1e-9 * (1.0 + a.cost),
                    "{map} step {step} {row:?}: A* {} jps_plus {}",
                    a.cost,
                    r.cost
                );
                if r.status == Status::Found {
                    check_path(&grid, &r.path, row.start, row.goal, r.cost)
                        .unwrap_or_else(|e| panic!("{map} step {step} {row:?}: {e}"));
                }
            }
        }
    }
    assert!(checked >= 50, "only {checked} rows checked");
}

/// Landmarks carried over a sequence of patches that only add walls stay admissible: JPS+
/// with them answers the reference Dijkstra's costs on every version.
#[test]
fn landmarks_carried_over_walls_answer_like_dijkstra() {
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(1000 + seed);
        let (w, h) = (rng.random_range(3..=60), rng.random_range(3..=40));
        let density = rng.random_range(0.0..0.3);
        let mut grid = random_grid(&mut rng, w, h, density, false, Movement::Octile);
        let Some(landmarks) = Landmarks::build(&grid, rng.random_range(1..=8)) else {
            continue;
        };
        for step in 0..8 {
            let patch = random_patch_of(&mut rng, w, h, 0);
            let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                continue;
            };
            assert!(
                landmarks.carry_over(&next, &changed),
                "seed {seed} step {step}"
            );
            grid = next;
            let table = JumpTable::build(&grid).unwrap();
            let what = format!("seed {seed} step {step}, carried landmarks");
            check_queries(&mut rng, &grid, &table, Some(&landmarks), 6, &what);
        }
    }
}

/// What the landmarks are for: on the benchmark maps where the octile distance sees through
/// walls, JPS+ expands far fewer nodes with them (expansion counts are deterministic).
#[test]
fn landmarks_cut_jps_plus_expansions() {
    let mut searcher = Searcher::new();
    for name in ["arena2", "maze512-1-0"] {
        let map = format!("{name}.map");
        let grid = load_map(&map);
        let table = JumpTable::build(&grid).unwrap();
        let landmarks = Landmarks::build(&grid, 16).unwrap();
        let rows = sample(&load_scen(&format!("{map}.scen")), 60);
        let mut expanded = [0u64; 2];
        for row in rows.iter().filter(|r| !r.unreachable()) {
            for (k, l) in [None, Some(&landmarks)].into_iter().enumerate() {
                let derived = Derived {
                    hpa: None,
                    jump_table: Some(&table),
                    subgoal: None,
                    landmarks: l,
                    sized: None,
                };
                let q = Query::new(row.start, row.goal).with_algorithm(Algorithm::JpsPlus);
                let r = searcher.find_path_derived(&grid, derived, &q).unwrap();
                assert!(
                    matches_optimal(r.cost, row.optimal),
                    "{map} {row:?}: {}",
                    r.cost
                );
                expanded[k] += r.stats.expanded;
            }
        }
        assert!(
            expanded[1] * 2 <= expanded[0],
            "{map}: {} expansions with landmarks, {} without",
            expanded[1],
            expanded[0]
        );
    }
}

/// Landmarks go to the largest component, however small the first one found is.
#[test]
fn landmarks_are_placed_in_the_largest_component() {
    // A 2x2 pocket in the top-left corner, walled off from a 30x20 room.
    let (w, h) = (34u32, 24u32);
    let costs = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let pocket = x < 2 && y < 2;
            let room = (3..33).contains(&x) && (3..23).contains(&y);
            u8::from(pocket || room)
        })
        .collect();
    let grid = Grid::from_costs(w, h, costs, Movement::Octile).unwrap();
    let room = grid.component(Point::new(10, 10)).unwrap();
    let landmarks = Landmarks::build(&grid, 6).unwrap();
    assert_eq!(landmarks.points().len(), 6);
    for &p in landmarks.points() {
        assert_eq!(grid.component(p), Some(room), "{p}");
    }
    // The first is the room's corner farthest from its first cell, (3, 3).
    assert_eq!(landmarks.points()[0], Point::new(32, 22));
    let table = JumpTable::build(&grid).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    check_queries(
        &mut rng,
        &grid,
        &table,
        Some(&landmarks),
        30,
        "room and pocket",
    );
}

/// After patches that only open cells, updated landmarks hold the new distances: equal to a
/// fresh measurement from the same cells (up to the last bits of an `f32`: the update starts
/// from rounded values).
#[test]
fn landmarks_updated_after_openings_equal_fresh_ones() {
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(2000 + seed);
        let (w, h) = (rng.random_range(3..=60), rng.random_range(3..=40));
        let density = rng.random_range(0.1..0.45);
        let mut grid = random_grid(&mut rng, w, h, density, false, Movement::Octile);
        let Some(mut landmarks) = Landmarks::build(&grid, rng.random_range(1..=8)) else {
            continue;
        };
        for step in 0..6 {
            let patch = random_patch_of(&mut rng, w, h, 1);
            let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                continue;
            };
            landmarks = landmarks.update(&next, &changed).unwrap();
            let fresh = Landmarks::at(&next, landmarks.points()).unwrap();
            for y in 0..h {
                for x in 0..w {
                    let p = Point::new(x, y);
                    for i in 0..landmarks.points().len() {
                        let (a, b) = (landmarks.distance(i, p), fresh.distance(i, p));
                        assert!(
                            a == b || (a - b).abs() <= 4.0 * f32::EPSILON * b,
                            "seed {seed} step {step} landmark {i} at {p}: updated {a}, fresh {b}"
                        );
                    }
                }
            }
            grid = next;
            let table = JumpTable::build(&grid).unwrap();
            let what = format!("seed {seed} step {step}, updated landmarks");
            check_queries(&mut rng, &grid, &table, Some(&landmarks), 6, &what);
        }
    }
}
