//! Patched grids against grids built from scratch: a patch updates costs, statistics,
//! components, the searches' flat array and JPS's bit planes incrementally, and every one of
//! them must end up exactly where `Grid::from_costs` of the same costs would.
//!
//! Seeded random patch sequences (cells and rectangles, walls and terrain) on random maps of
//! several sizes (multiples of the 64-cell tile and not), both movement rules.

use std::collections::HashMap;

use crate::common::{random_grid, random_passable, reference};
use pathd_engine::{Algorithm, Grid, Movement, Patch, Point, Query, Rect, Searcher, Status};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Component labels renumbered by first appearance in row-major order: equal for two grids
/// exactly when their partitions into components are equal.
fn canonical(g: &Grid) -> Vec<u32> {
    let mut seen = HashMap::new();
    let mut out = Vec::with_capacity(g.width() as usize * g.height() as usize);
    for y in 0..g.height() {
        for x in 0..g.width() {
            out.push(match g.component(Point::new(x, y)) {
                None => u32::MAX,
                Some(l) => {
                    let n = seen.len() as u32;
                    *seen.entry(l).or_insert(n)
                }
            });
        }
    }
    out
}

/// Asserts that `g` equals a fresh grid over the same costs in everything derived.
fn assert_like_fresh(g: &Grid, costs: &[u8], what: &str) {
    assert_eq!(g.costs(), costs, "{what}: costs");
    let fresh = Grid::from_costs(g.width(), g.height(), costs.to_vec(), g.movement()).unwrap();
    assert_eq!(
        g.passable_cells(),
        fresh.passable_cells(),
        "{what}: passable"
    );
    assert_eq!(g.min_cost(), fresh.min_cost(), "{what}: min cost");
    assert_eq!(g.max_cost(), fresh.max_cost(), "{what}: max cost");
    let max = costs.iter().copied().max().unwrap_or(0);
    assert_eq!(g.max_cost(), max, "{what}: max cost vs costs");
    assert_eq!(g.is_uniform(), fresh.is_uniform(), "{what}: uniform");
    assert_eq!(
        g.component_count(),
        fresh.component_count(),
        "{what}: component count"
    );
    assert_eq!(
        canonical(g),
        canonical(&fresh),
        "{what}: component partition"
    );
}

/// A random patch: a few rectangles and cells; walls, open cells and (when `weighted`)
/// terrain.
fn random_patch(rng: &mut StdRng, w: u32, h: u32, weighted: bool) -> Patch {
    let cost = |rng: &mut StdRng| -> u8 {
        match rng.random_range(0..10) {
            0..=4 => 0,
            5..=7 => 1,
            _ if weighted => rng.random_range(2..=255),
            _ => 1,
        }
    };
    let rects = (0..rng.random_range(0..=2))
        .map(|_| {
            let rw = rng.random_range(1..=w.min(12));
            let rh = rng.random_range(1..=h.min(12));
            Rect {
                x: rng.random_range(0..=w - rw),
                y: rng.random_range(0..=h - rh),
                width: rw,
                height: rh,
                cost: cost(rng),
            }
        })
        .collect();
    let cells = (0..rng.random_range(0..=6))
        .map(|_| {
            (
                Point::new(rng.random_range(0..w), rng.random_range(0..h)),
                cost(rng),
            )
        })
        .collect();
    Patch { cells, rects }
}

/// The patch applied by brute force: rectangles, then cells, later writes winning.
fn brute_apply(costs: &[u8], w: u32, patch: &Patch) -> Vec<u8> {
    let mut out = costs.to_vec();
    for r in &patch.rects {
        for y in r.y..r.y + r.height {
            for x in r.x..r.x + r.width {
                out[(y * w + x) as usize] = r.cost;
            }
        }
    }
    for &(p, c) in &patch.cells {
        out[(p.y * w + p.x) as usize] = c;
    }
    out
}

fn brute_diff(a: &[u8], b: &[u8], w: u32) -> Vec<Point> {
    (0..a.len())
        .filter(|&i| a[i] != b[i])
        .map(|i| Point::new(i as u32 % w, i as u32 / w))
        .collect()
}

/// Applies `patch` to `grid` and checks the result and the changed list against brute force.
fn step(grid: &Grid, costs: &[u8], patch: &Patch, what: &str) -> Option<(Grid, Vec<u8>)> {
    let want = brute_apply(costs, grid.width(), patch);
    let diff = brute_diff(costs, &want, grid.width());
    match grid.apply_patch(patch).unwrap() {
        None => {
            assert!(
                diff.is_empty(),
                "{what}: no-op reported, but {diff:?} changed"
            );
            None
        }
        Some((next, changed)) => {
            assert_eq!(changed, diff, "{what}: changed cells");
            assert_like_fresh(&next, &want, what);
            Some((next, want))
        }
    }
}

