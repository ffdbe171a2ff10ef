//! Grid search benchmarks over Moving AI scenario files, every iteration asserting its answers.
//!
//! Maps: `arena2` (every row), `16room_000`, `maze512-1-0`, `random512-40-0` and the
//! 1024x1024 city `Berlin_1_1024` (evenly spread samples of their rows, so that one benchmark
//! stays well under a minute). One iteration answers every sampled row once; criterion's
//! throughput line gives queries per second, and the bench prints the mean per query in µs
//! as it goes.
//!
//! Side by side, on the same rows:
//! - `pathfinding_astar`: the `pathfinding` crate's `astar` with the same no-corner-cutting
//!   octile rule. Its costs must be `Ord`, so they are fixed-point integers in millionths
//!   (cardinal 1_000_000, diagonal 1_414_214); the asserted cost is within the benchmarks'
//!   tolerance of the stated optimum.
//! - `grid_pathfinding_jps`: the `grid_pathfinding` crate's JPS. Its corner rule differs (it
//!   cuts corners) and its costs are 70/99 integers, so its paths can be a little shorter than
//!   ours. Asserted: a path is found; where that path is legal under our rule, its length is
//!   within 0.06% (the 99/70 error) of the optimum; where it cuts corners, it is no longer than
//!   that.
//!
//! `jps_plus` runs over the map's JPS+ jump table, built before the timing (as warthog's
//! `jps+` precomputes); `jps_plus_landmarks` adds the landmarks the server measures for the
//! map by default (as many as `DEFAULT_LANDMARK_MEMORY` affords), also before the timing;
//! `subgoal` runs over the map's subgoal graph and contraction hierarchy, also built before. The `jump_table` group times that table on `Berlin_1_1024`: a fresh
//! build, and the update after a 1-cell patch (a wall on a sampled optimal path) from the
//! previous version's table; the update is checked equal to a fresh build before timing, and
//! each timed update asserts the new wall's entries.
//!
//! Run: `CARGO_TARGET_DIR=... cargo bench -p pathd-bench --bench grid -- --warm-up-time 1
//! --measurement-time 3` (add a filter such as `arena2/` to run one map).

use std::cell::RefCell;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use pathd_engine::movingai::{self, ScenRow};
use pathd_engine::{
    Algorithm, Derived, Grid, JumpTable, Landmarks, Patch, Point, Query, Searcher, Status,
    SubgoalGraph,
};

const SQRT2: f64 = std::f64::consts::SQRT_2;

/// Fixed-point units per cardinal step for the `pathfinding` baseline.
const UNIT: u64 = 1_000_000;
/// sqrt(2) in the same units, rounded.
const DIAG: u64 = 1_414_214;

/// Criterion samples per benchmark (the minimum it accepts).
const SAMPLES: usize = 10;

struct Case {
    name: &'static str,
    grid: Grid,
    rows: Vec<ScenRow>,
}

/// The full Moving AI set: `PATHD_BENCHMARKS` when set, else `../shared/benchmarks/movingai`
/// beside the repository (the repository's own `tests/data/movingai` is only a subset).
fn bench_dir() -> PathBuf {
    std::env::var_os("PATHD_BENCHMARKS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/benchmarks/movingai"
            ))
        })
}

/// Loads a map and `n` evenly spread reachable rows of its scenario file (all when `n` is 0).
fn case(name: &'static str, n: usize) -> Case {
    let read = |p: PathBuf| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    let grid = movingai::parse_map(&read(bench_dir().join(format!("maps/{name}.map")))).unwrap();
    let all: Vec<ScenRow> =
        movingai::parse_scen(&read(bench_dir().join(format!("scen/{name}.map.scen"))))
            .unwrap()
            .into_iter()
            .filter(|r| !r.unreachable())
            .collect();
    let rows = if n == 0 || n >= all.len() {
        all
    } else {
        let step = all.len() / n;
        all.into_iter()
            .skip(step / 2)
            .step_by(step)
            .take(n)
            .collect()
    };
    Case { name, grid, rows }
}

fn tolerance(optimal: f64) -> f64 {
    6e-3 + 1e-5 * optimal
}

/// Our engine: one query per row, asserting the cost against the stated optimum. Theta* is
/// asserted to be no longer than the octile optimum (any-angle paths are never longer).
fn ours(searcher: &mut Searcher, c: &Case, algorithm: Algorithm, derived: Derived<'_>) {
    for row in &c.rows {
        let q = Query::new(row.start, row.goal).with_algorithm(algorithm);
        let r = searcher.find_path_derived(&c.grid, derived, &q).unwrap();
        assert_eq!(r.algorithm, algorithm);
        assert_eq!(r.status, Status::Found, "{} {row:?}", c.name);
        if algorithm == Algorithm::Theta {
            let len = r.smoothed_length.unwrap();
            assert!(
                len <= row.optimal + tolerance(row.optimal),
                "{} {row:?}: {len}",
                c.name
            );
        } else {
            assert!(
                (r.cost - row.optimal).abs() <= tolerance(row.optimal),
                "{} {algorithm} {row:?}: {}",
                c.name,
                r.cost
            );
        }
        black_box(&r.path);
    }
}

