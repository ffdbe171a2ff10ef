//! HPA*: legality, completeness and quality on the large Moving AI maps; exactness against
//! the reference Dijkstra on random maps; incremental updates equal fresh builds after random
//! patch sequences; limits, partial answers and misuse.

mod common;

use common::{
    bench_dir, check_path, load_map, load_scen, random_grid, random_passable, reference, sample,
    show,
};
use pathd_engine::{Abstraction, Grid, HpaConfig, Movement, Point, Query, Status};

/// Scenario rows sampled per map (plus every unreachable row).
const ROWS_PER_MAP: usize = 60;

/// Benchmark maps at least 512 cells on both sides, with their scenario files.
fn big_maps() -> Vec<(String, String)> {
    common::maps_with_scen()
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
    assert!(maps.len() >= 40, "only {} big maps", maps.len());
    let mut excess = Vec::new();
    let mut failures = Vec::new();
    let mut unreachable = 0;
    for (map, scen) in &maps {
        let grid = load_map(map);
        let hpa = Abstraction::build_with(&grid, HpaConfig::default());
        let mut mine = Vec::new();
        for row in sample(&load_scen(scen), ROWS_PER_MAP) {
            let r = hpa
                .find_path(&grid, &Query::new(row.start, row.goal))
                .unwrap();
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
