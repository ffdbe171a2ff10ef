//! Builds a Moving AI map's subgoal graph, prints its size and build time, then times an
//! update after a one-cell patch (a wall, then its removal):
//! `cargo run --release -p pathd-engine --example subgoal_stats -- MAP.map`.
use pathd_engine::{Patch, Point, SubgoalGraph};
use std::time::Instant;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: subgoal_stats MAP.map");
    let text = std::fs::read_to_string(&path).expect("a readable map");
    let grid = pathd_engine::movingai::parse_map(&text).expect("a Moving AI map");
    let t = Instant::now();
    let graph = SubgoalGraph::build(&grid).expect("an octile map");
    let build = t.elapsed().as_secs_f64() * 1e3;
    let per_cell = graph.memory_bytes() as f64 / (grid.width() * grid.height()) as f64;
    println!("{path}: {graph:?} built in {build:.1} ms, {per_cell:.1} bytes a cell");
    // The first open cell from the middle of the map, walled off and opened again.
    let (w, h) = (grid.width(), grid.height());
    let Some(p) = (0..w * h)
        .map(|i| Point::new((w / 2 + i) % w, (h / 2 + i / w) % h))
        .find(|&p| grid.is_passable(p))
    else {
        return;
    };
    let mut cur = (grid, graph);
    for cost in [0, 1] {
        let patch = Patch {
            cells: vec![(p, cost)],
            rects: vec![],
        };
        let (next, changed) = cur.0.apply_patch(&patch).unwrap().unwrap();
        let t = Instant::now();
        let updated = cur.1.update(&next, &changed);
        let update = t.elapsed().as_secs_f64() * 1e3;
        println!("1-cell patch at {p} (cost {cost}): update {update:.1} ms");
        cur = (next, updated);
    }
}
