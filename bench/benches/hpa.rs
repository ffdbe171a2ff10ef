//! HPA* against our A* and the `hierarchical_pathfinding` crate on the big Moving AI maps:
//! query time (same rows for everyone), build time, patch-update time; sizes and path quality
//! are printed once per map while setting up.
//!
//! Each timed iteration checks the answers it times: A* must match the stated optimum, HPA*
//! must find a legal path no cheaper than it, the crate must find a path.
//!
//! Run: `cargo bench -p pathd-bench --bench hpa -- --warm-up-time 1 --measurement-time 3`
//! (add a filter such as `Berlin` to run one map).

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hierarchical_pathfinding::prelude::{MooreNeighborhood, PathCache, PathCacheConfig};
use pathd_engine::movingai::{self, ScenRow};
use pathd_engine::{
    Abstraction, Algorithm, Grid, HpaConfig, Patch, Point, Query, Rect, Searcher, Status,
};

/// The 1024x1024 cities, a 1024x1024 StarCraft map and Dragon Age's `orz900d`.
const MAPS: &[&str] = &[
    "Berlin_1_1024",
    "Boston_0_1024",
    "Paris_0_1024",
    "Cauldron",
    "orz900d",
];

/// Rows per map, spread evenly over the scenario file (short to long).
const ROWS: usize = 24;

/// Octile-distance bands for the `auto` rule.
const BANDS: &[(f64, f64)] = &[
    (0.0, 64.0),
    (64.0, 128.0),
    (128.0, 256.0),
    (256.0, 512.0),
    (512.0, 1e9),
];

/// The full Moving AI set: `PATHD_BENCHMARKS` when set, else `../shared/benchmarks/movingai`
/// beside the repository (the repository's own `tests/data/movingai` is only a subset).
fn dir() -> PathBuf {
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

fn load(name: &str) -> (Grid, Vec<ScenRow>) {
    let map = std::fs::read_to_string(dir().join(format!("maps/{name}.map"))).unwrap();
    let scen = std::fs::read_to_string(dir().join(format!("scen/{name}.map.scen"))).unwrap();
    let rows = movingai::parse_scen(&scen).unwrap();
    (
        movingai::parse_map(&map).unwrap(),
        rows.into_iter().filter(|r| !r.unreachable()).collect(),
    )
}

fn spread(rows: &[ScenRow], n: usize) -> Vec<ScenRow> {
    let step = (rows.len() / n).max(1);
    rows.iter()
        .skip(step / 2)
        .step_by(step)
        .take(n)
        .cloned()
        .collect()
}

/// The HPA* query of a scenario row.
fn hpa_query(r: &ScenRow) -> Query {
    Query::new(r.start, r.goal).with_algorithm(Algorithm::Hpa)
}

fn tol(optimal: f64) -> f64 {
    6e-3 + 1e-5 * optimal
}

/// The crate's cache over the same map: walls solid, every passable cell cost 1, 8
/// neighbours (it cuts corners and counts a diagonal step as 1).
fn crate_cache(grid: &Grid, chunk: usize) -> PathCache<MooreNeighborhood> {
    let (w, h) = (grid.width() as usize, grid.height() as usize);
    let config = PathCacheConfig {
        chunk_size: chunk,
        ..PathCacheConfig::default()
    };
    PathCache::new(
        (w, h),
        crate_cost(grid),
        MooreNeighborhood::new(w, h),
        config,
    )
}

fn crate_cost(grid: &Grid) -> impl Fn((usize, usize)) -> isize + Sync + '_ {
    move |(x, y)| {
        if grid.is_passable(Point::new(x as u32, y as u32)) {
            1
        } else {
            -1
        }
    }
}

/// Octile length of a crate path from `start` and how many of its diagonal steps cut a corner.
fn octile_length(grid: &Grid, start: Point, path: &[(usize, usize)]) -> (f64, usize) {
    let mut len = 0.0;
    let mut cuts = 0;
    let mut prev = start;
    for &(x, y) in path {
        let p = Point::new(x as u32, y as u32);
        if p.x != prev.x && p.y != prev.y {
            len += std::f64::consts::SQRT_2;
            if grid.step_cost(prev, p).is_none() {
                cuts += 1;
            }
        } else {
            len += 1.0;
        }
        prev = p;
    }
    (len, cuts)
}