#[test]
fn patched_grids_equal_fresh_grids() {
    let sizes = [(1, 1), (7, 3), (64, 64), (65, 70), (130, 97), (200, 129)];
    let mut rng = StdRng::seed_from_u64(2024);
    for (case, &(w, h)) in sizes.iter().enumerate() {
        for movement in [Movement::Octile, Movement::Cardinal] {
            for density in [0.1, 0.35, 0.45] {
                let weighted = case % 2 == 1;
                let mut grid = random_grid(&mut rng, w, h, density, weighted, movement);
                let mut costs = grid.costs();
                let mut history = vec![(grid.clone(), costs.clone())];
                let rounds = if w * h > 10_000 { 25 } else { 40 };
                for round in 0..rounds {
                    let what = format!("{w}x{h} {movement:?} {density} round {round}");
                    let patch = random_patch(&mut rng, w, h, weighted);
                    // Now and then patch an older version: branches share tiles too.
                    let (base, base_costs) = if rng.random_bool(0.15) {
                        history[rng.random_range(0..history.len())].clone()
                    } else {
                        (grid.clone(), costs.clone())
                    };
                    if let Some((next, c)) = step(&base, &base_costs, &patch, &what) {
                        grid = next;
                        costs = c;
                        history.push((grid.clone(), costs.clone()));
                    } else {
                        grid = base;
                        costs = base_costs;
                    }
                }
                // Older versions are untouched by their successors.
                for (i, (g, c)) in history.iter().enumerate() {
                    assert_like_fresh(g, c, &format!("{w}x{h} {movement:?} version {i}"));
                }
            }
        }
    }
}

/// A map cut in two by a wall with one gap: opening and closing the gap merges and splits
/// two large components (past the repair's search budgets), with small pockets cut and
/// opened on both sides in between.
#[test]
fn large_splits_and_merges_stay_exact() {
    for movement in [Movement::Octile, Movement::Cardinal] {
        let (w, h) = (300u32, 260u32);
        let mut costs = vec![1u8; (w * h) as usize];
        for y in 0..h {
            costs[(y * w + 150) as usize] = 0;
        }
        let mut grid = Grid::from_costs(w, h, costs.clone(), movement).unwrap();
        assert_eq!(grid.component_count(), 2);
        let gap = Point::new(150, 130);
        let mut rng = StdRng::seed_from_u64(5);
        for round in 0..12 {
            let what = format!("{movement:?} round {round}");
            let open = round % 2 == 0;
            let patch = Patch {
                cells: vec![(gap, u8::from(open))],
                rects: vec![],
            };
            let (next, c) = step(&grid, &costs, &patch, &what).unwrap();
            (grid, costs) = (next, c);
            assert_eq!(grid.component_count(), if open { 1 } else { 2 }, "{what}");
            // A ring wall around a random spot (a pocket), then opened again.
            let (cx, cy) = (rng.random_range(3..w - 3), rng.random_range(3..h - 3));
            let ring: Vec<(Point, u8)> = (0..5)
                .flat_map(|d| {
                    [
                        (cx - 2 + d, cy - 2),
                        (cx - 2 + d, cy + 2),
                        (cx - 2, cy - 2 + d),
                        (cx + 2, cy - 2 + d),
                    ]
                })
                .map(|(x, y)| (Point::new(x, y), 0))
                .collect();
            let cut = Patch {
                cells: ring.clone(),
                rects: vec![],
            };
            if let Some((next, c)) = step(&grid, &costs, &cut, &format!("{what} ring")) {
                let reopen = Patch {
                    cells: ring.iter().map(|&(p, _)| (p, 1)).collect(),
                    rects: vec![],
                };
                // Reopen the ring on the ringed version, but keep the wall line intact.
                let reopen = Patch {
                    cells: reopen
                        .cells
                        .into_iter()
                        .filter(|(p, _)| costs[(p.y * w + p.x) as usize] != 0)
                        .collect(),
                    rects: vec![],
                };
                let (back, c2) = step(&next, &c, &reopen, &format!("{what} reopen")).unwrap();
                assert_eq!(c2, costs);
                (grid, costs) = (back, c2);
            }
        }
    }
}

