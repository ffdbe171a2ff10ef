//! Subgoal graphs: answers equal the reference Dijkstra's on seeded random maps (dense
//! random obstacles included), a graph updated through random patch sequences equals a
//! fresh build and answers the same, and the Moving AI optima hold on a few benchmark maps
//! (skipped when the benchmark folder is absent).

use crate::common::{
    bench_dir, check_path, load_map, load_scen, matches_optimal, random_grid, random_passable,
    reference, sample, show,
};
use pathd_engine::{
    Algorithm, Derived, Grid, Movement, Patch, Point, Query, QueryError, Rect, Searcher, Status,
    SubgoalGraph,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn derived(graph: &SubgoalGraph) -> Derived<'_> {
    Derived {
        subgoal: Some(graph),
        ..Derived::default()
    }
}

/// `n` random queries on `grid` with `graph` against the reference; panics with the map and
/// both paths on a difference.
fn check_queries(rng: &mut StdRng, grid: &Grid, graph: &SubgoalGraph, n: usize, what: &str) {
    let mut searcher = Searcher::new();
    for _ in 0..n {
        let (Some(s), Some(g)) = (random_passable(rng, grid), random_passable(rng, grid)) else {
            return;
        };
        let q = Query::new(s, g).with_algorithm(Algorithm::Subgoal);
        let r = searcher
            .find_path_derived(grid, derived(graph), &q)
            .unwrap();
        assert_eq!(r.algorithm, Algorithm::Subgoal);
        match reference(grid, s, g) {
            None => assert_eq!(r.status, Status::NoPath, "{what}: {s} -> {g}"),
            Some((cost, path)) => {
                let checked = check_path(grid, &r.path, s, g, r.cost);
                let ok = r.status == Status::Found
                    && (r.cost - cost).abs() < 1e-9 * (1.0 + cost)
                    && checked.is_ok();
                assert!(
                    ok,
                    "{what}: {s} -> {g}: reference {cost}, subgoal {:?} {} ({checked:?})\n\
                     reference:\n{}subgoal:\n{}",
                    r.status,
                    r.cost,
                    show(grid, s, g, &path),
                    show(grid, s, g, &r.path)
                );
            }
        }
    }
}

/// A random patch of walls and openings, in cells and small rectangles.
fn random_patch(rng: &mut StdRng, w: u32, h: u32) -> Patch {
    let rects = (0..rng.random_range(0..=2))
        .map(|_| {
            let rw = rng.random_range(1..=w.min(5));
            let rh = rng.random_range(1..=h.min(5));
            Rect {
                x: rng.random_range(0..=w - rw),
                y: rng.random_range(0..=h - rh),
                width: rw,
                height: rh,
                cost: u8::from(rng.random_bool(0.5)),
            }
        })
        .collect();
    let cells = (0..rng.random_range(1..=6))
        .map(|_| {
            let p = Point::new(rng.random_range(0..w), rng.random_range(0..h));
            (p, u8::from(rng.random_bool(0.5)))
        })
        .collect();
    Patch { cells, rects }
}

#[test]
fn subgoal_answers_like_dijkstra_on_random_maps() {
    for seed in 0..80u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (w, h) = (rng.random_range(2..=60), rng.random_range(2..=45));
        // Every fourth map is dense (35-45% blocked), like the random512-35 benchmarks.
        let density = if seed % 4 == 0 {
            rng.random_range(0.35..0.45)
        } else {
            rng.random_range(0.0..0.4)
        };
        let grid = random_grid(&mut rng, w, h, density, false, Movement::Octile);
        let graph = SubgoalGraph::build(&grid).unwrap();
        check_queries(&mut rng, &grid, &graph, 25, &format!("seed {seed}"));
    }
}