/// Padded passability for the `pathfinding` baseline (one ring of walls, like the engine's).
struct Padded {
    pw: usize,
    open: Vec<bool>,
}

impl Padded {
    fn new(grid: &Grid) -> Self {
        let (w, h) = (grid.width() as usize, grid.height() as usize);
        let pw = w + 2;
        let mut open = vec![false; pw * (h + 2)];
        for y in 0..h {
            for x in 0..w {
                open[(y + 1) * pw + x + 1] = grid.is_passable(Point::new(x as u32, y as u32));
            }
        }
        Padded { pw, open }
    }

    fn idx(&self, p: Point) -> usize {
        (p.y as usize + 1) * self.pw + p.x as usize + 1
    }

    /// Legal octile moves without corner cutting, as a fixed array (no allocation).
    fn successors(&self, n: usize) -> impl Iterator<Item = (usize, u64)> + use<> {
        let pw = self.pw;
        let o = &self.open;
        let card = [n - pw, n + 1, n + pw, n - 1];
        let mut out = [(0usize, 0u64); 8];
        let mut k = 0;
        for &m in &card {
            if o[m] {
                out[k] = (m, UNIT);
                k += 1;
            }
        }
        for (a, b, m) in [
            (n - pw, n + 1, n - pw + 1),
            (n + 1, n + pw, n + pw + 1),
            (n + pw, n - 1, n + pw - 1),
            (n - 1, n - pw, n - pw - 1),
        ] {
            if o[a] && o[b] && o[m] {
                out[k] = (m, DIAG);
                k += 1;
            }
        }
        out.into_iter().take(k)
    }

    fn heuristic(&self, n: usize, goal: usize) -> u64 {
        let (dx, dy) = (
            (n % self.pw).abs_diff(goal % self.pw) as u64,
            (n / self.pw).abs_diff(goal / self.pw) as u64,
        );
        let (lo, hi) = (dx.min(dy), dx.max(dy));
        hi * UNIT + lo * (DIAG - UNIT)
    }
}

fn pathfinding_astar(p: &Padded, c: &Case) {
    for row in &c.rows {
        let (s, g) = (p.idx(row.start), p.idx(row.goal));
        let (path, cost) = pathfinding::prelude::astar(
            &s,
            |&n| p.successors(n),
            |&n| p.heuristic(n, g),
            |&n| n == g,
        )
        .expect("reachable row");
        let cost = cost as f64 / UNIT as f64;
        assert!(
            (cost - row.optimal).abs() <= tolerance(row.optimal),
            "{} {row:?}: {cost}",
            c.name
        );
        black_box(path);
    }
}

fn build_grid_pathfinding(grid: &Grid) -> grid_pathfinding::PathingGrid {
    use grid_util::grid::ValueGrid;
    let (w, h) = (grid.width() as usize, grid.height() as usize);
    let mut pg = grid_pathfinding::PathingGrid::new(w, h, false);
    for y in 0..h {
        for x in 0..w {
            if !grid.is_passable(Point::new(x as u32, y as u32)) {
                pg.set(x as i32, y as i32, true);
            }
        }
    }
    pg.generate_components();
    pg
}

fn grid_pathfinding_jps(pg: &grid_pathfinding::PathingGrid, c: &Case) {
    for row in &c.rows {
        let s = grid_util::point::Point::new(row.start.x as i32, row.start.y as i32);
        let g = grid_util::point::Point::new(row.goal.x as i32, row.goal.y as i32);
        let path = pg
            .get_path_single_goal(s, g, false)
            .unwrap_or_else(|| panic!("{} {row:?}: no path", c.name));
        let mut len = 0.0;
        let mut legal = true;
        for w in path.windows(2) {
            let (a, b) = (w[0], w[1]);
            if a.x != b.x && a.y != b.y {
                len += SQRT2;
                let side1 = Point::new(b.x as u32, a.y as u32);
                let side2 = Point::new(a.x as u32, b.y as u32);
                legal &= c.grid.is_passable(side1) && c.grid.is_passable(side2);
            } else {
                len += 1.0;
            }
        }
        let slack = 6e-4 * row.optimal + tolerance(row.optimal);
        assert!(len <= row.optimal + slack, "{} {row:?}: {len}", c.name);
        if legal {
            assert!(
                len >= row.optimal - tolerance(row.optimal),
                "{} {row:?}: {len}",
                c.name
            );
        }
        black_box(path);
    }
}

