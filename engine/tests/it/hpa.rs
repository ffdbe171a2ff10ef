//! HPA*: legality, completeness and quality on the large Moving AI maps; exactness against
//! the reference Dijkstra on random maps; incremental updates equal fresh builds after random
//! patch sequences; limits, partial answers and misuse.

use crate::common::{
    bench_dir, check_path, load_map, load_scen, random_grid, random_passable, reference, sample,
    show,
};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use pathd_engine::{
    Abstraction, Algorithm, Grid, HpaConfig, LimitKind, Movement, Patch, Point, Query, QueryError,
    Rect, Refine, Searcher, Status,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Scenario rows sampled per map (plus every unreachable row).
const ROWS_PER_MAP: usize = 60;

/// Benchmark maps at least 512 cells on both sides, with their scenario files.
fn big_maps() -> Vec<(String, String)> {
    crate::common::maps_with_scen()
        .into_iter()
        .filter(|(m, _)| {
            let text = std::fs::read_to_string(bench_dir().join("maps").join(m)).unwrap();
            let dim = |key: &str| -> u32 {
                text.lines()
                    .find_map(|l| l.trim().strip_prefix(key))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap()
            };
            dim("width") >= 512 && dim("height") >= 512
        })
        .collect()
}

/// Mean, 99th percentile and max of relative excess costs.
fn summarize(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let p99 = v[((v.len() as f64 * 0.99).ceil() as usize).clamp(1, v.len()) - 1];
    (mean, p99, *v.last().unwrap())
}

#[test]
fn big_movingai_maps_legal_complete_near_optimal() {
    let maps = big_maps();
    // 44 in the full set, 7 in the repository's subset.
    let least = if crate::common::full_set() { 40 } else { 7 };
    assert!(maps.len() >= least, "only {} big maps", maps.len());
    let mut excess = Vec::new();
    let mut failures = Vec::new();
    let mut unreachable = 0;
    for (map, scen) in &maps {
        let grid = load_map(map);
        let hpa = Abstraction::build_with(&grid, HpaConfig::default());
        let mut searcher = Searcher::new();
        let mut mine = Vec::new();
        for row in sample(&load_scen(scen), ROWS_PER_MAP) {
            let q = Query::new(row.start, row.goal).with_algorithm(Algorithm::Hpa);
            let r = searcher.find_path_with(&grid, Some(&hpa), &q).unwrap();
            if row.unreachable() {
                unreachable += 1;
                if r.status != Status::NoPath {
                    failures.push(format!(
                        "{map}: {} -> {} is unreachable, got {:?}",
                        row.start, row.goal, r.status
                    ));
                }
                continue;
            }
            if r.status != Status::Found {
                failures.push(format!(
                    "{map}: {} -> {} false negative {:?}",
                    row.start, row.goal, r.status
                ));
                continue;
            }
            if let Err(e) = check_path(&grid, &r.path, row.start, row.goal, r.cost) {
                failures.push(format!("{map}: {} -> {}: {e}", row.start, row.goal));
                continue;
            }
            if r.cost < row.optimal - 6e-3 - 1e-5 * row.optimal {
                failures.push(format!(
                    "{map}: {} -> {} cost {} below optimum {}",
                    row.start, row.goal, r.cost, row.optimal
                ));
            }
            if row.optimal > 0.0 {
                mine.push((r.cost / row.optimal - 1.0).max(0.0));
            }
        }
        let (mean, p99, max) = summarize(mine.clone());
        println!(
            "{map:24} {:4} rows  mean {:6.3}%  p99 {:6.3}%  max {:6.3}%  build {:?}",
            mine.len(),
            mean * 100.0,
            p99 * 100.0,
            max * 100.0,
            hpa.build_time()
        );
        excess.extend(mine);
    }
    let (mean, p99, max) = summarize(excess.clone());
    println!(
        "all {} maps, {} rows ({unreachable} unreachable): suboptimality mean {:.3}%  p99 {:.3}%  max {:.3}%",
        maps.len(),
        excess.len(),
        mean * 100.0,
        p99 * 100.0,
        max * 100.0
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        mean <= 0.01,
        "mean suboptimality {:.3}% above 1%",
        mean * 100.0
    );
}

/// A random map with the cluster size to test it with.
fn random_case(rng: &mut StdRng, case: usize) -> (Grid, HpaConfig) {
    let (w, h) = match case % 4 {
        0 => (rng.random_range(1..=12), rng.random_range(1..=12)),
        1 => (rng.random_range(8..=48), rng.random_range(8..=48)),
        2 => (rng.random_range(48..=96), rng.random_range(1..=20)),
        _ => (rng.random_range(48..=96), rng.random_range(48..=96)),
    };
    let density = rng.random_range(0.0..0.45);
    let weighted = rng.random_bool(0.4);
    let movement = if rng.random_bool(0.7) {
        Movement::Octile
    } else {
        Movement::Cardinal
    };
    let grid = random_grid(rng, w, h, density, weighted, movement);
    let config = HpaConfig {
        cluster_size: rng.random_range(4..=16),
        path_cache_bytes: if rng.random_bool(0.3) { 0 } else { 1 << 20 },
        entrance_spacing: if rng.random_bool(0.2) { 3 } else { 0 },
        refine: [Refine::Edges, Refine::Corridor, Refine::CorridorOnWeighted]
            [rng.random_range(0..3)],
    };
    (grid, config)
}

#[test]
fn random_maps_reachability_and_costs_match_reference() {
    let mut rng = StdRng::seed_from_u64(0x4fa);
    let mut found = 0;
    let mut none = 0;
    for case in 0..400 {
        let (grid, config) = random_case(&mut rng, case);
        let hpa = Abstraction::build_with(&grid, config);
        for _ in 0..4 {
            let (Some(s), Some(g)) = (
                random_passable(&mut rng, &grid),
                random_passable(&mut rng, &grid),
            ) else {
                continue;
            };
            let r = hpa.find_path(&grid, &Query::new(s, g)).unwrap();
            match reference(&grid, s, g) {
                None => {
                    assert_eq!(
                        r.status,
                        Status::NoPath,
                        "case {case}\n{}",
                        show(&grid, s, g, &r.path)
                    );
                    none += 1;
                }
                Some((best, best_path)) => {
                    assert_eq!(
                        r.status,
                        Status::Found,
                        "case {case} {config:?}: false negative\n{}",
                        show(&grid, s, g, &best_path)
                    );
                    // Found by HPA* itself, not by the A* fallback for a missed path.
                    assert_eq!(
                        r.algorithm,
                        Algorithm::Hpa,
                        "case {case} {config:?}: the abstraction missed a path\n{}",
                        show(&grid, s, g, &best_path)
                    );
                    check_path(&grid, &r.path, s, g, r.cost).unwrap_or_else(|e| {
                        panic!("case {case}: {e}\n{}", show(&grid, s, g, &r.path))
                    });
                    assert!(
                        r.cost >= best - 1e-9 * (1.0 + best),
                        "case {case}: below the optimum"
                    );
                    found += 1;
                }
            }
        }
    }
    assert!(found > 800 && none > 50, "found {found}, none {none}");
}

/// A random patch: a few cells and maybe a rectangle, walls, terrain or clearing.
pub(crate) fn random_patch(rng: &mut StdRng, grid: &Grid, weighted: bool) -> Patch {
    let cost = |rng: &mut StdRng| match rng.random_range(0..3) {
        0 => 0,
        1 => 1,
        _ if weighted => rng.random_range(2..=9),
        _ => 1,
    };
    let mut p = Patch::default();
    for _ in 0..rng.random_range(0..6) {
        let at = Point::new(
            rng.random_range(0..grid.width()),
            rng.random_range(0..grid.height()),
        );
        p.cells.push((at, cost(rng)));
    }
    if rng.random_bool(0.6) {
        let x = rng.random_range(0..grid.width());
        let y = rng.random_range(0..grid.height());
        let width = rng.random_range(1..=(grid.width() - x).min(24));
        let height = rng.random_range(1..=(grid.height() - y).min(24));
        let c = cost(rng);
        p.rects.push(Rect {
            x,
            y,
            width,
            height,
            cost: c,
        });
    }
    p
}

/// Applies `steps` random patches; after each, the updated abstraction must equal a fresh
/// build and answer reachability like a fresh A*. Returns the relative excess costs seen.
fn patch_sequence(
    rng: &mut StdRng,
    mut grid: Grid,
    config: HpaConfig,
    steps: usize,
    queries: usize,
) -> Vec<f64> {
    let weighted = !grid.is_uniform();
    let mut hpa = Abstraction::build_with(&grid, config);
    let mut searcher = Searcher::new();
    let mut excess = Vec::new();
    for step in 0..steps {
        let patch = random_patch(rng, &grid, weighted);
        let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
            continue;
        };
        let (updated, report) = hpa.update_with_report(&next, &changed);
        assert!(!report.full_rebuild);
        let fresh = Abstraction::build_with(&next, config);
        if let Some(d) = updated.diff(&fresh) {
            panic!("step {step}: update differs from a fresh build after {patch:?}: {d}");
        }
        grid = next;
        hpa = updated;
        for _ in 0..queries {
            let (Some(s), Some(g)) = (random_passable(rng, &grid), random_passable(rng, &grid))
            else {
                continue;
            };
            let q = Query::new(s, g);
            let r = searcher
                .find_path_with(&grid, Some(&hpa), &q.clone().with_algorithm(Algorithm::Hpa))
                .unwrap();
            let plain = searcher.find_path(&grid, &q).unwrap();
            assert_eq!(r.status, plain.status, "step {step}: {s} -> {g}");
            if r.status == Status::Found {
                check_path(&grid, &r.path, s, g, r.cost).unwrap();
                assert!(r.cost >= plain.cost - 1e-9 * (1.0 + plain.cost));
                if plain.cost > 0.0 {
                    excess.push(r.cost / plain.cost - 1.0);
                }
            }
        }
    }
    excess
}

