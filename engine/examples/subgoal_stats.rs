//! Builds a map's subgoal graph and prints its size and build time (a development aid).
fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: subgoal_stats MAP.map");
    let text = std::fs::read_to_string(&path).unwrap();
    let grid = pathd_engine::movingai::parse_map(&text).unwrap();
    let t = std::time::Instant::now();
    let g = pathd_engine::SubgoalGraph::build(&grid).unwrap();
    println!("{path}: {g:?} in {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
}
