//! Optimality on the Moving AI benchmarks: every map of the benchmark set
//! (`common::bench_dir`: the full set when present, else the repository's subset),
//! a deterministic sample of its scenario rows, every optimal algorithm, each path checked
//! step by step.

use crate::common::{
    check_path, load_map, load_scen, maps_with_scen, matches_optimal, sample, sample_size,
};
use pathd_engine::{Algorithm, Query, Searcher, Status};

/// The optimal algorithms and how many rows per map each runs (Dijkstra expands far more).
/// Every Moving AI map is uniform, so JPS applies to all of them.
const OPTIMAL: &[(Algorithm, usize)] = &[
    (Algorithm::AStar, 40),
    (Algorithm::Dijkstra, 6),
    (Algorithm::Jps, 40),
];

fn run_optimal(algorithm: Algorithm, rows_per_map: usize) {
    let mut searcher = Searcher::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    let maps = maps_with_scen();
    for (map, scen) in &maps {
        let grid = load_map(map);
        for row in sample(&load_scen(scen), rows_per_map) {
            assert_eq!(
                (row.width, row.height),
                (grid.width(), grid.height()),
                "{scen}"
            );
            let q = Query::new(row.start, row.goal).with_algorithm(algorithm);
            let r = searcher.find_path(&grid, &q).unwrap();
            checked += 1;
            let ok = if row.unreachable() {
                r.status == Status::NoPath
            } else {
                r.status == Status::Found
                    && matches_optimal(r.cost, row.optimal)
                    && check_path(&grid, &r.path, row.start, row.goal, r.cost)
                        .map_err(|e| failures.push(format!("{map} {row:?}: {e}")))
                        .is_ok()
            };
            if !ok {
                failures.push(format!(
                    "{map} {algorithm}: {} -> {} optimal {} got {:?} {}",
                    row.start, row.goal, row.optimal, r.status, r.cost
                ));
            }
        }
    }
    assert!(
        checked >= maps.len() * sample_size(rows_per_map),
        "only {checked} rows checked"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn astar_matches_every_map() {
    run_optimal(OPTIMAL[0].0, OPTIMAL[0].1);
}

#[test]
fn dijkstra_matches_every_map() {
    run_optimal(OPTIMAL[1].0, OPTIMAL[1].1);
}

#[test]
fn jps_matches_every_map() {
    run_optimal(OPTIMAL[2].0, OPTIMAL[2].1);
}

#[test]
fn weighted_astar_stays_within_its_bound() {
    let mut searcher = Searcher::new();
    let mut checked = 0;
    for w in [1.5, 3.0] {
        for (map, scen) in maps_with_scen() {
            let grid = load_map(&map);
            for row in sample(&load_scen(&scen), 10) {
                let mut q =
                    Query::new(row.start, row.goal).with_algorithm(Algorithm::WeightedAStar);
                q.weight = w;
                let r = searcher.find_path(&grid, &q).unwrap();
                checked += 1;
                if row.unreachable() {
                    assert_eq!(r.status, Status::NoPath, "{map} {row:?}");
                    continue;
                }
                assert_eq!(r.status, Status::Found, "{map} {row:?}");
                assert!(
                    r.cost <= w * row.optimal + 6e-3
                        && r.cost + 6e-3 + 1e-5 * row.optimal >= row.optimal,
                    "{map} w={w} {row:?}: cost {}",
                    r.cost
                );
                check_path(&grid, &r.path, row.start, row.goal, r.cost).unwrap();
            }
        }
    }
    assert!(checked >= 2 * maps_with_scen().len() * sample_size(10));
}

#[test]
fn unreachable_rows_are_answered_without_search() {
    // Dragon Age files state 0 for unreachable pairs: 70 such rows in 7 files of this copy.
    let mut seen = 0;
    for (map, scen) in maps_with_scen() {
        let rows = load_scen(&scen);
        if !rows.iter().any(|r| r.unreachable()) {
            continue;
        }
        let grid = load_map(&map);
        for row in rows.iter().filter(|r| r.unreachable()) {
            let r = pathd_engine::find_path(&grid, &Query::new(row.start, row.goal)).unwrap();
            assert_eq!(r.status, Status::NoPath, "{map} {row:?}");
            assert_eq!(r.stats.expanded, 0, "components answer without searching");
            seen += 1;
        }
    }
    assert!(seen >= 70, "expected the 70 unreachable rows, saw {seen}");
}