#[test]
fn random_patch_sequences_on_random_maps() {
    let mut rng = StdRng::seed_from_u64(0x9a7c4);
    let mut excess = Vec::new();
    for case in 0..40 {
        let (grid, config) = random_case(&mut rng, 1 + 2 * (case % 2));
        excess.extend(patch_sequence(&mut rng, grid, config, 12, 4));
    }
    let (mean, p99, max) = summarize(excess.clone());
    println!(
        "random maps after patches: {} paths, excess mean {:.3}% p99 {:.3}% max {:.3}%",
        excess.len(),
        mean * 100.0,
        p99 * 100.0,
        max * 100.0
    );
    assert!(excess.len() > 500);
}

#[test]
fn random_patch_sequences_on_real_maps() {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut excess = Vec::new();
    for map in ["Berlin_0_512.map", "lak100d.map", "maze512-4-0.map"] {
        let grid = load_map(map);
        excess.extend(patch_sequence(&mut rng, grid, HpaConfig::default(), 8, 10));
    }
    let (mean, p99, max) = summarize(excess.clone());
    println!(
        "real maps after patches: {} paths, excess mean {:.3}% p99 {:.3}% max {:.3}%",
        excess.len(),
        mean * 100.0,
        p99 * 100.0,
        max * 100.0
    );
    assert!(excess.len() > 100);
    assert!(
        mean <= 0.02,
        "mean excess {:.3}% after patches",
        mean * 100.0
    );
}

