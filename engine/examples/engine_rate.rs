//! The engine's own rate on one query, one thread per core, for `scripts/wire-bench.sh`
//! to set beside the same query over HTTP:
//! `cargo run --release -p pathd-engine --example engine_rate -- MAP.map SX SY GX GY ALGO [SECS] [THREADS]`.
//! It derives what pathd derives for the map with its default settings (JPS+'s jump table
//! and as many landmarks as `--landmark-memory-mb`'s default affords), answers one untimed
//! query per thread (a searcher sizes its scratch memory then), checks every answer is
//! found with the first answer's cost, and prints `engine <queries/s> <threads> <cost>
//! <cells>`.
//!
//! Each query is the engine's whole share of a server query: the checks of its ends, the
//! search, the cell path built from the jump points (every cell, as the server answers
//! it) and the waypoints, the search's own timing, and the limits pathd gives every query
//! (its default `--max-expansions`, a deadline from `--max-timeout-ms` started as the
//! query starts, a cancellation flag), checked as the server's are. Not in it: what the
//! server adds around the engine (HTTP, parsing and writing JSON, the pool's queue,
//! metrics).
use pathd_engine::{
    Algorithm, DEFAULT_LANDMARK_MEMORY, Derived, JumpTable, Landmarks, Limits, Point, Query,
    Searcher, Status,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// pathd's default `--max-expansions`.
const MAX_EXPANSIONS: u64 = 20_000_000;
/// pathd's default `--max-timeout-ms`.
const TIMEOUT: Duration = Duration::from_millis(5000);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: engine_rate MAP.map SX SY GX GY ALGO [SECS] [THREADS]";
    assert!(args.len() >= 6, "{usage}");
    let n = |i: usize| -> u32 { args[i].parse().expect(usage) };
    let text = std::fs::read_to_string(&args[0]).expect("a readable map");
    let grid = pathd_engine::movingai::parse_map(&text).expect("a Moving AI map");
    let algorithm = Algorithm::parse(&args[5]).expect("an algorithm name");
    let query =
        Query::new(Point::new(n(1), n(2)), Point::new(n(3), n(4))).with_algorithm(algorithm);
    let secs: f64 = args.get(6).map_or(5.0, |s| s.parse().expect(usage));
    let threads: usize = args.get(7).map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |s| s.parse().expect(usage),
    );
    let table = JumpTable::build(&grid);
    let landmarks = table.as_ref().and_then(|_| {
        Landmarks::build(&grid, Landmarks::affordable(&grid, DEFAULT_LANDMARK_MEMORY))
    });
    let derived = Derived {
        jump_table: table.as_ref(),
        landmarks: landmarks.as_ref(),
        ..Derived::default()
    };
    let first = Searcher::new()
        .find_path_derived(&grid, derived, &query)
        .expect("a query the map accepts");
    assert_eq!(first.status, Status::Found, "the query must have a path");
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let total: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut searcher = Searcher::new();
                    let _ = searcher.find_path_derived(&grid, derived, &query);
                    // The limits a server query runs with (its deadline set as it starts).
                    let mut limited = query.clone();
                    limited.limits = Limits {
                        max_expansions: Some(MAX_EXPANSIONS),
                        deadline: None,
                        cancel: Some(Arc::new(AtomicBool::new(false))),
                    };
                    let mut done = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        limited.limits.deadline = Instant::now().checked_add(TIMEOUT);
                        let r = searcher
                            .find_path_derived(&grid, derived, &limited)
                            .expect("the same query");
                        assert!(r.status == Status::Found && r.cost == first.cost);
                        done += 1;
                    }
                    done
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
        workers
            .into_iter()
            .map(|w| w.join().expect("a worker"))
            .sum()
    });
    let rate = total as f64 / started.elapsed().as_secs_f64();
    println!(
        "engine {rate:.0} {threads} {} {}",
        first.cost,
        first.path.len()
    );
}