#[test]
fn subgoal_updates_equal_fresh_builds_through_patch_sequences() {
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(1000 + seed);
        let (w, h) = (rng.random_range(2..=50), rng.random_range(2..=40));
        let density = rng.random_range(0.0..0.45);
        let mut grid = random_grid(&mut rng, w, h, density, false, Movement::Octile);
        let mut graph = SubgoalGraph::build(&grid).unwrap();
        for step in 0..10 {
            let patch = random_patch(&mut rng, w, h);
            let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                continue;
            };
            let updated = graph.update(&next, &changed);
            let fresh = SubgoalGraph::build(&next).unwrap();
            assert!(
                updated == fresh,
                "seed {seed} step {step}: updated {updated:?} differs from fresh {fresh:?}\n{}",
                show(&next, changed[0], changed[0], &[])
            );
            (grid, graph) = (next, updated);
            check_queries(
                &mut rng,
                &grid,
                &graph,
                6,
                &format!("seed {seed} step {step}"),
            );
        }
    }
}

#[test]
fn subgoal_on_open_mazes_and_walled_off_maps() {
    let mut rng = StdRng::seed_from_u64(7);
    // No obstacle at all: no subgoal, every pair h-reachable.
    let open = Grid::from_costs(120, 40, vec![1; 4800], Movement::Octile).unwrap();
    let graph = SubgoalGraph::build(&open).unwrap();
    assert_eq!(graph.subgoals(), 0);
    check_queries(&mut rng, &open, &graph, 20, "open");
    // Long walls with gaps (long scans, few subgoals).
    let (w, h) = (90u32, 60u32);
    let costs = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let wall = (y % 6 == 3 && x % 17 != 5) || (x % 13 == 7 && y % 11 != 2);
            u8::from(!wall)
        })
        .collect();
    let rooms = Grid::from_costs(w, h, costs, Movement::Octile).unwrap();
    let graph = SubgoalGraph::build(&rooms).unwrap();
    check_queries(&mut rng, &rooms, &graph, 60, "rooms");
    // Components apart: no path.
    let split = Grid::from_costs(3, 1, vec![1, 0, 1], Movement::Octile).unwrap();
    let graph = SubgoalGraph::build(&split).unwrap();
    let q = Query::new(Point::new(0, 0), Point::new(2, 0)).with_algorithm(Algorithm::Subgoal);
    let r = Searcher::new()
        .find_path_derived(&split, derived(&graph), &q)
        .unwrap();
    assert_eq!(r.status, Status::NoPath);
}

#[test]
fn auto_takes_the_subgoal_graph_where_it_pays_off() {
    let mut rng = StdRng::seed_from_u64(3);
    let dense = random_grid(&mut rng, 60, 40, 0.35, false, Movement::Octile);
    let graph = SubgoalGraph::build(&dense).unwrap();
    assert!(graph.pays_off() && graph.core() == 0);
    let (s, g) = loop {
        let (s, g) = (
            random_passable(&mut rng, &dense),
            random_passable(&mut rng, &dense),
        );
        let (s, g) = (s.unwrap(), g.unwrap());
        if s != g && reference(&dense, s, g).is_some() {
            break (s, g);
        }
    };
    let q = Query::new(s, g).with_algorithm(Algorithm::Auto);
    let r = Searcher::new()
        .find_path_derived(&dense, derived(&graph), &q)
        .unwrap();
    assert_eq!(r.algorithm, Algorithm::Subgoal);
    assert!((r.cost - reference(&dense, s, g).unwrap().0).abs() < 1e-9);
    // An open map has no subgoal: auto stays with JPS.
    let open = Grid::from_costs(20, 20, vec![1; 400], Movement::Octile).unwrap();
    let graph = SubgoalGraph::build(&open).unwrap();
    assert!(!graph.pays_off());
    let q = Query::new(Point::new(0, 0), Point::new(19, 7)).with_algorithm(Algorithm::Auto);
    let r = Searcher::new()
        .find_path_derived(&open, derived(&graph), &q)
        .unwrap();
    assert_eq!(r.algorithm, Algorithm::Jps);
}

#[test]
fn subgoal_graphs_are_shared_between_threads() {
    fn shared<T: Send + Sync + Clone>() {}
    shared::<SubgoalGraph>();
}