/// Searches on patched grids (which read the flat array taken from the previous version and
/// JPS planes derived from the previous version's) answer like searches on fresh grids, and
/// older versions still answer for their own costs after a newer version took their array.
#[test]
fn searches_on_patched_grids_match_fresh_grids() {
    let mut rng = StdRng::seed_from_u64(99);
    let mut s = Searcher::new();
    for (w, h) in [(64, 64), (97, 70), (150, 131)] {
        for movement in [Movement::Octile, Movement::Cardinal] {
            let mut grid = random_grid(&mut rng, w, h, 0.3, false, movement);
            let mut costs = grid.costs();
            let mut older: Vec<(Grid, Vec<u8>)> = Vec::new();
            for round in 0..20 {
                let patch = random_patch(&mut rng, w, h, false);
                let Some((next, c)) = grid.apply_patch(&patch).unwrap() else {
                    continue;
                };
                let next_costs = brute_apply(&costs, w, &patch);
                assert_eq!(next.costs(), next_costs);
                let _ = c;
                older.push((grid, costs));
                (grid, costs) = (next, next_costs);
                let fresh = Grid::from_costs(w, h, costs.clone(), movement).unwrap();
                for _ in 0..6 {
                    let (a, b) = (
                        random_passable(&mut rng, &grid).unwrap(),
                        random_passable(&mut rng, &grid).unwrap(),
                    );
                    let what = format!("{w}x{h} {movement:?} round {round} {a} -> {b}");
                    let mut answers = Vec::new();
                    for algorithm in [Algorithm::Jps, Algorithm::AStar, Algorithm::Dijkstra] {
                        let q = Query::new(a, b).with_algorithm(algorithm);
                        let r = s.find_path(&grid, &q).unwrap();
                        let f = s.find_path(&fresh, &q).unwrap();
                        assert_eq!(r.status, f.status, "{what} {algorithm:?}");
                        assert_eq!(r.cost, f.cost, "{what} {algorithm:?}");
                        assert_eq!(r.path, f.path, "{what} {algorithm:?}");
                        answers.push((r.status, r.cost));
                    }
                    assert!(answers.windows(2).all(
                        |p| p[0].0 == p[1].0 && (p[0].1 - p[1].1).abs() < 1e-9 * (1.0 + p[0].1)
                    ));
                    if round % 5 == 0 {
                        match reference(&grid, a, b) {
                            None => assert_eq!(answers[0].0, Status::NoPath, "{what}"),
                            Some((cost, _)) => {
                                assert!((answers[0].1 - cost).abs() < 1e-9 * (1.0 + cost))
                            }
                        }
                    }
                }
                // An older version, whose flat array a newer version may have taken.
                let (old, old_costs) = &older[rng.random_range(0..older.len())];
                let fresh_old = Grid::from_costs(w, h, old_costs.clone(), movement).unwrap();
                let (a, b) = (
                    random_passable(&mut rng, old).unwrap(),
                    random_passable(&mut rng, old).unwrap(),
                );
                for algorithm in [Algorithm::Jps, Algorithm::AStar] {
                    let q = Query::new(a, b).with_algorithm(algorithm);
                    let r = s.find_path(old, &q).unwrap();
                    let f = s.find_path(&fresh_old, &q).unwrap();
                    assert_eq!((r.status, r.cost), (f.status, f.cost), "old {algorithm:?}");
                }
            }
        }
    }
}

/// Versions patched and searched from several threads at once: every answer matches a fresh
/// grid (the flat array moves between versions only when nothing else holds it).
#[test]
fn concurrent_searches_across_versions() {
    let mut rng = StdRng::seed_from_u64(7);
    let (w, h) = (120, 90);
    let mut grid = random_grid(&mut rng, w, h, 0.25, false, Movement::Octile);
    let mut versions = vec![grid.clone()];
    for _ in 0..12 {
        let patch = random_patch(&mut rng, w, h, false);
        if let Some((next, _)) = grid.apply_patch(&patch).unwrap() {
            grid = next;
            versions.push(grid.clone());
        }
    }
    let fresh: Vec<Grid> = versions
        .iter()
        .map(|g| Grid::from_costs(w, h, g.costs(), Movement::Octile).unwrap())
        .collect();
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (versions, fresh) = (&versions, &fresh);
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(100 + t);
                let mut s = Searcher::new();
                for _ in 0..60 {
                    let i = rng.random_range(0..versions.len());
                    let g = &versions[i];
                    let (a, b) = (
                        random_passable(&mut rng, g).unwrap(),
                        random_passable(&mut rng, g).unwrap(),
                    );
                    let algorithm = if rng.random_bool(0.5) {
                        Algorithm::Jps
                    } else {
                        Algorithm::AStar
                    };
                    let q = Query::new(a, b).with_algorithm(algorithm);
                    let r = s.find_path(g, &q).unwrap();
                    let f = s.find_path(&fresh[i], &q).unwrap();
                    assert_eq!((r.status, r.cost), (f.status, f.cost));
                    // Patch this version too: its array may move to the new one mid-way.
                    let p = random_passable(&mut rng, g).unwrap();
                    if let Some((n, _)) = g
                        .apply_patch(&Patch {
                            cells: vec![(p, 0)],
                            rects: vec![],
                        })
                        .unwrap()
                    {
                        let r = s.find_path(&n, &q.clone().with_algorithm(Algorithm::AStar));
                        let mut c = fresh[i].costs();
                        c[(p.y * w + p.x) as usize] = 0;
                        let nf = Grid::from_costs(w, h, c, Movement::Octile).unwrap();
                        let f = s.find_path(&nf, &q.clone().with_algorithm(Algorithm::AStar));
                        match (r, f) {
                            (Ok(r), Ok(f)) => assert_eq!((r.status, r.cost), (f.status, f.cost)),
                            (r, f) => assert_eq!(r.is_err(), f.is_err()),
                        }
                    }
                }
            });
        }
    });
}