#[test]
fn a_patch_rebuilds_only_the_clusters_it_touches() {
    let grid = load_map("Berlin_0_512.map");
    let hpa = Abstraction::build(&grid, 16);
    let total = hpa.summary().clusters;
    // One interior cell: only its own cluster's edges can change.
    let cell = (0..grid.height())
        .flat_map(|y| (0..grid.width()).map(move |x| Point::new(x, y)))
        .find(|p| grid.is_passable(*p) && p.x % 16 == 7 && p.y % 16 == 7)
        .unwrap();
    let patch = Patch {
        cells: vec![(cell, 0)],
        rects: vec![],
    };
    let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
    let (updated, report) = hpa.update_with_report(&next, &changed);
    assert_eq!(report.clusters_rebuilt, 1, "{report:?}");
    assert_eq!(report.borders_changed, 0);
    assert!(updated.same_graph(&Abstraction::build(&next, 16)));
    // A wall across a cluster corner touches at most the four clusters around it.
    let rect = Rect {
        x: 30,
        y: 30,
        width: 4,
        height: 4,
        cost: 0,
    };
    let patch = Patch {
        cells: vec![],
        rects: vec![rect],
    };
    if let Some((next, changed)) = grid.apply_patch(&patch).unwrap() {
        let (updated, report) = hpa.update_with_report(&next, &changed);
        assert!(report.clusters_rebuilt <= 4, "{report:?} of {total}");
        assert!(updated.same_graph(&Abstraction::build(&next, 16)));
    }
    // A map of another size is rebuilt from scratch.
    let other = Grid::from_costs(20, 20, vec![1; 400], Movement::Octile).unwrap();
    let (fresh, report) = hpa.update_with_report(&other, &[]);
    assert!(report.full_rebuild);
    assert!(fresh.fits(&other) && !fresh.fits(&grid));
}

