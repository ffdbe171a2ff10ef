//! Builds a Moving AI map's subgoal graph and times its queries over the map's scenario
//! file (every row, `REPEAT` rounds, checked against the stated optima):
//! `cargo run --release -p pathd-engine --example subgoal_bench -- MAP.map MAP.map.scen [REPEAT]`.
use pathd_engine::{Algorithm, Derived, Query, Searcher, Status, SubgoalGraph};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let (map, scen) = (args.next().expect("MAP"), args.next().expect("SCEN"));
    let repeat: usize = args.next().map_or(1, |r| r.parse().expect("REPEAT"));
    let grid = pathd_engine::movingai::parse_map(&std::fs::read_to_string(&map).unwrap()).unwrap();
    let rows =
        pathd_engine::movingai::parse_scen(&std::fs::read_to_string(&scen).unwrap()).unwrap();
    let t = Instant::now();
    let graph = SubgoalGraph::build(&grid).expect("an octile map");
    let build = t.elapsed().as_secs_f64() * 1e3;
    let per_cell = graph.memory_bytes() as f64 / (grid.width() * grid.height()) as f64;
    println!("{graph:?} built in {build:.1} ms, {per_cell:.1} bytes a cell");
    let derived = Derived {
        subgoal: Some(&graph),
        ..Derived::default()
    };
    let mut searcher = Searcher::new();
    let mut best = f64::INFINITY;
    for round in 0..repeat {
        let (mut total, mut expanded, mut bad) = (0.0, 0u64, 0);
        for row in &rows {
            let q = Query::new(row.start, row.goal).with_algorithm(Algorithm::Subgoal);
            let t = Instant::now();
            let r = searcher.find_path_derived(&grid, derived, &q).unwrap();
            total += t.elapsed().as_secs_f64() * 1e6;
            expanded += r.stats.expanded;
            let ok = if row.unreachable() {
                r.status == Status::NoPath
            } else {
                r.status == Status::Found
                    && (r.cost - row.optimal).abs() < 1e-4 * row.optimal.max(1.0)
            };
            bad += usize::from(!ok);
        }
        let n = rows.len() as f64;
        best = best.min(total / n);
        println!(
            "round {round}: {:.1} us a query, {:.1} expanded, {bad} wrong of {}",
            total / n,
            expanded as f64 / n,
            rows.len()
        );
    }
    println!("best {best:.1} us a query");
}
