//! Moving AI correctness over HTTP: on sampled scenario rows the cost matches the stated
//! optimum and every step of every path is legal on the map.

use crate::common::{Dirs, TestServer, bench, cells, query};
use pathd_client::{BatchItem, PathRequest, PathResult};
use pathd_engine::{Grid, Point, movingai};

const SAMPLE: usize = 120;

fn check_answer(grid: &Grid, row: &movingai::ScenRow, v: &PathResult, what: &str) {
    if row.unreachable() {
        assert_eq!(v.status, "no_path", "{what}: {v:?}");
        return;
    }
    assert_eq!(v.status, "found", "{what}: {v:?}");
    let path = cells(&v.path);
    assert_eq!(path.first(), Some(&row.start), "{what}");
    assert_eq!(path.last(), Some(&row.goal), "{what}");
    let mut sum = 0.0;
    for w in path.windows(2) {
        sum += grid
            .step_cost(w[0], w[1])
            .unwrap_or_else(|| panic!("{what}: illegal step {} -> {}", w[0], w[1]));
    }
    let cost = v.cost;
    assert!(
        (sum - cost).abs() < 1e-6,
        "{what}: reported {cost}, steps sum to {sum}"
    );
    assert!(
        (cost - row.optimal).abs() <= 6e-3 + 1e-5 * row.optimal,
        "{what}: cost {cost}, optimal {}",
        row.optimal
    );
}

fn sampled(map: &str) -> (Grid, Vec<movingai::ScenRow>) {
    let text = std::fs::read_to_string(bench(&format!("maps/{map}.map"))).unwrap();
    let grid = movingai::parse_map(&text).unwrap();
    let rows = movingai::parse_scen(
        &std::fs::read_to_string(bench(&format!("scen/{map}.map.scen"))).unwrap(),
    )
    .unwrap();
    let step = (rows.len() / SAMPLE).max(1);
    // Every step-th row, plus the hardest (last) rows and every unreachable one.
    let mut picked: Vec<_> = rows.iter().step_by(step).cloned().collect();
    picked.extend(rows.iter().rev().take(5).cloned());
    picked.extend(rows.iter().filter(|r| r.unreachable()).cloned());
    (grid, picked)
}

#[tokio::test]
async fn sampled_rows_are_optimal_and_legal() {
    let dirs = Dirs::new();
    // Two through the maps directory (Berlin has CRLF lines), three uploaded (den502d has
    // rows stated as unreachable).
    dirs.bundle("den520d");
    dirs.bundle("Berlin_0_256");
    let config = dirs.config();
    let s = TestServer::start(dirs, config).await;
    let pathd = s.pathd();
    for map in ["arena2", "maze512-1-0", "den502d"] {
        let text = std::fs::read_to_string(bench(&format!("maps/{map}.map"))).unwrap();
        s.upload(map, &text).await;
    }
    let mut unreachable = 0;
    for map in [
        "den520d",
        "Berlin_0_256",
        "arena2",
        "maze512-1-0",
        "den502d",
    ] {
        let (grid, rows) = sampled(map);
        unreachable += rows.iter().filter(|r| r.unreachable()).count();
        assert!(rows.len() >= 50, "{map}: only {} rows", rows.len());
        // Batches of up to 64 rows over the pool...
        for chunk in rows.chunks(64) {
            let queries: Vec<_> = chunk
                .iter()
                .map(|r| PathRequest::new(xy(r.start), xy(r.goal)))
                .collect();
            let v = pathd.find_paths(map, &queries).await.unwrap();
            assert_eq!(v.results.len(), chunk.len());
            for (row, answer) in chunk.iter().zip(&v.results) {
                let BatchItem::Result(answer) = answer else {
                    panic!("{map} {} -> {}: {answer:?}", row.start, row.goal);
                };
                check_answer(
                    &grid,
                    row,
                    answer,
                    &format!("{map} {} -> {}", row.start, row.goal),
                );
            }
        }
        // ...and single queries with every optimal algorithm (auto: JPS on these maps).
        for (i, row) in rows.iter().step_by(10).enumerate() {
            let algorithm = ["astar", "jps", "auto", "dijkstra"][i % 4];
            let q = query(xy(row.start), xy(row.goal), algorithm);
            let v = pathd.find_path(map, &q).await.unwrap();
            check_answer(
                &grid,
                row,
                &v,
                &format!("{map} {algorithm} {} -> {}", row.start, row.goal),
            );
        }
    }
    assert!(
        unreachable >= 10,
        "the sample includes the unreachable rows"
    );
}

fn xy(p: Point) -> [u32; 2] {
    [p.x, p.y]
}

/// Any-angle answers say which geometry each number belongs to: on every sampled row,
/// Theta*'s and smoothed JPS's `cost` is the length of the polyline through `waypoints`
/// (the answer to follow; every Moving AI cell costs 1, so length is Euclidean),
/// `waypoints_cost` equals it, and `path_cost` is the cell path's step sum.
#[tokio::test]
async fn any_angle_costs_are_the_length_of_the_waypoints() {
    let s = TestServer::new().await;
    let mut checked = 0;
    for map in ["arena2", "den520d"] {
        let text = std::fs::read_to_string(bench(&format!("maps/{map}.map"))).unwrap();
        s.upload(map, &text).await;
        let (grid, rows) = sampled(map);
        for (i, row) in rows.iter().filter(|r| !r.unreachable()).enumerate() {
            let body = if i % 2 == 0 {
                query(xy(row.start), xy(row.goal), "theta")
            } else {
                PathRequest {
                    smooth: true,
                    ..query(xy(row.start), xy(row.goal), "jps")
                }
            };
            let v = s.pathd().find_path(map, &body).await.unwrap();
            assert_eq!(v.status, "found", "{v:?}");
            let w = cells(v.waypoints.as_deref().expect("waypoints"));
            let length: f64 = w
                .windows(2)
                .map(|s| {
                    let (dx, dy) = (s[0].x as f64 - s[1].x as f64, s[0].y as f64 - s[1].y as f64);
                    (dx * dx + dy * dy).sqrt()
                })
                .sum();
            let cost = v.cost;
            assert!((cost - length).abs() < 1e-6, "{map} {body:?}: {v:?}");
            assert_eq!(v.waypoints_cost, Some(cost), "{v:?}");
            let steps = grid.path_cost(&cells(&v.path)).unwrap();
            assert!((steps - v.path_cost).abs() < 1e-6, "{v:?}");
            assert!(cost <= steps + 1e-9, "{v:?}");
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}