/// HPA*'s fallback for a path the abstraction misses. The abstraction is connected exactly
/// where its map is (module docs), so only an abstraction of another version of the map (the
/// same size, which `fits` cannot tell apart) gets there. Through the thread-local entry point
/// the fallback called `find_path` again while that entry point still held the thread's
/// searcher: a `BorrowMutError` panic instead of an answer. Every entry point now answers with
/// A*'s optimal path.
#[test]
fn a_stale_abstraction_falls_back_to_astar_from_every_entry_point() {
    let mut costs = vec![1u8; 64 * 32];
    for y in 0..32 {
        costs[y * 64 + 40] = 0;
    }
    let split = Grid::from_costs(64, 32, costs, Movement::Octile).unwrap();
    let stale = Abstraction::build(&split, 8);
    let open = Grid::from_costs(64, 32, vec![1; 64 * 32], Movement::Octile).unwrap();
    let (s, g) = (Point::new(2, 16), Point::new(60, 16));
    let (best, _) = reference(&open, s, g).unwrap();
    let q = Query::new(s, g).with_algorithm(Algorithm::Hpa);
    let answers = [
        (
            "find_path_with",
            pathd_engine::find_path_with(&open, Some(&stale), &q),
        ),
        (
            "Searcher",
            Searcher::new().find_path_with(&open, Some(&stale), &q),
        ),
        ("Abstraction::find_path", stale.find_path(&open, &q)),
    ];
    for (entry, r) in answers {
        let r = r.unwrap();
        assert_eq!(
            (r.status, r.algorithm),
            (Status::Found, Algorithm::AStar),
            "{entry}"
        );
        check_path(&open, &r.path, s, g, r.cost).unwrap();
        assert!(
            (r.cost - best).abs() < 1e-9,
            "{entry}: {} vs {best}",
            r.cost
        );
    }
}

