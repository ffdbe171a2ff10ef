//! Sized JPS and HPA*: the one-cell searches on the map eroded for the agent ([`Eroded`]),
//! against the sized A* on seeded random maps; the eroded map and its abstraction under
//! random patches against fresh builds.

use pathd_engine::{
    Abstraction, Algorithm, Derived, Eroded, Grid, HpaConfig, Movement, Point, Query, QueryError,
    Searcher, SizedDerived, Status,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common::random_grid;
use crate::hpa::random_patch;

fn same_cost(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// A random map where 2x2 and 3x3 agents still find room: sparse cells and a few blocks.
fn roomy_grid(rng: &mut StdRng, weighted: bool) -> Grid {
    let (w, h) = (rng.random_range(6..=48), rng.random_range(6..=48));
    let movement = if rng.random_bool(0.7) {
        Movement::Octile
    } else {
        Movement::Cardinal
    };
    let density = rng.random_range(0.0..0.06);
    let grid = random_grid(rng, w, h, density, weighted, movement);
    let mut patch = pathd_engine::Patch::default();
    for _ in 0..rng.random_range(0..6) {
        let (x, y) = (rng.random_range(0..w), rng.random_range(0..h));
        patch.rects.push(pathd_engine::Rect {
            x,
            y,
            width: rng.random_range(1..=(w - x).min(6)),
            height: rng.random_range(1..=(h - y).min(6)),
            cost: 0,
        });
    }
    match grid.apply_patch(&patch).unwrap() {
        Some((g, _)) => g,
        None => grid,
    }
}

#[test]
fn sized_jps_and_hpa_answer_on_the_eroded_map() {
    let mut rng = StdRng::seed_from_u64(0xe40d);
    let mut searcher = Searcher::new();
    let (mut found, mut no_path, mut refused) = (0, 0, 0);
    for case in 0..160 {
        let uniform = case % 3 != 0;
        let grid = roomy_grid(&mut rng, !uniform);
        for size in 2..=3 {
            let eroded = Eroded::build(&grid, size);
            let config = HpaConfig {
                cluster_size: rng.random_range(4..=12),
                ..HpaConfig::default()
            };
            let hpa = Abstraction::build_with(eroded.grid(), config);
            let derived = Derived {
                sized: Some(SizedDerived {
                    eroded: &eroded,
                    hpa: Some(&hpa),
                }),
                ..Derived::default()
            };
            for _ in 0..8 {
                let p = |rng: &mut StdRng| {
                    Point::new(
                        rng.random_range(0..grid.width()),
                        rng.random_range(0..grid.height()),
                    )
                };
                let mut q = Query::new(p(&mut rng), p(&mut rng));
                q.size = size;
                let astar = searcher.find_path(&grid, &q);
                let algorithms: &[Algorithm] = if grid.is_uniform() {
                    &[Algorithm::Jps, Algorithm::Hpa]
                } else {
                    &[Algorithm::Hpa]
                };
                for &algorithm in algorithms {
                    let q = q.clone().with_algorithm(algorithm);
                    let got = searcher.find_path_derived(&grid, derived, &q);
                    let case = format!("case {case} size {size} {algorithm} {q:?}");
                    let (want, got) = match (&astar, got) {
                        (Ok(a), Ok(g)) => (a, g),
                        (Err(a), Err(g)) => {
                            // Both ends are checked against the real map, footprint and all.
                            assert_eq!(a.to_string(), g.to_string(), "{case}");
                            refused += 1;
                            continue;
                        }
                        (a, g) => panic!("{case}: A* {a:?}, got {g:?}"),
                    };
                    assert_eq!(got.status, want.status, "{case}");
                    if got.status != Status::Found {
                        no_path += 1;
                        continue;
                    }
                    found += 1;
                    // Legal for the footprint: every step is a one-cell step of the eroded map.
                    let legal = eroded.grid().path_cost(&got.path);
                    assert!(
                        legal.is_some_and(|c| same_cost(c, got.cost)),
                        "{case}: {:?} costs {legal:?} on the eroded map, answer says {}",
                        got.path,
                        got.cost
                    );
                    assert_eq!(got.algorithm, algorithm, "{case}");
                    if algorithm == Algorithm::Jps {
                        assert!(
                            same_cost(got.cost, want.cost),
                            "{case}: {got:?} vs {want:?}"
                        );
                    } else {
                        assert!(got.cost >= want.cost * (1.0 - 1e-9), "{case}");
                    }
                }
                // Without the eroded map they are not applicable.
                let q = q.clone().with_algorithm(Algorithm::Hpa);
                if astar.is_ok() {
                    assert!(matches!(
                        searcher.find_path(&grid, &q),
                        Err(QueryError::NotApplicable { .. })
                    ));
                }
            }
        }
    }
    assert!(
        found > 500 && no_path > 20 && refused > 100,
        "found {found}, no path {no_path}, refused {refused}"
    );
}

#[test]
fn eroded_maps_and_their_abstractions_follow_patches() {
    let mut rng = StdRng::seed_from_u64(0xe40e);
    let mut anchors_changed = 0;
    for case in 0..60 {
        let weighted = case % 2 == 0;
        let mut grid = roomy_grid(&mut rng, weighted);
        let size = rng.random_range(2..=4);
        let config = HpaConfig {
            cluster_size: rng.random_range(4..=12),
            ..HpaConfig::default()
        };
        let mut eroded = Eroded::build(&grid, size);
        let mut hpa = Abstraction::build_with(eroded.grid(), config);
        for step in 0..6 {
            let patch = random_patch(&mut rng, &grid, weighted);
            let Some((next, changed)) = grid.apply_patch(&patch).unwrap() else {
                continue;
            };
            let (next_eroded, anchors) = eroded.update(&next, &changed);
            let fresh = Eroded::build(&next, size);
            assert_eq!(
                next_eroded.grid().costs(),
                fresh.grid().costs(),
                "case {case} step {step}: size {size} after {patch:?}"
            );
            anchors_changed += anchors.len();
            let next_hpa = hpa.update(next_eroded.grid(), &anchors);
            if let Some(d) = next_hpa.diff(&Abstraction::build_with(fresh.grid(), config)) {
                panic!("case {case} step {step}: the eroded map's abstraction differs: {d}");
            }
            (grid, eroded, hpa) = (next, next_eroded, next_hpa);
        }
    }
    assert!(anchors_changed > 1000, "{anchors_changed}");
}
