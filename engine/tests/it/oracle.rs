//! Seeded property tests: every optimal algorithm against the test-only reference Dijkstra
//! on random maps (1x1 to 128x128, 0-60% walls, weighted cells, both movement rules).

use crate::common::{check_path, random_grid, random_passable, reference, show};
use pathd_engine::{Algorithm, Limits, Movement, Query, Searcher, Status};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Optimal algorithms that answer every map.
const OPTIMAL: &[Algorithm] = &[Algorithm::AStar, Algorithm::Dijkstra];

/// Optimal algorithms that answer only unweighted maps.
const OPTIMAL_UNIFORM: &[Algorithm] = &[Algorithm::Jps];

#[test]
fn optimal_algorithms_match_reference_on_random_maps() {
    let mut rng = StdRng::seed_from_u64(0x9a7d);
    let mut searcher = Searcher::new();
    let mut found = 0;
    for case in 0..600 {
        let (w, h) = match case % 4 {
            0 => (rng.random_range(1..=8), rng.random_range(1..=8)),
            1 => (rng.random_range(1..=32), rng.random_range(1..=32)),
            2 => (rng.random_range(32..=128), rng.random_range(1..=16)),
            _ => (rng.random_range(64..=128), rng.random_range(64..=128)),
        };
        let density = rng.random_range(0.0..0.6);
        let weighted = rng.random_bool(0.5);
        let movement = if rng.random_bool(0.5) {
            Movement::Octile
        } else {
            Movement::Cardinal
        };
        let grid = random_grid(&mut rng, w, h, density, weighted, movement);
        let (Some(start), Some(goal)) = (
            random_passable(&mut rng, &grid),
            random_passable(&mut rng, &grid),
        ) else {
            continue;
        };
        let want = reference(&grid, start, goal);
        let uniform: &[Algorithm] = if weighted { &[] } else { OPTIMAL_UNIFORM };
        for &alg in OPTIMAL.iter().chain(uniform) {
            let r = searcher
                .find_path(&grid, &Query::new(start, goal).with_algorithm(alg))
                .unwrap();
            match &want {
                None => assert_eq!(
                    r.status,
                    Status::NoPath,
                    "case {case} {alg}\n{}",
                    show(&grid, start, goal, &[])
                ),
                Some((cost, path)) => {
                    let same =
                        r.status == Status::Found && (r.cost - cost).abs() <= 1e-9 * (1.0 + cost);
                    assert!(
                        same,
                        "case {case} {alg}: reference {cost}, got {:?} {}\nreference path:\n{}ours:\n{}",
                        r.status,
                        r.cost,
                        show(&grid, start, goal, path),
                        show(&grid, start, goal, &r.path)
                    );
                    check_path(&grid, &r.path, start, goal, r.cost).unwrap();
                    found += 1;
                }
            }
        }
        // Weighted A* honours its bound on the same maps.
        if let Some((cost, _)) = &want {
            let w = rng.random_range(1.0..4.0);
            let mut q = Query::new(start, goal).with_algorithm(Algorithm::WeightedAStar);
            q.weight = w;
            let r = searcher.find_path(&grid, &q).unwrap();
            assert_eq!(r.status, Status::Found);
            assert!(
                r.cost <= w * cost + 1e-9 * (1.0 + cost),
                "case {case}: w={w} {} > {}",
                r.cost,
                cost
            );
            check_path(&grid, &r.path, start, goal, r.cost).unwrap();
        }
    }
    assert!(found > 500, "only {found} reachable cases");
}

#[test]
fn same_query_same_path() {
    let mut rng = StdRng::seed_from_u64(7);
    let grid = random_grid(&mut rng, 96, 96, 0.25, true, Movement::Octile);
    let (s, g) = (
        random_passable(&mut rng, &grid).unwrap(),
        random_passable(&mut rng, &grid).unwrap(),
    );
    let first = pathd_engine::find_path(&grid, &Query::new(s, g)).unwrap();
    let mut other = Searcher::new();
    for _ in 0..5 {
        let again = other.find_path(&grid, &Query::new(s, g)).unwrap();
        assert_eq!(again.path, first.path);
        assert_eq!(again.cost.to_bits(), first.cost.to_bits());
    }
}

#[test]
fn limits_and_partial_paths() {
    let mut rng = StdRng::seed_from_u64(11);
    let grid = random_grid(&mut rng, 128, 128, 0.0, false, Movement::Octile);
    let (s, g) = (
        pathd_engine::Point::new(0, 0),
        pathd_engine::Point::new(127, 127),
    );
    let mut q = Query::new(s, g).with_algorithm(Algorithm::Dijkstra);
    q.limits = Limits {
        max_expansions: Some(100),
        ..Limits::default()
    };
    let r = pathd_engine::find_path(&grid, &q).unwrap();
    assert_eq!(r.status, Status::LimitReached);
    assert!(r.path.is_empty());
    assert_eq!(r.stats.expanded, 100);

    q.partial = true;
    let r = pathd_engine::find_path(&grid, &q).unwrap();
    assert_eq!(r.status, Status::Partial);
    let end = *r.path.last().unwrap();
    assert_ne!(end, g);
    check_path(&grid, &r.path, s, end, r.cost).unwrap();

    // A cancelled search stops at once; a past deadline too.
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut q = Query::new(s, g);
    q.limits.cancel = Some(flag);
    let r = pathd_engine::find_path(&grid, &q).unwrap();
    assert_eq!(r.limit, Some(pathd_engine::LimitKind::Cancelled));
    let mut q = Query::new(s, g);
    q.limits.deadline = Some(std::time::Instant::now());
    assert_eq!(
        pathd_engine::find_path(&grid, &q).unwrap().limit,
        Some(pathd_engine::LimitKind::Deadline)
    );
}

#[test]
fn partial_path_to_unreachable_goal_ends_nearest() {
    // Goal walled off on the right: the partial path ends at the wall, next to it.
    let mut costs = vec![1u8; 10 * 3];
    for y in 0..3 {
        costs[y * 10 + 7] = 0;
    }
    let grid = pathd_engine::Grid::from_costs(10, 3, costs, Movement::Octile).unwrap();
    let (s, g) = (
        pathd_engine::Point::new(0, 1),
        pathd_engine::Point::new(9, 1),
    );
    assert_eq!(
        pathd_engine::find_path(&grid, &Query::new(s, g))
            .unwrap()
            .status,
        Status::NoPath
    );
    let mut q = Query::new(s, g);
    q.partial = true;
    let r = pathd_engine::find_path(&grid, &q).unwrap();
    assert_eq!(r.status, Status::Partial);
    assert_eq!(r.path.last(), Some(&pathd_engine::Point::new(6, 1)));
}
