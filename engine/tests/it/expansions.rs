//! Search effort on the Moving AI benchmarks: weighted A* must pay for its bound by
//! expanding fewer cells than A*, and the optimal searches must never expand a cell twice.
//!
//! Run with `--nocapture` to see the table of mean expansions per map.

use crate::common::{
    check_path, load_map, load_scen, maps_with_scen, matches_optimal, sample_exact,
};
use pathd_engine::movingai::ScenRow;
use pathd_engine::{Algorithm, Grid, Query, Searcher, Status};

/// Scenario rows per map (reachable ones are searched).
const ROWS: usize = 10;

/// The weights the issue names.
const WEIGHTS: [f64; 2] = [1.5, 3.0];

/// Mean expansions of `algorithm` (weight `w`) over `rows`, checking every answer: within
/// `w` of the stated optimum (and not below it), a legal path whose steps add up to the cost.
fn mean_expanded(
    searcher: &mut Searcher,
    grid: &Grid,
    map: &str,
    rows: &[ScenRow],
    algorithm: Algorithm,
    w: f64,
) -> f64 {
    let mut total = 0u64;
    for row in rows {
        let mut q = Query::new(row.start, row.goal).with_algorithm(algorithm);
        q.weight = w;
        let r = searcher.find_path(grid, &q).unwrap();
        assert_eq!(r.status, Status::Found, "{map} {algorithm} w={w} {row:?}");
        let tol = 6e-3 + 1e-5 * row.optimal;
        assert!(
            r.cost <= w * row.optimal + tol && r.cost + tol >= row.optimal,
            "{map} {algorithm} w={w} {row:?}: cost {}",
            r.cost
        );
        check_path(grid, &r.path, row.start, row.goal, r.cost).unwrap();
        total += r.stats.expanded;
    }
    total as f64 / rows.len().max(1) as f64
}

#[test]
fn weighted_astar_expands_fewer_cells_than_astar_on_every_map() {
    let mut searcher = Searcher::new();
    let mut worse = Vec::new();
    let (mut sum_a, mut sum_w) = (0.0, [0.0; 2]);
    println!(
        "{:<28} {:>10} {:>10} {:>10}",
        "map (mean expanded)", "A*", "w=1.5", "w=3"
    );
    for (map, scen) in maps_with_scen() {
        let grid = load_map(&map);
        let rows: Vec<ScenRow> = sample_exact(&load_scen(&scen), ROWS)
            .into_iter()
            .filter(|r| !r.unreachable())
            .collect();
        let a = mean_expanded(&mut searcher, &grid, &map, &rows, Algorithm::AStar, 1.0);
        let ws = WEIGHTS.map(|w| {
            mean_expanded(
                &mut searcher,
                &grid,
                &map,
                &rows,
                Algorithm::WeightedAStar,
                w,
            )
        });
        println!("{map:<28} {a:>10.1} {:>10.1} {:>10.1}", ws[0], ws[1]);
        sum_a += a;
        for (s, x) in sum_w.iter_mut().zip(ws) {
            *s += x;
        }
        // Strictly fewer, except where A* already expands nothing but its path (then both
        // expand exactly the path and cannot do better).
        let path_only = rows.iter().all(|row| {
            let r = searcher
                .find_path(&grid, &Query::new(row.start, row.goal))
                .unwrap();
            r.stats.expanded as usize == r.path.len()
        });
        for (w, x) in WEIGHTS.iter().zip(ws) {
            if !(x < a || path_only && x <= a) {
                worse.push(format!("{map}: w={w} expands {x:.1}, A* {a:.1}"));
            }
        }
    }
    println!(
        "{:<28} {sum_a:>10.1} {:>10.1} {:>10.1}",
        "sum of means", sum_w[0], sum_w[1]
    );
    assert!(
        worse.is_empty(),
        "{} cases:\n{}",
        worse.len(),
        worse.join("\n")
    );
}

#[test]
fn optimal_searches_never_expand_a_cell_twice() {
    let mut searcher = Searcher::new();
    let mut twice = Vec::new();
    for (map, scen) in maps_with_scen() {
        let grid = load_map(&map);
        assert!(grid.is_uniform(), "{map}");
        for row in sample_exact(&load_scen(&scen), ROWS) {
            if row.unreachable() {
                continue;
            }
            for algorithm in [Algorithm::AStar, Algorithm::Jps] {
                let q = Query::new(row.start, row.goal).with_algorithm(algorithm);
                let r = searcher.find_path(&grid, &q).unwrap();
                assert!(
                    r.status == Status::Found && matches_optimal(r.cost, row.optimal),
                    "{map} {algorithm} {row:?}: {:?} {}",
                    r.status,
                    r.cost
                );
                if r.stats.reopened != 0 {
                    twice.push(format!(
                        "{map} {algorithm} {} -> {}: {} reopened",
                        row.start, row.goal, r.stats.reopened
                    ));
                }
            }
        }
    }
    assert!(
        twice.is_empty(),
        "{} rows:\n{}",
        twice.len(),
        twice.join("\n")
    );
}