#[test]
fn limits_partial_answers_and_misuse() {
    let open = Grid::from_costs(128, 128, vec![1; 128 * 128], Movement::Octile).unwrap();
    let hpa = Abstraction::build(&open, 8);
    let (s, g) = (Point::new(0, 0), Point::new(127, 127));
    let r = hpa.find_path(&open, &Query::new(s, g)).unwrap();
    assert_eq!(r.status, Status::Found);
    assert_eq!(r.algorithm, Algorithm::Hpa);
    assert!(
        (r.cost - 127.0 * std::f64::consts::SQRT_2).abs() < 1e-9,
        "straightened to the diagonal: {}",
        r.cost
    );

    let mut q = Query::new(s, g);
    q.limits.max_expansions = Some(150);
    let r = hpa.find_path(&open, &q).unwrap();
    assert_eq!(
        (r.status, r.limit),
        (Status::LimitReached, Some(LimitKind::Expansions))
    );
    assert!(r.path.is_empty());
    q.partial = true;
    let r = hpa.find_path(&open, &q).unwrap();
    assert_eq!(r.status, Status::Partial);
    let end = *r.path.last().unwrap();
    assert_ne!(end, g);
    check_path(&open, &r.path, s, end, r.cost).unwrap();
    assert!(open.heuristic(end, g) < open.heuristic(s, g));

    let mut q = Query::new(s, g);
    q.limits.cancel = Some(Arc::new(AtomicBool::new(true)));
    assert_eq!(
        hpa.find_path(&open, &q).unwrap().limit,
        Some(LimitKind::Cancelled)
    );
    let mut q = Query::new(s, g);
    q.limits.deadline = Some(Instant::now());
    assert_eq!(
        hpa.find_path(&open, &q).unwrap().limit,
        Some(LimitKind::Deadline)
    );

    // Unreachable: answered from components, no search; partial walks to the closest cell.
    let mut costs = vec![1u8; 64 * 32];
    for y in 0..32 {
        costs[y * 64 + 40] = 0;
    }
    let split = Grid::from_costs(64, 32, costs, Movement::Octile).unwrap();
    let hpa = Abstraction::build(&split, 8);
    let (s, g) = (Point::new(2, 16), Point::new(60, 16));
    let r = hpa.find_path(&split, &Query::new(s, g)).unwrap();
    assert_eq!((r.status, r.stats.expanded), (Status::NoPath, 0));
    let mut q = Query::new(s, g);
    q.partial = true;
    let r = hpa.find_path(&split, &q).unwrap();
    assert_eq!(r.status, Status::Partial);
    assert_eq!(r.path.last().unwrap().x, 39, "closest reachable column");
    check_path(&split, &r.path, s, *r.path.last().unwrap(), r.cost).unwrap();

    // The window tried first for nearby goals honours the expansion budget too.
    let mut q = Query::new(s, Point::new(20, 20));
    q.limits.max_expansions = Some(5);
    let r = hpa.find_path(&split, &q).unwrap();
    assert_eq!(
        (r.status, r.limit),
        (Status::LimitReached, Some(LimitKind::Expansions))
    );
    assert!(hpa.pays_off(Point::new(0, 0), Point::new(32, 0)));
    assert!(!hpa.pays_off(Point::new(0, 0), Point::new(20, 10)));

    // Debug cells, trivial query, errors.
    let mut q = Query::new(s, Point::new(30, 3));
    q.debug_cap = 5;
    let r = hpa.find_path(&split, &q).unwrap();
    assert_eq!(r.expanded_cells.len(), 5);
    let r = hpa.find_path(&split, &Query::new(s, s)).unwrap();
    assert_eq!(
        (r.status, r.path.clone(), r.cost),
        (Status::Found, vec![s], 0.0)
    );
    let q = Query::new(s, Point::new(64, 0));
    assert!(matches!(
        hpa.find_path(&split, &q),
        Err(QueryError::OutOfBounds { .. })
    ));
    let q = Query::new(Point::new(40, 0), g);
    assert_eq!(
        hpa.find_path(&split, &q).unwrap_err(),
        QueryError::StartBlocked(Point::new(40, 0))
    );
    let q = Query::new(s, Point::new(40, 5));
    assert_eq!(
        hpa.find_path(&split, &q).unwrap_err(),
        QueryError::GoalBlocked(Point::new(40, 5))
    );
    let q = Query::new(s, g);
    assert!(matches!(
        hpa.find_path(&open, &q),
        Err(QueryError::NotApplicable {
            algorithm: Algorithm::Hpa,
            ..
        })
    ));
    assert!(matches!(
        hpa.find_path(&split.with_movement(Movement::Cardinal), &q),
        Err(QueryError::NotApplicable { .. })
    ));
}

