//! Times an `n x n` distance table (one Dijkstra per source, `Searcher::cost_matrix`)
//! against the `n * n` single A* queries it replaces, on a Moving AI map, and checks that
//! both give the same costs:
//! `cargo run --release -p pathd-engine --example matrix_bench -- MAP.map [N] [SEED]`.
//! Sources and targets are random passable cells of the map's largest component (seeded).
//! With `MATRIX_ONLY=1` only the table is timed.
use pathd_engine::{Algorithm, Limits, Point, Query, Searcher, Status};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: matrix_bench MAP.map [N] [SEED]");
    let n: usize = args.next().map_or(100, |a| a.parse().expect("N"));
    let mut seed: u64 = args.next().map_or(1, |a| a.parse().expect("SEED"));
    let text = std::fs::read_to_string(&path).expect("a readable map");
    let grid = pathd_engine::movingai::parse_map(&text).expect("a Moving AI map");
    let (w, h) = (grid.width(), grid.height());
    let mut next = move || {
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    // The largest component's label, from a sample of cells.
    let mut count = std::collections::HashMap::new();
    for y in 0..h {
        for x in 0..w {
            if let Some(l) = grid.component(Point::new(x, y)) {
                *count.entry(l).or_insert(0u64) += 1;
            }
        }
    }
    let (&big, _) = count.iter().max_by_key(|(_, c)| **c).expect("an open cell");
    let mut pick = || loop {
        let p = Point::new((next() % w as u64) as u32, (next() % h as u64) as u32);
        if grid.component(p) == Some(big) {
            return p;
        }
    };
    let sources: Vec<Point> = (0..n).map(|_| pick()).collect();
    let targets: Vec<Point> = (0..n).map(|_| pick()).collect();
    let mut searcher = Searcher::new();
    // Warm up the searcher's memory and the map's flat cells.
    let _ = searcher.cost_row(&grid, sources[0], &targets, &Limits::default());

    let t = Instant::now();
    let rows = searcher
        .cost_matrix(&grid, &sources, &targets, &Limits::default())
        .unwrap();
    let matrix = t.elapsed();
    let expanded: u64 = rows.iter().map(|r| r.stats.expanded).sum();
    let generated: u64 = rows.iter().map(|r| r.stats.generated).sum();

    if std::env::var_os("MATRIX_ONLY").is_some() {
        let ms = matrix.as_secs_f64() * 1e3;
        println!(
            "{path}: {n}x{n} matrix {ms:.1} ms ({expanded} expansions, {generated} costs written)"
        );
        return;
    }
    let mut astar_expanded = 0;
    let t = Instant::now();
    let mut worst = 0f64;
    for (i, &s) in sources.iter().enumerate() {
        for (j, &g) in targets.iter().enumerate() {
            let mut q = Query::new(s, g);
            q.algorithm = Algorithm::AStar;
            let r = searcher.find_path(&grid, &q).unwrap();
            assert_eq!(r.status, Status::Found);
            astar_expanded += r.stats.expanded;
            let m = rows[i].costs[j].expect("same component");
            worst = worst.max((m - r.cost).abs() / r.cost.max(1.0));
        }
    }
    let astar = t.elapsed();
    assert!(worst < 1e-9, "matrix and A* disagree by {worst}");
    println!(
        "{path} ({w}x{h}): {n}x{n} matrix {:.1} ms ({expanded} expansions, {generated} costs written); {} A* queries {:.1} ms ({astar_expanded} expansions); ratio 1/{:.1}; costs agree (max relative difference {worst:.1e})",
        matrix.as_secs_f64() * 1e3,
        n * n,
        astar.as_secs_f64() * 1e3,
        astar.as_secs_f64() / matrix.as_secs_f64(),
    );
}