fn bench_map(c: &mut Criterion, name: &str) {
    let (grid, all) = load(name);
    let rows = spread(&all, ROWS);
    let config = HpaConfig::default();
    let hpa = Abstraction::build_with(&grid, config);
    let s = hpa.summary();
    println!(
        "{name}: {}x{}, {} clusters of {}, {} nodes, {} edges, {} cached paths, {:.1} MiB, built in {:?}",
        grid.width(),
        grid.height(),
        s.clusters,
        s.cluster_size,
        s.nodes,
        s.edges,
        s.cached_paths,
        s.memory_bytes as f64 / (1 << 20) as f64,
        hpa.build_time()
    );
    let started = std::time::Instant::now();
    let theirs = crate_cache(&grid, config.cluster_size as usize);
    println!(
        "{name}: hierarchical_pathfinding cache (chunk {}) built in {:?}",
        config.cluster_size,
        started.elapsed()
    );

    // One searcher reused across queries, as a server's worker does.
    let mut searcher = Searcher::new();
    // Quality on the timed rows, printed once.
    let (mut ours, mut their_len, mut their_cuts) = (Vec::new(), Vec::new(), 0);
    for r in &rows {
        let a = searcher
            .find_path_with(&grid, Some(&hpa), &hpa_query(r))
            .unwrap();
        ours.push(a.cost / r.optimal - 1.0);
        let p: Vec<_> = theirs
            .find_path(
                (r.start.x as usize, r.start.y as usize),
                (r.goal.x as usize, r.goal.y as usize),
                crate_cost(&grid),
            )
            .unwrap()
            .collect();
        let (len, cuts) = octile_length(&grid, r.start, &p);
        their_len.push(len / r.optimal - 1.0);
        their_cuts += cuts;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64 * 100.0;
    let max = |v: &[f64]| v.iter().cloned().fold(f64::MIN, f64::max) * 100.0;
    println!(
        "{name}: {} rows: HPA* excess mean {:.2}% max {:.2}%; crate octile length vs optimum mean {:+.2}% max {:+.2}%, {} corner cuts",
        rows.len(),
        mean(&ours),
        max(&ours),
        mean(&their_len),
        max(&their_len),
        their_cuts
    );

    let mut group = c.benchmark_group(format!("hpa/{name}"));
    group.sample_size(10);
    group.bench_function("query/astar", |b| {
        b.iter(|| {
            for r in &rows {
                let a = searcher
                    .find_path(&grid, &Query::new(r.start, r.goal))
                    .unwrap();
                assert!((a.cost - r.optimal).abs() <= tol(r.optimal));
                black_box(a.path.len());
            }
        })
    });
    group.bench_function("query/hpa", |b| {
        b.iter(|| {
            for r in &rows {
                let a = searcher
                    .find_path_with(&grid, Some(&hpa), &hpa_query(r))
                    .unwrap();
                assert!(a.status == Status::Found && a.cost >= r.optimal - tol(r.optimal));
                black_box(a.path.len());
            }
        })
    });
    group.bench_function("query/hierarchical_pathfinding", |b| {
        b.iter(|| {
            for r in &rows {
                let p = theirs
                    .find_path(
                        (r.start.x as usize, r.start.y as usize),
                        (r.goal.x as usize, r.goal.y as usize),
                        crate_cost(&grid),
                    )
                    .expect("the crate finds a path");
                black_box(p.collect::<Vec<_>>().len());
            }
        })
    });
    group.bench_function("build", |b| {
        b.iter(|| black_box(Abstraction::build_with(&grid, config).summary().nodes))
    });

    // A 6x6 wall dropped on the middle of a row's path, then the update that follows it.
    let mid = {
        let a = hpa
            .find_path(
                &grid,
                &Query::new(rows[rows.len() - 1].start, rows[rows.len() - 1].goal),
            )
            .unwrap();
        a.path[a.path.len() / 2]
    };
    let rect = Rect {
        x: mid.x.saturating_sub(3),
        y: mid.y.saturating_sub(3),
        width: 6,
        height: 6,
        cost: 0,
    };
    let (patched, changed) = grid
        .apply_patch(&Patch {
            cells: vec![],
            rects: vec![rect],
        })
        .unwrap()
        .expect("the wall changes cells");
    let (_, report) = hpa.update_with_report(&patched, &changed);
    println!("{name}: 6x6 wall at {mid}: {report:?}");
    group.bench_function("update/6x6_wall", |b| {
        b.iter(|| black_box(hpa.update(&patched, &changed).summary().nodes))
    });
    group.finish();

    // Query time by distance band, for the `auto` rule (first two maps only, to stay short).
    if name == MAPS[0] || name == MAPS[3] {
        let mut group = c.benchmark_group(format!("hpa_band/{name}"));
        let mut searcher = Searcher::new();
        group.sample_size(10);
        for &(lo, hi) in BANDS {
            let band: Vec<ScenRow> = all
                .iter()
                .filter(|r| {
                    let d = grid.heuristic(r.start, r.goal);
                    d >= lo && d < hi
                })
                .cloned()
                .collect();
            let band = spread(&band, 12);
            if band.is_empty() {
                continue;
            }
            let id = format!("{lo}-{hi}");
            group.bench_with_input(BenchmarkId::new("astar", &id), &band, |b, band| {
                b.iter(|| {
                    for r in band {
                        let a = searcher
                            .find_path(&grid, &Query::new(r.start, r.goal))
                            .unwrap();
                        assert!((a.cost - r.optimal).abs() <= tol(r.optimal));
                    }
                })
            });
            group.bench_with_input(BenchmarkId::new("hpa", &id), &band, |b, band| {
                b.iter(|| {
                    for r in band {
                        let a = searcher
                            .find_path_with(&grid, Some(&hpa), &hpa_query(r))
                            .unwrap();
                        assert!(a.status == Status::Found);
                    }
                })
            });
        }
        group.finish();
    }
}

fn benches(c: &mut Criterion) {
    // Setting a map up takes seconds: when the command line names maps (a filter such as
    // `Berlin` or `hpa/orz900d`), set up only those.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-') && a.parse::<f64>().is_err())
        .collect();
    let named: Vec<&str> = MAPS
        .iter()
        .copied()
        .filter(|m| args.iter().any(|a| a.contains(m) || m.contains(a.as_str())))
        .collect();
    for name in MAPS {
        if named.is_empty() || named.contains(name) {
            bench_map(c, name);
        }
    }
}

criterion_group!(hpa, benches);
criterion_main!(hpa);