#[test]
fn deterministic_shareable_and_inspectable() {
    fn shareable<T: Send + Sync + Clone>() {}
    shareable::<Abstraction>();
    let grid = load_map("lak100d.map");
    let a = Abstraction::build(&grid, 16);
    let b = a.clone();
    assert!(a.same_graph(&b) && a.same_graph(&Abstraction::build(&grid, 16)));
    assert!(!a.same_graph(&Abstraction::build(&grid, 12)));
    // Without a path cache the graph is the same and every edge is refined by search.
    let uncached = Abstraction::build_with(
        &grid,
        HpaConfig {
            path_cache_bytes: 0,
            ..a.config()
        },
    );
    assert!(uncached.diff(&a).is_none() && uncached.summary().cached_paths == 0);
    assert!(uncached.memory_bytes() < a.memory_bytes());
    let s = a.summary();
    assert!(s.nodes > 100 && s.edges > s.nodes && s.cached_paths > 0);
    assert!(a.memory_bytes() >= s.nodes * 8);
    assert_eq!(a.transitions().len() * 2, s.nodes);
    for (near, far) in a.transitions() {
        assert!(
            grid.step_cost(near, far).is_some(),
            "transition {near} {far}"
        );
    }
    for (from, to, cost) in a.edges().into_iter().step_by(97).take(12) {
        let (best, _) = reference(&grid, from, to).unwrap();
        assert!(
            cost >= best - 1e-9,
            "edge {from} -> {to} cheaper than the map allows"
        );
    }
    // Same query, same path, from another thread too.
    let mut rng = StdRng::seed_from_u64(3);
    let (s, g) = loop {
        let (s, g) = (
            random_passable(&mut rng, &grid).unwrap(),
            random_passable(&mut rng, &grid).unwrap(),
        );
        if grid.same_component(s, g) && grid.heuristic(s, g) > 200.0 {
            break (s, g);
        }
    };
    let first = a.find_path(&grid, &Query::new(s, g)).unwrap();
    let same = uncached.find_path(&grid, &Query::new(s, g)).unwrap();
    assert!(same.status == Status::Found && (same.cost - first.cost).abs() < 1e-6 * first.cost);
    let other = std::thread::spawn(move || b.find_path(&grid, &Query::new(s, g)).unwrap())
        .join()
        .unwrap();
    assert_eq!(first.path, other.path);
    assert_eq!(first.cost.to_bits(), other.cost.to_bits());
}

#[test]
fn corridor_refinement_repairs_weighted_maps() {
    let mut rng = StdRng::seed_from_u64(0xc0771d0);
    let (mut edges, mut corridor) = (Vec::new(), Vec::new());
    for _ in 0..60 {
        let (w, h) = (rng.random_range(40..=90), rng.random_range(40..=90));
        let grid = random_grid(&mut rng, w, h, 0.2, true, Movement::Octile);
        let config = |refine| HpaConfig {
            cluster_size: 8,
            refine,
            ..HpaConfig::default()
        };
        let fast = Abstraction::build_with(&grid, config(Refine::Edges));
        let good = Abstraction::build_with(&grid, config(Refine::CorridorOnWeighted));
        for _ in 0..5 {
            let (s, g) = (
                random_passable(&mut rng, &grid).unwrap(),
                random_passable(&mut rng, &grid).unwrap(),
            );
            let best = pathd_engine::find_path(&grid, &Query::new(s, g)).unwrap();
            if best.status != Status::Found || best.cost == 0.0 {
                continue;
            }
            for (hpa, out) in [(&fast, &mut edges), (&good, &mut corridor)] {
                let r = hpa.find_path(&grid, &Query::new(s, g)).unwrap();
                check_path(&grid, &r.path, s, g, r.cost).unwrap();
                out.push(r.cost / best.cost - 1.0);
            }
        }
    }
    let (e, c) = (summarize(edges), summarize(corridor));
    println!(
        "random weighted maps: excess with edge refinement mean {:.2}% p99 {:.2}%, with the corridor mean {:.2}% p99 {:.2}%",
        e.0 * 100.0,
        e.1 * 100.0,
        c.0 * 100.0,
        c.1 * 100.0
    );
    assert!(
        c.0 < e.0 / 2.0,
        "the corridor should at least halve the excess"
    );
}

