//! Times one `goals` search against the separate queries it replaces: on a Moving AI map
//! (default `maps/maze512-1-0.map`), for `rounds` random starts, 40 random goals each, the
//! nearest-of-many search (A*, and Dijkstra) against 40 A* queries (and 40 `auto` queries,
//! JPS on uniform maps) minimised; every round asserts the costs agree.
//!
//! ```sh
//! cargo run --release -p pathd-engine --example goals [-- MAP [ROUNDS [GOALS]]]
//! ```

use std::time::{Duration, Instant};

use pathd_engine::targets::Target;
use pathd_engine::{Algorithm, Grid, Point, Query, Searcher, Status, movingai};

/// A small deterministic generator (xorshift64*), so that runs compare.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) % n as u64) as u32
    }

    fn open(&mut self, grid: &Grid) -> Point {
        loop {
            let p = Point::new(self.below(grid.width()), self.below(grid.height()));
            if grid.is_passable(p) {
                return p;
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../maps/maze512-1-0.map").into());
    let rounds: usize = args.next().map_or(30, |a| a.parse().unwrap());
    let k: usize = args.next().map_or(40, |a| a.parse().unwrap());
    let grid = movingai::parse_map(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut s = Searcher::new();
    let (mut one, mut one_d, mut sep, mut sep_auto) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    let (mut exp_one, mut exp_sep) = (0u64, 0u64);
    for _ in 0..rounds {
        let start = rng.open(&grid);
        let goals: Vec<Point> = (0..k).map(|_| rng.open(&grid)).collect();
        let q = Query::new(start, goals[0]);
        let target = Target::Any(goals.clone());

        let t = Instant::now();
        let r = s.find_target(&grid, &q, &target).unwrap();
        one += t.elapsed();
        exp_one += r.result.stats.expanded;

        let t = Instant::now();
        let d = s
            .find_target(
                &grid,
                &q.clone().with_algorithm(Algorithm::Dijkstra),
                &target,
            )
            .unwrap();
        one_d += t.elapsed();

        let mut best = f64::INFINITY;
        let t = Instant::now();
        for &g in &goals {
            let mut q = q.clone();
            q.goal = g;
            let r = s.find_path(&grid, &q).unwrap();
            exp_sep += r.stats.expanded;
            if r.status == Status::Found {
                best = best.min(r.cost);
            }
        }
        sep += t.elapsed();

        let mut best_auto = f64::INFINITY;
        let t = Instant::now();
        for &g in &goals {
            let mut q = q.clone().with_algorithm(Algorithm::Auto);
            q.goal = g;
            let r = s.find_path(&grid, &q).unwrap();
            if r.status == Status::Found {
                best_auto = best_auto.min(r.cost);
            }
        }
        sep_auto += t.elapsed();

        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + b) || a == b;
        let found = |r: &pathd_engine::targets::TargetResult| {
            if r.result.status == Status::Found {
                r.result.cost
            } else {
                f64::INFINITY
            }
        };
        assert!(close(found(&r), best) && close(found(&d), best) && close(best_auto, best));
    }
    let per = |d: Duration| d.as_secs_f64() * 1e3 / rounds as f64;
    println!(
        "{path}: {}x{}, {rounds} rounds of {k} goals",
        grid.width(),
        grid.height()
    );
    println!(
        "  goals, astar (one search):    {:8.3} ms/round, {:9} expanded/round",
        per(one),
        exp_one / rounds as u64
    );
    println!(
        "  goals, dijkstra (one search): {:8.3} ms/round",
        per(one_d)
    );
    println!(
        "  {k} separate astar queries:   {:8.3} ms/round, {:9} expanded/round",
        per(sep),
        exp_sep / rounds as u64
    );
    println!(
        "  {k} separate auto queries:    {:8.3} ms/round",
        per(sep_auto)
    );
}