fn benches(cr: &mut Criterion) {
    // (map, sampled rows; 0 = all)
    let maps: [(&'static str, usize); 5] = [
        ("arena2", 0),
        ("16room_000", 200),
        ("maze512-1-0", 40),
        ("random512-40-0", 40),
        ("Berlin_1_1024", 30),
    ];
    for (name, n) in maps {
        let c = case(name, n);
        let queries = c.rows.len() as u64;
        let mut group = cr.benchmark_group(name);
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(SAMPLES)
            .warm_up_time(Duration::from_secs(1))
            .throughput(Throughput::Elements(queries));
        let mut searcher = Searcher::new();
        let table = JumpTable::build(&c.grid).unwrap();
        let derived = Derived {
            hpa: None,
            jump_table: Some(&table),
            subgoal: None,
            landmarks: None,
            sized: None,
        };
        for alg in [
            Algorithm::AStar,
            Algorithm::Jps,
            Algorithm::JpsPlus,
            Algorithm::Theta,
        ] {
            timed(&mut group, name, alg.as_str(), queries, || {
                ours(&mut searcher, &c, alg, derived)
            });
        }
        // JPS+ with the landmarks the server gives this map by default.
        let k = Landmarks::affordable(&c.grid, pathd_engine::DEFAULT_LANDMARK_MEMORY);
        let landmarks = Landmarks::build(&c.grid, k).unwrap();
        let with_landmarks = Derived {
            landmarks: Some(&landmarks),
            ..derived
        };
        timed(&mut group, name, "jps_plus_landmarks", queries, || {
            ours(&mut searcher, &c, Algorithm::JpsPlus, with_landmarks)
        });
        // The subgoal graph with its contraction hierarchy, built before the timing.
        let graph = SubgoalGraph::build(&c.grid).unwrap();
        let with_graph = Derived {
            subgoal: Some(&graph),
            ..Derived::default()
        };
        timed(&mut group, name, "subgoal", queries, || {
            ours(&mut searcher, &c, Algorithm::Subgoal, with_graph)
        });
        let padded = Padded::new(&c.grid);
        timed(&mut group, name, "pathfinding_astar", queries, || {
            pathfinding_astar(&padded, &c)
        });
        let pg = build_grid_pathfinding(&c.grid);
        timed(&mut group, name, "grid_pathfinding_jps", queries, || {
            grid_pathfinding_jps(&pg, &c)
        });
        group.finish();
    }
}

/// The jump table on `Berlin_1_1024`: fresh build vs update after a 1-cell patch.
fn jump_table(cr: &mut Criterion) {
    let c = case("Berlin_1_1024", 8);
    let base = JumpTable::build(&c.grid).unwrap();
    // One wall in the middle of each sampled row's optimal path.
    let mut searcher = Searcher::new();
    let patched: Vec<(Grid, Vec<Point>)> = c
        .rows
        .iter()
        .map(|row| {
            let q = Query::new(row.start, row.goal).with_algorithm(Algorithm::Jps);
            let r = searcher.find_path(&c.grid, &q).unwrap();
            let p = r.path[r.path.len() / 2];
            let patch = Patch {
                cells: vec![(p, 0)],
                rects: vec![],
            };
            c.grid.apply_patch(&patch).unwrap().unwrap()
        })
        .collect();
    for (g, changed) in &patched {
        assert!(base.update(g, changed) == JumpTable::build(g).unwrap());
    }
    let mut group = cr.benchmark_group("jump_table");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_secs(1))
        .throughput(Throughput::Elements(patched.len() as u64));
    let n = patched.len() as u64;
    timed(&mut group, "Berlin_1_1024", "build", n, || {
        for (g, changed) in &patched {
            let t = JumpTable::build(g).unwrap();
            assert_eq!(t.entries(changed[0]), [0; 8]);
            black_box(t);
        }
    });
    timed(&mut group, "Berlin_1_1024", "update_1_cell", n, || {
        for (g, changed) in &patched {
            let t = base.update(g, changed);
            assert_eq!(t.entries(changed[0]), [0; 8]);
            black_box(t);
        }
    });
    group.finish();
}

/// Benchmarks `run` (one pass over the rows) and prints the mean µs per query over the
/// measured samples (the last `SAMPLES` timing calls; the earlier ones are warm-up).
fn timed(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    map: &str,
    id: &str,
    queries: u64,
    mut run: impl FnMut(),
) {
    let calls: RefCell<Vec<(u64, Duration)>> = RefCell::new(Vec::new());
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                run();
            }
            let d = t.elapsed();
            calls.borrow_mut().push((iters, d));
            d
        })
    });
    let calls = calls.into_inner();
    if calls.is_empty() {
        return; // filtered out
    }
    let measured = &calls[calls.len().saturating_sub(SAMPLES)..];
    let iters: u64 = measured.iter().map(|c| c.0).sum();
    let total: Duration = measured.iter().map(|c| c.1).sum();
    let per_query = total.as_secs_f64() * 1e6 / (iters * queries).max(1) as f64;
    eprintln!("{map}/{id}: {per_query:.1} µs/query ({queries} queries per iteration)");
}

criterion_group!(grid, benches, jump_table);
criterion_main!(grid);
