//! What a map patch costs, and what it costs the next searches.
//!
//! - `patch/apply_1cell/{64,1024,4096}`: one `Grid::apply_patch` of a single cell on seeded
//!   random maps (20% walls) of 64x64, 1024x1024 and 4096x4096 cells. Each iteration walls
//!   one of 64 fixed random open cells of the same base grid (so splits of small pockets are
//!   in the mix, in the same proportion on every size) and asserts that exactly that cell
//!   changed. The target: the 4096x4096 patch within 3x of the 64x64 one.
//! - `patch/jps_{first,second}_after_patch/4096`: a chain of versions of the 4096x4096 map,
//!   each patched from the last by toggling one cell away from the query (a 700x500-cell
//!   trip); per iteration only
//!   the first (or only the second) JPS query on the new version is timed. The first pays
//!   for deriving the version's bit planes from its predecessor's. Each answer is asserted
//!   against A*'s cost on the same map state, computed once up front. The target: first
//!   within 2x of second.
//! - `patch/astar_{first,second}_after_patch/4096`: the same for A*, whose first query
//!   takes over the predecessor's flat cost array.
//! - `jps_near_*`, `astar_near_*`: the same with a short query (40 cells), where the work a
//!   first query does for the new version is not hidden by a long search.
//!
//! Run: `CARGO_TARGET_DIR=... cargo bench -p pathd-bench --bench patch -- --warm-up-time 1
//! --measurement-time 3`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use pathd_engine::{Algorithm, Grid, Movement, Patch, Point, Query, Searcher, Status};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A seeded random map with `density` of its cells walls.
fn random_map(side: u32, density: f64, seed: u64) -> Grid {
    let mut rng = StdRng::seed_from_u64(seed);
    let costs = (0..side * side)
        .map(|_| u8::from(!rng.random_bool(density)))
        .collect();
    Grid::from_costs(side, side, costs, Movement::Octile).unwrap()
}

/// `n` seeded random open cells.
fn open_cells(grid: &Grid, n: usize, seed: u64) -> Vec<Point> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let p = Point::new(
            rng.random_range(0..grid.width()),
            rng.random_range(0..grid.height()),
        );
        if grid.is_passable(p) {
            out.push(p);
        }
    }
    out
}

fn wall(p: Point) -> Patch {
    Patch {
        cells: vec![(p, 0)],
        rects: vec![],
    }
}

fn apply_1cell(c: &mut Criterion) {
    let mut group = c.benchmark_group("patch");
    for side in [64u32, 1024, 4096] {
        let grid = random_map(side, 0.2, 1);
        let cells = open_cells(&grid, 64, 2);
        let mut i = 0;
        group.bench_function(format!("apply_1cell/{side}"), |b| {
            b.iter(|| {
                let p = cells[i % cells.len()];
                i += 1;
                let (next, changed) = grid.apply_patch(black_box(&wall(p))).unwrap().unwrap();
                assert_eq!(changed, [p]);
                next
            })
        });
    }
    group.finish();
}

/// Times the first or the second query of `algorithm` on each new version of a chain of
/// one-cell patches.
fn after_patch(c: &mut Criterion, algorithm: Algorithm, name: &str, goal: Point) {
    let side = 4096;
    let start = Point::new(1000, 1000);
    let toggle = Point::new(4000, 4000);
    let mut costs = random_map(side, 0.2, 3).costs();
    for p in [start, goal, toggle] {
        costs[(p.y * side + p.x) as usize] = 1;
    }
    let mut grid = Grid::from_costs(side, side, costs, Movement::Octile).unwrap();
    let mut s = Searcher::new();
    // The query's answer with the toggled cell open (0) and walled (1).
    let (walled_grid, _) = grid.apply_patch(&wall(toggle)).unwrap().unwrap();
    let want: Vec<f64> = [&grid, &walled_grid]
        .iter()
        .map(|g| {
            let r = s
                .find_path(g, &Query::new(start, goal).with_algorithm(Algorithm::AStar))
                .unwrap();
            assert_eq!(r.status, Status::Found);
            r.cost
        })
        .collect();
    drop(walled_grid);
    let q = Query::new(start, goal).with_algorithm(algorithm);
    let check = |r: pathd_engine::SearchResult, walled: bool| {
        assert_eq!(r.status, Status::Found);
        let w = want[usize::from(walled)];
        assert!((r.cost - w).abs() < 1e-9 * w, "{} vs {w}", r.cost);
    };
    check(s.find_path(&grid, &q).unwrap(), false);
    let mut walled = false;
    let mut group = c.benchmark_group("patch");
    for second in [false, true] {
        let label = if second { "second" } else { "first" };
        group.bench_function(format!("{name}_{label}_after_patch/{side}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    walled = !walled;
                    let patch = Patch {
                        cells: vec![(toggle, u8::from(!walled))],
                        rects: vec![],
                    };
                    grid = grid.apply_patch(&patch).unwrap().unwrap().0;
                    if second {
                        check(s.find_path(&grid, &q).unwrap(), walled);
                    }
                    let t = Instant::now();
                    let r = s.find_path(&grid, black_box(&q)).unwrap();
                    total += t.elapsed();
                    check(r, walled);
                }
                total
            })
        });
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    apply_1cell(c);
    let (far, near) = (Point::new(1700, 1500), Point::new(1040, 1030));
    after_patch(c, Algorithm::Jps, "jps", far);
    after_patch(c, Algorithm::Jps, "jps_near", near);
    after_patch(c, Algorithm::AStar, "astar", far);
    after_patch(c, Algorithm::AStar, "astar_near", near);
}

criterion_group! {
    name = patch;
    config = Criterion::default().sample_size(10);
    targets = benches
}
criterion_main!(patch);
