//! Shared helpers for the engine's integration tests: benchmark loading, a path checker and
//! an independent reference Dijkstra written only for the tests.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;

use pathd_engine::movingai::{self, ScenRow};
use pathd_engine::{Grid, Movement, Point};
use rand::Rng;

/// The Moving AI benchmark folder (with `maps/` and `scen/`): `PATHD_BENCHMARKS` when set
/// and not empty, else `../shared/benchmarks/movingai` beside the repository when it exists
/// (the full set), else the subset carried in `tests/data/movingai` (see its README).
pub fn bench_dir() -> PathBuf {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    if let Some(dir) = std::env::var_os("PATHD_BENCHMARKS").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let shared = root.join("../shared/benchmarks/movingai");
    if shared.is_dir() {
        return shared;
    }
    root.join("tests/data/movingai")
}

/// Whether [`bench_dir`] is a full set rather than the repository's own subset.
pub fn full_set() -> bool {
    !bench_dir().ends_with("tests/data/movingai")
}

/// Loads `maps/<name>` (e.g. `arena2.map`).
pub fn load_map(name: &str) -> Grid {
    let path = bench_dir().join("maps").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    movingai::parse_map(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// Loads `scen/<name>`.
pub fn load_scen(name: &str) -> Vec<ScenRow> {
    let path = bench_dir().join("scen").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    movingai::parse_scen(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// Every benchmark map with the scenario file to test it with: the classic
/// `<map>.scen` where there is one, else the first MAPF scenario file.
pub fn maps_with_scen() -> Vec<(String, String)> {
    let mut maps: Vec<String> = std::fs::read_dir(bench_dir().join("maps"))
        .expect("benchmark maps directory")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".map"))
        .collect();
    maps.sort();
    let mut scens: Vec<String> = std::fs::read_dir(bench_dir().join("scen"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    scens.sort();
    maps.into_iter()
        .map(|m| {
            let classic = format!("{m}.scen");
            let stem = m.trim_end_matches(".map");
            let scen = if scens.contains(&classic) {
                classic
            } else {
                scens
                    .iter()
                    .find(|s| s.starts_with(&format!("{stem}-")))
                    .unwrap_or_else(|| panic!("no scenario for {m}"))
                    .clone()
            };
            (m, scen)
        })
        .collect()
}

/// How many rows [`sample`] takes for a nominal `n` (see there).
pub fn sample_size(n: usize) -> usize {
    let full = std::env::var_os("PATHD_FULL_SWEEP").is_some_and(|v| v == "1");
    if full { n } else { (n / 4).max(3) }
}

/// A deterministic sample: `n` rows evenly spread over the file (so every bucket, short and
/// long, is represented), plus every unreachable row. Per commit the sweep takes a quarter of
/// `n` (at least 3) on every map; `PATHD_FULL_SWEEP=1` takes all `n` (the full sweep, one
/// command away: `PATHD_FULL_SWEEP=1 cargo test -p pathd-engine --release`).
pub fn sample(rows: &[ScenRow], n: usize) -> Vec<ScenRow> {
    sample_exact(rows, sample_size(n))
}

/// Exactly `n` evenly spread rows (plus the unreachable ones), whatever the sweep setting:
/// for tests that compare means, which a smaller sample would make noisy.
pub fn sample_exact(rows: &[ScenRow], n: usize) -> Vec<ScenRow> {
    let step = (rows.len() / n.max(1)).max(1);
    rows.iter()
        .enumerate()
        .filter(|(i, r)| i % step == step / 2 || r.unreachable())
        .map(|(_, r)| r.clone())
        .collect()
}

/// The benchmarks' tolerance: lengths are printed with ~6 significant digits.
pub fn matches_optimal(cost: f64, optimal: f64) -> bool {
    (cost - optimal).abs() <= 6e-3 + 1e-5 * optimal
}

/// Checks a cell path step by step: starts at `start`, ends at `goal`, every step legal
/// under the map's rule, and the recomputed cost equals `cost`.
pub fn check_path(
    grid: &Grid,
    path: &[Point],
    start: Point,
    goal: Point,
    cost: f64,
) -> Result<(), String> {
    if path.first() != Some(&start) {
        return Err(format!("path starts at {:?}, not {start}", path.first()));
    }
    if path.last() != Some(&goal) {
        return Err(format!("path ends at {:?}, not {goal}", path.last()));
    }
    let mut total = 0.0;
    for w in path.windows(2) {
        match grid.step_cost(w[0], w[1]) {
            Some(c) => total += c,
            None => return Err(format!("illegal step {} -> {}", w[0], w[1])),
        }
    }
    if (total - cost).abs() > 1e-9 * (1.0 + cost) {
        return Err(format!("reported cost {cost} but steps add up to {total}"));
    }
    Ok(())
}

/// Reference shortest-path cost: textbook Dijkstra over explicit neighbour lists, using
/// only the public `step_cost`. Returns the cost and one optimal path.
pub fn reference(grid: &Grid, start: Point, goal: Point) -> Option<(f64, Vec<Point>)> {
    let w = grid.width() as usize;
    let idx = |p: Point| p.y as usize * w + p.x as usize;
    let n = w * grid.height() as usize;
    let mut dist = vec![f64::INFINITY; n];
    let mut prev = vec![usize::MAX; n];
    let mut heap = BinaryHeap::new();
    dist[idx(start)] = 0.0;
    heap.push(Reverse((0u64, idx(start))));
    while let Some(Reverse((d, u))) = heap.pop() {
        let d = f64::from_bits(d);
        if d > dist[u] {
            continue;
        }
        let p = Point::new((u % w) as u32, (u / w) as u32);
        if p == goal {
            break;
        }
        for dy in -1i64..=1 {
            for dx in -1i64..=1 {
                let (x, y) = (p.x as i64 + dx, p.y as i64 + dy);
                if x < 0 || y < 0 {
                    continue;
                }
                let q = Point::new(x as u32, y as u32);
                if let Some(c) = grid.step_cost(p, q) {
                    let nd = d + c;
                    if nd < dist[idx(q)] {
                        dist[idx(q)] = nd;
                        prev[idx(q)] = u;
                        heap.push(Reverse((nd.to_bits(), idx(q))));
                    }
                }
            }
        }
    }
    let g = idx(goal);
    if !dist[g].is_finite() {
        return None;
    }
    let mut path = vec![goal];
    let mut cur = g;
    while cur != idx(start) {
        cur = prev[cur];
        path.push(Point::new((cur % w) as u32, (cur / w) as u32));
    }
    path.reverse();
    Some((dist[g], path))
}

/// A random map: `density` of cells blocked, passable cells cost 1 or (when `weighted`)
/// 1..=255 with a bias to cheap terrain.
pub fn random_grid(
    rng: &mut impl Rng,
    w: u32,
    h: u32,
    density: f64,
    weighted: bool,
    movement: Movement,
) -> Grid {
    let costs = (0..w * h)
        .map(|_| {
            if rng.random_bool(density) {
                0
            } else if weighted {
                if rng.random_bool(0.5) {
                    rng.random_range(1..=4)
                } else {
                    rng.random_range(1..=255)
                }
            } else {
                1
            }
        })
        .collect();
    Grid::from_costs(w, h, costs, movement).unwrap()
}

/// A random passable cell, if the map has one.
pub fn random_passable(rng: &mut impl Rng, grid: &Grid) -> Option<Point> {
    if grid.passable_cells() == 0 {
        return None;
    }
    loop {
        let p = Point::new(
            rng.random_range(0..grid.width()),
            rng.random_range(0..grid.height()),
        );
        if grid.is_passable(p) {
            return Some(p);
        }
    }
}

/// The map as text for failure messages: `@` wall, `.` cost 1, `1`-`9` cost/29+1, `S`/`G`.
pub fn show(grid: &Grid, start: Point, goal: Point, path: &[Point]) -> String {
    let mut out = format!("{}x{} {:?}\n", grid.width(), grid.height(), grid.movement());
    for y in 0..grid.height() {
        for x in 0..grid.width() {
            let p = Point::new(x, y);
            let c = grid.cost(p);
            out.push(if p == start {
                'S'
            } else if p == goal {
                'G'
            } else if path.contains(&p) {
                '*'
            } else if c == 0 {
                '@'
            } else if c == 1 {
                '.'
            } else {
                char::from(b'1' + (c / 29).min(8))
            });
        }
        out.push('\n');
    }
    out
}

/// Reference costs from `start` to every cell (row-major, infinity where unreachable):
/// textbook Dijkstra over the public `step_cost`, like [`reference`], run to exhaustion.
pub fn reference_all(grid: &Grid, start: Point) -> Vec<f64> {
    let w = grid.width() as usize;
    let n = w * grid.height() as usize;
    let mut dist = vec![f64::INFINITY; n];
    if !grid.is_passable(start) {
        return dist;
    }
    let mut heap = BinaryHeap::new();
    dist[start.y as usize * w + start.x as usize] = 0.0;
    heap.push(Reverse((0u64, start.y as usize * w + start.x as usize)));
    while let Some(Reverse((d, u))) = heap.pop() {
        let d = f64::from_bits(d);
        if d > dist[u] {
            continue;
        }
        let p = Point::new((u % w) as u32, (u / w) as u32);
        for dy in -1i64..=1 {
            for dx in -1i64..=1 {
                let (x, y) = (p.x as i64 + dx, p.y as i64 + dy);
                if x < 0 || y < 0 {
                    continue;
                }
                let q = Point::new(x as u32, y as u32);
                if let Some(c) = grid.step_cost(p, q) {
                    let v = q.y as usize * w + q.x as usize;
                    if d + c < dist[v] {
                        dist[v] = d + c;
                        heap.push(Reverse(((d + c).to_bits(), v)));
                    }
                }
            }
        }
    }
    dist
}