#[test]
fn subgoal_stops_at_its_expansion_limit() {
    let mut rng = StdRng::seed_from_u64(11);
    let grid = random_grid(&mut rng, 60, 40, 0.35, false, Movement::Octile);
    let graph = SubgoalGraph::build(&grid).unwrap();
    let mut searcher = Searcher::new();
    let mut limited = 0;
    for _ in 0..200 {
        let (s, g) = (
            random_passable(&mut rng, &grid),
            random_passable(&mut rng, &grid),
        );
        let q = Query::new(s.unwrap(), g.unwrap()).with_algorithm(Algorithm::Subgoal);
        let free = searcher
            .find_path_derived(&grid, derived(&graph), &q)
            .unwrap();
        if free.status != Status::Found || free.stats.expanded < 2 {
            continue;
        }
        let mut q = q;
        q.limits.max_expansions = Some(1);
        let r = searcher
            .find_path_derived(&grid, derived(&graph), &q)
            .unwrap();
        assert_eq!(r.status, Status::LimitReached, "{q:?}");
        assert!(r.path.is_empty());
        limited += 1;
    }
    assert!(limited > 10, "only {limited} queries needed a search");
}

#[test]
fn subgoal_not_applicable_without_a_graph_or_on_other_maps() {
    let grid = Grid::from_costs(3, 1, vec![1, 1, 1], Movement::Octile).unwrap();
    let q = Query::new(Point::new(0, 0), Point::new(2, 0)).with_algorithm(Algorithm::Subgoal);
    let e = Searcher::new().find_path(&grid, &q).unwrap_err();
    assert!(matches!(e, QueryError::NotApplicable { .. }), "{e}");
    let weighted = Grid::from_costs(3, 1, vec![1, 5, 1], Movement::Octile).unwrap();
    let graph = SubgoalGraph::build(&weighted).unwrap();
    let e = Searcher::new()
        .find_path_derived(&weighted, derived(&graph), &q)
        .unwrap_err();
    assert!(matches!(e, QueryError::NotApplicable { .. }), "{e}");
    let cardinal = grid.with_movement(Movement::Cardinal);
    assert!(SubgoalGraph::build(&cardinal).is_none());
    // A partial query is answered (by JPS, which sees every reachable cell).
    let split = Grid::from_costs(3, 1, vec![1, 0, 1], Movement::Octile).unwrap();
    let graph = SubgoalGraph::build(&split).unwrap();
    let mut q = q;
    q.partial = true;
    let r = Searcher::new()
        .find_path_derived(&split, derived(&graph), &q)
        .unwrap();
    assert_eq!((r.status, r.algorithm), (Status::Partial, Algorithm::Jps));
}

#[test]
fn subgoal_matches_the_moving_ai_optima() {
    if !bench_dir().join("maps").is_dir() {
        eprintln!("skipped: no benchmark folder at {:?}", bench_dir());
        return;
    }
    let maps = [
        ("arena2.map", "arena2.map.scen"),
        ("random-64-64-20.map", "random-64-64-20-random-1.scen"),
        ("maze-32-32-4.map", "maze-32-32-4-random-1.scen"),
        ("Berlin_0_256.map", "Berlin_0_256.map.scen"),
    ];
    let mut searcher = Searcher::new();
    let mut failures = Vec::new();
    for (map, scen) in maps {
        let grid = load_map(map);
        let graph = SubgoalGraph::build(&grid).unwrap();
        for row in sample(&load_scen(scen), 80) {
            let q = Query::new(row.start, row.goal).with_algorithm(Algorithm::Subgoal);
            let r = searcher
                .find_path_derived(&grid, derived(&graph), &q)
                .unwrap();
            let ok = if row.unreachable() {
                r.status == Status::NoPath
            } else {
                r.status == Status::Found
                    && matches_optimal(r.cost, row.optimal)
                    && check_path(&grid, &r.path, row.start, row.goal, r.cost).is_ok()
            };
            if !ok {
                failures.push(format!(
                    "{map}: {} -> {} optimal {} got {:?} {}",
                    row.start, row.goal, row.optimal, r.status, r.cost
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