#[test]
fn planner_routes_hpa_and_auto_through_the_abstraction() {
    let mut rng = StdRng::seed_from_u64(21);
    let grid = random_grid(&mut rng, 300, 300, 0.1, true, Movement::Octile);
    let abs = Abstraction::build(&grid, 16);
    let (s, g) = (Point::new(2, 2), Point::new(290, 290));
    let (s, g) = (nearest_passable(&grid, s), nearest_passable(&grid, g));
    // Without an abstraction `hpa` is not applicable; with one it runs HPA*.
    let hpa_q = Query::new(s, g).with_algorithm(Algorithm::Hpa);
    assert!(matches!(
        pathd_engine::find_path(&grid, &hpa_q),
        Err(QueryError::NotApplicable { .. })
    ));
    let r = pathd_engine::find_path_with(&grid, Some(&abs), &hpa_q).unwrap();
    assert_eq!(r.algorithm, Algorithm::Hpa);
    check_path(&grid, &r.path, s, g, r.cost).unwrap();
    // Smoothing is the planner's post-step for HPA* too.
    let r =
        pathd_engine::find_path_with(&grid, Some(&abs), &hpa_q.clone().with_smooth(true)).unwrap();
    assert!(r.smoothed_length.unwrap() <= r.cost + 1e-9);
    // `auto`: HPA* for a long query on a weighted map, A* for a short one, JPS on uniform maps.
    let auto = Query::new(s, g).with_algorithm(Algorithm::Auto);
    assert_eq!(
        pathd_engine::find_path_with(&grid, Some(&abs), &auto)
            .unwrap()
            .algorithm,
        Algorithm::Hpa
    );
    assert_eq!(
        pathd_engine::find_path(&grid, &auto).unwrap().algorithm,
        Algorithm::AStar
    );
    let near =
        Query::new(s, nearest_passable(&grid, Point::new(5, 5))).with_algorithm(Algorithm::Auto);
    assert_eq!(
        pathd_engine::find_path_with(&grid, Some(&abs), &near)
            .unwrap()
            .algorithm,
        Algorithm::AStar
    );
    let flat = Grid::from_costs(300, 300, vec![1; 90_000], Movement::Octile).unwrap();
    let flat_abs = Abstraction::build(&flat, 16);
    assert_eq!(
        pathd_engine::find_path_with(&flat, Some(&flat_abs), &auto)
            .unwrap()
            .algorithm,
        Algorithm::Jps
    );
    // An abstraction of another grid size is ignored, never misused.
    assert!(
        pathd_engine::find_path_with(
            &grid,
            Some(&Abstraction::build(
                &Grid::from_costs(8, 8, vec![1; 64], Movement::Octile).unwrap(),
                4
            )),
            &hpa_q
        )
        .is_err()
    );
}

fn nearest_passable(grid: &Grid, p: Point) -> Point {
    (0..grid.height())
        .flat_map(|y| (0..grid.width()).map(move |x| Point::new(x, y)))
        .filter(|q| grid.is_passable(*q))
        .min_by_key(|q| q.x.abs_diff(p.x) + q.y.abs_diff(p.y))
        .unwrap()
}
